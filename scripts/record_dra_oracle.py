#!/usr/bin/env python3
"""Record what the real kube-scheduler does with generated DRA clusters, as one test fixture.

    python scripts/record_dra_oracle.py --oracle PATH --seeds 0-299 \
        --out tests/fixtures/oracle-dra/scenarios.json

A developer script (the tests never run it, nor the reference scheduler): for each seed it builds the
cluster with tests/scheduling/dra_scenarios.py, writes it to a temporary directory, runs the reference
`--runs` times, one run at a time (its score ties are broken at random, so runs may differ), and keeps per
run each workload's scheduled and pending pods, reason and message. The reference ("schedoracle") is the
real kube-scheduler v1.34.1 run in-process over a fake clientset, as kubernetes-sigs/cluster-capacity does:
`schedoracle --nodes nodes.json --pods pods.json manifests.yaml` prints JSON and exits 1 if anything pends.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle_args import seeds as seed_list  # noqa: E402

from tests.scheduling.dra_scenarios import digest, scenario, write

SCHEDULER = "kube-scheduler v1.34.1 (k8s.io/kubernetes/pkg/scheduler in-process, default profile)"
ABOUT = ("What the real kube-scheduler v1.34.1 run in-process over a fake clientset, 3 runs each, did with "
         "the DRA clusters that tests/scheduling/dra_scenarios.py `scenario(seed)` generates (default "
         "profile with "
         "the DynamicResources plugin, API defaulting and pod-template validation, the resourceclaim "
         "controller emulated, pods created one after another in manifest order, each waited for until bound "
         "or failed). Per seed, `digest` is dra_scenarios.digest of the generated scenario (the tests "
         "regenerate it and check the digest) and each entry of `runs` is one run (score ties are broken at "
         "random, so runs may differ): workload -> scheduled and pending pods, reason (pending | rejected | "
         "gated | null) and the FailedScheduling message of its first pending pod (without the preemption "
         "tail). Recorded by scripts/record_dra_oracle.py; the tests never run the scheduler.")


def run_once(oracle: str, paths, timeout: int) -> dict:
    nodes, pods, manifests = map(str, paths)
    proc = subprocess.run([oracle, "--nodes", nodes, "--pods", pods, manifests],
                          capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode not in (0, 1):  # 1: something pends, which is normal
        raise RuntimeError(f"{oracle} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout)


def compact(out: dict) -> dict:
    """workload -> {scheduled, pending, reason, message} for one run."""
    return {w["workload"]: {"scheduled": w["scheduled"], "pending": w["pending"],
                            "reason": w.get("reason") or None, "message": w.get("message") or None}
            for w in out["workloads"]}


def dump(fixture: dict) -> str:
    """Indented JSON, one line per workload of a run (diffs read well)."""
    head = {k: v for k, v in fixture.items() if k != "scenarios"}
    text = json.dumps(head, indent=2)[:-2] + ',\n  "scenarios": [\n'
    entries = []
    for s in fixture["scenarios"]:
        runs = []
        for run in s["runs"]:
            lines = [f"        {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}"
                     for k, v in run.items()]
            runs.append("      {\n" + ",\n".join(lines) + "\n      }")
        entries.append(f'    {{"seed": {s["seed"]}, "digest": {json.dumps(s["digest"])}, "runs": [\n'
                       + ",\n".join(runs) + "\n    ]}")
    return text + ",\n".join(entries) + "\n  ]\n}\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--oracle", required=True, help="the reference scheduler binary")
    ap.add_argument("--seeds", required=True, help="e.g. 0-299 or 0-9,20-29")
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "fixtures" / "oracle-dra" / "scenarios.json")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=120, help="seconds per run")
    args = ap.parse_args()

    entries, walls, start = [], [], time.monotonic()
    seeds = seed_list(args.seeds)
    for i, seed in enumerate(seeds):
        s = scenario(seed)
        runs = []
        with tempfile.TemporaryDirectory() as tmp:
            paths = write(s, Path(tmp))
            for _ in range(args.runs):
                t0 = time.monotonic()
                runs.append(compact(run_once(args.oracle, paths, args.timeout)))
                walls.append(time.monotonic() - t0)
        entries.append({"seed": seed, "digest": digest(s), "runs": runs})
        if (i + 1) % 25 == 0 or i + 1 == len(seeds):
            print(f"{i + 1}/{len(seeds)} seeds, {time.monotonic() - start:.0f}s", file=sys.stderr)
    fixture = {"about": ABOUT, "scheduler": SCHEDULER,
               "generator": "tests/scheduling/dra_scenarios.py scenario(seed)",
               "runs_per_seed": args.runs, "seeds": args.seeds,
               "run_wall_s": {"mean": round(sum(walls) / len(walls), 3), "max": round(max(walls), 3)},
               "scenarios": entries}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = dump(fixture)
    json.loads(text)
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text.encode()) // 1024} KiB, {len(entries)} seeds)", file=sys.stderr)


if __name__ == "__main__":
    main()
