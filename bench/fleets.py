"""Realistic generated fleets for bench/check_bench.py (deterministic: `random.Random(seed)` only).

`realistic(nodes, pods)`: a cloud fleet as a new user would bring it: 29 EC2-like instance types (T4, A10G,
L4, L40S, V100, A100 40/80 GB, H100, H200 and CPU families), each a node group in three zones (87 pools);
A100/H100 nodes in MIG mixed and single strategy (about a tenth of the fleet); the GPU taint on most GPU
pools, dedicated and PreferNoSchedule pools, cordoned nodes and NotReady nodes (with the taints the node
lifecycle controller puts on them); DaemonSet pods on every node and inference pods on many GPU nodes;
then Deployments, Jobs and Pods that ask for GPUs or MIG slices with nodeSelectors, required and preferred
node affinity, GPU tolerations and now and then a broad `operator: Exists`, until `pods` pods are to place.

`dra(nodes)`: a DRA cluster: seven in ten nodes publish their GPUs (some split into MIG devices) as
ResourceSlices of NVIDIA's driver, the rest are classic or CPU nodes; claims already allocated; workloads
whose pods hold claims from templates with CEL selectors (product names, memory quantities, versions,
indexes), counts, `firstAvailable`, `matchAttribute`, and named claims shared by several pods; about 3.75
pods per node. Device and claim shapes are those of tests/scheduling/dra_scenarios.py (which the real
kube-scheduler's recorded answers were made from), at fleet scale.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import yaml

from tests.scheduling import dra_scenarios as ds
from tests.scheduling.oracle_fleets import DAEMONS, GPU_DAEMONS, GPU_TOLERATION, IMAGES, _container, _cores, _running

A100_80, A100_40, H100 = "NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-40GB", "NVIDIA-H100-80GB-HBM3"
MIG_A100 = {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8}
MIG_H100 = {"nvidia.com/mig-1g.10gb": 24, "nvidia.com/mig-3g.40gb": 16}
#: instance type -> (GPU product, GPUs, cpu, memory, extended resources when not N whole GPUs, pool weight)
TYPES = {
    "g4dn.xlarge": ("Tesla-T4", 1, "3920m", "14Gi", None, 3),
    "g4dn.12xlarge": ("Tesla-T4", 4, "47810m", "180Gi", None, 2),
    "g5.xlarge": ("NVIDIA-A10G", 1, "3920m", "14Gi", None, 4),
    "g5.12xlarge": ("NVIDIA-A10G", 4, "47810m", "180Gi", None, 3),
    "g5.48xlarge": ("NVIDIA-A10G", 8, "191450m", "750Gi", None, 1),
    "g6.xlarge": ("NVIDIA-L4", 1, "3920m", "14Gi", None, 5),
    "g6.12xlarge": ("NVIDIA-L4", 4, "47810m", "180Gi", None, 3),
    "g6.48xlarge": ("NVIDIA-L4", 8, "191450m", "750Gi", None, 1),
    "g6e.xlarge": ("NVIDIA-L40S", 1, "3920m", "29Gi", None, 3),
    "g6e.12xlarge": ("NVIDIA-L40S", 4, "47810m", "360Gi", None, 2),
    "g6e.48xlarge": ("NVIDIA-L40S", 8, "191450m", "1450Gi", None, 1),
    "p3.8xlarge": ("Tesla-V100-SXM2-16GB", 4, "31850m", "235Gi", None, 1),
    "p3.16xlarge": ("Tesla-V100-SXM2-16GB", 8, "63770m", "475Gi", None, 1),
    "p4d.24xlarge": (A100_40, 8, "95690m", "1100Gi", None, 3),
    "p4de.24xlarge": (A100_80, 8, "95690m", "1100Gi", None, 4),
    "p4de.mig-mixed": (A100_80, 8, "95690m", "1100Gi", MIG_A100, 3),
    "p4de.mig-single": (A100_80 + "-MIG-1g.10gb", 8, "95690m", "1100Gi", {"nvidia.com/gpu": 56}, 2),
    "p5.48xlarge": (H100, 8, "191450m", "1950Gi", None, 8), "p5.mig-mixed": (H100, 8, "191450m", "1950Gi", MIG_H100, 2),
    "p5.mig-single": (H100 + "-MIG-1g.10gb", 8, "191450m", "1950Gi", {"nvidia.com/gpu": 56}, 1),
    "p5e.48xlarge": ("NVIDIA-H200", 8, "191450m", "1950Gi", None, 2),
    "m6i.2xlarge": (None, 0, "7910m", "29Gi", None, 8), "m6i.8xlarge": (None, 0, "31750m", "120Gi", None, 10),
    "m6i.16xlarge": (None, 0, "63770m", "245Gi", None, 5), "c6i.8xlarge": (None, 0, "31750m", "58Gi", None, 5),
    "c6i.16xlarge": (None, 0, "63770m", "118Gi", None, 3), "r6i.8xlarge": (None, 0, "31750m", "240Gi", None, 4),
    "r6i.16xlarge": (None, 0, "63770m", "485Gi", None, 2), "m7i.24xlarge": (None, 0, "95690m", "370Gi", None, 3),
}
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
NOT_READY = [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
             {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": "2026-11-20T09:58:00Z"}]


def _pools(rng: random.Random, count: int) -> list[dict]:
    """One node group per instance type and zone, sized by the type's weight (largest remainder)."""
    pools = []
    for itype, (_product, gpus, *_rest, weight) in TYPES.items():
        mig = "mig" in itype
        taint = "gpu" if gpus and (mig or rng.random() < 0.8) else "prefer" if gpus and rng.random() < 0.5 else "none"
        if itype in ("p5.48xlarge", "p4d.24xlarge"):
            taint = "dedicated"
        for zone in ZONES:
            pools.append({"name": f"{itype.replace('.', '-')}-{zone[-1]}", "type": itype, "zone": zone,
                          "taint": taint, "weight": weight * rng.uniform(0.6, 1.4),
                          "image": rng.choice(list(IMAGES)[:4]) if gpus and rng.random() < 0.4 else None})
    total = sum(p["weight"] for p in pools)
    exact = [count * p["weight"] / total for p in pools]
    sizes = [int(x) for x in exact]
    for k in sorted(range(len(sizes)), key=lambda k: (sizes[k] - exact[k], k))[:count - sum(sizes)]:
        sizes[k] += 1
    for p, size in zip(pools, sizes, strict=True):
        p["size"] = size
    return pools


