"""How long whole `gpufleet` processes take, against the floors they are held to.

    python bench/startup_bench.py [--runs 5]

Prints the median wall time of several whole-process runs for:
  - `gpufleet --help`, against `python -c "import json, yaml"` (target: at most 4x);
  - `gpufleet plan --stack dev` with the policy pack, against importing what any Pulumi program imports
    (`pulumi`, `pulumi_kubernetes` apps/core/helm, `pulumi_policy`; target: at most 3x).
Each command runs in this interpreter's environment with the repository first on PYTHONPATH. Exit 1 when a
target is missed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "from gpufleet.cli import main; main()"
PULUMI_FLOOR = ("import pulumi, pulumi_kubernetes.apps.v1, pulumi_kubernetes.core.v1, pulumi_kubernetes.helm.v3, "
                "pulumi_policy")
#: (label, command line, floor label, floor command line, allowed ratio)
CASES = [
    ("gpufleet --help", [sys.executable, "-c", ENTRY, "--help"],
     "import json, yaml", [sys.executable, "-c", "import json, yaml"], 4.0),
    ("gpufleet plan --stack dev", [sys.executable, "-c", ENTRY, "plan", "--stack", "dev"],
     "import pulumi...", [sys.executable, "-c", PULUMI_FLOOR], 3.0),
]


def median_seconds(argv: list[str], runs: int) -> float:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = {**os.environ, "PYTHONPATH": path}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv[3:]) or argv}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="whole-process runs per command (median reported)")
    args = parser.parse_args()
    missed = 0
    for label, argv, floor_label, floor_argv, allowed in CASES:
        floor = median_seconds(floor_argv, args.runs)
        took = median_seconds(argv, args.runs)
        ratio = took / floor
        verdict = "ok" if ratio <= allowed else "TOO SLOW"
        missed += ratio > allowed
        print(f"{label:28s} {took:6.3f} s   {floor_label:20s} {floor:6.3f} s   ratio {ratio:4.1f}x "
              f"(target <= {allowed:.0f}x) {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
