"""Deterministic random GPU fleets, to compare `gpufleet check` with the real kube-scheduler.

`generate(seed, nodes, shape)` builds a Fleet: Nodes (`kubectl get nodes -o json` items) in pools of real
instance types (T4, L4, A100 incl. MIG mixed and single strategy, H100, CPU-only), tainted or not, a few
cordoned, some with big images cached; the pods already bound to them; and the manifests applied after them
(Deployments, Jobs, bare Pods) asking GPUs or MIG slices, with selectors, affinities and tolerations.
The manifests ask `1 + oversubscription` times the GPUs free before them (in GPU-equivalents: a MIG slice
counts its compute slices / 7). Only `random.Random(seed)` draws and only lists and insertion-ordered dicts
are iterated, so the same arguments always give the same objects. Shapes: see SHAPES.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import yaml

A100, H100, MIG1G = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"
SLICES = {"nvidia.com/mig-1g.10gb": 1, "nvidia.com/mig-2g.20gb": 2, "nvidia.com/mig-3g.40gb": 3}
BALANCED = {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8}  # x8 GPUs
#: node type -> (instance type, product, GPUs, cpu, memory allocatable, extended resources if not N GPUs)
TYPES = {
    "t4x1": ("g4dn.2xlarge", "Tesla-T4", 1, "7910m", "29Gi", None),
    "t4x4": ("g4dn.12xlarge", "Tesla-T4", 4, "47810m", "180Gi", None),
    "l4x1": ("g6.2xlarge", "NVIDIA-L4", 1, "7910m", "29Gi", None),
    "l4x4": ("g6.12xlarge", "NVIDIA-L4", 4, "47810m", "180Gi", None),
    "a100x2": ("a2-ultragpu-2g", A100, 2, "23830m", "320Gi", None),
    "a100x8": ("p4de.24xlarge", A100, 8, "95690m", "1100Gi", None),
    "h100x2": ("a3-highgpu-2g", H100, 2, "51830m", "435Gi", None),
    "h100x4": ("a3-highgpu-4g", H100, 4, "103830m", "870Gi", None),
    "h100x8": ("p5.48xlarge", H100, 8, "191450m", "1950Gi", None),
    "mig-mixed": ("p4de.24xlarge", A100, 8, "95690m", "1100Gi", BALANCED),
    "mig-single": ("p4de.24xlarge", MIG1G, 8, "95690m", "1100Gi", {"nvidia.com/gpu": 56}),
    "mig-single1": ("a2-ultragpu-1g", MIG1G, 1, "11870m", "160Gi", {"nvidia.com/gpu": 7}),
    "cpu": ("m6i.8xlarge", None, 0, "31750m", "120Gi", None),
    "cpu-large": ("m6i.16xlarge", None, 0, "63770m", "245Gi", None),
}
#: shape -> pools (name, node type, weight, taint: gpu | none | prefer | dedicated)
SHAPES = {
    "mixed": [("t4", "t4x1", 5, "gpu"), ("t4big", "t4x4", 4, "gpu"), ("l4", "l4x1", 8, "none"),
              ("l4big", "l4x4", 4, "gpu"), ("a100", "a100x8", 7, "gpu"), ("a100s", "a100x2", 4, "prefer"),
              ("mig", "mig-mixed", 3, "gpu"), ("migs", "mig-single", 2, "gpu"), ("h100", "h100x8", 9, "gpu"),
              ("h100s", "h100x2", 4, "gpu"), ("train", "h100x8", 5, "dedicated"), ("cpu", "cpu", 18, "none"),
              ("cpubig", "cpu-large", 5, "none")],
    # the example: untainted 1-GPU L4 nodes, filled by unselective 1-GPU Deployments first
    "l4-trap": [("l4", "l4x1", 40, "none"), ("l4big", "l4x4", 8, "gpu"), ("h100", "h100x8", 10, "gpu"),
                ("a100", "a100x8", 8, "gpu"), ("t4big", "t4x4", 7, "gpu"), ("cpu", "cpu", 25, "none")],
    "cpu-bound": [("t4big", "t4x4", 18, "gpu"), ("l4big", "l4x4", 15, "none"), ("l4", "l4x1", 15, "none"),
                  ("h100m", "h100x4", 10, "gpu"), ("a100s", "a100x2", 10, "prefer"),
                  ("cpu", "cpu", 25, "none"), ("cpubig", "cpu-large", 7, "none")],
    "mig": [("mig", "mig-mixed", 30, "gpu"), ("migs", "mig-single", 18, "gpu"),
            ("migs1", "mig-single1", 15, "none"), ("a100", "a100x8", 12, "gpu"),
            ("h100", "h100x8", 10, "gpu"), ("cpu", "cpu", 15, "none")],
}
TRITON = "nvcr.io/nvidia/tritonserver:25.01-py3"
#: image -> size in bytes (as in a node's status.images); the first four are the big ones nodes cache
IMAGES = {TRITON: 9_412_000_000, "nvcr.io/nvidia/pytorch:25.01-py3": 10_870_000_000,
          "vllm/vllm-openai:v0.11.0": 8_120_000_000, "ghcr.io/acme/embedder:2.4.1": 2_300_000_000,
          "ghcr.io/acme/api:1.19.0": 310_000_000}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
#: DaemonSet pods on every node, and on GPU nodes: (name, namespace, image, cpu, memory)
DAEMONS = [("kube-proxy", "kube-system", "registry.k8s.io/kube-proxy:v1.34.1", "100m", "128Mi"),
           ("fluent-bit", "logging", "cr.fluentbit.io/fluent/fluent-bit:3.2", None, None),
           ("node-exporter", "monitoring", "quay.io/prometheus/node-exporter:v1.8.2", "50m", "64Mi")]
GPU_DAEMONS = [("device-plugin", "gpu-operator", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0", None, None),
               ("dcgm-exporter", "gpu-operator", "nvcr.io/nvidia/k8s/dcgm-exporter:4.1.1", "100m", "512Mi")]


@dataclass
class Fleet:
    nodes: list[dict]
    pods: list[dict]
    manifests: list[dict]
    params: dict = field(default_factory=dict)  # generate()'s arguments, oversubscription resolved
    stats: dict = field(default_factory=dict)  # GPU supply/free/demand (GPU-equivalents), counts


def write(fleet: Fleet, directory: Path) -> tuple[Path, Path, Path]:
    """nodes.json and pods.json as kubectl Lists, manifests.yaml as one multi-document YAML."""
    paths = Path(directory) / "nodes.json", Path(directory) / "pods.json", Path(directory) / "manifests.yaml"
    for path, items in zip(paths[:2], (fleet.nodes, fleet.pods), strict=True):
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items,
                                    "metadata": {"resourceVersion": ""}}))
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # the two emit the same bytes for these objects
    paths[2].write_text(yaml.dump_all(fleet.manifests, Dumper=dumper, sort_keys=False))
    return paths


def _gpu_eq(resources: dict, mig_single: bool = False) -> float:
    """GPU-equivalents in an allocatable or limits dict (on a single-strategy MIG node nvidia.com/gpu are
    1g.10gb slices)."""
    n = float(resources.get("nvidia.com/gpu", 0)) / (7 if mig_single else 1)
    return n + sum(float(resources.get(r, 0)) * s / 7 for r, s in SLICES.items())


def _mig_single(node: dict) -> bool:
    return "-MIG-" in node["metadata"]["labels"].get("nvidia.com/gpu.product", "")


def _node(i: int, pool: dict, zone: str, region: str, images: list) -> dict:
    itype, product, gpus, cpu, memory, extended = TYPES[pool["kind"]]
    name, taint = f"{pool['pool']}-{zone[-1]}-{i:04d}", pool["taint"]
    alloc = {"cpu": cpu, "memory": memory, "ephemeral-storage": "450Gi", "pods": "110"}
    labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": name,
              "node.kubernetes.io/instance-type": itype, "topology.kubernetes.io/region": region,
              "topology.kubernetes.io/zone": zone, "pool": pool["pool"]}
    taints = []
    if gpus:
        alloc.update({k: str(v) for k, v in (extended or {"nvidia.com/gpu": gpus}).items()})
        strategy = "none" if not extended else "single" if "nvidia.com/gpu" in extended else "mixed"
        labels.update({"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product,
                       "nvidia.com/gpu.count": alloc.get("nvidia.com/gpu", str(gpus)),
                       "nvidia.com/mig.strategy": strategy})
        if extended:
            labels["nvidia.com/mig.config"] = "all-balanced" if strategy == "mixed" else "all-1g.10gb"
        if taint != "none":
            taints.append({"key": "nvidia.com/gpu", "value": "present",
                           "effect": "PreferNoSchedule" if taint == "prefer" else "NoSchedule"})
    if taint == "dedicated":
        taints.append({"key": "dedicated", "value": pool["pool"], "effect": "NoSchedule"})
    status = {"allocatable": alloc, "capacity": dict(alloc),
              "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
              "nodeInfo": {"architecture": "amd64", "kubeletVersion": "v1.34.1",
                           "osImage": "Ubuntu 24.04.1 LTS", "containerRuntimeVersion": "containerd://1.7.27"}}
    if images:
        status["images"] = [{"names": [img], "sizeBytes": IMAGES[img]} for img in images]
    spec = {"providerID": f"aws:///{zone}/i-{i:017x}", **({"taints": taints} if taints else {})}
    meta = {"name": name, "uid": f"node-{i:06d}", "labels": labels}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}


def _container(name: str, image: str, cpu: str | None, memory: str | None, extended: dict | None = None):
    res: dict = {}
    if cpu or memory:
        res["requests"] = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    if memory or extended:
        res["limits"] = {**({"memory": memory} if memory else {}), **(extended or {})}
    return {"name": name, "image": image, "resources": res}


def _running(name: str, ns: str, node: str, owner: str, container: dict) -> dict:
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet" if ns == "prod" else "DaemonSet", "name": owner,
           "uid": f"owner-{owner}", "controller": True}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "labels": {"app": owner},
                         "ownerReferences": [ref]},
            "spec": {"nodeName": node, "containers": [container], "schedulerName": "default-scheduler",
                     "tolerations": [{"operator": "Exists"}]},
            "status": {"phase": "Running"}}


def _cores(cpu: str) -> float:
    return float(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)


def _busy_pods(rng: random.Random, i: int, node: dict, busy: float) -> list[dict]:
    """GPU pods already running on a GPU node, using about `busy` of its GPUs or MIG slices."""
    name, alloc, single, out = node["metadata"]["name"], node["status"]["allocatable"], _mig_single(node), []
    for res, total in [(k, int(v)) for k, v in alloc.items() if k.startswith("nvidia.com/")]:
        left, j = int(total * busy * rng.uniform(0.5, 1.3)), 0
        while left > 0:
            take = min(left, rng.choice([1, 1, 2, 4] if total > 1 else [1]))
            share = _gpu_eq({res: take}, single) / _gpu_eq(alloc, single) * 0.6
            cpu, mem = _cores(alloc["cpu"]) * share, float(alloc["memory"][:-2]) * share
            server = _container("server", TRITON, str(max(1, int(cpu))), f"{max(2, int(mem))}Gi",
                                {res: str(take)})
            out.append(_running(f"infer-{i}-{res[11:].replace('.', '-')}-{j}", "prod", name, f"infer-{i}",
                                server))
            left, j = left - take, j + 1
    return out


def _nodes_and_pods(rng: random.Random, count: int, shape: str) -> tuple[list, list, list, float]:
    """Nodes, the pods bound to them, the pools (for the workloads) and the GPU-equivalents those pods use."""
    region = rng.choice(["us-east-1", "eu-west-1", "us-west-2"])
    zones = [f"{region}{z}" for z in "abc"[:rng.choice([2, 3, 3])]]
    weights = [w for _, _, w, _ in SHAPES[shape]]
    exact = [count * w / sum(weights) for w in weights]
    sizes = [int(x) for x in exact]  # largest remainder, ties by position
    for k in sorted(range(len(sizes)), key=lambda k: (sizes[k] - exact[k], k))[:count - sum(sizes)]:
        sizes[k] += 1
    nodes, pods, pools, used = [], [], [], 0.0
    for (name, kind, _, taint), size in zip(SHAPES[shape], sizes, strict=True):
        gpu = TYPES[kind][2] > 0
        pool = {"pool": name, "kind": kind, "taint": taint, "size": size, "image": None,
                "zones": zones if rng.random() < 0.7 else rng.sample(zones, max(1, len(zones) - 1))}
        if gpu and rng.random() < 0.5:  # a big image cached on part of the pool
            pool["image"] = rng.choice(list(IMAGES)[:4])
        cached, busy = rng.uniform(0.3, 0.8), rng.uniform(0.6, 0.85) if "mig" in kind else rng.uniform(0, 0.4)
        pools.append(pool)
        for k in range(size):
            i = len(nodes)
            images = [pool["image"]] if pool["image"] and rng.random() < cached else []
            n = _node(i, pool, pool["zones"][k % len(pool["zones"])], region, images)
            if rng.random() < 0.02:
                n["spec"]["unschedulable"] = True
            for dname, ns, image, cpu, mem in DAEMONS + (GPU_DAEMONS if gpu else []):
                pods.append(_running(f"{dname}-{i:05d}", ns, n["metadata"]["name"], dname,
                                     _container(dname, image, cpu, mem)))
            if gpu and rng.random() < (0.9 if "mig" in kind else 0.6):
                running = _busy_pods(rng, i, n, busy)
                used += sum(_gpu_eq(p["spec"]["containers"][0]["resources"]["limits"], _mig_single(n))
                            for p in running)
                pods += running
            nodes.append(n)
    return nodes, pods, pools, used


def _resources(rng: random.Random, pool: dict, cpu_only: bool, shape: str) -> tuple[dict, dict, float]:
    """(pod spec with its containers, GPU ask, GPU-equivalents asked), sized from the pool's node type."""
    _, product, gpus, node_cpu, node_mem, extended = TYPES[pool["kind"]]
    ask, units = {}, rng.choice([0.03, 0.06, 0.125, 0.25, 0.5])  # units: the share of a node asked
    if not cpu_only and extended and "nvidia.com/gpu" not in extended:
        res = rng.choice(list(SLICES))
        ask, units = {res: str(rng.choice([1, 1, 1, 2]))}, SLICES[res] / 56
    elif not cpu_only:
        devices = (extended or {}).get("nvidia.com/gpu", gpus)
        k = rng.choice([g for g in (1, 1, 1, 1, 2, 2, 4, 8) if g <= devices])
        ask, units = {"nvidia.com/gpu": str(k)}, k / devices
    cpu_cap, mem_cap, units, style = _cores(node_cpu), float(node_mem[:-2]), min(1.0, units), rng.random()
    if style < 0.12:  # no cpu/memory requests at all
        cpu, mem = None, None
    elif shape == "cpu-bound" or style < 0.2:  # the cpu request is what limits pods per node
        cores = cpu_cap * units * rng.uniform(0.8, 1.6)
        cpu = f"{max(1, int(cores if rng.random() < 0.05 else min(cores, cpu_cap * 0.95)))}"  # rarely too big
        mem = f"{max(1, int(mem_cap * units * 0.3))}Gi"
    else:
        cpu = f"{max(100, int(cpu_cap * 1000 * units * rng.uniform(0.1, 0.6)) // 100 * 100)}m"
        mem = f"{max(1, int(mem_cap * units * rng.uniform(0.1, 0.6)))}Gi"
    image = pool["image"] if pool["image"] and rng.random() < 0.5 else rng.choice(list(IMAGES))
    main = _container("main", image, cpu, mem, ask)
    if ask and rng.random() < 0.3:  # GPUs in requests too (equal to the limits)
        main["resources"].setdefault("requests", {}).update(ask)
    if ask and rng.random() < 0.01:  # GPUs in requests only: the API server rejects it
        main["resources"]["requests"] = {**main["resources"].get("requests", {}), **ask}
        main["resources"]["limits"] = {k: v for k, v in main["resources"]["limits"].items() if k == "memory"}
    sidecar = _container("proxy", "envoyproxy/envoy:v1.33.0", "200m", "256Mi")
    containers = [main, sidecar] if rng.random() < 0.15 else [main]
    return {"containers": containers}, ask, _gpu_eq(ask, "-MIG-" in (product or ""))


