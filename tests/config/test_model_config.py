"""The `model:` block: facts from a config.json kept in the project, and every problem with a YAML path."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpufleet.config.loading import load_stack
from gpufleet.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
BASE = {
    "gpufleet:nodePools": [{"name": "h100", "nodes": ["n0"], "gpu": {"product": "NVIDIA-H100-80GB-HBM3", "count": 1}}],
}


def _stack(tmp_path: Path, model: dict, gpu: dict | None = None) -> Path:
    workload = {"kind": "inference", "name": "llm", "image": "vllm/vllm-openai:v0.11.0", "nodePool": "h100",
                "gpu": gpu or {"count": 1}, "model": model}
    (tmp_path / "Pulumi.t.yaml").write_text(yaml.safe_dump({"config": {**BASE, "gpufleet:workloads": [workload]}}))
    return tmp_path


def _issues(tmp_path: Path) -> list[str]:
    with pytest.raises(ConfigError) as e:
        load_stack("t", tmp_path)
    return str(e.value).splitlines()


def test_facts_come_from_the_config_json_relative_to_the_project(tmp_path):
    (tmp_path / "m").mkdir()
    shutil.copy(ROOT / "models/llama-3.1-8b/config.json", tmp_path / "m/config.json")
    cfg = load_stack("t", _stack(tmp_path, {"config": "m/config.json", "maxModelLen": 8192})).config
    model = cfg.workloads[0].model
    assert [model.fact(k) for k in ("layers", "kv_heads", "head_dim", "dtype", "max_position_embeddings")] == [
        32, 8, 128, "bf16", 131072]
    from gpufleet.config.model_serving import served_model

    served = served_model(model, cfg.workloads[0].image)
    assert served.weights == 8_030_261_248 * 2  # every parameter in bf16 (the index's total_size, 16,060,522,496)
    assert served.kv.bytes_per_token == 2 * 32 * 8 * 128 * 2


def test_facts_written_beside_config_win(tmp_path):
    (tmp_path / "config.json").write_text((ROOT / "models/llama-3.1-8b/config.json").read_text())
    cfg = load_stack("t", _stack(tmp_path, {"config": "config.json", "maxModelLen": 8192, "dtype": "fp8",
                                            "layers": 16})).config
    assert cfg.workloads[0].model.dtype == "fp8" and cfg.workloads[0].model.layers == 16


def test_missing_config_json_names_the_yaml_path_and_the_file(tmp_path):
    lines = _issues(_stack(tmp_path, {"config": "models/nope/config.json", "maxModelLen": 8192}))
    assert any("gpufleet:workloads[0].model.config" in line and "'models/nope/config.json'" in line
               and "does not exist" in line for line in lines), lines


def test_config_json_that_is_not_json_or_lacks_fields_is_a_config_error(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    lines = _issues(_stack(tmp_path, {"config": "bad.json", "maxModelLen": 8192}))
    assert any("workloads[0].model.config" in line and "'bad.json'" in line and "is not JSON" in line
               for line in lines), lines
    (tmp_path / "bad.json").write_text(json.dumps({"hidden_size": 4096}))
    lines = _issues(_stack(tmp_path, {"config": "bad.json", "maxModelLen": 8192}))
    assert any("workloads[0].model.config" in line and "num_hidden_layers" in line for line in lines), lines


def test_every_missing_fact_and_bad_value_is_reported_at_once(tmp_path):
    lines = _issues(_stack(tmp_path, {"layers": 32, "dtype": "fp4", "tensorParallel": 2}))
    text = "\n".join(lines)
    assert "gpufleet:workloads[0].model.dtype" in text and "fp4" in text
    stack = _stack(tmp_path, {"layers": 32, "tensorParallel": 2})
    text = "\n".join(_issues(stack))
    for path in ("model.parameters", "model.kvHeads", "model.headDim", "model.maxModelLen", "model.tensorParallel"):
        assert f"gpufleet:workloads[0].{path}" in text, text
    assert "unknown key 'kvheads'" in "\n".join(_issues(_stack(tmp_path, {"kvheads": 8})))


def test_max_model_len_beyond_the_models_context_is_refused(tmp_path):
    model = {"parameters": 10**9, "layers": 16, "kvHeads": 8, "headDim": 64, "maxPositionEmbeddings": 8192,
             "maxModelLen": 16384}
    issues = _issues(_stack(tmp_path, model))
    assert any("model.maxModelLen" in line and "allowed: 1 to 8192" in line for line in issues)


def test_a_declared_memory_that_disagrees_with_the_model_is_a_warning(tmp_path):
    model = {"parameters": 8_030_261_248, "layers": 32, "kvHeads": 8, "headDim": 128, "maxModelLen": 8192}
    loaded = load_stack("t", _stack(tmp_path, model, {"count": 1, "memoryMiB": 4000}))
    [warning] = [w for w in loaded.warnings if "gpufleet:workloads[0]: gpu.memoryMiB 4000 disagrees with the" in w]
    # weights 15,316 MiB + one 8,192-token request 1,024 MiB + activation and runtime: about 17.5 GiB to start
    need = int(warning.split("disagrees with the ")[1].split(" MiB")[0])
    assert 15316 + 1024 < need < 15316 + 1024 + 2048, warning


def test_schema_lists_the_model_block():
    out = subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", "schema"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert "maxNumSeqs" in out.stdout and "kvCacheDtype" in out.stdout


def test_tensor_parallel_must_divide_the_attention_heads_of_the_config(tmp_path):
    (tmp_path / "config.json").write_text((ROOT / "models/llama-3.1-8b/config.json").read_text())
    lines = _issues(_stack(tmp_path, {"config": "config.json", "maxModelLen": 8192, "tensorParallel": 3},
                           {"count": 4}))
    assert any("model.tensorParallel: 32 attention heads do not divide by 3" in line for line in lines), lines


def test_vllm_flags_agree_by_meaning_not_spelling(tmp_path):
    model = {"parameters": 8_030_261_248, "layers": 32, "kvHeads": 8, "headDim": 128, "maxModelLen": 8192,
             "kvCacheDtype": "fp8"}
    stack = _stack(tmp_path, model)
    doc = yaml.safe_load((stack / "Pulumi.t.yaml").read_text())
    doc["config"]["gpufleet:workloads"][0]["args"] = ["--kv-cache-dtype", "fp8_e4m3", "--max-model-len=8192"]
    (stack / "Pulumi.t.yaml").write_text(yaml.safe_dump(doc))
    assert load_stack("t", stack).config.workloads[0].model.kv_cache_dtype == "fp8"
    doc["config"]["gpufleet:workloads"][0]["args"] = ["--kv-cache-dtype", "bfloat16"]
    (stack / "Pulumi.t.yaml").write_text(yaml.safe_dump(doc))
    assert any("workloads[0].args: --kv-cache-dtype bfloat16 disagrees with workloads[0].model.kvCacheDtype fp8"
               in line for line in _issues(stack))


def _vllm_stack(tmp_path: Path, args: list[str], model: dict | None = None) -> Path:
    workload = {"kind": "inference", "name": "llm", "image": "vllm/vllm-openai:v0.11.0", "nodePool": "h100",
                "gpu": {"count": 1}, "args": args, **({"model": model} if model else {})}
    config = {**BASE, "gpufleet:workloads": [workload]}
    (tmp_path / "Pulumi.t.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


BY_HAND = {"parameters": 8_000_000_000, "layers": 32, "kvHeads": 8, "headDim": 128,
           "maxPositionEmbeddings": 131072}


@pytest.mark.parametrize("model", [None, BY_HAND], ids=["no model block", "model block"])
def test_a_vllm_flag_the_images_release_refuses_is_a_config_error_at_args(tmp_path, model):
    lines = _issues(_vllm_stack(tmp_path, ["--model", "m", "--max-model-length", "8192"], model))
    assert any("gpufleet:workloads[0].args" in line and "--max-model-length: no such flag in vLLM 0.11.0" in line
               and "did you mean --max-model-len?" in line for line in lines), lines


def test_real_vllm_flags_gpufleet_does_not_model_load(tmp_path):
    args = ["--model", "m", "--port", "8000", "--enable-prefix-caching", "--max_model_len", "8192",
            "--served-model-name", "chat"]
    cfg = load_stack("t", _vllm_stack(tmp_path, args)).config
    assert cfg.workloads[0].args[-1] == "chat"
