"""Benchmark `gpufleet check` on fleets, as whole processes, against reading the same files (a script, not a test).

Inputs are generated deterministically (tests/scheduling/fleet.py) into a temp dir: `nodes.json` and
`pods.json` as kubectl Lists, and one multi-document YAML of Deployments of 10 replicas, in a mix of GPU
products, taints, node selectors, node affinity and tolerations, with GPU demand about four times supply.
Every figure is the median of --repeat runs of a fresh process; peak memory is that process's maximum
resident set (wait4's rusage).

Targets (issue "Fleet scale"):
 1. check at 1,000 nodes / 20,000 pods to place <= 1.5 x parsing the same files (json + yaml CSafeLoader);
 2. check at 10,000 nodes / 200,000 pods <= 12 x the 1k check, and its peak memory <= 3 x the parse's;
 3. a one-node, one-pod check, and `gpufleet --help`, <= 4 x `python -c "import json, yaml"`.
 (5. the plan benchmark is bench/plan_bench.py.)

Usage: python bench/check_bench.py [--quick] [--repeat N]     (--quick skips the 10k fleet)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.scheduling.fleet import fleet, node  # noqa: E402

PARSE = ("import json, sys, yaml; json.load(open(sys.argv[1])); json.load(open(sys.argv[2])); "
         "list(yaml.load_all(open(sys.argv[3]), Loader=yaml.CSafeLoader))")
GPUFLEET = "from gpufleet.cli import main; main()"


def run(args: list[str], repeat: int, check_rc: tuple[int, ...] = (0,)) -> tuple[float, float, str]:
    """(median seconds, median peak RSS MiB, last stdout) of `python <args>` as a fresh process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    times, peaks, out = [], [], ""
    for _ in range(repeat):
        with tempfile.TemporaryFile() as stdout:
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, *args], stdout=stdout, stderr=subprocess.PIPE, env=env)
            _, status, usage = os.wait4(proc.pid, 0)
            elapsed = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            err = proc.stderr.read().decode()
            proc.stderr.close()
            stdout.seek(0)
            out = stdout.read().decode()
        if proc.returncode not in check_rc:
            raise SystemExit(f"{' '.join(args[:3])} ... exited {proc.returncode}: {err.strip()[-2000:]}")
        times.append(elapsed)
        peaks.append(usage.ru_maxrss / 1024)
    return statistics.median(times), statistics.median(peaks), out


def verdict(target: str, value: float, limit: float) -> bool:
    ok = value <= limit
    print(f"  target {target}: {value:.2f} <= {limit:g}  {'PASS' if ok else 'FAIL'}")
    return ok


def fleet_run(tmp: Path, nodes: int, repeat: int) -> dict:
    where = tmp / f"fleet-{nodes}"
    where.mkdir()
    f = fleet(nodes, nodes * 2)
    paths = [str(p) for p in f.write(where)]
    to_place = sum(d["spec"]["replicas"] for d in f.deployments)
    print(f"{nodes:,} nodes, {len(f.pods):,} running pods, {len(f.deployments):,} Deployments ({to_place:,} pods to "
          f"place); {f.gpu_supply:,} GPUs for {f.gpu_demand:,} requested")
    parse_s, parse_mib, _ = run(["-c", PARSE, *paths], repeat)
    check_s, check_mib, out = run(["-c", GPUFLEET, "check", "--nodes", paths[0], "--pods", paths[1], "--json",
                                   paths[2]], repeat, check_rc=(0, 1))
    doc = json.loads(out)
    pending = [u for u in doc["unschedulable"] if u["reason"] == "pending"]
    print(f"  parse (json + yaml CSafeLoader) {parse_s:6.2f} s  {parse_mib:7.0f} MiB peak")
    print(f"  gpufleet check                  {check_s:6.2f} s  {check_mib:7.0f} MiB peak   check/parse "
          f"{check_s / parse_s:.2f}")
    print(f"  verdict: fits={doc['fits']}, {len(pending):,} Deployments Pending ({sum(u['pending'] for u in pending):,} "
          f"pods), {len(doc['warnings']):,} warnings")
    return {"parse_s": parse_s, "parse_mib": parse_mib, "check_s": check_s, "check_mib": check_mib}


def small_run(tmp: Path, repeat: int) -> dict:
    nodes, manifest = tmp / "one-node.json", tmp / "one-pod.yaml"
    nodes.write_text(json.dumps({"kind": "List", "items": [node(0, 1)]}))
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
                        "    image: nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04\n    resources:\n"
                        "      limits: {nvidia.com/gpu: 1}\n  tolerations:\n  - {operator: Exists}\n")
    base_s, _, _ = run(["-c", "import json, yaml"], repeat)
    one_s, one_mib, _ = run(["-c", GPUFLEET, "check", "--nodes", str(nodes), str(manifest)], repeat, check_rc=(0, 1))
    help_s, _, _ = run(["-c", GPUFLEET, "--help"], repeat)
    print(f"python -c 'import json, yaml' {base_s:.3f} s; one-node one-pod check {one_s:.3f} s ({one_s / base_s:.1f}x, "
          f"{one_mib:.0f} MiB peak); gpufleet --help {help_s:.3f} s ({help_s / base_s:.1f}x)")
    return {"base_s": base_s, "one_s": one_s, "help_s": help_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 10,000-node fleet")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        small = small_run(Path(tmp), max(args.repeat, 5))
        results.append(verdict("3 one-pod check / import json,yaml", small["one_s"] / small["base_s"], 4))
        results.append(verdict("3 --help / import json,yaml", small["help_s"] / small["base_s"], 4))
        k1 = fleet_run(Path(tmp), 1000, args.repeat)
        results.append(verdict("1 check/parse at 1k nodes", k1["check_s"] / k1["parse_s"], 1.5))
        if not args.quick:
            k10 = fleet_run(Path(tmp), 10000, args.repeat)
            results.append(verdict("2 check 10k / check 1k", k10["check_s"] / k1["check_s"], 12))
            results.append(verdict("2 check peak / parse peak at 10k", k10["check_mib"] / k10["parse_mib"], 3))
    print("all targets met" if all(results) else f"{results.count(False)} target(s) not met")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