def _node(rng: random.Random, i: int, pool: dict) -> dict:
    product, gpus, cpu, memory, extended, _ = TYPES[pool["type"]]
    name = f"ip-10-{i // 250 % 256}-{i % 250}-{i // 64000}.ec2.internal"
    itype = _node_type(pool)
    alloc = {"cpu": cpu, "memory": memory, "ephemeral-storage": "450Gi", "pods": "110" if gpus else "58"}
    labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": name,
              "node.kubernetes.io/instance-type": itype, "topology.kubernetes.io/region": "us-east-1",
              "topology.kubernetes.io/zone": pool["zone"], "eks.amazonaws.com/nodegroup": pool["name"],
              "eks.amazonaws.com/capacityType": "ON_DEMAND" if rng.random() < 0.8 else "SPOT"}
    taints = []
    if gpus:
        alloc.update({k: str(v) for k, v in (extended or {"nvidia.com/gpu": gpus}).items()})
        strategy = "none" if not extended else "single" if "nvidia.com/gpu" in extended else "mixed"
        labels.update({"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product,
                       "nvidia.com/gpu.count": alloc.get("nvidia.com/gpu", str(gpus)),
                       "nvidia.com/mig.strategy": strategy})
        if pool["taint"] in ("gpu", "dedicated", "prefer"):
            taints.append({"key": "nvidia.com/gpu", "value": "present",
                           "effect": "PreferNoSchedule" if pool["taint"] == "prefer" else "NoSchedule"})
    if pool["taint"] == "dedicated":
        taints.append({"key": "dedicated", "value": "training", "effect": "NoSchedule"})
    ready = rng.random() >= 0.01
    spec: dict = {"providerID": f"aws:///{pool['zone']}/i-{i:017x}"}
    if not ready:
        taints += [dict(t) for t in NOT_READY]
    if taints:
        spec["taints"] = taints
    if rng.random() < 0.015:
        spec["unschedulable"] = True
    status = {"allocatable": alloc, "capacity": dict(alloc),
              "conditions": [{"type": "Ready", "status": "True" if ready else "Unknown",
                              "reason": "KubeletReady" if ready else "NodeStatusUnknown"}],
              "nodeInfo": {"architecture": "amd64", "kubeletVersion": "v1.34.1", "osImage": "Amazon Linux 2023",
                           "containerRuntimeVersion": "containerd://1.7.27"}}
    if pool["image"] and rng.random() < 0.5:
        status["images"] = [{"names": [pool["image"]], "sizeBytes": IMAGES[pool["image"]]}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec,
            "status": status}


