"""Fleet verdicts, for real: a generated fleet (tests/scheduling/oracle_fleets.py) becomes KWOK nodes with
its running pods, its workloads are created all at once, and the real controllers and scheduler run until
nothing changes. The workloads left Pending must be the ones `gpufleet check` calls Pending, on the files
and on the live cluster, by the metrics of tests/scheduling/oracle_compare.py, over RUNS runs each on a
fresh cluster.

Each fleet's metrics are written to build/e2e/fleet-verdicts.json (docs/fidelity.md quotes them).
"""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.e2e.cluster import ROOT
from tests.e2e.kwok_nodes import create_nodes, nodes_from_items, wait_nodes_ready
from tests.e2e.workloads import (
    check_json,
    create_all,
    create_running_pods,
    ensure_namespaces,
    outcome,
    settle,
    workload_key,
)
from tests.scheduling.oracle_compare import compare
from tests.scheduling.oracle_fleets import Fleet, generate, pod_count, write

RESULTS = ROOT / "build" / "e2e" / "fleet-verdicts.json"
RUNS = 2
FLEETS = [(1, 20, "mixed"), (2, 30, "l4-trap"), (3, 20, "mig"), (4, 25, "cpu-bound")]
#: Larger fleets, run with GPUFLEET_E2E_LARGE=1 (minutes each on two cores): where burst creation moves
#: which workloads pend, so only what must hold anyway is asserted; docs/fidelity.md gives the figures.
LARGE_FLEETS = [(5, 150, "mixed"), (6, 500, "mixed")]
LARGE_ENV = "GPUFLEET_E2E_LARGE"
#: Fleets where burst creation leaves Deployments Pending that check places and names in no warning: the
#: controllers create the pods of Jobs and bare Pods later in the manifests before these Deployments' own,
#: and those take the room (docs/fidelity.md). Not modelled yet: the test is an expected failure there.
BURST_BOUND = {"mixed-500-6": "9 Deployments pending in both real runs, placed by check (burst creation)"}


def run_fleet(cluster, fleet, manifests_file) -> tuple[dict, float, dict]:
    """The fleet's nodes and running pods in the cluster, then `check` on the live cluster, then every
    workload created at once: (the outcome per workload, seconds until it settled, the live check)."""
    api = cluster.api()
    create_nodes(api, nodes_from_items(fleet.nodes))
    wait_nodes_ready(api, [n["metadata"]["name"] for n in fleet.nodes])
    ensure_namespaces(api, {p["metadata"]["namespace"] for p in fleet.pods + fleet.manifests})
    create_running_pods(api, fleet.pods)
    live = check_json("--kubeconfig", str(cluster.kubeconfig), str(manifests_file))
    refused = create_all(api, fleet.manifests)
    workloads = {workload_key(m): pod_count(m) for m in fleet.manifests}
    settled = settle(api, {k: n for k, n in workloads.items() if k not in refused})
    return outcome(api, workloads, refused), round(settled, 1), live


def pending_set(answer: dict) -> set[str]:
    return {u["workload"] for u in answer.get("unschedulable", []) if u["reason"] in ("pending", "rejected")}


def same_wording(message: str | None) -> str | None:
    """A FailedScheduling message without what differs by release and by path, not by verdict: the
    PostFilter (preemption, DRA deallocation) diagnosis a live scheduler appends, and the taint named in
    `untolerated taint {key: value}` (Kubernetes 1.34.0-1.34.1; from 1.34.2 on `untolerated taint(s)`)."""
    if message is None:
        return None
    message = re.sub(r"\s*(no new claims to deallocate, )?preemption: .*$", "", message)
    return re.sub(r"untolerated taint \{[^}]*\}", "untolerated taint(s)", message)


def record(name: str, entry: dict) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    doc = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    doc[name] = entry
    RESULTS.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def measure(seed: int, size: int, shape: str, new_cluster, tmp_path) -> tuple[dict, dict, list[dict]]:
    """RUNS real runs of one generated fleet against `check` on its files: (the oracle_compare metrics,
    check's answer on the files, check's answers on each live cluster). Records the figures."""
    return measure_fleet(generate(seed, size, shape), f"{shape}-{size}-{seed}", new_cluster, tmp_path)


