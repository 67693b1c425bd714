"""A PodDisruptionBudget without status counts its controllers' scale, Pending pods included, as the disruption
controller does (docs/capacity.md, Preemption)."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import yaml

from gpufleet.capacity.kubectl import bound_pods, waiting_pods
from gpufleet.manifests.workloads import workloads_of
from gpufleet.scheduler.framework.preemption import Victim
from gpufleet.scheduler.plugins.defaultpreemption.default_preemption import PreemptionState
from gpufleet.scheduling.engine import check_workloads
from gpufleet.scheduling.preempting import budgets_of, controller_scales
from tests.cli.run_inprocess import run
from tests.scheduling.kube import node
from tests.scheduling.test_preemption import CLASSES, deployment, pdb, running

FIXTURES = Path(__file__).parents[1] / "fixtures" / "oracle-preemption"


def pending(name: str, *, owner: str = "train-5f6d") -> dict:
    """A pod of the train Deployment's ReplicaSet that no node took."""
    pod = running(name, "", 8, priority=100, owner=owner)
    del pod["spec"]["nodeName"]
    pod["status"] = {"phase": "Pending"}
    return pod


def bare(name: str, node_name: str, start: str) -> dict:
    pod = running(name, node_name, 8, priority=100, start=start, labels={"app": "batch"})
    del pod["metadata"]["ownerReferences"]
    return pod


def fleet(with_pending: bool) -> list[dict]:
    """gpu-1 holds a train pod that started last (the tie-break's choice); gpu-2 a bare pod no budget covers."""
    pods = [running("train-5f6d-a", "gpu-1", 8, priority=100, start="2026-11-01T11:00:00Z"),
            bare("batch", "gpu-2", "2026-11-01T10:00:00Z")]
    return pods + ([pending("train-5f6d-b")] if with_pending else [])


MANIFESTS = [*CLASSES, pdb("train", "team-b", {"app": "train"}, maxUnavailable=1),
             deployment("infer", "ml", 1, 8, priorityClassName="serving")]


def test_a_pending_pod_of_the_controller_leaves_its_budget_no_disruption_so_the_other_node_is_chosen():
    nodes = [node("gpu-1", 8), node("gpu-2", 8)]
    both = check_workloads(nodes, fleet(with_pending=True), MANIFESTS, tie_runs=1)
    assert [(v.workload, v.node, v.budget) for v in both.preemptions[0].victims] == [("Pod/team-b/batch", "gpu-2", "")]
    # without the Pending pod the budget allows one disruption, and the train pod that started last goes
    alone = check_workloads(nodes, fleet(with_pending=False), MANIFESTS, tie_runs=1)
    assert [(v.workload, v.node) for v in alone.preemptions[0].victims] == [("Deployment/team-b/train", "gpu-1")]


def test_the_pods_file_brings_its_pending_pods_to_the_check(tmp_path):
    nodes, pods, app = tmp_path / "nodes.json", tmp_path / "pods.json", tmp_path / "app.yaml"
    nodes.write_text(json.dumps({"kind": "List", "items": [node("gpu-1", 8), node("gpu-2", 8)]}))
    pods.write_text(json.dumps({"kind": "List", "items": fleet(with_pending=True)}))
    app.write_text(yaml.safe_dump_all(MANIFESTS))
    done = run("check", "--nodes", nodes, "--pods", pods, app, "--json")
    assert done.code == 0, done.err
    victims = json.loads(done.out)["preemptions"][0]["victims"]
    assert [(v["workload"], v["node"]) for v in victims] == [("Pod/team-b/batch", "gpu-2")]


def test_a_capacity_file_keeps_the_pending_pods_and_refuses_a_count_that_is_not_one(tmp_path):
    nodes, pods = tmp_path / "nodes.json", tmp_path / "pods.json"
    nodes.write_text(json.dumps({"kind": "List", "items": [node("gpu-1", 8), node("gpu-2", 8)]}))
    pods.write_text(json.dumps({"kind": "List", "items": fleet(with_pending=True)}))
    from gpufleet.capacity.files import load_capacity

    written = load_capacity(nodes, pods).to_json()
    assert written["waitingPods"] == {"Deployment/team-b/train": 1}
    capacity = tmp_path / "capacity.json"
    capacity.write_text(json.dumps(written))
    app = tmp_path / "app.yaml"
    app.write_text(yaml.safe_dump_all(MANIFESTS))
    done = run("check", "--nodes", capacity, app, "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["preemptions"][0]["victims"][0]["node"] == "gpu-2"
    capacity.write_text(json.dumps({**written, "waitingPods": {"Deployment/team-b/train": "one"}}))
    bad = run("check", "--nodes", capacity, app)
    assert bad.code == 2 and "Traceback" not in bad.err
    assert str(capacity) in bad.err and "waitingPods[Deployment/team-b/train]" in bad.err and "'one'" in bad.err


def test_waiting_pods_are_the_unbound_live_pods_of_a_controller():
    done = running("old", "", 8, owner="train-5f6d")
    del done["spec"]["nodeName"]
    done["status"] = {"phase": "Succeeded"}
    stray = pending("stray")
    del stray["metadata"]["ownerReferences"]
    objects = [pending("a"), pending("b"), pending("c", owner="other"), done, stray,
               running("bound", "gpu-1", 8), "not an object", {"metadata": None}]
    assert waiting_pods(objects) == Counter({"Deployment/team-b/train": 2, "ReplicaSet/team-b/other": 1})


def test_a_manifests_deployment_counts_its_replicas_and_a_job_no_scale():
    manifests = [deployment("serve", "ml", 3, 1)]
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "nightly", "namespace": "ml"},
           "spec": {"parallelism": 2, "template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "c", "image": "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04"}]}}}}
    workloads = workloads_of([*manifests, job])
    pods = bound_pods([running("train-5f6d-a", "gpu-1", 8), running("train-5f6d-b", "gpu-2", 8)])
    scales = controller_scales(workloads, range(len(workloads)), pods, {"Deployment/team-b/train": 1})
    assert scales == {"Deployment/ml/serve": 3, "Deployment/team-b/train": 3}


def test_a_budget_without_status_allows_what_the_real_disruption_controller_allowed_in_every_recorded_run():
    """Each recorded run kept its budgets' status as the real controller wrote it, beside the pods (bound and
    Pending) it was computed from: the check, given the budget without its status, must allow the same."""
    seen = agree = 0
    wrong: list[str] = []
    for name in ("scenarios.json", "more-seeds.json", "held-out.json"):
        for entry in json.loads((FIXTURES / name).read_text())["scenarios"]:
            for i, run_doc in enumerate(entry["runs"]):
                pods = bound_pods(run_doc["pods"])
                victims = [Victim(0, 0.0, p.key, -1, p.namespace, dict(p.labels), p.requests, (0, 0)) for p in pods]
                objects = [{"kind": "PodDisruptionBudget", "metadata": {"name": b["name"], "namespace": b["namespace"]},
                            "spec": b["spec"]} for b in run_doc.get("pdbs", [])]
                state = PreemptionState(None, [victims], budgets_of(objects), random.Random(0),
                                        scales=controller_scales([], [], pods, waiting_pods(run_doc["pods"])))
                for budget, allowed in zip(run_doc.get("pdbs", []), state.allowed(), strict=True):
                    seen += 1
                    want = budget["status"]["disruptionsAllowed"]
                    agree += allowed == want
                    if allowed != want:
                        wrong.append(f"{name} seed {entry['seed']} run {i} {budget['name']}: {allowed} != {want}")
    assert seen >= 700, seen
    assert not wrong, wrong[:10]
