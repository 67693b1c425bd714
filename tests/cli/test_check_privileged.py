"""`gpufleet check --nodes`: a privileged (or /dev-mounting) GPU container sees every GPU of its node. On
nodes whose GFD labels say their GPUs are time-sliced it is refused (no-privileged-shared-gpu); on whole-GPU
nodes it is a warning (gpu-privileged); an unprivileged one passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli.run_inprocess import run


def t4_node(name: str, shared: bool) -> dict:
    labels = {"kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "1",
              "nvidia.com/gpu.product": "Tesla-T4-SHARED" if shared else "Tesla-T4"}
    if shared:
        labels.update({"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"})
    alloc = {"cpu": "7910m", "memory": "28730180Ki", "pods": "110", "nvidia.com/gpu": "4" if shared else "1"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": alloc, "capacity": alloc, "nodeInfo": {
                "containerRuntimeVersion": "containerd://1.7.23", "kubeletVersion": "v1.33.5",
                "osImage": "Ubuntu 22.04.5 LTS", "kernelVersion": "5.15.0-125-generic"}}}


def job(privileged: bool) -> dict:
    container = {"name": "bench", "image": "nvcr.io/nvidia/pytorch:24.08-py3",
                 "resources": {"limits": {"nvidia.com/gpu": 1}}}
    if privileged:
        container["securityContext"] = {"privileged": True}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "bench", "namespace": "ml"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}}


def check(tmp_path: Path, shared: bool, privileged: bool) -> tuple[int, dict]:
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [t4_node("t4-0", shared)]}))
    app = tmp_path / "job.yaml"
    app.write_text(yaml.safe_dump(job(privileged)))
    result = run("check", "--json", "--nodes", nodes, app)
    return result.code, json.loads(result.out)


def test_a_privileged_container_on_a_time_sliced_gpu_is_refused(tmp_path):
    code, out = check(tmp_path, shared=True, privileged=True)
    assert code == 1
    [refused] = [u for u in out["unschedulable"] if u["reason"] == "policy"]
    assert refused["workload"] == "Job/ml/bench"
    assert refused["message"].startswith(
        "[no-privileged-shared-gpu] Job ml/bench: container 'bench' runs privileged (securityContext.privileged: "
        "true) and requests nvidia.com/gpu, a share of a GPU the device plugin time-slices or runs under MPS")


def test_a_privileged_container_on_a_whole_gpu_is_a_warning(tmp_path):
    code, out = check(tmp_path, shared=False, privileged=True)
    assert code == 0
    [warning] = out["warnings"]
    assert warning["message"].startswith("[gpu-privileged] Job ml/bench: container 'bench' runs privileged "
                                         "(securityContext.privileged: true) and requests nvidia.com/gpu: it sees "
                                         "every GPU of the node")


def test_an_unprivileged_gpu_container_on_the_shared_gpu_passes(tmp_path):
    code, out = check(tmp_path, shared=True, privileged=False)
    assert code == 0 and out["unschedulable"] == [] and out["warnings"] == []


def mps_node(replicas: int) -> dict:
    node = t4_node("t4-mps-0", shared=True)
    node["metadata"]["labels"].update({"nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas":
                                       str(replicas), "nvidia.com/gpu.memory": "15360"})
    node["status"]["allocatable"]["nvidia.com/gpu"] = str(replicas)
    return node


@pytest.mark.parametrize("replicas, warned", [(30, True), (10, False)], ids=["512 MiB shares", "1536 MiB shares"])
def test_an_mps_client_that_declares_no_memory_on_a_small_share_is_warned_with_the_figures(tmp_path, replicas,
                                                                                            warned):
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [mps_node(replicas)]}))
    app = tmp_path / "job.yaml"
    app.write_text(yaml.safe_dump(job(privileged=False)))
    out = json.loads(run("check", "--json", "--nodes", nodes, app).out)
    found = [w["message"] for w in out["warnings"] if w["message"].startswith("[mps-client-memory]")]
    if warned:
        assert found == [
            "[mps-client-memory] Job ml/bench: container 'bench' gets an MPS share of 512 MiB of GPU memory (15360 "
            "MiB / 30 replicas on t4-mps-0); a CUDA context takes roughly 500 MiB of it, leaving about 12 MiB, and "
            "the workload declares no GPU memory (annotation gpufleet.io/expected-gpu-memory-mib), so its fit "
            "cannot be checked: past its share a client fails with CUDA out of memory while the GPU has memory "
            "free; expected the annotation (checked against the share), or fewer MPS replicas."]
    else:
        assert found == []