def measure_fleet(fleet: Fleet, name: str, new_cluster, tmp_path) -> tuple[dict, dict, list[dict]]:
    nodes_file, pods_file, manifests_file = write(fleet, tmp_path)
    on_files = check_json("--nodes", str(nodes_file), "--pods", str(pods_file), str(manifests_file))

    runs, timings, on_cluster = [], [], []
    for _ in range(RUNS):  # each run on a fresh cluster: the controllers' and scheduler's races differ
        run, seconds, live = run_fleet(new_cluster(), fleet, manifests_file)
        runs.append(run)
        timings.append(seconds)
        on_cluster.append(live)
    metrics = compare(on_files, {"runs": runs})
    unschedulable = {u["workload"]: u for u in on_files.get("unschedulable", [])}
    record(name, {
        "nodes": len(fleet.nodes), "workloads": len(runs[0]),
        "pods": sum(pod_count(m) for m in fleet.manifests),
        "runs": len(runs), "settle_s": timings, "check_pending": sorted(pending_set(on_files)),
        "real_pending": [sorted(k for k, r in run.items() if r["pending"]) for run in runs],
        "metrics": metrics,
        "messages": {w: {"real": runs[0][w]["message"], "check": unschedulable[w]["message"]}
                     for w in metrics["message_mismatch"]},
        "messages_differing_beyond_release_wording": sorted(
            w for w in metrics["message_mismatch"]
            if all(same_wording(r[w]["message"]) != same_wording(unschedulable[w]["message"]) for r in runs)),
        "pending_pods": {w: {"real": [r[w]["pending"] for r in runs], "check": unschedulable[w]["pending"]}
                         for w in metrics["count_mismatch"]},
    })

    return metrics, on_files, on_cluster


@pytest.mark.parametrize(("seed", "size", "shape"), FLEETS, ids=[f"{s}-{n}-{i}" for i, n, s in FLEETS])
def test_pending_workloads_match_check(seed, size, shape, new_cluster, tmp_path):
    metrics, on_files, on_cluster = measure(seed, size, shape, new_cluster, tmp_path)
    for live in on_cluster:
        assert pending_set(live) == pending_set(on_files)
    assert metrics["false_pending"] == []
    assert metrics["silent_miss"] == []


@pytest.mark.parametrize(("seed", "size", "shape"), LARGE_FLEETS,
                         ids=[f"{s}-{n}-{i}" for i, n, s in LARGE_FLEETS])
def test_large_fleet_misses_nothing_the_real_cluster_leaves_pending(seed, size, shape, new_cluster, tmp_path):
    if not os.environ.get(LARGE_ENV):
        pytest.skip(f"a large fleet takes minutes: set {LARGE_ENV}=1 to run it")
    metrics, on_files, on_cluster = measure(seed, size, shape, new_cluster, tmp_path)
    for live in on_cluster:
        assert pending_set(live) == pending_set(on_files)
    known = BURST_BOUND.get(f"{shape}-{size}-{seed}")
    if metrics["silent_miss"] and known:
        pytest.xfail(f"{known}: {metrics['silent_miss']}")
    assert metrics["silent_miss"] == []


def test_an_untolerated_gpu_taint_leaves_the_same_pods_pending(new_cluster, tmp_path):
    """A small hand-made case the generated fleets rarely reach: CPU pods that only a tainted GPU node has
    room for stay Pending in the real cluster, and check must say so (a wrong toleration rule would not)."""
    from tests.scheduling.kube import container, deployment, node, pod_spec

    gpu = node("gpu-0", 8, cpu="64", memory="256Gi", taints=[("nvidia.com/gpu", "present", "NoSchedule")])
    cpu = node("cpu-0", cpu="4", memory="16Gi")
    small = pod_spec(container(requests={"cpu": "1500m", "memory": "1Gi"}))
    web = deployment("web", 3, small, namespace="apps")
    tolerant = pod_spec(container(limits={"nvidia.com/gpu": "1"}),
                        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    train = deployment("train", 2, tolerant, namespace="apps")
    for d in (web, train):
        d["spec"]["selector"] = {"matchLabels": {"app": d["metadata"]["name"]}}
        d["spec"]["template"]["metadata"]["labels"] = {"app": d["metadata"]["name"]}
    gpu["apiVersion"] = cpu["apiVersion"] = "v1"
    fleet = Fleet([gpu, cpu], [], [web, train])
    metrics, on_files, on_cluster = measure_fleet(fleet, "gpu-taint", new_cluster, tmp_path)
    assert pending_set(on_files) == {"Deployment/apps/web"}
    for live in on_cluster:
        assert pending_set(live) == pending_set(on_files)
    assert metrics["false_pending"] == [] and metrics["silent_miss"] == []
