"""`gpufleet check` on manifests that carry a served model (the `gpufleet.io/model-memory` annotation): vLLM's
start-up verdict recomputed on every node the pod may land on, from the node's GFD labels."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from gpufleet.config.model import ModelSpec
from gpufleet.errors import InputError
from gpufleet.render.workloads import _model_annotations
from gpufleet.scheduling import check_workloads
from tests.scheduling.kube import deployment, gpu_container, node, pod_spec

VLLM = "vllm/vllm-openai:v0.11.0"
# Llama-3.1-8B by hand: its published 8.03 B parameters, 32 layers, 8 KV heads of 128 (bf16)
LLAMA_8B = {"name": "llama", "parameters": 8_030_261_248, "layers": 32, "kvHeads": 8, "headDim": 128,
            "maxPositionEmbeddings": 131072}
L4 = {"nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.memory": "23034"}
H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559"}
KEY = "Deployment/default/llm"


def annotations(args: list[str] | None = None, **block) -> dict[str, str]:
    """What `gpufleet render` writes on the pod template of an inference workload with this model block."""
    model = ModelSpec.model_validate({**LLAMA_8B, **block})
    w = SimpleNamespace(model=model, image=VLLM, command=None, args=args)
    return _model_annotations(w)


def llm(notes: dict[str, str], container: dict | None = None) -> dict:
    return deployment("llm", 1, pod_spec(container or gpu_container(1)), annotations=notes)


def test_the_annotation_is_the_served_model_and_its_expected_mib():
    notes = annotations(maxModelLen=8192, maxNumSeqs=4)
    doc = json.loads(notes["gpufleet.io/model-memory"])
    assert doc["engine"] == "vllm" and doc["args"]["max_model_len"] == 8192 and doc["args"]["max_num_seqs"] == 4
    assert doc["weights"] == 2 * 8_030_261_248
    assert str(doc["expectedMiB"]) == notes["gpufleet.io/expected-gpu-memory-mib"]


def test_a_model_refused_on_every_eligible_node_is_unschedulable_for_memory():
    result = check_workloads([node("l4", 1, labels=L4), node("l4b", 1, labels=L4)], [],
                             [llm(annotations(maxModelLen=131072))])
    (u,) = result.unschedulable
    assert (u.workload, u.reason, u.pending) == (KEY, "memory", 1)
    assert "vLLM would refuse to start llama on a whole NVIDIA-L4 (23034 MiB)" in u.message
    assert "To serve at least one request with the models's max seq len (131072)" in u.message
    assert re.search(r"Fixes: maxModelLen [\d,]+", u.message)
    assert result.exit_code == 1 and result.to_json()["memoryBudget"][0]["error"] is True


def test_the_suggested_max_model_len_passes_the_check():
    result = check_workloads([node("l4", 1, labels=L4)], [], [llm(annotations(maxModelLen=131072))])
    (u,) = result.unschedulable
    length = int(re.search(r"Fixes: maxModelLen ([\d,]+)", u.message).group(1).replace(",", ""))
    fixed = check_workloads([node("l4", 1, labels=L4)], [], [llm(annotations(maxModelLen=length))])
    assert fixed.fits and not fixed.unschedulable


def test_a_model_refused_on_some_eligible_nodes_only_is_a_warning():
    nodes = [node("l4", 1, labels=L4), node("h100", 1, labels=H100)]
    result = check_workloads(nodes, [], [llm(annotations(maxModelLen=131072))])
    assert result.fits and not result.unschedulable
    (w,) = [w for w in result.warnings if "vLLM would refuse" in w.message]
    assert w.workload == KEY and "on 1 of 2 eligible nodes; it starts on the others" in w.message


def test_a_concurrency_shortfall_is_a_model_warning():
    result = check_workloads([node("h100", 1, labels=H100)], [], [llm(annotations(maxModelLen=131072,
                                                                                  maxNumSeqs=8))])
    assert result.fits and not result.unschedulable
    (w,) = [w for w in result.warnings if w.reason == "model"]
    assert w.workload == KEY
    assert "GPU KV cache size:" in w.message and "Maximum concurrency for 131,072 tokens per request" in w.message
    assert "maxNumSeqs 8" in w.message
    assert {"workload": KEY, "reason": "model"}.items() <= w.to_json().items()


def test_no_concurrency_warning_without_a_declared_max_num_seqs():
    result = check_workloads([node("h100", 1, labels=H100)], [], [llm(annotations(maxModelLen=131072))])
    assert result.fits and not [w for w in result.warnings if w.reason == "model"]


def test_a_declared_memory_mib_overrides_the_model():
    notes = {**annotations(maxModelLen=131072), "gpufleet.io/expected-gpu-memory-mib": "20000"}
    result = check_workloads([node("l4", 1, labels=L4)], [], [llm(notes)])
    assert result.fits and not result.unschedulable
    assert not any("vLLM" in w.message for w in result.warnings)


def test_a_mig_node_is_judged_on_the_instance_memory_label():
    labels = {**H100, "nvidia.com/mig-2g.20gb.memory": "20096"}
    spec = gpu_container(1, "nvidia.com/mig-2g.20gb")
    nodes = [node("h100", 3, resource="nvidia.com/mig-2g.20gb", labels=labels)]
    (u,) = check_workloads(nodes, [], [llm(annotations(maxModelLen=131072), spec)]).unschedulable
    assert "a MIG 2g.20gb instance of NVIDIA-H100-80GB-HBM3 (20096 MiB)" in u.message
    assert check_workloads(nodes, [], [llm(annotations(maxModelLen=4096), spec)]).fits


def test_an_mps_reservation_beyond_the_pinned_slice_is_refused_until_the_utilization_fits():
    labels = {**H100, "nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "2"}
    nodes = [node("h100", 2, labels=labels)]
    (u,) = check_workloads(nodes, [], [llm(annotations(maxModelLen=8192))]).unschedulable
    assert "an MPS slice (1/2 of NVIDIA-H100-80GB-HBM3, 40779 of 81559 MiB)" in u.message
    assert "pinned limit of 40779 MiB" in u.message
    util = re.search(r"--gpu-memory-utilization (0\.\d+)", u.message.split("fixes:")[1]).group(1)
    assert float(util) * (81559 * (1 << 20) - round(0.4 * (1 << 30))) <= 40779 * (1 << 20)
    tuned = annotations(["--gpu-memory-utilization", util], maxModelLen=8192)
    container = {**gpu_container(1), "args": ["--gpu-memory-utilization", util]}
    assert check_workloads(nodes, [], [llm(tuned, container)]).fits


def test_an_old_format_annotation_is_still_checked():
    old = {"model": "llama", "parameters": 8_030_261_248, "layers": 32, "kvHeads": 8, "headDim": 128,
           "dtype": "bf16", "kvCacheDtype": "auto", "maxModelLen": 131072, "maxNumSeqs": 1, "tensorParallel": 1,
           "maxPositionEmbeddings": 131072, "activationBytes": None, "vllm": True}
    notes = {"gpufleet.io/model-memory": json.dumps(old)}
    (u,) = check_workloads([node("l4", 1, labels=L4)], [], [llm(notes)]).unschedulable
    assert u.reason == "memory" and "max seq len (131072)" in u.message
    short = {"gpufleet.io/model-memory": json.dumps({**old, "maxModelLen": 4096})}
    assert check_workloads([node("l4", 1, labels=L4)], [], [llm(short)]).fits


@pytest.mark.parametrize("raw", ['{"layers": 0}', "not json", '{"engine": "vllm"}', '{"engine": "tgi"}', "[]"])
def test_an_unusable_model_annotation_is_bad_input(raw):
    bad = llm({"gpufleet.io/model-memory": raw})
    with pytest.raises(InputError, match="gpufleet.io/model-memory is not usable"):
        check_workloads([node("l4", 1, labels=L4)], [], [bad])


@pytest.mark.parametrize("key,value", [("maxPosition", "long"), ("activationOverride", "1 GiB")])
def test_a_mistyped_field_in_the_annotation_is_bad_input_not_a_crash(key, value):
    doc = json.loads(annotations(maxModelLen=8192)["gpufleet.io/model-memory"])
    doc[key] = value
    bad = llm({"gpufleet.io/model-memory": json.dumps(doc)})
    with pytest.raises(InputError, match="gpufleet.io/model-memory is not usable"):
        check_workloads([node("l4", 1, labels=L4)], [], [bad])


def test_the_containers_vllm_flags_in_the_manifest_are_read_as_the_old_check_did():
    # the fix the error names is applied to the manifest's container, the annotation left as rendered
    labels = {**H100, "nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "2"}
    nodes = [node("h100", 2, labels=labels)]
    notes = annotations(maxModelLen=8192)
    (u,) = check_workloads(nodes, [], [llm(notes)]).unschedulable
    util = re.search(r"--gpu-memory-utilization (0\.\d+)", u.message.split("fixes:")[1]).group(1)
    container = {**gpu_container(1), "args": ["--gpu-memory-utilization", util]}
    assert check_workloads(nodes, [], [llm(notes, container)]).fits
