"""Benchmark `gpufleet check` on fleets, as whole processes, against reading the same files (a script, not a test).

Inputs are generated deterministically (tests/scheduling/fleet.py) into a temp dir: `nodes.json` and
`pods.json` as kubectl Lists, and one multi-document YAML of Deployments of 10 replicas, in a mix of GPU
products, taints, node selectors, node affinity and tolerations, with GPU demand about four times supply.
Every figure is the median of --repeat runs of a fresh process. Times are the process's CPU seconds (user +
system, from wait4): every process here is single-threaded, so that is its run time on an idle core, while
wall time on a shared machine mostly measures the neighbours (it is printed alongside). Peak memory is the
process's maximum resident set.

Targets (issue "Fleet verdicts the real scheduler would give"; each pod goes through the scheduler's own
filter/score cycle, in up to three seeded tie-break runs):
 1. check at 1,000 nodes / 20,000 pods to place <= 3 x parsing the same files (json + yaml CSafeLoader; the
    real kube-scheduler takes about 300 x);
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

from tests.scheduling.fleet import node  # noqa: E402

#: Reading the inputs and holding them, as a check must.
PARSE = ("import json, sys, yaml; nodes = json.load(open(sys.argv[1])); pods = json.load(open(sys.argv[2])); "
         "docs = list(yaml.load_all(open(sys.argv[3]), Loader=yaml.CSafeLoader))")
GPUFLEET = "from gpufleet.cli import main; main()"
WALL: dict[str, float] = {}


def run(args: list[str], repeat: int, check_rc: tuple[int, ...] = (0,)) -> tuple[float, float, str]:
    """(median CPU seconds, median peak RSS MiB, last stdout) of `python <args>` as a fresh process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    times, walls, peaks, out = [], [], [], ""
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
        times.append(usage.ru_utime + usage.ru_stime)
        walls.append(elapsed)
        peaks.append(usage.ru_maxrss / 1024)
    WALL[args[1] if args[0] == "-c" else args[0]] = statistics.median(walls)
    return statistics.median(times), statistics.median(peaks), out


def verdict(target: str, value: float, limit: float) -> bool:
    ok = value <= limit
    print(f"  target {target}: {value:.2f} <= {limit:g}  {'PASS' if ok else 'FAIL'}")
    return ok


def fleet_run(tmp: Path, nodes: int, repeat: int) -> dict:
    where = tmp / f"fleet-{nodes}"
    where.mkdir()
    # Written by a child: a child forked from a bench holding the fleet would report the bench's memory as its own.
    _, _, out = run(["-c", f"import json, pathlib; from tests.scheduling.fleet import write; "
                           f"print(json.dumps(write({nodes}, {nodes * 2}, pathlib.Path({str(where)!r}))))"], 1)
    f = json.loads(out)
    paths = f["paths"]
    print(f"{nodes:,} nodes, {f['running']:,} running pods, {f['deployments']:,} Deployments ({f['to_place']:,} pods "
          f"to place); {f['supply']:,} GPUs for {f['demand']:,} requested")
    parse_s, parse_mib, _ = run(["-c", PARSE, *paths], repeat)
    check_s, check_mib, out = run(["-c", GPUFLEET, "check", "--nodes", paths[0], "--pods", paths[1], "--json",
                                   paths[2]], repeat, check_rc=(0, 1))
    doc = json.loads(out)
    pending = [u for u in doc["unschedulable"] if u["reason"] == "pending"]
    parse_wall = WALL[PARSE]
    print(f"  parse (json + yaml CSafeLoader) {parse_s:6.2f} s cpu ({parse_wall:6.2f} s wall)  {parse_mib:7.0f} MiB peak")
    print(f"  gpufleet check                  {check_s:6.2f} s cpu ({WALL[GPUFLEET]:6.2f} s wall)  {check_mib:7.0f} MiB "
          f"peak   check/parse {check_s / parse_s:.2f}")
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
    base_wall = WALL["import json, yaml"]
    one_s, one_mib, _ = run(["-c", GPUFLEET, "check", "--nodes", str(nodes), str(manifest)], repeat, check_rc=(0, 1))
    one_wall = WALL[GPUFLEET]
    help_s, _, _ = run(["-c", GPUFLEET, "--help"], repeat)
    print(f"python -c 'import json, yaml' {base_s:.3f} s cpu ({base_wall:.3f} s wall); one-node one-pod check "
          f"{one_s:.3f} s cpu ({one_wall:.3f} s wall, {one_mib:.0f} MiB peak); gpufleet --help {help_s:.3f} s cpu "
          f"({WALL[GPUFLEET]:.3f} s wall)")
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
        results.append(verdict("1 check/parse at 1k nodes", k1["check_s"] / k1["parse_s"], 3))
        if not args.quick:
            k10 = fleet_run(Path(tmp), 10000, args.repeat)
            results.append(verdict("2 check 10k / check 1k", k10["check_s"] / k1["check_s"], 12))
            results.append(verdict("2 check peak / parse peak at 10k", k10["check_mib"] / k10["parse_mib"], 3))
    print("all targets met" if all(results) else f"{results.count(False)} target(s) not met")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
