"""Enter a recorded vLLM start-up (tests/fixtures/vllm-logs/records.json) into gpufleet as a user would, and
compare: the record's model (its config.json under tests/fixtures/checkpoints/), its GPU, its flags.

Shared by tests/nvidia/test_vllm_log_predictions.py and scripts/vllm_log_compare.py.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpufleet.capacity.model_fit import whole_gpu
from gpufleet.config.model import ModelSpec
from gpufleet.config.model_serving import served_model
from gpufleet.nvidia.model_memory.verdict import Device, assess, safe_length
from gpufleet.nvidia.products import find_product

CHECKPOINTS = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
GIB = 1 << 30
#: Bars of the model-memory issue.
WEIGHTS_TOLERANCE = 0.03
KV_TOLERANCE = 0.15
LENGTH_TOLERANCE = 0.15
#: A record's GPU name (as the reporter wrote it) -> the GFD product; the first pattern that matches wins.
GPU_NAMES = (
    (r"H100.*NVL", "NVIDIA-H100-NVL"), (r"H100.*PCIe", "NVIDIA-H100-PCIe"), (r"H100", "NVIDIA-H100-80GB-HBM3"),
    (r"H200", "NVIDIA-H200"), (r"B200", "NVIDIA-B200"), (r"A100.*40", "NVIDIA-A100-SXM4-40GB"),
    (r"A100|A800", "NVIDIA-A100-SXM4-80GB"), (r"L40S", "NVIDIA-L40S"), (r"\bL40\b", "NVIDIA-L40"),
    (r"\bL4\b", "NVIDIA-L4"), (r"A10G", "NVIDIA-A10G"), (r"\bA10\b", "NVIDIA-A10"), (r"\bT4\b", "Tesla-T4"),
    (r"4090", "NVIDIA-GeForce-RTX-4090"), (r"3090", "NVIDIA-GeForce-RTX-3090"), (r"5090", "NVIDIA-GeForce-RTX-5090"),
    (r"A6000", "NVIDIA-RTX-A6000"), (r"6000 Ada", "NVIDIA-RTX-6000-Ada-Generation"),
)


def checkpoint_dir(model: str | None) -> Path | None:
    if not model:
        return None
    folder = CHECKPOINTS / model.replace("/", "__")
    return folder if (folder / "config.json").is_file() else None


def device_of(record: dict) -> Device | None:
    total = record.get("gpu_total_gib")
    name = record.get("gpu") or ""
    product = next((find_product(key) for pattern, key in GPU_NAMES if re.search(pattern, name, re.I)), None)
    if isinstance(total, (int, float)) and not isinstance(total, bool) and total > 0:
        mib = product.memory_mib if product else round(total * 1024)
        return Device("gpu", mib, f"{name or 'a GPU'} ({total} GiB)", a100=bool(re.search("A100|A800", name)),
                      cuda_total_mib=total * 1024)
    return whole_gpu(product) if product else None


def usable(record: dict) -> str | None:
    """Why a record cannot be entered (None: it can)."""
    if checkpoint_dir(record.get("model")) is None:
        return "no config.json fixture"
    if device_of(record) is None:
        return "GPU unknown"
    if record.get("started") is None:
        return "outcome unknown"
    try:
        served_model(spec_of(record), "vllm", argv_of(record))
    except ValueError as e:
        return f"not enterable: {e}"
    return None


def argv_of(record: dict) -> list[str]:
    flags = {"--max-model-len": record.get("max_model_len"), "--max-num-seqs": record.get("max_num_seqs"),
             "--max-num-batched-tokens": record.get("max_num_batched_tokens"),
             "--gpu-memory-utilization": record.get("gpu_memory_utilization"),
             "--tensor-parallel-size": record.get("tensor_parallel_size"),
             "--pipeline-parallel-size": record.get("pipeline_parallel_size"),
             "--data-parallel-size": record.get("data_parallel_size"), "--kv-cache-dtype": record.get("kv_cache_dtype")}
    argv = [item for flag, value in flags.items() if value is not None for item in (flag, str(value))]
    if record.get("enforce_eager"):
        argv.append("--enforce-eager")
    if record.get("enable_expert_parallel"):
        argv.append("--enable-expert-parallel")
    return argv


def spec_of(record: dict) -> ModelSpec:
    doc = {"name": record["model"], "config": str(checkpoint_dir(record["model"]))}
    version = record.get("vllm_version")
    if isinstance(version, str) and re.match(r"^v?\d+\.\d+(\.\d+)?$", version):
        doc["engineVersion"] = version
    quant = record.get("quantization")
    folder = checkpoint_dir(record["model"])
    import json

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if quant in ("fp8", "bitsandbytes") and "quantization_config" not in config:
        doc["quantization"] = quant  # quantized on the fly (--quantization)
    return ModelSpec.model_validate(doc, context={"project_dir": Path(".")})


def predict(record: dict) -> dict:
    """gpufleet's figures for the record, and which of the issue's bars they meet (None: not comparable)."""
    spec = spec_of(record)
    argv = argv_of(record)
    served = served_model(spec, "vllm", argv)
    device = device_of(record)
    a = assess(record["id"], served, device)
    s = a.startup
    out = {"weights_gib": s.weights / GIB, "available_kv_gib": s.kv_available / GIB, "kv_tokens": s.kv_tokens,
           "starts": a.error is None, "largest_max_model_len": s.largest_max_model_len,
           "activation_gib": s.activation / GIB, "requested_gib": s.requested / GIB}
    checks = {"verdict": out["starts"] == record["started"], "weights": None, "kv_tokens": None, "kv_gib": None,
              "length": None}
    if record.get("weights_gib"):
        checks["weights"] = abs(out["weights_gib"] / record["weights_gib"] - 1) <= WEIGHTS_TOLERANCE
    if record.get("kv_tokens") and record["started"]:
        checks["kv_tokens"] = abs(s.kv_tokens / record["kv_tokens"] - 1) <= KV_TOLERANCE
    if record.get("available_kv_gib") and record["available_kv_gib"] > 0:
        checks["kv_gib"] = abs(out["available_kv_gib"] / record["available_kv_gib"] - 1) <= KV_TOLERANCE
    actual = record.get("estimated_max_model_len")
    if actual:
        suggested = safe_length(s.largest_max_model_len) if s.largest_max_model_len else None
        checks["length"] = suggested is not None and (1 - LENGTH_TOLERANCE) * actual <= suggested <= actual
        out["suggested_max_model_len"] = suggested
    out["checks"] = checks
    return out
