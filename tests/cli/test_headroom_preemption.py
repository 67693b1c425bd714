"""`gpufleet headroom` at a priority: how many more fit in free room, and how many when the copies may evict
pods of lower priority, with the pods they evict."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.cli.run_inprocess import run

GPU = "nvidia.com/gpu"


def node(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
        "kubernetes.io/hostname": name, "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}},
        "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: "4"}}}


def running(name: str, on: str, priority: int, job: str, namespace: str = "team-b") -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": name, "labels": {"job": job},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": job,
                                              "controller": True}]},
            "spec": {"nodeName": on, "priority": priority,
                     "containers": [{"name": "c", "image": "t:1", "resources": {"limits": {GPU: "1"}}}]},
            "status": {"phase": "Running", "startTime": "2026-11-01T00:00:00Z"}}


CLASSES = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "inference-high"},
            "value": 1000},
           {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "polite"},
            "value": 1000, "preemptionPolicy": "Never"}]


def fleet_files() -> dict[str, str]:
    """gpu-a: 4 GPUs of low-priority training; gpu-b: 4 of critical work; gpu-c: 2 of training, 2 free; the
    probe (infer-probe.yaml) a 1-GPU pod of namespace llm."""
    pods = [running(f"train-{i}", "gpu-a", 100, "train") for i in range(4)]
    pods += [running(f"critical-{i}", "gpu-b", 5000, "critical", "ops") for i in range(4)]
    pods += [running(f"train-c{i}", "gpu-c", 100, "train") for i in range(2)]
    probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "llm"},
             "spec": {"containers": [{"name": "c", "image": "x:1", "resources": {"limits": {GPU: 1}}}]}}
    return {"nodes.json": json.dumps({"kind": "List", "items": [node(n) for n in ("gpu-a", "gpu-b", "gpu-c")]}),
            "pods.json": json.dumps({"kind": "List", "items": pods}), "infer-probe.yaml": yaml.safe_dump(probe)}


@pytest.fixture
def fleet(tmp_path):
    for name, text in fleet_files().items():
        (tmp_path / name).write_text(text)
    (tmp_path / "classes.yaml").write_text(yaml.safe_dump_all(CLASSES))
    return tmp_path


def headroom(fleet, *extra):
    return run("headroom", "--nodes", fleet / "nodes.json", "--pods", fleet / "pods.json",
               "--probe", fleet / "infer-probe.yaml", fleet / "classes.yaml", *extra)


def test_with_preemption_the_copies_take_the_room_of_lower_priority_pods_only(fleet):
    done = headroom(fleet, "--priority-class", "inference-high", "--json")
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["instances"] == 2  # free room: gpu-c's two GPUs
    evicting = doc["withPreemption"]
    assert (evicting["priority"], evicting["priorityClass"]) == (1000, "inference-high")
    assert evicting["instances"] == 8 and evicting["byNode"] == {"gpu-a": 4, "gpu-c": 4}
    victims = {(v["workload"], v["node"]): v["pods"] for v in evicting["victims"]}
    assert victims == {("Job/team-b/train", "gpu-a"): 4, ("Job/team-b/train", "gpu-c"): 2}


def test_text_answer_names_the_priority_and_the_victims(fleet):
    done = headroom(fleet, "--priority-class", "inference-high")
    assert done.code == 0, done.err
    assert "The cluster can schedule 2 more instance(s) of the probe." in done.out
    assert "With preemption at priority 1000 (PriorityClass inference-high): 8 more instance(s), evicting " in done.out
    assert "4 pod(s) of Job/team-b/train on gpu-a (priority 100)" in done.out
    assert "ops" not in done.out.split("With preemption")[1]


def test_a_class_that_never_preempts_counts_free_room_only(fleet):
    done = headroom(fleet, "--priority-class", "polite", "--json")
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["withPreemption"]["instances"] == doc["instances"] == 2
    assert doc["withPreemption"]["victims"] == []


def test_a_probe_naming_its_own_class_gets_both_answers(fleet):
    probe = yaml.safe_load((fleet / "infer-probe.yaml").read_text())
    probe["spec"]["priorityClassName"] = "inference-high"
    (fleet / "infer-probe.yaml").write_text(yaml.safe_dump_all([CLASSES[0], probe]))
    done = run("headroom", "--nodes", fleet / "nodes.json", "--pods", fleet / "pods.json",
               "--probe", fleet / "infer-probe.yaml", "--json")  # the class comes from the probe file alone
    assert done.code == 0, done.err
    assert json.loads(done.out)["withPreemption"]["instances"] == 8


def test_without_a_priority_there_is_no_preemption_answer(fleet):
    done = headroom(fleet, "--json")
    assert done.code == 0, done.err
    assert "withPreemption" not in json.loads(done.out)


@pytest.mark.parametrize("args, words", [
    (("--priority-class", "inference-hihg"), "priority class 'inference-hihg' of the probe: no PriorityClass of "
                                             "that name among the inputs"),
    (("--priority-class", "inference-hihg"), "expected one of inference-high, polite, system-cluster-critical"),
])
def test_an_unknown_class_is_exit_2_naming_it_and_the_known_ones(fleet, args, words):
    done = headroom(fleet, *args)
    assert done.code == 2 and "Traceback" not in done.err
    assert words in done.err, done.err


def test_priority_class_with_shapes_is_exit_2(fleet):
    done = run("headroom", "--nodes", fleet / "nodes.json", "--shapes", "--priority-class", "inference-high")
    assert done.code == 2 and "--priority-class goes with --probe" in done.err