def _required(*terms: dict) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(terms)}]}}}


def _workload(rng: random.Random, k: int, pools: list[dict]) -> dict:
    gpu_pools = [p for p in pools if TYPES[p["type"]][1] and p["size"]]
    cpu_pools = [p for p in pools if not TYPES[p["type"]][1] and p["size"]]
    cpu_only = rng.random() < 0.3
    pool = rng.choice(cpu_pools if cpu_only else gpu_pools)
    product, gpus, node_cpu, node_mem, extended, _ = TYPES[pool["type"]]
    ask, share = {}, rng.choice([0.03, 0.06, 0.125, 0.25])
    if not cpu_only and extended and "nvidia.com/gpu" not in extended:
        res = rng.choice(list(extended))
        ask, share = {res: str(rng.choice([1, 1, 2]))}, 1 / 16
    elif not cpu_only:
        devices = (extended or {}).get("nvidia.com/gpu", gpus)
        n = rng.choice([g for g in (1, 1, 1, 2, 2, 4, 8) if g <= devices])
        ask, share = {"nvidia.com/gpu": str(n)}, n / devices
    cpu = f"{max(100, int(_cores(node_cpu) * 1000 * share * rng.uniform(0.2, 0.7)) // 100 * 100)}m"
    mem = f"{max(1, int(float(node_mem[:-2]) * share * rng.uniform(0.2, 0.7)))}Gi"
    image = pool["image"] if pool["image"] and rng.random() < 0.5 else rng.choice(list(IMAGES))
    spec: dict = {"containers": [_container("main", image, cpu, mem, ask)]}
    r = rng.random()
    if product and r < 0.35:
        spec["nodeSelector"] = {"nvidia.com/gpu.product": product}
    elif product and r < 0.5:
        others = sorted({product, TYPES[rng.choice(gpu_pools)["type"]][0]})
        spec["affinity"] = _required({"key": "nvidia.com/gpu.product", "operator": "In", "values": others})
    elif r < 0.6:
        spec["affinity"] = _required({"key": "topology.kubernetes.io/zone", "operator": "In", "values": [pool["zone"]]},
                                     {"key": "node.kubernetes.io/instance-type", "operator": "In",
                                      "values": [_node_type(pool)]})
    elif r < 0.7:
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": rng.choice([10, 50, 100]), "preference": {"matchExpressions": [
                {"key": "eks.amazonaws.com/capacityType", "operator": "In", "values": ["ON_DEMAND"]}]}}]}}
        if product:
            spec["nodeSelector"] = {"nvidia.com/gpu.product": product}
    elif cpu_only:
        spec["nodeSelector"] = {"node.kubernetes.io/instance-type": _node_type(pool)}
    t = rng.random()
    if t < 0.04:
        spec["tolerations"] = [{"operator": "Exists"}]
    elif pool["taint"] == "dedicated":
        spec["tolerations"] = [dict(GPU_TOLERATION), {"key": "dedicated", "operator": "Equal", "value": "training",
                                                      "effect": "NoSchedule"}]
    elif ask and t < 0.95:
        spec["tolerations"] = [dict(GPU_TOLERATION)]
    name, ns = f"{'svc' if not ask else 'infer'}-{k:05d}", f"team-{k % 40}"
    labels = {"app.kubernetes.io/name": name}
    template = {"metadata": {"labels": dict(labels)}, "spec": spec}
    kind = rng.random()
    if kind < 0.03:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": dict(spec, restartPolicy="Never")}
    if kind < 0.2:
        par = rng.choice([1, 2, 4, 8, 16])
        spec["restartPolicy"] = "OnFailure"
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
                "spec": {"parallelism": par, "completions": par, "template": template}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": rng.choice([1, 2, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30]),
                     "selector": {"matchLabels": labels}, "template": template}}


def _node_type(pool: dict) -> str:
    t = pool["type"]
    return t if "mig" not in t else t.split(".")[0] + (".48xlarge" if t.startswith("p5") else ".24xlarge")


def _pods_of(m: dict) -> int:
    s = m["spec"]
    return 1 if m["kind"] == "Pod" else s["parallelism"] if m["kind"] == "Job" else s["replicas"]


