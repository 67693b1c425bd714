#!/usr/bin/env python3
"""Compare today's gpufleet model-memory estimates with real vLLM start-up logs (a developer script, not a test).

Reads tests/fixtures/vllm-logs/records.json (figures quoted from public vLLM V1 logs, each with its URL) and,
for every record whose model gpufleet can describe, prints gpufleet's estimate next to the log's figure and the
error ratio (gpufleet / log - 1):

- weights per GPU      gpufleet `weights_bytes(shape, tp)`            vs "Model loading took X GiB"
- KV for one sequence  `kv_bytes_per_token x tokens_per_sequence`     vs the refusal's "X GiB KV cache is needed"
- KV capacity, tokens  (usable budget - weights - activation - runtime) // KV bytes per token, whole blocks
                                                                       vs "GPU KV cache size: N tokens"
- verdict              `fits()` at maxNumSeqs 1 (the start question)   vs started / refused
- largest maxModelLen  `largest_max_model_len()` at maxNumSeqs 1      vs vLLM's "estimated maximum model length"
                                                                         (refusals) or its KV tokens (starts)

then a summary: verdicts that agree, weights within 3%, KV tokens within 15% (the bars of issue 16).

How gpufleet describes a model: from a config.json it ships (gpufleet/nvidia/hf_config.py derives the parameter
count for dense Llama / Mistral / Qwen2 only), which today covers none of the collected records' models
(models/llama-3.1-8b, tests/fixtures/models/qwen2.5-7b). With `--supplied`, the script also uses the facts in
SUPPLIED below (config.json fields and model-card parameter counts, each with its URL) entered as a user would
write a `model:` block; without it those records are skipped with a note. Quantized checkpoints are entered
with the dtype a user would pick in gpufleet (fp8 -> fp8; awq, gptq, bitsandbytes 4-bit, mxfp4 -> int4).
gpufleet ignores --gpu-memory-utilization, pipeline and data parallelism: the script passes what gpufleet
accepts and says what it left out. Nothing in gpufleet is changed.

Usage: .venv/bin/python scripts/vllm_log_compare.py [--supplied] [--records PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpufleet.nvidia.hf_config import hf_config_facts  # noqa: E402
from gpufleet.nvidia.model_budget import Budget, fits, largest_max_model_len, whole_gpu_budget  # noqa: E402
from gpufleet.nvidia.model_memory import (  # noqa: E402
    BLOCK_SIZE, GIB, MIB, ModelShape, Serving, activation_bytes, kv_bytes_per_token, non_torch_bytes,
    tokens_per_sequence, weights_bytes,
)
from gpufleet.nvidia.products import find_product  # noqa: E402

RECORDS = ROOT / "tests" / "fixtures" / "vllm-logs" / "records.json"

#: Config files gpufleet ships, by Hugging Face id.
SHIPPED_CONFIGS = {
    "meta-llama/Llama-3.1-8B-Instruct": ROOT / "models" / "llama-3.1-8b" / "config.json",
    "Qwen/Qwen2.5-7B-Instruct": ROOT / "tests" / "fixtures" / "models" / "qwen2.5-7b" / "config.json",
}

#: Facts for models gpufleet does not ship (only with --supplied): num_hidden_layers, num_key_value_heads,
#: head_dim and max_position_embeddings from each config.json; total parameters from the model card (MoE: all
#: experts). Cross-check against the logs: 2 x 62 x 8 x 128 x 2 B x 262,144 = 62.00 GiB and
#: 2 x 48 x 4 x 128 x 2 B x 262,144 = 24.0 GiB, the "KV cache is needed" figures vLLM printed.
SUPPLIED: dict[str, dict] = {
    "Qwen/Qwen3-14B": dict(parameters=14_800_000_000, layers=40, kv_heads=8, head_dim=128, moe=False,
                           architecture="Qwen3ForCausalLM", max_position_embeddings=40960,
                           cite="https://huggingface.co/Qwen/Qwen3-14B (14.8B parameters; config.json)"),
    "Qwen/Qwen3-235B-A22B-FP8": dict(parameters=235_000_000_000, layers=94, kv_heads=4, head_dim=128, moe=True,
                                     architecture="Qwen3MoeForCausalLM", max_position_embeddings=40960,
                                     cite="https://huggingface.co/Qwen/Qwen3-235B-A22B-FP8 (235B total; config.json)"),
    "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8": dict(
        parameters=30_500_000_000, layers=48, kv_heads=4, head_dim=128, moe=True,
        architecture="Qwen3MoeForCausalLM", max_position_embeddings=262144,
        cite="https://huggingface.co/Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8 (30.5B total; config.json)"),
    "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8": dict(
        parameters=480_000_000_000, layers=62, kv_heads=8, head_dim=128, moe=True,
        architecture="Qwen3MoeForCausalLM", max_position_embeddings=262144,
        cite="https://huggingface.co/Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8 (480B total; config.json)"),
    "openai/gpt-oss-20b": dict(parameters=21_000_000_000, layers=24, kv_heads=8, head_dim=64, moe=True,
                               architecture="GptOssForCausalLM", max_position_embeddings=131072,
                               cite="https://huggingface.co/openai/gpt-oss-20b (21B parameters; config.json; "
                                    "half the layers use a 128-token sliding window, which gpufleet does not model)"),
    "openai/gpt-oss-120b": dict(parameters=117_000_000_000, layers=36, kv_heads=8, head_dim=64, moe=True,
                                architecture="GptOssForCausalLM", max_position_embeddings=131072,
                                cite="https://huggingface.co/openai/gpt-oss-120b (117B parameters; config.json; "
                                     "half the layers use a 128-token sliding window, which gpufleet does not model)"),
}

#: How a user enters a checkpoint's weight format in gpufleet today (`model.dtype`).
QUANT_TO_DTYPE = {None: None, "fp8": "fp8", "awq": "int4", "gptq": "int4", "bitsandbytes": "int4",
                  "mxfp4": "int4", "compressed-tensors": None}
KV_DTYPE = {None: "auto", "auto": "auto", "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}

#: GPU names as users print them -> gpufleet products (only unambiguous ones).
GPU_ALIASES = {"H100": "NVIDIA-H100-80GB-HBM3", "H100 80GB": "NVIDIA-H100-80GB-HBM3",
               "NVIDIA H100 80GB HBM3": "NVIDIA-H100-80GB-HBM3", "A100 80G": "NVIDIA-A100-SXM4-80GB"}


def shape_for(record: dict, supplied: bool) -> tuple[ModelShape | None, str]:
    """gpufleet's ModelShape for the record's model, and where it came from (or why there is none)."""
    model = record["model"]
    if model is None:
        return None, "the log does not name the model"
    dtype = QUANT_TO_DTYPE.get(record["quantization"], None)
    if record["quantization"] is not None and dtype is None:
        return None, f"gpufleet has no dtype for {record['quantization']} checkpoints"
    kv = KV_DTYPE.get(record["kv_cache_dtype"])
    if kv is None:
        return None, f"gpufleet has no KV dtype {record['kv_cache_dtype']}"
    if model in SHIPPED_CONFIGS:
        facts = hf_config_facts(json.loads(SHIPPED_CONFIGS[model].read_text()))
        if "parameters" not in facts:
            return None, f"{SHIPPED_CONFIGS[model]} gives no parameter count"
        return ModelShape(facts["parameters"], facts["layers"], facts["kv_heads"], facts["head_dim"],
                          dtype or facts.get("dtype", "bf16"), kv, facts["architecture"], facts["moe"],
                          facts.get("max_position_embeddings")), f"shipped {SHIPPED_CONFIGS[model].relative_to(ROOT)}"
    if model in SUPPLIED:
        if not supplied:
            return None, "gpufleet ships no config.json for it (run with --supplied to enter its facts)"
        f = SUPPLIED[model]
        return ModelShape(f["parameters"], f["layers"], f["kv_heads"], f["head_dim"], dtype or "bf16", kv,
                          f["architecture"], f["moe"], f["max_position_embeddings"]), "supplied: " + f["cite"]
    return None, "gpufleet ships no config.json for it and the script supplies none (vision or unknown model)"


def budget_for(record: dict) -> tuple[Budget | None, str]:
    name = record["gpu"]
    product = find_product(GPU_ALIASES.get(name, name)) if name else None
    if product is not None:
        return whole_gpu_budget(product), product.key
    if record["gpu_total_gib"] is not None:
        mib = round(record["gpu_total_gib"] * 1024)
        return Budget("gpu", mib, mib, f"a {mib} MiB GPU"), f"{record['gpu_total_gib']} GiB as printed"
    return None, f"GPU {name!r} unknown to gpufleet and its total not printed"


def kv_capacity_tokens(shape: ModelShape, tp: int, budget: Budget) -> int:
    """The KV tokens gpufleet's need model leaves room for: usable - weights - activation - runtime."""
    free = budget.usable_mib * MIB - weights_bytes(shape, tp) - activation_bytes(shape) - non_torch_bytes(tp)
    per_token = kv_bytes_per_token(shape, tp)
    return max(0, int(free // (per_token * BLOCK_SIZE)) * BLOCK_SIZE)


def ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or theirs is None or theirs == 0:
        return None
    return ours / theirs - 1


def pct(r: float | None) -> str:
    return "   -  " if r is None else f"{r * 100:+6.1f}%"


def num(v, fmt="{:,.2f}") -> str:
    return "-" if v is None else fmt.format(v)


def compare(record: dict, supplied: bool) -> dict:
    row: dict = {"id": record["id"], "source": record["source"], "notes": []}
    shape, how = shape_for(record, supplied)
    row["shape"] = how
    if shape is None:
        row["skipped"] = how
        return row
    tp = record["tensor_parallel_size"] or 1
    if record["pipeline_parallel_size"] not in (None, 1):
        row["notes"].append(f"pipeline parallel {record['pipeline_parallel_size']} not modelled (whole model on one GPU)")
    if record["data_parallel_size"] not in (None, 1):
        row["notes"].append(f"data parallel {record['data_parallel_size']}: compared per replica"
                            + ("; with expert parallelism vLLM splits the experts over the replicas, which gpufleet"
                               " cannot express, so its per-GPU weights are not vLLM's" if shape.moe else ""))
    util = record["gpu_memory_utilization"]
    if util is not None and util != 0.9:
        row["notes"].append(f"--gpu-memory-utilization {util} ignored by gpufleet (uses 0.9)")
    mml = record["max_model_len"] or shape.max_position_embeddings
    serving = Serving(mml, 1, tp)

    row["weights"] = (weights_bytes(shape, tp) / GIB, record["weights_gib"])
    per_seq = kv_bytes_per_token(shape, tp) * tokens_per_sequence(mml)
    row["kv_one_seq"] = (per_seq / GIB, record["kv_needed_gib"])
    budget, gpu = budget_for(record)
    row["gpu"] = gpu
    if budget is None:
        row["notes"].append(gpu)
        return row
    cap = kv_capacity_tokens(shape, tp, budget)
    row["kv_tokens"] = (cap, record["kv_tokens"])
    row["verdict"] = ("start" if fits(shape, serving, budget) else "refuse",
                      None if record["started"] is None else ("start" if record["started"] else "refuse"))
    if record["refusal_kind"] in ("oom_loading", "oom_profiling", "oom") and row["verdict"][0] == "start":
        row["notes"].append("vLLM ran out of memory (not a KV check)")
    largest = largest_max_model_len(shape, replace(serving, max_num_seqs=1), budget)
    # The largest max_model_len vLLM would accept: its own estimate when it refused; when it started, the KV
    # tokens it holds, capped by the model's own limit (vLLM refuses a max_model_len beyond that).
    if not record["started"]:
        engine_largest = record["estimated_max_model_len"]
    elif record["kv_tokens"] is not None:
        engine_largest = min(record["kv_tokens"], shape.max_position_embeddings or record["kv_tokens"])
    else:
        engine_largest = None
    row["max_model_len"] = (largest, engine_largest)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--supplied", action="store_true", help="also use SUPPLIED facts for unshipped models")
    parser.add_argument("--records", type=Path, default=RECORDS)
    args = parser.parse_args(argv)
    records = json.loads(args.records.read_text(encoding="utf-8"))
    rows = [compare(r, args.supplied) for r in records]

    print(f"{len(records)} records from {args.records.relative_to(ROOT) if args.records.is_relative_to(ROOT) else args.records}"
          f"; gpufleet estimates {'with' if args.supplied else 'without'} supplied model facts\n")
    for row in rows:
        print(f"== {row['id']}  ({row['source']})")
        if "skipped" in row:
            print(f"   skipped: {row['skipped']}\n")
            continue
        print(f"   model facts: {row['shape']}")
        if "gpu" in row:
            print(f"   GPU: {row['gpu']}")
        w_ours, w_log = row["weights"]
        print(f"   weights/GPU GiB   gpufleet {num(w_ours):>12}  log {num(w_log):>12}  {pct(ratio(w_ours, w_log))}")
        k_ours, k_log = row["kv_one_seq"]
        print(f"   KV one seq GiB    gpufleet {num(k_ours):>12}  log {num(k_log):>12}  {pct(ratio(k_ours, k_log))}")
        if "kv_tokens" in row:
            c_ours, c_log = row["kv_tokens"]
            print(f"   KV tokens         gpufleet {num(c_ours, '{:,}'):>12}  log {num(c_log, '{:,}'):>12}  "
                  f"{pct(ratio(c_ours, c_log))}")
            v_ours, v_log = row["verdict"]
            agree = "agree" if v_ours == v_log else "DISAGREE"
            print(f"   verdict           gpufleet {v_ours:>12}  log {v_log or '-':>12}  {agree}")
            m_ours, m_log = row["max_model_len"]
            print(f"   largest maxModelLen gpufleet {num(m_ours, '{:,}'):>10}  vLLM {num(m_log, '{:,}'):>11}  "
                  f"{pct(ratio(m_ours, m_log))}")
        for note in row["notes"]:
            print(f"   note: {note}")
        print()

    compared = [r for r in rows if "skipped" not in r]
    verdicts = [r for r in compared if "verdict" in r and r["verdict"][1] is not None]
    weights = [r for r in compared if r["weights"][1] is not None]
    kv = [r for r in compared if "kv_tokens" in r and r["kv_tokens"][1] is not None]
    kv_seq = [r for r in compared if r["kv_one_seq"][1] is not None]
    lens = [r for r in compared if "max_model_len" in r and None not in r["max_model_len"]]

    def within(rs, key, tol):
        return sum(1 for r in rs if abs(ratio(*r[key])) <= tol)

    print("== summary")
    print(f"   records: {len(records)}; described by gpufleet: {len(compared)}; skipped: {len(rows) - len(compared)}")
    print(f"   start/refuse verdicts agree:        {sum(r['verdict'][0] == r['verdict'][1] for r in verdicts)}"
          f" of {len(verdicts)}")
    print(f"   weights per GPU within 3%:          {within(weights, 'weights', 0.03)} of {len(weights)}")
    print(f"   KV tokens within 15%:               {within(kv, 'kv_tokens', 0.15)} of {len(kv)}")
    print(f"   KV for one sequence within 1%:      {within(kv_seq, 'kv_one_seq', 0.01)} of {len(kv_seq)}")
    print(f"   largest maxModelLen within 15%:     {within(lens, 'max_model_len', 0.15)} of {len(lens)}")
    skipped = {}
    for r in rows:
        if "skipped" in r:
            skipped.setdefault(r["skipped"], []).append(r["id"])
    for why, ids in skipped.items():
        print(f"   skipped ({len(ids)}): {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