def _required(*terms: dict) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(terms)}]}}}


def _placement(rng: random.Random, spec: dict, pool: dict, ask: dict, gpu_pools: list, trap: str | None):
    """A node selector or node affinity, and tolerations, into `spec`."""
    product, target, zone = TYPES[pool["kind"]][1], rng.random(), rng.choice(pool["zones"])
    zone_term = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
    pool_term = {"key": "pool", "operator": "In", "values": [pool["pool"]]}
    if trap == "greedy":
        pass
    elif trap == "l4" or (product and target < 0.35):
        spec["nodeSelector"] = {"nvidia.com/gpu.product": product}
    elif product and target < 0.5:
        values = sorted({product, rng.choice([TYPES[p["kind"]][1] for p in gpu_pools])})
        spec["affinity"] = _required({"key": "nvidia.com/gpu.product", "operator": "In", "values": values})
    elif target < 0.6:
        spec["affinity"] = _required(zone_term, pool_term) if product else _required(zone_term)
    elif target < 0.75:
        first = dict(pool_term, key="nvidia.com/gpu.product", values=[product]) if product else pool_term
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": rng.choice([1, 10, 50, 100]), "preference": {"matchExpressions": [first]}},
            {"weight": rng.choice([1, 20]), "preference": {"matchExpressions": [zone_term]}}]}}
    tol = rng.random()
    if trap == "greedy" or (trap == "l4" and tol < 0.5):
        pass
    elif tol < 0.04:
        spec["tolerations"] = [{"operator": "Exists"}]
    elif pool["taint"] == "dedicated":
        spec["tolerations"] = [dict(GPU_TOLERATION), {"key": "dedicated", "operator": "Equal",
                                                      "value": pool["pool"], "effect": "NoSchedule"}]
        spec.setdefault("nodeSelector", {"pool": pool["pool"]})
    elif ask and tol < 0.95:
        spec["tolerations"] = [dict(GPU_TOLERATION)]


