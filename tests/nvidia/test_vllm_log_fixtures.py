"""The vLLM start-up figures in tests/fixtures/vllm-logs/records.json are well-formed and self-consistent.

Each record quotes one public vLLM (V1 engine) start-up log by URL (see the folder's README.md). These tests
check the data, not gpufleet: every field is present with the right type, each source is a URL, the figures are
found in the quoted log lines, vLLM's own arithmetic holds where a record gives all its terms
(Maximum concurrency = GPU KV cache size / max_model_len), a refusal carries its message and that message agrees
with the record's fields, and no record is entered twice. `problems()` is run on deliberately broken copies too,
so a check that stopped finding anything would fail here.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path

import pytest

from gpufleet.nvidia.model_memory.quantization import METHODS

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "vllm-logs" / "records.json"

#: Every record carries every field (null where the log does not say).
FIELDS: dict[str, tuple[type, ...]] = {
    "id": (str,), "source": (str,), "vllm_version": (str,), "gpu": (str,), "gpu_total_gib": (int, float),
    "tensor_parallel_size": (int,), "pipeline_parallel_size": (int,), "data_parallel_size": (int,),
    "model": (str,), "dtype": (str,), "quantization": (str,), "kv_cache_dtype": (str,),
    "gpu_memory_utilization": (int, float), "max_model_len": (int,), "max_num_seqs": (int,),
    "max_num_batched_tokens": (int,), "enforce_eager": (bool,),
    "weights_gib": (int, float), "activation_gib": (int, float), "peak_activation": (int, float),
    "non_torch_gib": (int, float), "consumed_gib": (int, float), "cudagraph_gib": (int, float),
    "available_kv_gib": (int, float), "kv_tokens": (int,), "max_concurrency": (int, float),
    "kv_needed_gib": (int, float), "estimated_max_model_len": (int,),
    "started": (bool,), "refusal": (str,), "refusal_kind": (str,), "lines": (list,), "notes": (str,),
    "enable_expert_parallel": (bool,), "holdout": (bool,),
}
REQUIRED_NOT_NULL = ("id", "source", "started", "lines", "holdout")
#: formats the records name: those gpufleet sizes, and two that a checkpoint's config.json names for itself
QUANTIZATIONS = {*METHODS, "auto_round", "modelopt"}
DTYPES = {"bfloat16", "float16", "float32"}
KV_DTYPES = {"auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "float16", "fp8_ds_mla"}
REFUSAL_KINDS = {"kv_too_small_for_one_sequence", "no_memory_for_cache", "oom_loading", "oom_profiling", "oom",
                 "mamba_blocks_below_max_num_seqs"}
#: Figures that must appear, as printed, in the record's quoted lines.
QUOTED_FIGURES = ("weights_gib", "peak_activation", "consumed_gib", "cudagraph_gib", "available_kv_gib",
                  "kv_tokens", "max_concurrency", "kv_needed_gib", "estimated_max_model_len")
CONCURRENCY_TOLERANCE = 0.02


#: Records entered before the hold-out split existed: they were already used for tuning, so none is held out.
TUNED_BEFORE_HOLDOUT = frozenset({
    "club3090-1087-2x5090-tp2-fp8",
    "club3090-127-6x3090-tp4",
    "club3090-434-2x3090-tp2-lmcache",
    "lmcache-1739-qwen3-14b",
    "myoceane-gpt-oss-20b-a100-u065",
    "spark-vllm-396-minimax-awq-tp2",
    "vllm-14992-main-no-cache-blocks",
    "vllm-15598-deepseek-v2-oom-44.53gib",
    "vllm-16343-llama-oom-load-23.68gib",
    "vllm-16570-qwen2.5-vl-72b-tp4-a100-oom",
    "vllm-16662-llama4-scout-oom-load",
    "vllm-18124-qwen2.5-vl-3b-a100-u030",
    "vllm-21348-qwen3-235b-fp8-tp4",
    "vllm-23278-gpt-oss-120b-h100",
    "vllm-25350-fp8kv-100k",
    "vllm-25350-fp8kv-221k",
    "vllm-27508-gpt-oss-120b-h100",
    "vllm-33155-gpt-oss-120b-h100-v0.14.1",
    "vllm-34076-qwen3-coder-30b-fp8-pp2",
    "vllm-pr57047-awq-sm89",
    "vllm-recipes-12-qwen3-coder-480b-fp8-dp8-u090",
    "vllm-recipes-12-qwen3-coder-480b-fp8-dp8-u095",
    "vllm-recipes-653-8xh100-1m",
})


def is_holdout(record_id: str) -> bool:
    """About a third of the records are held out from tuning: those whose id's sha1 ends in 0-4 (none of the
    records that predate the split)."""
    if record_id in TUNED_BEFORE_HOLDOUT:
        return False
    return hashlib.sha1(record_id.encode()).hexdigest()[-1] in "01234"


def load() -> list[dict]:
    return json.loads(RECORDS.read_text(encoding="utf-8"))


def _printed_forms(value: float | int) -> set[str]:
    """The ways vLLM (or a user quoting it) prints a figure: 230528 as '230,528'; 10.5 as '10.5' or '10.50'."""
    if isinstance(value, int):
        return {str(value), f"{value:,}"}
    forms = {repr(value), f"{value:.2f}", f"{value:.1f}", f"{value:.4f}"}
    return {f for f in forms if float(f) == value}


def _in_lines(value: float | int, text: str) -> bool:
    for form in _printed_forms(value):
        if re.search(rf"(?<![\d.]){re.escape(form)}(?![\d])", text):
            return True
    return False


def _refusal_numbers(message: str) -> dict[str, float | int]:
    """The figures vLLM puts in its KV-cache refusal."""
    found: dict[str, float | int] = {}
    if m := re.search(r"max seq len \((\d+)\)", message):
        found["max_model_len"] = int(m.group(1))
    if m := re.search(r"([\d.]+) GiB KV cache is needed", message):
        found["kv_needed_gib"] = float(m.group(1))
    if m := re.search(r"available KV cache memory \(([-\d.]+) GiB\)", message):
        found["available_kv_gib"] = float(m.group(1))
    if m := re.search(r"estimated maximum model length is (\d+)", message):
        found["estimated_max_model_len"] = int(m.group(1))
    if m := re.search(r"maximum number of tokens that can be stored in KV cache \((\d+)\)", message):
        found["kv_tokens"] = int(m.group(1))
    return found


def problems_of(r: dict) -> list[str]:
    """Everything wrong with one record (empty: it is fine)."""
    rid = r.get("id", "<no id>")
    out: list[str] = []
    missing = [f for f in FIELDS if f not in r]
    extra = [f for f in r if f not in FIELDS]
    if missing:
        out.append(f"{rid}: missing fields {missing}")
    if extra:
        out.append(f"{rid}: unknown fields {extra}")
    for name, types in FIELDS.items():
        value = r.get(name)
        if value is None:
            if name in REQUIRED_NOT_NULL:
                out.append(f"{rid}: {name} is null")
            continue
        if isinstance(value, bool) and bool not in types:
            out.append(f"{rid}: {name}={value!r} is a bool")
        elif not isinstance(value, types):
            out.append(f"{rid}: {name}={value!r} is not {'/'.join(t.__name__ for t in types)}")
    if out:
        return out

    if not re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", r["id"]):
        out.append(f"{rid}: id is not a lower-case slug")
    if r["holdout"] != is_holdout(r["id"]):
        out.append(f"{rid}: holdout={r['holdout']} but the id's sha1 rule says {is_holdout(r['id'])}")
    if not re.fullmatch(r"https://[^\s/]+\.[^\s/]+/\S+", r["source"]):
        out.append(f"{rid}: source {r['source']!r} is not an https URL")
    if not r["lines"] or not all(isinstance(line, str) and line.strip() for line in r["lines"]):
        out.append(f"{rid}: lines must be a non-empty list of non-empty strings")
    if r["quantization"] is not None and r["quantization"] not in QUANTIZATIONS:
        out.append(f"{rid}: quantization {r['quantization']!r} not in {sorted(QUANTIZATIONS)}")
    if r["dtype"] is not None and r["dtype"] not in DTYPES:
        out.append(f"{rid}: dtype {r['dtype']!r} not in {sorted(DTYPES)}")
    if r["kv_cache_dtype"] is not None and r["kv_cache_dtype"] not in KV_DTYPES:
        out.append(f"{rid}: kv_cache_dtype {r['kv_cache_dtype']!r} not in {sorted(KV_DTYPES)}")
    for name in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "max_model_len",
                 "max_num_seqs", "max_num_batched_tokens", "kv_tokens", "estimated_max_model_len"):
        if r[name] is not None and r[name] < 1:
            out.append(f"{rid}: {name}={r[name]} is not positive")
    util = r["gpu_memory_utilization"]
    if util is not None and not 0 < util <= 1:
        out.append(f"{rid}: gpu_memory_utilization={util} is outside (0, 1]")
    for name in ("gpu_total_gib", "weights_gib", "cudagraph_gib", "kv_needed_gib", "peak_activation",
                 "consumed_gib", "max_concurrency"):
        if r[name] is not None and r[name] < 0:
            out.append(f"{rid}: {name}={r[name]} is negative")

    text = "\n".join(r["lines"])
    for name in QUOTED_FIGURES:
        if r[name] is not None and not _in_lines(r[name], text):
            out.append(f"{rid}: {name}={r[name]} does not appear in the quoted lines")

    kv, mml, conc = r["kv_tokens"], r["max_model_len"], r["max_concurrency"]
    if None not in (kv, mml, conc) and r["started"]:
        implied = kv / mml
        if abs(implied - conc) > CONCURRENCY_TOLERANCE * conc:
            out.append(f"{rid}: kv_tokens/max_model_len = {implied:.3f} but max_concurrency = {conc}")

    if r["started"]:
        if r["refusal"] is not None or r["refusal_kind"] is not None:
            out.append(f"{rid}: a record that started has a refusal")
    else:
        if not (r["refusal"] or "").strip():
            out.append(f"{rid}: a refusal record has no refusal message")
        if r["refusal_kind"] not in REFUSAL_KINDS:
            out.append(f"{rid}: refusal_kind {r['refusal_kind']!r} not in {sorted(REFUSAL_KINDS)}")
        for name, value in _refusal_numbers(r["refusal"] or "").items():
            if r[name] is not None and r[name] != value:
                out.append(f"{rid}: the refusal says {name}={value} but the record has {r[name]}")
        if r["refusal_kind"] == "kv_too_small_for_one_sequence":
            needed, available = r["kv_needed_gib"], r["available_kv_gib"]
            if needed is not None and available is not None and needed <= available:
                out.append(f"{rid}: refused for KV although {needed} GiB needed <= {available} GiB available")
            est = r["estimated_max_model_len"]
            if est is not None and mml is not None and est >= mml:
                out.append(f"{rid}: vLLM's estimated maximum {est} is not below the refused max_model_len {mml}")
    return out


def problems(records: list) -> list[str]:
    """Everything wrong with the file's contents, duplicates included."""
    if not isinstance(records, list) or not records:
        return ["records.json is not a non-empty list"]
    out: list[str] = []
    for r in records:
        if not isinstance(r, dict):
            out.append(f"not an object: {r!r}")
            continue
        out.extend(problems_of(r))
    dicts = [r for r in records if isinstance(r, dict)]
    ids = [r.get("id") for r in dicts]
    out.extend(f"duplicate id {i}" for i in sorted({i for i in ids if ids.count(i) > 1}))
    seen: dict[str, str] = {}
    for r in dicts:
        key = json.dumps({k: v for k, v in r.items() if k not in ("id", "notes")}, sort_keys=True)
        if key in seen:
            out.append(f"{r.get('id')} repeats {seen[key]}")
        seen.setdefault(key, r.get("id"))
    return out


