"""`gpufleet check` on workloads that declare their model: the need against each node the pod may land on."""

from __future__ import annotations

import json

import pytest

from gpufleet.errors import InputError
from gpufleet.nvidia.model_memory import ModelShape, Serving, need_per_gpu, to_annotation
from gpufleet.scheduling import check_workloads
from tests.scheduling.kube import deployment, gpu_container, node, pod_spec

LLAMA_8B = ModelShape(8_030_261_248, 32, 8, 128, architecture="LlamaForCausalLM", max_position_embeddings=131072)
L4 = {"nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.memory": "23034"}
H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559"}


def _model(serving: Serving, declared: int | None = None, image_is_vllm: bool = True) -> dict:
    annotations = {"gpufleet.io/model-memory": json.dumps(to_annotation("llama", LLAMA_8B, serving, image_is_vllm)),
                   "gpufleet.io/expected-gpu-memory-mib": str(declared or need_per_gpu(LLAMA_8B, serving).mib)}
    return deployment("llm", 1, pod_spec(gpu_container(1)), annotations=annotations)


def test_a_model_too_big_for_every_node_is_a_memory_error():
    result = check_workloads([node("l4", 1, labels=L4)], [], [_model(Serving(32768, 4))])
    (u,) = result.unschedulable
    assert (u.workload, u.reason, u.pending) == ("Deployment/default/llm", "memory", 1)
    assert "a whole NVIDIA-L4 (23034 MiB)" in u.message and "maxNumSeqs" not in u.message.split("fixes:")[0]
    assert "maxModelLen" in u.message.split("fixes:")[1]
    assert result.exit_code == 1 and result.to_json()["memoryBudget"][0]["error"] is True


def test_a_model_that_fits_some_eligible_nodes_is_a_warning():
    nodes = [node("l4", 1, labels=L4), node("h100", 1, labels=H100)]
    result = check_workloads(nodes, [], [_model(Serving(32768, 4))])
    assert result.fits
    assert any("on 1 of 2 eligible nodes; it fits on the others" in w.message for w in result.warnings)


def test_an_mps_node_budget_is_the_pinned_slice():
    labels = {**H100, "nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "4"}
    result = check_workloads([node("h100", 4, labels=labels)], [], [_model(Serving(8192, 1))])
    (u,) = result.unschedulable
    assert "an MPS slice (1/4 of NVIDIA-H100-80GB-HBM3, 20389 of 81559 MiB)" in u.message
    assert "an MPS slice of 1/3 (replicas: 3) or larger" in u.message


def test_a_mig_node_budget_reads_the_instance_memory_label():
    labels = {**H100, "nvidia.com/mig-3g.40gb.memory": "40320"}
    spec = pod_spec(gpu_container(1, "nvidia.com/mig-3g.40gb"))
    fits = deployment("llm", 1, spec, annotations=_model(Serving(16384, 7))["spec"]["template"]["metadata"]["annotations"])
    assert check_workloads([node("h100", 2, resource="nvidia.com/mig-3g.40gb", labels=labels)], [], [fits]).fits
    long = deployment("llm", 1, spec, annotations=_model(Serving(32768, 16))["spec"]["template"]["metadata"]["annotations"])
    (u,) = check_workloads([node("h100", 2, resource="nvidia.com/mig-3g.40gb", labels=labels)], [], [long]).unschedulable
    assert "a MIG 3g.40gb instance of NVIDIA-H100-80GB-HBM3 (40320 MiB)" in u.message


def test_a_declared_memory_that_disagrees_wins_with_a_warning():
    result = check_workloads([node("l4", 1, labels=L4)], [], [_model(Serving(32768, 4), declared=20000)])
    assert result.fits
    assert any("gpu.memoryMiB 20000 disagrees" in w.message for w in result.warnings)


def test_an_unusable_model_annotation_is_bad_input():
    bad = deployment("llm", 1, pod_spec(gpu_container(1)), annotations={"gpufleet.io/model-memory": '{"layers": 0}'})
    with pytest.raises(InputError, match="gpufleet.io/model-memory is not usable"):
        check_workloads([node("l4", 1, labels=L4)], [], [bad])


def test_a_vllm_reservation_beyond_an_mps_slice_is_an_error_until_the_utilization_matches():
    labels = {**H100, "nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "2"}
    annotations = _model(Serving(8192, 1))["spec"]["template"]["metadata"]["annotations"]
    default = deployment("llm", 1, pod_spec(gpu_container(1)), annotations=annotations)
    (u,) = check_workloads([node("h100", 2, labels=labels)], [], [default]).unschedulable
    assert "vLLM's default --gpu-memory-utilization 0.9 reserves 73403 MiB" in u.message
    assert "use --gpu-memory-utilization 0.27" in u.message  # 21412 MiB / 81559 MiB = 0.2625 -> 0.27
    tuned = deployment("llm", 1, pod_spec({**gpu_container(1), "args": ["--gpu-memory-utilization", "0.27"]}),
                       annotations=annotations)
    assert check_workloads([node("h100", 2, labels=labels)], [], [tuned]).fits


def test_a_declared_memory_close_to_the_need_still_wins_without_a_warning():
    need = need_per_gpu(LLAMA_8B, Serving(32768, 4)).mib
    result = check_workloads([node("l4", 1, labels=L4)], [], [_model(Serving(32768, 4), declared=need - 100)])
    assert result.fits and not result.unschedulable  # memoryMiB overruns only warn
    assert not any("disagrees" in w.message for w in result.warnings)
    assert any(f"expects {need - 100} MiB of GPU memory" in w.message for w in result.warnings)