def _workload(rng: random.Random, n: int, pools: list, shape: str, trap: str | None) -> tuple[dict, float]:
    """One manifest and the GPU-equivalents one of its pods asks. `trap`: "greedy" (1 GPU, no selector,
    no toleration: only untainted GPU nodes fit) or "l4" (selects NVIDIA-L4)."""
    gpu_pools = [p for p in pools if TYPES[p["kind"]][2] and p["size"]]
    cpu_pools = [p for p in pools if not TYPES[p["kind"]][2] and p["size"]]
    cpu_only = trap is None and (not gpu_pools or rng.random() < (0.3 if shape == "cpu-bound" else 0.2))
    if cpu_only:
        pool = rng.choice(cpu_pools if cpu_pools and rng.random() < 0.8 else [p for p in pools if p["size"]])
    else:
        pool = rng.choice(gpu_pools)
    if trap:
        pool = next((p for p in pools if p["kind"] == "l4x1"), pool)
    spec, ask, per_pod = _resources(rng, pool, cpu_only, shape)
    _placement(rng, spec, pool, ask, gpu_pools, trap)
    kind = rng.random() if trap is None else 1.0  # < 0.05: a bare Pod, < 0.25: a Job, else a Deployment
    name = f"{'svc' if not ask else 'infer' if kind < 0.05 or kind >= 0.25 else 'train'}-{n:04d}"
    ns, labels = f"team-{'abcdefgh'[n % 8]}", {"app.kubernetes.io/name": name}
    template = {"metadata": {"labels": dict(labels)}, "spec": spec}
    if kind < 0.05:
        return {"apiVersion": "v1", "kind": "Pod", "spec": dict(spec, restartPolicy="Never"),
                "metadata": {"name": name, "namespace": ns, "labels": labels}}, per_pod
    if kind < 0.25:
        par = rng.choice([1, 2, 4, 8])
        spec["restartPolicy"] = "OnFailure"
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
                "spec": {"parallelism": par, "completions": rng.choice([par, par * 4, max(1, par // 2)]),
                         "backoffLimit": 3, "template": template}}, per_pod
    replicas = rng.choice([1, 1, 2, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30])
    spec = {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": spec}, per_pod


def pod_count(m: dict) -> int:
    """The pods a manifest creates (Deployment replicas, Job min(parallelism, completions), a Pod 1)."""
    s = m.get("spec", {})
    if m["kind"] == "Job":
        return min(s.get("parallelism", 1), s.get("completions", s.get("parallelism", 1)))
    return s.get("replicas", 1) if m["kind"] == "Deployment" else 1


def generate(seed: int, nodes: int, shape: str, oversubscription: float | None = None) -> Fleet:
    if shape not in SHAPES:
        raise ValueError(f"shape {shape!r}: one of {', '.join(SHAPES)}")
    rng = random.Random(seed)
    drawn = round(rng.uniform(0.15, 0.8), 2)  # drawn even when given, so the rest of the fleet is the same
    oversubscription = drawn if oversubscription is None else oversubscription
    node_objs, pods, pools, used = _nodes_and_pods(rng, nodes, shape)
    supply = sum(_gpu_eq(n["status"]["allocatable"], _mig_single(n)) for n in node_objs)
    target, manifests, demand = (1 + oversubscription) * (supply - used), [], 0.0

    def add(trap: str | None = None) -> None:
        nonlocal demand
        m, per_pod = _workload(rng, len(manifests), pools, shape, trap)
        manifests.append(m)
        demand += per_pod * pod_count(m)

    if shape == "l4-trap":  # unselective 1-GPU Deployments that fill the untainted L4 nodes first
        while demand < sum(p["size"] for p in pools if p["kind"] == "l4x1"):
            add("greedy")
    while demand < target and sum(map(pod_count, manifests)) < 8 * nodes:
        add()
        if shape == "l4-trap" and len(manifests) % 7 == 3:
            add("l4")
    stats = {"gpu_supply": round(supply, 2), "gpu_free": round(supply - used, 2),
             "gpu_demand": round(demand, 2),
             "running_pods": len(pods), "workloads": len(manifests),
             "pods_to_place": sum(map(pod_count, manifests))}
    return Fleet(node_objs, pods, manifests,
                 {"seed": seed, "nodes": nodes, "shape": shape, "oversubscription": oversubscription}, stats)