# --- the shipped data -------------------------------------------------------------------------------------

def test_records_are_well_formed_and_consistent():
    assert problems(load()) == []


def test_records_cover_starts_and_refusals():
    records = load()
    assert len(records) >= 20
    assert any(r["started"] for r in records) and any(not r["started"] for r in records)
    assert {r["refusal_kind"] for r in records if not r["started"]} >= {
        "kv_too_small_for_one_sequence", "no_memory_for_cache"}
    assert {r["quantization"] for r in records} >= {"fp8", "awq", "mxfp4", None}


def test_about_a_third_is_held_out():
    records = load()
    new = [r for r in records if r["id"] not in TUNED_BEFORE_HOLDOUT]
    held = sum(r["holdout"] for r in new)
    assert 0.15 * len(new) <= held <= 0.6 * len(new)
    assert all(r["holdout"] == is_holdout(r["id"]) for r in records)


def test_every_source_is_cited_once_per_distinct_run():
    records = load()
    assert all(r["source"].startswith("https://") for r in records)
    assert len({r["id"] for r in records}) == len(records)


# --- the checks find bad data -----------------------------------------------------------------------------

def _good() -> dict:
    return copy.deepcopy(next(r for r in load() if r["id"] == "lmcache-1739-qwen3-14b"))


def _refused() -> dict:
    return copy.deepcopy(next(r for r in load() if r["id"] == "vllm-34076-qwen3-coder-30b-fp8-pp2"))


