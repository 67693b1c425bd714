#!/usr/bin/env python3
"""One headroom probe against `gpufleet check` on the same input (docs/headroom.md).

    .venv/bin/python bench/headroom_bench.py [--nodes 1000] [--repeat 3]

Writes the benchmark fleet `bench/check_bench.py` uses (tests/scheduling/fleet.py: N nodes, 2N Deployments
of running and new pods, about 20 pods per node at 1,000 nodes), then times, each in its own process (CPU
seconds, median of --repeat):
- `gpufleet check --nodes --pods MANIFESTS`;
- `gpufleet headroom --probe PROBE --nodes --pods MANIFESTS` with a 1-GPU probe tolerating the GPU taint;
and prints both and the ratio (the issue's target: a probe at most 2x the check).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GPUFLEET = "from gpufleet.cli import main; main()"
PROBE = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": "default"},
         "spec": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                  "containers": [{"name": "c", "image": "vllm/vllm-openai:v0.11.0",
                                  "resources": {"requests": {"cpu": "2", "memory": "8Gi"},
                                                "limits": {"nvidia.com/gpu": 1}}}]}}


def timed(args: list[str], repeat: int) -> tuple[float, str]:
    """Median CPU seconds of the child (user + sys) and its last stdout."""
    import resource

    cpu, out = [], ""
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, "-c", GPUFLEET, *args], capture_output=True, text=True, cwd=ROOT)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        out = done.stdout
    return statistics.median(cpu), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from tests.scheduling.fleet import write

    for deployments, what in ((args.nodes * 2, "the check bench's fleet (oversubscribed: the answer is 0)"),
                              (args.nodes // 2, "a quarter of its workloads (room left)")):
        with tempfile.TemporaryDirectory() as tmp:
            where = Path(tmp)
            fleet = write(args.nodes, deployments, where)
            nodes, pods, manifests = fleet["paths"]
            probe = where / "probe.yaml"
            probe.write_text(yaml.safe_dump(PROBE))
            print(f"{what}: {args.nodes:,} nodes, {fleet['running']:,} running pods, {fleet['deployments']:,} "
                  f"Deployments ({fleet['to_place']:,} pods to place)")
            start = time.monotonic()
            check_s, _ = timed(["check", "--nodes", nodes, "--pods", pods, "--json", manifests], args.repeat)
            probe_s, out = timed(["headroom", "--probe", str(probe), "--nodes", nodes, "--pods", pods, "--json",
                                  manifests], args.repeat)
            answer = json.loads(out)
            print(f"  gpufleet check     {check_s:7.2f} s cpu")
            print(f"  gpufleet headroom  {probe_s:7.2f} s cpu   headroom/check {probe_s / check_s:.2f} (target <= 2)")
            print(f"  answer: {answer['instances']} more (range {answer['instancesRange']}); "
                  f"{time.monotonic() - start:.0f} s in all")
    print("(a shared 2-core VM: figures vary about 20% between runs)")


if __name__ == "__main__":
    main()