def realistic(nodes: int, pods: int, seed: int = 21) -> tuple[list[dict], list[dict], list[dict]]:
    """(Node objects, the pods bound to them, manifests whose pods add up to `pods`)."""
    rng = random.Random(seed)
    node_objs, running = [], []
    pools = _pools(rng, nodes)
    for pool in pools:
        gpus = TYPES[pool["type"]][1]
        for _ in range(pool["size"]):
            i = len(node_objs)
            n = _node(rng, i, pool)
            name = n["metadata"]["name"]
            for dname, ns, image, cpu, mem in DAEMONS + (GPU_DAEMONS if gpus else []):
                running.append(_running(f"{dname}-{i:05d}", ns, name, dname, _container(dname, image, cpu, mem)))
            if gpus and rng.random() < 0.5:
                res = next(r for r in n["status"]["allocatable"] if r.startswith("nvidia.com/"))
                take = max(1, int(n["status"]["allocatable"][res]) // rng.choice([2, 4, 8]))
                running.append(_running(f"infer-{i:05d}", "prod", name, f"infer-{i % 300}", _container(
                    "server", pool["image"] or list(IMAGES)[0], "2", "16Gi", {res: str(take)})))
            node_objs.append(n)
    manifests, total = [], 0
    while total < pods:
        m = _workload(rng, len(manifests), pools)
        left = pods - total
        if _pods_of(m) > left:  # the last one takes exactly what is left
            m["spec"].update({"replicas": left} if m["kind"] == "Deployment"
                             else {"parallelism": left, "completions": left})
        manifests.append(m)
        total += _pods_of(m)
    return node_objs, running, manifests


class _Dra(ds._Gen):
    """dra_scenarios' generator at fleet scale: many nodes, many workloads, no invalid inputs."""

    def most(self, kind: str) -> int:
        """As the scenarios' (the most free devices of a kind on one node, 1..3), counted once: the
        generator's linear scan per request would make a fleet's generation quadratic."""
        cache = self.__dict__.setdefault("_most", {})
        if kind not in cache:
            cache[kind] = super().most(kind)
        return cache[kind]

    def products(self) -> list[str]:
        cache = self.__dict__.setdefault("_products", super().products())
        return list(cache)

    def profiles(self) -> list[str]:
        cache = self.__dict__.setdefault("_profiles", super().profiles())
        return list(cache)

    def build_fleet(self, count: int) -> dict:
        rng = self.rng
        self.extended_name, self.h100_class, self.bad, self.bad_done = False, True, False, False
        for i in range(count):
            r = rng.random()
            kind = "classic" if r < 0.15 else "cpu" if r < 0.3 else "mig" if r < 0.5 else "gpu"
            self.node(f"node-{i:05d}", kind)
        self._valid_pools()
        self.preallocate()
        shared: list[str] = []
        pods, k = 0, 0
        while pods < 3.75 * count:
            before = len(self.workloads)
            self.fleet_workload(k, shared)
            pods += sum(_pods_of(m) for m in self.workloads[before:])
            k += 1
        return {"nodes": self.nodes, "pods": self.pods,
                "manifests": [*self.device_classes(), *self.slices, *self.claims, *self.templates, *self.workloads]}

    def _valid_pools(self) -> None:
        """Keep each node's newest slices whole: one slice per pool when the generator split or spoiled it."""
        by_pool: dict[str, list[dict]] = {}
        for s in self.slices:
            by_pool.setdefault(s["spec"]["pool"]["name"], []).append(s)
        out = []
        for pool, slices in by_pool.items():
            top = max(s["spec"]["pool"]["generation"] for s in slices)
            current = [s for s in slices if s["spec"]["pool"]["generation"] == top]
            stale = [s for s in slices if s["spec"]["pool"]["generation"] != top]
            devices, seen = [], set()
            for s in current:
                for d in s["spec"]["devices"]:
                    if d["name"] not in seen:
                        seen.add(d["name"])
                        devices.append(d)
            first = current[0]
            out += stale + [self.slice(first["metadata"]["name"], pool, top, 1, devices)]
        self.slices = out

    def fleet_workload(self, k: int, shared: list[str]) -> None:
        rng = self.rng
        r = rng.random()
        kind = "Pod" if r < 0.2 else "Deployment" if r < 0.85 else "Job"
        replicas = 1 if kind == "Pod" else rng.choice([1, 2, 3, 4, 6, 8])
        name = f"w{k:05d}"
        claims: list[dict] = []
        r = rng.random()
        if r < 0.08 and self.classic:
            limits = {"nvidia.com/gpu": str(rng.choice([1, 1, 2]))}
        else:
            limits = {}
            if r < 0.25:  # a named claim shared by every pod of the workload, or by two workloads
                if shared and rng.random() < 0.3:
                    claim = rng.choice(shared)
                else:
                    claim = f"shared-{k}"
                    spec, _ = self.claim_spec()
                    self.claims.append({"apiVersion": ds.V1, "kind": "ResourceClaim",
                                        "metadata": {"name": claim, "namespace": ds.NS}, "spec": spec})
                    shared.append(claim)
                claims.append({"name": "gpus", "resourceClaimName": claim})
            else:
                self.template(name, 0, replicas, claims)
                if rng.random() < 0.08:
                    self.template(name, 1, replicas, claims)
        resources: dict = {"requests": {"cpu": rng.choice(["500m", "1", "2", "4", "6"]),
                                        "memory": rng.choice(["2Gi", "4Gi", "8Gi", "16Gi", "32Gi"])}}
        if limits:
            resources["limits"] = limits
        if claims:
            resources["claims"] = [{"name": c["name"]} for c in claims]
        spec: dict = {"containers": [{"name": "main", "image": f"registry.example.com/{name}:1",
                                      "resources": resources}]}
        if claims:
            spec["resourceClaims"] = claims
        tolerations = [dict(ds.GPU_TOLERATION)] if rng.random() < 0.9 else []
        if rng.random() < 0.4:
            tolerations.append(dict(ds.DEDICATED_TOLERATION))
        if tolerations:
            spec["tolerations"] = tolerations
        if rng.random() < 0.1:
            spec["nodeSelector"] = {ds.POOL_LABEL: rng.choice(["gpu", "mig"])}
        labels, meta = {"app": name}, {"name": name, "namespace": ds.NS}
        template = {"metadata": {"labels": labels}, "spec": spec}
        if kind == "Pod":
            self.workloads.append({"apiVersion": "v1", "kind": "Pod", "metadata": {**meta, "labels": labels},
                                   "spec": spec})
        elif kind == "Deployment":
            self.workloads.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {
                "replicas": replicas, "selector": {"matchLabels": labels}, "template": template}})
        else:
            spec["restartPolicy"] = "Never"
            self.workloads.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
                                   "spec": {"parallelism": replicas, "completions": replicas, "template": template}})

    def template(self, workload: str, j: int, replicas: int, pod_claims: list[dict]) -> float:
        count = super().template(workload, j, replicas, pod_claims)
        spec = self.templates[-1]["spec"]["spec"]["devices"]
        for req in spec["requests"]:  # a template names a class that exists, as a working cluster's do
            if (req.get("exactly") or {}).get("deviceClassName") == "gpu.example.com":
                req["exactly"]["deviceClassName"] = ds.GPU_CLASS
        return count