BROKEN = {
    "missing field": lambda r: r.pop("kv_tokens"),
    "unknown field": lambda r: r.update(kv_blocks=3),
    "string number": lambda r: r.update(kv_tokens="42656"),
    "bool as int": lambda r: r.update(tensor_parallel_size=True),
    "not a URL": lambda r: r.update(source="vllm issue 1739"),
    "http URL": lambda r: r.update(source="http://github.com/LMCache/LMCache/issues/1739"),
    "no lines": lambda r: r.update(lines=[]),
    "unknown quantization": lambda r: r.update(quantization="q4_k_m"),
    "figure not quoted": lambda r: r.update(available_kv_gib=6.52),
    "concurrency off by 5%": lambda r: r.update(max_concurrency=1.37, lines=r["lines"] + ["1.37x"]),
    "utilization above 1": lambda r: r.update(gpu_memory_utilization=90),
    "started with refusal": lambda r: r.update(refusal="No available memory for the cache blocks"),
    "null id": lambda r: r.update(id=None),
    "holdout flipped": lambda r: r.update(holdout=not r["holdout"]),
    "holdout missing": lambda r: r.pop("holdout"),
    "expert parallel as string": lambda r: r.update(enable_expert_parallel="true"),
}

BROKEN_REFUSALS = {
    "no message": lambda r: r.update(refusal=""),
    "unknown kind": lambda r: r.update(refusal_kind="crashed"),
    "message disagrees": lambda r: r.update(max_model_len=131072),
    "needed below available": lambda r: r.update(kv_needed_gib=3.0, refusal=r["refusal"].replace("24.0 GiB", "3.0 GiB"),
                                                 lines=[r["lines"][0].replace("24.0 GiB", "3.0 GiB")]),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_record_is_reported(name):
    record = _good()
    assert problems_of(record) == []
    BROKEN[name](record)
    assert problems_of(record), name


@pytest.mark.parametrize("name", sorted(BROKEN_REFUSALS))
def test_a_broken_refusal_is_reported(name):
    record = _refused()
    assert problems_of(record) == []
    BROKEN_REFUSALS[name](record)
    assert problems_of(record), name


def test_duplicates_are_reported():
    records = load()
    assert any("duplicate id" in p for p in problems(records + [records[0]]))
    twin = copy.deepcopy(records[0])
    twin["id"] = twin["id"] + "-again"
    assert any("repeats" in p for p in problems(records + [twin]))
    assert problems([]) == ["records.json is not a non-empty list"]
