"""Plan-time benchmark (a script, not a test): gpufleet's plan vs the bare Pulumi SDK floor.

For the `dev` stack and a generated stack of 500 GPU nodes and 1,000 inference services it times
`gpufleet plan` (config validation + rendering + the real program under the mock engine) and the bare
SDK registering the very same resources with the same inputs under the same mocks, and prints the
ratio, then the peak memory of the process. Target: gpufleet adds at most 30% over the SDK floor (ratio <= 1.30).

Usage: .venv/bin/python bench/plan_bench.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pulumi  # noqa: E402
import pulumi_kubernetes as k8s  # noqa: E402

from gpufleet.config.loading import LoadedStack, load_stack, parse_sections  # noqa: E402
from gpufleet.planning.engine import Plan, run_program  # noqa: E402

_KIND_CLASS = {
    "kubernetes:core/v1:Namespace": k8s.core.v1.Namespace, "kubernetes:core/v1:ConfigMap": k8s.core.v1.ConfigMap,
    "kubernetes:core/v1:Secret": k8s.core.v1.Secret, "kubernetes:core/v1:Service": k8s.core.v1.Service,
    "kubernetes:apps/v1:Deployment": k8s.apps.v1.Deployment, "kubernetes:batch/v1:Job": k8s.batch.v1.Job,
    "kubernetes:core/v1:NodePatch": k8s.core.v1.NodePatch, "kubernetes:helm.sh/v3:Release": k8s.helm.v3.Release,
    "kubernetes:apps/v1:DaemonSet": k8s.apps.v1.DaemonSet, "pulumi:providers:kubernetes": k8s.Provider,
}


def generated_stack(nodes: int = 500, services: int = 1000) -> LoadedStack:
    pools = [{"name": f"pool-{i}", "nodes": [f"node-{i}-{j}" for j in range(10)], "sharing": "ts",
              "gpu": {"product": "NVIDIA-A10", "count": 4}} for i in range(nodes // 10)]
    workloads = [{"kind": "inference", "name": f"svc-{i}", "namespace": f"team-{i % 20}",
                  "image": "nvcr.io/nvidia/tritonserver:24.08-py3", "nodePool": f"pool-{i % len(pools)}",
                  "gpu": {"shared": True, "memoryMiB": 2000}, "ports": [{"port": 8000, "name": "http"}],
                  "probes": {"readiness": {"port": 8000, "path": "/v2/health/ready"}},
                  "service": {"type": "LoadBalancer", "sourceRanges": ["10.0.0.0/8"]}} for i in range(services)]
    sections = {"mode": "operator",
                "devicePlugin": {"sharingProfiles": {"ts": {"strategy": "timeSlicing", "replicas": 4}}},
                "nodePools": pools, "workloads": workloads}
    cfg = parse_sections(sections, "Pulumi.bench.yaml")
    return LoadedStack("bench", "Pulumi.bench.yaml", cfg,
                       {f"gpufleet:{k}": json.dumps(v) if not isinstance(v, str) else v for k, v in sections.items()})


def bare_sdk_program(plan: Plan):
    """Register exactly the planned resources (same types, names, parents, inputs) with the plain SDK."""
    def program():
        urn_to_res: dict[str, pulumi.Resource] = {}
        for res in sorted(plan.resources, key=lambda r: r.urn.count("$")):
            if res.type == "pulumi:pulumi:Stack":
                continue
            parent = urn_to_res.get(res.parent or "")
            opts = pulumi.ResourceOptions(parent=parent)
            if not res.custom:
                obj = pulumi.ComponentResource(res.type, res.name, None, opts)
            else:
                cls = _KIND_CLASS[res.type]
                inputs = {k: v for k, v in res.inputs.items() if k not in ("apiVersion", "kind", "compat")}
                inputs = {_snake(k): v for k, v in inputs.items()}
                obj = cls(res.name, opts=opts, **inputs)
            urn_to_res[res.urn] = obj
    return program


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def timed(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def bench(label: str, make_loaded, repeat: int) -> tuple[float, float, int]:
    loaded = make_loaded()
    plan = run_program(loaded)
    bare = bare_sdk_program(plan)
    t_floor = timed(lambda: run_program(loaded, program=bare), repeat)
    t_gpufleet = timed(lambda: run_program(make_loaded()), repeat)
    print(f"{label:<34} {len(plan.resources):>6} resources   gpufleet {t_gpufleet:7.3f}s   "
          f"bare SDK {t_floor:7.3f}s   ratio {t_gpufleet / t_floor:5.2f}")
    return t_gpufleet, t_floor, len(plan.resources)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"plan time (median of {args.repeat} runs), gpufleet vs the bare Pulumi SDK under the same mocks")
    bench("dev stack", lambda: load_stack("dev", ROOT), args.repeat)
    g, f, _ = bench("500 nodes, 1,000 services", generated_stack, max(1, args.repeat - 1))
    print(f"target: ratio <= 1.30 on the large stack -> {'MET' if g / f <= 1.30 else 'NOT MET'}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max resident set of this process, both runs): {peak:.0f} MiB")


if __name__ == "__main__":
    main()