def dra(nodes: int, seed: int = 21) -> tuple[list[dict], list[dict], list[dict]]:
    s = _Dra(seed).build_fleet(nodes)
    return s["nodes"], s["pods"], s["manifests"]


def write(kind: str, nodes: int, pods: int, directory: Path) -> dict:
    """Write nodes.json, pods.json, manifests.yaml of a fleet; what they hold."""
    node_objs, running, manifests = realistic(nodes, pods) if kind == "realistic" else dra(nodes)
    directory = Path(directory)
    paths = directory / "nodes.json", directory / "pods.json", directory / "manifests.yaml"
    for path, items in zip(paths[:2], (node_objs, running), strict=True):
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    paths[2].write_text(yaml.dump_all(manifests, Dumper=yaml.CSafeDumper, sort_keys=False))
    workloads = [m for m in manifests if m["kind"] in ("Pod", "Deployment", "Job")]
    return {"paths": [str(p) for p in paths], "nodes": len(node_objs), "running": len(running),
            "workloads": len(workloads), "to_place": sum(_pods_of(m) for m in workloads),
            "slices": sum(1 for m in manifests if m["kind"] == "ResourceSlice"),
            "claims": sum(1 for m in manifests if m["kind"] == "ResourceClaim"),
            "templates": sum(1 for m in manifests if m["kind"] == "ResourceClaimTemplate")}
