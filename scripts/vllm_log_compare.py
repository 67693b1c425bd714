#!/usr/bin/env python3
"""Compare gpufleet's model-memory arithmetic with real vLLM start-up logs (a developer script, not a test).

Reads tests/fixtures/vllm-logs/records.json (figures quoted from public vLLM V1 logs, each with its URL). For
every record whose model has a config.json under tests/fixtures/checkpoints/<org>__<repo>/ and whose GPU is
known (by name or by the CUDA total the log printed), it enters the run as a user would (the record's flags,
the GPU) and prints gpufleet's figures next to the log's:

- weights per GPU vs "Model loading took X GiB"
- available KV GiB vs "Available KV cache memory"
- KV tokens vs "GPU KV cache size: N tokens"
- verdict (starts / refused) vs the log's outcome
- largest max_model_len vs vLLM's "estimated maximum model length" (refusals)

then a summary against the bars of the model-memory issue: verdicts agree, weights within 3%, KV tokens
within 15%, suggested maxModelLen accepted and within 15% of the largest. `--holdout` shows only the
records marked held out (never used to tune the constants); `--all` both.

Usage: .venv/bin/python scripts/vllm_log_compare.py [--holdout | --all] [--records PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.nvidia.vllm_records import predict, usable  # noqa: E402

RECORDS = ROOT / "tests" / "fixtures" / "vllm-logs" / "records.json"


def _ratio(ours, theirs) -> str:
    if ours is None or theirs in (None, 0):
        return "      -"
    return f"{ours / theirs - 1:+7.1%}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--holdout", action="store_true", help="only the held-out records")
    group.add_argument("--all", action="store_true", help="tuning and held-out records")
    parser.add_argument("--records", type=Path, default=RECORDS)
    parser.add_argument("--json", action="store_true", help="one JSON object per compared record")
    opts = parser.parse_args()
    records = json.loads(opts.records.read_text(encoding="utf-8"))
    chosen = [r for r in records if opts.all or bool(r.get("holdout")) == opts.holdout]
    tally = {"verdict": [0, 0], "weights": [0, 0], "kv_tokens": [0, 0], "kv_gib": [0, 0], "length": [0, 0]}
    skipped = []
    for r in chosen:
        why = usable(r)
        if why:
            skipped.append((r["id"], why))
            continue
        p = predict(r)
        if opts.json:
            print(json.dumps({"id": r["id"], **p}))
            continue
        print(f"{r['id']}\n  {r['model']} on {r['gpu'] or '?'} tp={r['tensor_parallel_size'] or 1}: "
              f"weights {p['weights_gib']:.2f} vs {r['weights_gib']} {_ratio(p['weights_gib'], r['weights_gib'])}; "
              f"KV {p['available_kv_gib']:.2f} vs {r['available_kv_gib']} "
              f"{_ratio(p['available_kv_gib'], r['available_kv_gib'])}; tokens {p['kv_tokens']} vs {r['kv_tokens']} "
              f"{_ratio(p['kv_tokens'], r['kv_tokens'])}; starts {p['starts']} vs {r['started']}; "
              f"largest len {p['largest_max_model_len']} vs {r['estimated_max_model_len']}")
        for key, ok in p["checks"].items():
            if ok is not None:
                tally[key][0] += bool(ok)
                tally[key][1] += 1
    if not opts.json:
        print("\nsummary (agreeing / compared):")
        for key, (good, total) in tally.items():
            print(f"  {key:<10} {good}/{total}")
        print(f"skipped {len(skipped)}: " + "; ".join(f"{i} ({w})" for i, w in skipped[:40]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
