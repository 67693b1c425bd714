#!/usr/bin/env python3
"""Record what the real kube-scheduler does with a generated fleet, as a test fixture.

    python scripts/record_oracle.py --oracle PATH --name NAME --seed S --nodes N --shape SHAPE [--runs 3]

A developer script (the tests never run it, nor the reference scheduler): it generates the fleet with
tests/scheduling/oracle_fleets.py, writes it to a temporary directory, runs the reference `--runs` times
(one after another: its score ties are broken at random, so runs may differ) and writes
tests/fixtures/oracle/NAME.json: the generator's parameters (the tests regenerate the fleet from them),
a hash of the generated files, and per run each workload's scheduled/pending pods, reason and message
(and, if the file stays small, how many pods went to each node). The reference ("schedoracle") is the real
kube-scheduler v1.34.1 run in-process over a fake clientset, as kubernetes-sigs/cluster-capacity does:
`schedoracle --nodes nodes.json --pods pods.json manifests.yaml` prints JSON and exits 1 if anything pends.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.scheduling.oracle_fleets import SHAPES, generate, write

SCHEDULER = "kube-scheduler v1.34.1 (k8s.io/kubernetes/pkg/scheduler in-process, default profile)"
ABOUT = ("What the real kube-scheduler v1.34.1 run in-process over a fake clientset (default profile, "
         "API defaulting and pod-template validation, pods created one after another in manifest order, "
         "each waited for until bound or failed) did with the fleet that tests/scheduling/oracle_fleets.py "
         "generates from `generator`. Each entry of `runs` is one run (score ties are broken at random, so "
         "runs may differ): workload -> scheduled and pending pods, reason (pending | rejected | null) and "
         "the FailedScheduling message of its first pending pod (without the preemption tail). `nodes`, "
         "where present, counts the pods bound to each node. Recorded by scripts/record_oracle.py; the "
         "tests never run the scheduler.")
MAX_BYTES = 300_000


def inputs_sha256(paths) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()


def run_once(oracle: str, paths, timeout: int) -> tuple[dict, float]:
    nodes, pods, manifests = map(str, paths)
    start = time.monotonic()
    proc = subprocess.run([oracle, "--nodes", nodes, "--pods", pods, manifests],
                          capture_output=True, text=True, timeout=timeout, check=False)
    wall = time.monotonic() - start
    if proc.returncode not in (0, 1):  # 1: something pends, which is normal
        raise SystemExit(f"{oracle} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout), wall


def compact(out: dict, with_nodes: bool) -> dict:
    """workload -> {scheduled, pending, reason, message[, nodes: {node: pods}]} for one run."""
    run = {}
    for w in out["workloads"]:
        entry = {"scheduled": w["scheduled"], "pending": w["pending"], "reason": w.get("reason") or None,
                 "message": w.get("message") or None}
        if with_nodes:
            entry["nodes"] = dict(sorted(Counter(w.get("nodes") or []).items()))
        run[w["workload"]] = entry
    return run


def dump(fixture: dict) -> str:
    """Indented JSON, one line per workload of a run (small, and diffs read well)."""
    head = {k: v for k, v in fixture.items() if k != "runs"}
    text = json.dumps(head, indent=2)[:-2] + ',\n  "runs": [\n'
    runs = []
    for run in fixture["runs"]:
        lines = [f"      {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in run.items()]
        runs.append("    {\n" + ",\n".join(lines) + "\n    }")
    return text + ",\n".join(runs) + "\n  ]\n}\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--oracle", required=True, help="the reference scheduler binary")
    ap.add_argument("--name", required=True, help="fixture name: tests/fixtures/oracle/NAME.json")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--shape", required=True, choices=list(SHAPES))
    ap.add_argument("--oversubscription", type=float, help="GPU demand / free GPUs - 1 (default: by seed)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per run")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "tests" / "fixtures" / "oracle")
    args = ap.parse_args()

    fleet = generate(args.seed, args.nodes, args.shape, args.oversubscription)
    outs, walls = [], []
    with tempfile.TemporaryDirectory() as tmp:
        paths = write(fleet, Path(tmp))
        digest = inputs_sha256(paths)
        for i in range(args.runs):
            out, wall = run_once(args.oracle, paths, args.timeout)
            outs.append(out)
            walls.append(round(wall, 2))
            pending = sum(1 for w in out["workloads"] if w["pending"])
            print(f"{args.name}: run {i + 1}/{args.runs}: {wall:.1f}s, {pending} of "
                  f"{len(out['workloads'])} workloads pending", file=sys.stderr)
    gpu = {k: fleet.stats[k] for k in ("gpu_supply", "gpu_free", "gpu_demand")}
    fixture = {"about": ABOUT, "scheduler": SCHEDULER, "generator": fleet.params, "inputs_sha256": digest,
               "nodes": len(fleet.nodes), "pods": len(fleet.pods), "workloads": len(fleet.manifests),
               "pods_to_place": fleet.stats["pods_to_place"], "gpu_equivalents": gpu,
               "run_wall_s": walls, "node_counts": True, "runs": [compact(o, True) for o in outs]}
    text = dump(fixture)
    if len(text.encode()) > MAX_BYTES:
        fixture["node_counts"] = False
        fixture["runs"] = [compact(o, False) for o in outs]
        text = dump(fixture)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    path = args.out_dir / f"{args.name}.json"
    path.write_text(text)
    print(f"wrote {path} ({len(text.encode()) // 1024} KiB, node counts: {fixture['node_counts']})",
          file=sys.stderr)


if __name__ == "__main__":
    main()
