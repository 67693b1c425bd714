"""A workload's `model:` block and its vLLM flags made into the engine's facts (gpufleet.config.model_serving),
the device a pod gets from a node pool or a node's GFD labels (gpufleet.capacity.model_fit), and the stack's
memory check of a model (gpufleet.capacity.memory_budget)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from gpufleet.capacity.kubectl import node_from_object
from gpufleet.capacity.memory_budget import memory_budget
from gpufleet.capacity.model_fit import dra_device, judge, mig_instance, mps_slice, node_device, time_sliced, whole_gpu
from gpufleet.config.loading import load_stack
from gpufleet.config.model import ModelSpec, model_issues, served_model
from gpufleet.errors import ConfigError
from gpufleet.nvidia.model_memory import GIB, MIB
from gpufleet.nvidia.products import find_product
from tests.scheduling.kube import node

ROOT = Path(__file__).resolve().parents[2]
LLAMA_CONFIG = ROOT / "models/llama-3.1-8b/config.json"
LLAMA_INDEX = ROOT / "tests/fixtures/checkpoints/meta-llama__Llama-3.1-8B-Instruct/index-metadata.json"
H100 = find_product("NVIDIA-H100-80GB-HBM3")
L4 = find_product("NVIDIA-L4")
A100 = find_product("NVIDIA-A100-SXM4-80GB")
VLLM = "vllm/vllm-openai:v0.11.0"


def checkpoint(tmp_path: Path, index_total: int | None = None, folder: str = "llama") -> Path:
    """A checkpoint folder in the project: the real Llama-3.1-8B config.json, and an index when asked."""
    where = tmp_path / folder
    where.mkdir(parents=True, exist_ok=True)
    shutil.copy(LLAMA_CONFIG, where / "config.json")
    if index_total is not None:
        (where / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {"total_size": index_total}, "weight_map": {}}))
    return where


def spec(tmp_path: Path, **block) -> ModelSpec:
    return ModelSpec.model_validate(block, context={"project_dir": str(tmp_path)})


def issues(model: ModelSpec, argv=(), gpus: int = 1, image: str = VLLM) -> list[str]:
    return [f"{i.path}: {i.message}" for i in model_issues("workloads[0].model", model, gpus, list(argv),
                                                           "workloads[0].args", image)]


# --- 6. the model block -------------------------------------------------------------------------------------------

def test_config_naming_a_checkpoint_folder_reads_its_config_json(tmp_path):
    checkpoint(tmp_path)
    model = spec(tmp_path, config="llama", maxModelLen=8192)
    assert model.hf_config["num_hidden_layers"] == 32 and model.index is None
    served = served_model(model, VLLM)
    assert served.weights == 2 * 8_030_261_248  # Llama-3.1-8B's published count at bf16
    assert served.kv.bytes_per_token == 2 * 32 * 8 * 128 * 2
    assert served.max_position == 131072 and served.args.max_model_len == 8192


def test_the_safetensors_index_beside_config_json_gives_the_stored_bytes(tmp_path):
    total = json.loads(LLAMA_INDEX.read_text())["metadata"]["total_size"]  # 16,060,522,496
    checkpoint(tmp_path, index_total=total)
    model = spec(tmp_path, config="llama", maxModelLen=8192)
    assert model.index["metadata"]["total_size"] == total
    served = served_model(model, VLLM)
    assert served.weights == total and "index" in served.weights_source
    # a larger index is used as given, not recomputed from config.json
    checkpoint(tmp_path, index_total=2 * total, folder="bigger")
    assert served_model(spec(tmp_path, config="bigger", maxModelLen=8192), VLLM).weights == pytest.approx(2 * total,
                                                                                                       rel=0.001)


def test_an_index_without_a_total_size_is_refused_naming_it(tmp_path):
    where = checkpoint(tmp_path)
    (where / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}}))
    with pytest.raises(ValidationError, match="total_size"):
        spec(tmp_path, config="llama", maxModelLen=8192)


def test_max_model_len_defaults_to_the_models_context(tmp_path):
    checkpoint(tmp_path)
    assert served_model(spec(tmp_path, config="llama"), VLLM).args.max_model_len == 131072


def test_flags_in_a_vllm_images_args_fill_the_fields_the_block_leaves_out(tmp_path):
    checkpoint(tmp_path)
    model = spec(tmp_path, config="llama")
    argv = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16k", "-tp", "2",
            "--max-num-seqs=8", "--gpu-memory-utilization", "0.85", "--kv-cache-dtype", "fp8", "--enforce-eager"]
    assert issues(model, argv, gpus=2) == []
    args = served_model(model, VLLM, argv).args
    assert (args.max_model_len, args.tensor_parallel, args.max_num_seqs) == (16000, 2, 8)
    assert args.gpu_memory_utilization == 0.85 and args.enforce_eager
    served = served_model(model, VLLM, argv)
    assert served.kv.bytes_per_token == 2 * 32 * 4 * 128 * 1  # TP 2 keeps 4 heads, fp8 one byte
    assert served.weights == pytest.approx(8_030_261_248, rel=0.01)  # half of the bf16 weights per GPU


def test_flags_of_an_image_that_is_not_vllm_are_not_read(tmp_path):
    checkpoint(tmp_path)
    model = spec(tmp_path, config="llama", maxModelLen=8192)
    argv = ["--max-model-len", "4096", "-tp", "2"]
    assert issues(model, argv, image="nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3") == []
    assert served_model(model, "nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3", argv).args.max_model_len == 8192


def test_a_flag_that_disagrees_with_the_block_is_an_issue_naming_args_and_both_values(tmp_path):
    checkpoint(tmp_path)
    model = spec(tmp_path, config="llama", maxModelLen=8192, maxNumSeqs=4)
    found = issues(model, ["--max-model-len", "4096", "--max-num-seqs", "4"])
    (line,) = found
    assert line.startswith("workloads[0].args:") and "maxModelLen" in line and "4096" in line and "8192" in line
    # the same value spelled another way agrees
    assert issues(spec(tmp_path, config="llama", maxModelLen=8192), ["--max-model-len=8K"]) == []


def test_a_bad_flag_value_is_an_issue_at_args(tmp_path):
    checkpoint(tmp_path)
    found = issues(spec(tmp_path, config="llama", maxModelLen=8192), ["--gpu-memory-utilization", "2"])
    assert any(line.startswith("workloads[0].args:") and "--gpu-memory-utilization" in line and "'2'" in line
               for line in found), found


def test_an_infinite_cpu_offload_is_an_issue_not_a_crash(tmp_path):
    checkpoint(tmp_path)
    found = issues(spec(tmp_path, config="llama", maxModelLen=8192), ["--cpu-offload-gb", "inf"])
    assert any("--cpu-offload-gb" in line for line in found), found


@pytest.mark.parametrize("tp,pp,dp,gpus,bad", [(2, 1, 1, 1, True), (2, 2, 1, 4, False), (2, 2, 2, 4, True),
                                               (1, 1, 4, 4, False), (4, 2, 1, 8, False), (4, 1, 3, 8, True)])
def test_more_parallel_ranks_than_gpus_is_an_issue(tmp_path, tp, pp, dp, gpus, bad):
    checkpoint(tmp_path)
    model = spec(tmp_path, config="llama", maxModelLen=8192, tensorParallel=tp, pipelineParallel=pp,
                 dataParallel=dp)
    found = [line for line in issues(model, gpus=gpus) if f"gpu.count is {gpus}" in line]
    assert bool(found) == bad, found
    if bad:
        assert found[0].startswith("workloads[0].model.tensorParallel:") and f"= {tp * pp * dp} GPUs" in found[0]


def test_the_ranks_given_by_flags_count_too(tmp_path):
    checkpoint(tmp_path)
    found = issues(spec(tmp_path, config="llama", maxModelLen=8192), ["-tp", "2", "-dp", "2"], gpus=2)
    assert any("= 4 GPUs, but gpu.count is 2" in line for line in found), found


def test_attention_heads_not_divisible_by_tensor_parallel_quote_vllm(tmp_path):
    checkpoint(tmp_path)
    found = issues(spec(tmp_path, config="llama", maxModelLen=8192, tensorParallel=3), gpus=4)
    assert any("Total number of attention heads (32) must be divisible by tensor parallel size (3)" in line
               for line in found), found
    assert not any("divisible" in line for line in issues(spec(tmp_path, config="llama", maxModelLen=8192,
                                                         tensorParallel=4), gpus=4))


def test_max_model_len_beyond_the_models_context_is_an_issue(tmp_path):
    checkpoint(tmp_path)
    found = issues(spec(tmp_path, config="llama", maxModelLen=200_000))
    assert any("maxModelLen" in line and "131072" in line for line in found), found


def test_engine_version_and_image_tag_set_the_default_utilization(tmp_path):
    checkpoint(tmp_path)
    model = spec(tmp_path, config="llama", maxModelLen=8192)
    assert served_model(model, "vllm/vllm-openai:v0.11.0").args.gpu_memory_utilization == 0.9
    assert served_model(model, "vllm/vllm-openai:v0.21.0").args.gpu_memory_utilization == 0.92
    assert served_model(model, "vllm/vllm-openai:v0.21.0").args.version == (0, 21)
    pinned = spec(tmp_path, config="llama", maxModelLen=8192, engineVersion="0.21.1")
    assert served_model(pinned, "vllm/vllm-openai:latest").args.gpu_memory_utilization == 0.92


def test_facts_by_hand_need_parameters_layers_and_kv_heads():
    found = issues(ModelSpec.model_validate({"layers": 32, "maxModelLen": 8192}))
    for key in ("parameters", "kvHeads", "headDim"):
        assert any(line.startswith(f"workloads[0].model.{key}:") for line in found), found


def _stack(tmp_path: Path, product: str, model: dict, args: list[str] | None = None, gpu: dict | None = None,
           sharing: dict | None = None) -> Path:
    pool = {"name": "p", "nodes": ["n0"], "gpu": {"product": product, "count": 1}}
    if sharing:
        pool["sharing"] = sharing
    w = {"kind": "inference", "name": "llm", "image": VLLM, "nodePool": "p", "gpu": gpu or {"count": 1},
         "model": model}
    if args:
        w["args"] = args
    (tmp_path / "Pulumi.t.yaml").write_text(yaml.safe_dump({"config": {"gpufleet:nodePools": [pool],
                                                                       "gpufleet:workloads": [w]}}))
    return tmp_path


def test_a_disagreeing_flag_fails_loading_the_stack(tmp_path):
    checkpoint(tmp_path)
    stack = _stack(tmp_path, "NVIDIA-H100-80GB-HBM3", {"config": "llama", "maxModelLen": 8192},
                   args=["--max-model-len", "4096"])
    with pytest.raises(ConfigError) as e:
        load_stack("t", stack)
    assert any("gpufleet:workloads[0].args" in line and "4096" in line and "8192" in line
               for line in str(e.value).splitlines())


# --- the stack's memory check of a model ----------------------------------------------------------------------------

def test_a_model_refused_on_its_pools_gpu_is_a_memory_error(tmp_path):
    checkpoint(tmp_path)
    loaded = load_stack("t", _stack(tmp_path, "NVIDIA-L4", {"config": "llama", "maxModelLen": 131072}))
    (problem,) = memory_budget(loaded.config)
    assert problem.error and not problem.advisory
    assert "To serve at least one request with the models's max seq len (131072)" in problem.message
    assert "NVIDIA-L4" in problem.message and "maxModelLen" in problem.message.split("Fixes:")[1]


def test_a_concurrency_shortfall_is_advisory_and_only_with_max_num_seqs(tmp_path):
    checkpoint(tmp_path)
    loaded = load_stack("t", _stack(tmp_path, "NVIDIA-H100-80GB-HBM3",
                                    {"config": "llama", "maxModelLen": 131072, "maxNumSeqs": 8}))
    (problem,) = memory_budget(loaded.config)
    assert problem.advisory and not problem.error
    assert "Maximum concurrency for 131,072 tokens per request" in problem.message
    loaded = load_stack("t", _stack(tmp_path, "NVIDIA-H100-80GB-HBM3", {"config": "llama", "maxModelLen": 131072}))
    assert memory_budget(loaded.config) == []


def test_a_model_that_starts_has_no_memory_problem(tmp_path):
    checkpoint(tmp_path)
    loaded = load_stack("t", _stack(tmp_path, "NVIDIA-L4", {"config": "llama", "maxModelLen": 8192,
                                                             "maxNumSeqs": 1}))
    assert memory_budget(loaded.config) == []


def test_a_declared_memory_mib_is_checked_instead_of_the_model(tmp_path):
    checkpoint(tmp_path)
    loaded = load_stack("t", _stack(tmp_path, "NVIDIA-L4", {"config": "llama", "maxModelLen": 131072},
                                    gpu={"count": 1, "memoryMiB": 20000}))
    assert not any("vLLM" in p.message for p in memory_budget(loaded.config))


# --- devices from GFD labels ----------------------------------------------------------------------------------------

GFD_H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559"}


def _device(labels: dict, resource: str = "nvidia.com/gpu"):
    return node_device(node_from_object(node("n", 1, resource=resource, labels=labels)), {resource: 1})


def test_a_whole_gpu_from_gfd_labels_is_the_labelled_memory():
    d = _device(GFD_H100)
    assert (d.kind, d.memory_mib, d.mig, d.a100) == ("gpu", 81559, False, False)
    assert d.visible / GIB == pytest.approx(79.2, abs=0.1)


def test_an_a100_keeps_vllms_small_defaults():
    d = _device({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.memory": "81920"})
    assert d.a100
    served = served_model(ModelSpec.model_validate({"parameters": 8_030_261_248, "layers": 32, "kvHeads": 8,
                                                    "headDim": 128, "maxModelLen": 8192}), VLLM)
    assert judge("w", served, [d]).assessment.startup.max_num_seqs == 256


def test_a_mig_instance_is_its_memory_label_and_seen_whole_by_cuda():
    labels = {**GFD_H100, "nvidia.com/mig-3g.40gb.memory": "40320"}
    d = _device(labels, "nvidia.com/mig-3g.40gb")
    assert (d.kind, d.memory_mib, d.mig) == ("mig", 40320, True)
    assert d.visible == 40320 * MIB


def test_a_single_strategy_mig_node_reads_the_profile_from_the_product_label():
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "nvidia.com/gpu.memory": "9856"}
    d = _device(labels)
    assert (d.kind, d.memory_mib) == ("mig", 9856)


def test_an_mps_node_pins_total_over_replicas_and_the_engine_sees_the_whole_gpu():
    labels = {**GFD_H100, "nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "4"}
    d = _device(labels)
    assert (d.kind, d.limit_mib, d.memory_mib) == ("mps", 81559 // 4, 81559)


def test_a_time_sliced_node_is_the_whole_gpu_shared():
    labels = {**GFD_H100, "nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.replicas": "4"}
    assert _device(labels).kind == "time-slicing"


def test_no_gpu_requested_or_no_memory_known_gives_no_device():
    n = node_from_object(node("n", 1, labels=GFD_H100))
    assert node_device(n, {"cpu": 1}) is None
    bare = node_from_object(node("n", 1, labels={}))
    assert node_device(bare, {"nvidia.com/gpu": 1}) is None


def test_judge_is_an_error_only_when_every_device_refuses():
    served = served_model(ModelSpec.model_validate({"parameters": 8_030_261_248, "layers": 32, "kvHeads": 8,
                                                    "headDim": 128, "maxModelLen": 131072}), VLLM)
    l4, h100 = whole_gpu(L4), whole_gpu(H100)
    assert judge("w", served, [l4, l4]).error is not None
    mixed = judge("w", served, [l4, h100])
    assert mixed.error is None and any("on 1 of 2 eligible nodes" in w for w in mixed.warnings)
    assert judge("w", served, [h100]).warnings == []


def test_share_devices_are_named_for_messages():
    assert "MIG 3g.40gb" in mig_instance(H100, "3g.40gb", 40320).what
    assert "1/4 of NVIDIA-H100-80GB-HBM3" in mps_slice(H100, 4).what
    assert time_sliced(H100).kind == "time-slicing"
    assert whole_gpu(A100).a100 and not whole_gpu(H100).a100


def test_a_dra_device_is_its_published_memory_and_a_mig_device_is_seen_as_such():
    served = served_model(ModelSpec.model_validate({"parameters": 8_030_261_248, "layers": 32, "kvHeads": 8,
                                                    "headDim": 128, "maxModelLen": 131072}), VLLM)
    gpu = dra_device("gpu.nvidia.com/gpu-0", 81559)
    assert gpu.kind == "dra" and not gpu.mig and "gpu.nvidia.com/gpu-0 (81559 MiB)" in gpu.what
    assert judge("w", served, [gpu]).error is None
    mig = dra_device("gpu.nvidia.com/gpu-0-mig-2g.20gb-0", 20096)
    assert mig.mig and mig.visible == 20096 * MIB
    verdict = judge("w", served, [mig])
    assert verdict.error is not None and "the allocated DRA device gpu.nvidia.com/gpu-0-mig-2g.20gb-0" in verdict.error
