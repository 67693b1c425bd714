"""Deterministic random small DRA clusters, to compare `gpufleet check` with the real kube-scheduler.

`scenario(seed)` builds, from `random.Random(seed)` alone, a dict with
- `nodes`: 1-6 Node objects (`kubectl get nodes -o json` items): GPU nodes whose devices NVIDIA's DRA driver
  publishes (whole H100 / A100 / L4 GPUs, A100s partly split into MIG devices), now and then a classic
  `nvidia.com/gpu` node or a CPU-only one; some tainted;
- `pods`: the pods already bound to them (holding CPU, classic GPUs, and the pre-allocated claims);
- `manifests`, in apply order: DeviceClasses, ResourceSlices, pre-existing ResourceClaims (some allocated in
  their status), ResourceClaimTemplates, then the Pods / Deployments / Jobs to check. Their claims use CEL
  selectors (product names, quantity comparisons on memory, semver, index), `firstAvailable`, `matchAttribute`
  constraints, `allocationMode: All`, counts 1-3, named claims shared by several pods, claims already
  allocated, templates or classes that do not exist, and (about one scenario in 18) a selector that does
  not compile or fails at run time. The demand is drawn near the free devices, so pods often pend.

Only lists and insertion-ordered dicts are iterated, so a seed always gives the same objects; `digest(s)`
hashes a scenario (the recorded fixture keeps it, to notice a changed generator). `write(s, dir)` writes
nodes.json, pods.json and manifests.yaml, the reference scheduler's inputs.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import yaml

V1 = "resource.k8s.io/v1"
DRIVER = "gpu.nvidia.com"
GPU_CLASS, MIG_CLASS = "gpu.nvidia.com", "mig.nvidia.com"
NS = "ml"
#: model -> (productName, architecture, cudaComputeCapability, memory, node label)
MODELS = {
    "h100": ("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "81559Mi", "NVIDIA-H100-80GB-HBM3"),
    "a100": ("NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", "81920Mi", "NVIDIA-A100-SXM4-80GB"),
    "a100-40": ("NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", "40960Mi", "NVIDIA-A100-SXM4-40GB"),
    "l4": ("NVIDIA L4", "Ada Lovelace", "8.9.0", "23034Mi", "NVIDIA-L4"),
}
#: MIG profile of an A100 80GB -> (memory, multiprocessors)
MIG = {"1g.10gb": ("9728Mi", 14), "2g.20gb": ("19968Mi", 28), "3g.40gb": ("40192Mi", 42)}
MIG_LAYOUTS = [["1g.10gb"] * 7, ["3g.40gb", "3g.40gb"], ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"],
               ["2g.20gb", "2g.20gb", "2g.20gb", "1g.10gb"]]
ABSENT_PRODUCT = "NVIDIA B200"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
DEDICATED_TAINT = {"key": "dedicated", "value": "training", "effect": "NoSchedule"}
DEDICATED_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoSchedule"}
PREFER_TAINT = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}
POOL_LABEL = "gpufleet.test/pool"
ATTR = 'device.attributes["gpu.nvidia.com"]'
CAP = 'device.capacity["gpu.nvidia.com"]'
#: Selectors that do not compile, or fail at run time on some device the class lets through.
BAD_SELECTORS = [
    f"{ATTR}.productName ==",  # syntax error
    f"{CAP}.memory > quantity(\"40Gi\")",  # Quantity has no `>` overload: a type-check error
    f"{ATTR}.index",  # not a bool
    f"{ATTR}.profile == \"1g.10gb\"",  # whole GPUs have no profile: no such key
    f"{ATTR}.memoryClock > 1000",  # no device has it
    # a string where a quantity belongs
    f"{ATTR}.productName.startsWith(\"NVIDIA\") && {CAP}.memory.compareTo(\"40Gi\") >= 0",
]


def _uuid(rng: random.Random, prefix: str) -> str:
    h = "".join(rng.choice("0123456789abcdef") for _ in range(32))
    return f"{prefix}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class _Gen:
    def __init__(self, seed: int):
        self.seed = seed
        self.rng = random.Random(seed)
        self.nodes: list[dict] = []
        self.pods: list[dict] = []
        self.slices: list[dict] = []
        self.claims: list[dict] = []
        self.templates: list[dict] = []
        self.workloads: list[dict] = []
        # node name -> devices (name, type, model, profile/None) published on it; what classic nodes have
        self.devices: dict[str, list[dict]] = {}
        self.classic: dict[str, int] = {}
        self.taints: dict[str, list[dict]] = {}
        self.allocated: list[tuple[str, str, int]] = []  # (claim name, node, devices) of allocated claims
        self.used: set[tuple[str, str]] = set()  # (node, device) held by allocated claims
        self.uid = 0

    def next_uid(self, kind: str) -> str:
        self.uid += 1
        return f"{self.seed:05d}{kind}-0000-4000-8000-{self.uid:012d}"

    # -- the cluster ----------------------------------------------------------------------------------

    def build(self) -> dict:
        rng = self.rng
        self.extended_name = rng.random() < 0.5
        self.h100_class = rng.random() < 0.25
        n = rng.choice([1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 5, 6])
        kinds = []
        for _ in range(n):
            r = rng.random()
            kinds.append("classic" if r < 0.12 else "cpu" if r < 0.2 else "mig" if r < 0.42 else "gpu")
        if not any(k in ("gpu", "mig") for k in kinds):
            kinds[0] = rng.choice(["gpu", "mig"])
        for i, kind in enumerate(kinds):
            self.node(f"node-{chr(97 + i)}", kind)
        self.preallocate()
        self.bad = self.seed % 12 == 5
        self.workload_list()
        classes = self.device_classes()
        return {"nodes": self.nodes, "pods": self.pods,
                "manifests": [*classes, *self.slices, *self.claims, *self.templates, *self.workloads]}

    def device_classes(self) -> list[dict]:
        of_type = "device.driver == '{0}' && device.attributes['{0}'].type == '{1}'"
        gpu = {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": GPU_CLASS},
               "spec": {"selectors": [{"cel": {"expression": of_type.format(DRIVER, "gpu")}}]}}
        if self.extended_name:  # as the chart renders it; ignored while DRAExtendedResource is off
            gpu["spec"]["extendedResourceName"] = "nvidia.com/gpu"
        mig = {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": MIG_CLASS},
               "spec": {"selectors": [{"cel": {"expression": of_type.format(DRIVER, "mig")}}]}}
        out = [gpu, mig]
        if self.h100_class:
            out.append({"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": "h100.nvidia.com"},
                        "spec": {"selectors": [
                            {"cel": {"expression": f"device.driver == '{DRIVER}'"}},
                            {"cel": {"expression": f"{ATTR}.productName == 'NVIDIA H100 80GB HBM3'"}}]}})
        return out

    def node(self, name: str, kind: str) -> None:
        rng = self.rng
        cpu = rng.choice(["8", "16", "32", "64"]) if kind != "cpu" else rng.choice(["8", "16"])
        memory = rng.choice(["64Gi", "128Gi", "256Gi", "512Gi"])
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                  POOL_LABEL: {"gpu": "gpu", "mig": "mig", "classic": "classic", "cpu": "cpu"}[kind]}
        allocatable = {"cpu": cpu, "memory": memory, "ephemeral-storage": "500Gi", "pods": "110"}
        taints: list[dict] = []
        if kind != "cpu":
            r = rng.random()
            if r < 0.3:
                taints.append(dict(GPU_TAINT))
            elif r < 0.36:
                taints.append(dict(DEDICATED_TAINT))
            elif r < 0.45:
                taints.append(dict(PREFER_TAINT))
        if kind == "classic":
            count = rng.choice([1, 2, 4, 8])
            model = rng.choice(["h100", "a100", "l4"])
            allocatable["nvidia.com/gpu"] = str(count)
            labels["nvidia.com/gpu.product"] = MODELS[model][4]
            labels["nvidia.com/gpu.count"] = str(count)
            self.classic[name] = count
        elif kind in ("gpu", "mig"):
            labels["nvidia.com/gpu.present"] = "true"
            self.publish(name, kind)
            first = self.devices[name][:1]
            labels["nvidia.com/gpu.product"] = MODELS[first[0]["model"]][4] if first else ""
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                "spec": {"taints": taints} if taints else {},
                "status": {"allocatable": allocatable, "capacity": dict(allocatable),
                           "nodeInfo": {"containerRuntimeVersion": "containerd://1.7.27",
                                        "kubeletVersion": "v1.34.1"}}}
        self.taints[name] = taints
        self.nodes.append(node)
        self.system_pods(name, allocatable)

    def publish(self, name: str, kind: str) -> None:
        rng = self.rng
        if kind == "mig":
            model, count = "a100", rng.choice([1, 2, 2, 4])
        else:
            model = rng.choice(["h100", "h100", "a100", "a100-40", "l4"])
            count = rng.choice([1, 2, 4, 4, 8, 8])
        product, arch, cc, memory, _ = MODELS[model]
        split = rng.randint(1, count) if kind == "mig" else 0
        devices, listed = [], []
        per_root = max(1, count // 2)
        for i in range(count):
            root = f"pci0000:{0x15 + 0x20 * (i // per_root):02x}"
            uuid = _uuid(rng, "GPU")
            common = {"productName": {"string": product}, "brand": {"string": "Nvidia"},
                      "architecture": {"string": arch}, "cudaComputeCapability": {"version": cc},
                      "driverVersion": {"version": "570.133.20"}, "cudaDriverVersion": {"version": "12.8.0"},
                      "resource.kubernetes.io/pcieRoot": {"string": root}}
            if i < split:
                layout = rng.choice(MIG_LAYOUTS)
                for j, profile in enumerate(layout):
                    mem, sms = MIG[profile]
                    dev = f"gpu-{i}-mig-{profile.replace('.', '-')}-{j}"
                    listed.append({"name": dev, "attributes": {
                        "type": {"string": "mig"}, "uuid": {"string": _uuid(rng, "MIG")},
                        "profile": {"string": profile}, "index": {"int": j}, "parentIndex": {"int": i},
                        "parentUUID": {"string": uuid}, **common},
                        "capacity": {"memory": {"value": mem}, "multiprocessors": {"value": str(sms)}}})
                    devices.append({"name": dev, "type": "mig", "model": model, "profile": profile})
            else:
                dev = f"gpu-{i}"
                listed.append({"name": dev, "attributes": {
                    "type": {"string": "gpu"}, "uuid": {"string": uuid}, "index": {"int": i}, **common,
                    "resource.kubernetes.io/pciBusID": {"string": f"0000:{0x18 + 0x10 * i:02x}:00.0"},
                    "addressingMode": {"string": "None"}},
                    "capacity": {"memory": {"value": memory}}})
                devices.append({"name": dev, "type": "gpu", "model": model, "profile": None})
        self.devices[name] = devices
        suffix = "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
        r = rng.random()
        generation = 1
        if r < 0.08 and len(listed) > 1:  # a stale slice of an older generation, with the first device only
            self.slices.append(self.slice(f"{name}-{DRIVER}-old{suffix[:3]}", name, 1, 1, listed[:1]))
            generation = 2
        if r > 0.9 and len(listed) > 1:  # the pool published in two slices
            half = len(listed) // 2
            for part, devices_part in ((suffix, listed[:half]), (suffix[::-1], listed[half:])):
                self.slices.append(self.slice(f"{name}-{DRIVER}-{part}", name, generation, 2, devices_part))
        elif 0.82 < r <= 0.9:  # incomplete: one slice of two published so far
            self.slices.append(self.slice(f"{name}-{DRIVER}-{suffix}", name, generation, 2, listed))
        elif 0.8 < r <= 0.82:  # invalid: a second slice repeats a device name
            twin = json.loads(json.dumps(listed[-1]))
            twin["attributes"]["uuid"] = {"string": _uuid(rng, "GPU")}
            self.slices.append(self.slice(f"{name}-{DRIVER}-{suffix}", name, generation, 2, listed))
            self.slices.append(self.slice(f"{name}-{DRIVER}-{suffix[::-1]}", name, generation, 2, [twin]))
        else:
            self.slices.append(self.slice(f"{name}-{DRIVER}-{suffix}", name, generation, 1, listed))

    @staticmethod
    def slice(name: str, node: str, generation: int, count: int, devices: list[dict]) -> dict:
        return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": name},
                "spec": {"driver": DRIVER, "nodeName": node,
                         "pool": {"name": node, "generation": generation, "resourceSliceCount": count},
                         "devices": devices}}

    def system_pods(self, node: str, allocatable: dict) -> None:
        rng = self.rng
        cpu = int(allocatable["cpu"])
        used = rng.choice([0, 0, 1, 2]) * cpu // 8
        if used:
            self.running_pod(f"busy-{node}", node, {"cpu": str(used), "memory": "8Gi"})
        classic = self.classic.get(node)
        if classic and rng.random() < 0.6:
            take = rng.randint(1, classic)
            self.running_pod(f"cuda-{node}", node, {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": str(take)},
                             tolerate=True)

    def running_pod(self, name: str, node: str, requests: dict, tolerate: bool = False,
                    claim: str | None = None, uid: str | None = None) -> None:
        limits = {k: v for k, v in requests.items() if k == "nvidia.com/gpu"}
        resources: dict = {"requests": requests}
        if limits:
            resources["limits"] = limits
        container = {"name": "main", "image": "registry.example.com/app:1", "resources": resources}
        spec: dict = {"nodeName": node, "containers": [container], "schedulerName": "default-scheduler",
                      "tolerations": [dict(GPU_TOLERATION), dict(DEDICATED_TOLERATION)] if tolerate else []}
        if claim:
            spec["resourceClaims"] = [{"name": "gpus", "resourceClaimName": claim}]
            container["resources"]["claims"] = [{"name": "gpus"}]
        self.pods.append({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": name, "namespace": NS, "uid": uid or self.next_uid("p")},
                          "spec": spec, "status": {"phase": "Running"}})

    def preallocate(self) -> None:
        """Claims already allocated (in their status), reserved for pods that run on the node."""
        rng = self.rng
        for node, devices in self.devices.items():
            if rng.random() >= 0.45:
                continue
            for k in range(rng.choice([1, 1, 2])):
                kind = rng.choice(["gpu", "mig"]) if any(d["type"] == "mig" for d in devices) else "gpu"
                free = [d for d in devices if d["type"] == kind and (node, d["name"]) not in self.used]
                if not free:
                    continue
                take = rng.sample(free, rng.randint(1, min(3, len(free))))
                take.sort(key=devices.index)
                name = f"old-{node}-{k}-gpus-{''.join(rng.choice('bcdfghjklmnpqrstvwxz') for _ in range(5))}"
                pod, uid = f"old-{node}-{k}", self.next_uid("p")
                # now and then the pod that used it is gone and the claim not yet deallocated
                reserved = [{"resource": "pods", "name": pod, "uid": uid}] if rng.random() < 0.7 else []
                cls = GPU_CLASS if kind == "gpu" else MIG_CLASS
                self.claims.append({
                    "apiVersion": V1, "kind": "ResourceClaim",
                    "metadata": {"name": name, "namespace": NS,
                                 "annotations": {"resource.kubernetes.io/pod-claim-name": "gpus"}},
                    "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                        "deviceClassName": cls, "allocationMode": "ExactCount", "count": len(take)}}]}},
                    "status": {"allocation": {
                        "devices": {"results": [{"request": "gpus", "driver": DRIVER, "pool": node,
                                                 "device": d["name"]} for d in take]},
                        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
                        "reservedFor": reserved}})
                self.used |= {(node, d["name"]) for d in take}
                self.allocated.append((name, node, len(take)))
                if reserved:
                    self.running_pod(pod, node, {"cpu": "1", "memory": "4Gi"}, tolerate=True, claim=name,
                                     uid=uid)

    # -- what the claims ask for ------------------------------------------------------------------------

    def free_devices(self) -> int:
        return sum(1 for node, ds in self.devices.items() for d in ds if (node, d["name"]) not in self.used)

    def products(self) -> list[str]:
        return list(dict.fromkeys(MODELS[d["model"]][0] for ds in self.devices.values() for d in ds))

    def profiles(self) -> list[str]:
        return list(dict.fromkeys(d["profile"] for ds in self.devices.values() for d in ds if d["profile"]))

    def most(self, kind: str) -> int:
        """The most devices of a kind (gpu, mig) free on one node, but at least 1 and at most 3."""
        free = [sum(1 for d in ds if d["type"] == kind and (node, d["name"]) not in self.used)
                for node, ds in self.devices.items()]
        return max(1, min(3, max(free, default=0)))

    def count(self, kind: str) -> int:
        rng = self.rng
        if rng.random() < 0.08:
            return rng.choice([1, 2, 3])
        return rng.choice([1, 1, 2, 3][:self.most(kind) + 1])

    def gpu_selector(self) -> str:
        rng = self.rng
        products = self.products()
        r = rng.random()
        if r < 0.3:
            product = ABSENT_PRODUCT if rng.random() < 0.08 else rng.choice(products)
            return rng.choice([f"{ATTR}.productName == \"{product}\"", f"{ATTR}.productName == '{product}'"])
        if r < 0.45:
            prefix = rng.choice(products)[:rng.choice([11, 19])] if rng.random() < 0.85 else "NVIDIA H100"
            return f"{ATTR}.productName.startsWith(\"{prefix}\")"
        if r < 0.65:
            q = rng.choice(["20Gi", "40Gi", "41Gi", "79Gi", "80Gi"])
            return rng.choice([f"{CAP}.memory.compareTo(quantity(\"{q}\")) >= 0",
                               f"{CAP}.memory.isGreaterThan(quantity(\"{q}\"))",
                               f"!{CAP}.memory.isLessThan(quantity(\"{q}\"))"])
        if r < 0.75:
            return f"{ATTR}.index < {rng.choice([1, 2, 4])}"
        if r < 0.85:
            arch = rng.choice([m[1] for m in MODELS.values() if m[0] in products] + ["Hopper"])
            return f"{ATTR}.architecture == \"{arch}\""
        if r < 0.93:
            return f"{ATTR}.cudaComputeCapability.isGreaterThan(semver(\"8.5.0\"))"
        return (f"{ATTR}.driverVersion.major() >= 570 && "
                "device.attributes[\"resource.kubernetes.io\"].pcieRoot != \"\"")

    def mig_selector(self) -> str:
        rng = self.rng
        profiles = self.profiles() or list(MIG)
        r = rng.random()
        if r < 0.55:
            return f"{ATTR}.profile == \"{rng.choice(profiles)}\""
        if r < 0.85:
            q = rng.choice(["10Gi", "19Gi", "20Gi", "39Gi"])
            return f"{CAP}.memory.compareTo(quantity(\"{q}\")) >= 0"
        return f"{CAP}.multiprocessors.asInteger() >= {rng.choice([14, 28, 42])}"

    def exactly(self, kind: str, count: int, selectors: list[str]) -> dict:
        out: dict = {"deviceClassName": GPU_CLASS if kind == "gpu" else MIG_CLASS}
        if count == -1:
            out["allocationMode"] = "All"
        elif count != 1 or self.rng.random() < 0.5:
            out["count"] = count
        if selectors:
            out["selectors"] = [{"cel": {"expression": s}} for s in selectors]
        return out

    def request(self, name: str, alone: bool) -> tuple[dict, int]:
        """One request of a claim and about how many devices it takes."""
        rng = self.rng
        has_mig = bool(self.profiles())
        r = rng.random()
        if not alone and 0.16 <= r < 0.24:
            r = 0.5  # all devices and another request of the claim: never satisfiable, once is enough
        if r < 0.16:  # firstAvailable: the big one first, then smaller ones
            subs = []
            products = self.products()
            for k in range(rng.choice([2, 2, 3])):
                kind = "mig" if (k > 0 and has_mig and rng.random() < 0.5) else "gpu"
                count = max(1, 3 - k - rng.randint(0, 1))
                sels = [self.mig_selector()] if kind == "mig" else (
                    [f"{ATTR}.productName == \"{rng.choice(products)}\""] if rng.random() < 0.6 else [])
                subs.append({"name": f"{['first', 'second', 'third'][k]}", **self.exactly(kind, count, sels)})
            if rng.random() < 0.2:  # at last, all the devices of one product
                subs.append({"name": "all", **self.exactly("gpu", -1, [
                    f"{ATTR}.productName == \"{rng.choice(products)}\""])})
            return {"name": name, "firstAvailable": subs}, subs[0].get("count", 1)
        if r < 0.24:  # all devices of a kind on one node
            if has_mig and rng.random() < 0.5:
                sels = [f"{ATTR}.profile == \"{rng.choice(self.profiles())}\""]
                return {"name": name, "exactly": self.exactly("mig", -1, sels)}, 3
            sels = [self.gpu_selector()] if rng.random() < 0.5 else []
            return {"name": name, "exactly": self.exactly("gpu", -1, sels)}, 4
        migs = sum(1 for ds in self.devices.values() for d in ds if d["type"] == "mig")
        gpus = sum(1 for ds in self.devices.values() for d in ds if d["type"] == "gpu")
        if r >= 0.24 and has_mig and rng.random() < migs / (migs + gpus):
            count = self.count("mig")
            sels = [self.mig_selector()] if rng.random() < 0.6 else []
            return {"name": name, "exactly": self.exactly("mig", count, sels)}, count
        count = self.count("gpu")
        sels = [self.gpu_selector()] if rng.random() < 0.3 else []
        if sels and rng.random() < 0.15:
            sels.append(self.gpu_selector())
        return {"name": name, "exactly": self.exactly("gpu", count, sels)}, count

    def claim_spec(self) -> tuple[dict, int]:
        rng = self.rng
        n = 2 if rng.random() < 0.15 else 1
        requests, total = [], 0
        for k in range(n):
            req, count = self.request(["gpus", "extra"][k], n == 1 or rng.random() < 0.1)
            requests.append(req)
            total += count
        devices: dict = {"requests": requests}
        r = rng.random()
        if r < 0.2:
            devices["constraints"] = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
        elif r < 0.28:
            devices["constraints"] = [{"matchAttribute": f"{DRIVER}/productName"}]
        elif r < 0.32 and n == 2:
            devices["constraints"] = [{"requests": ["gpus", "extra"],
                                       "matchAttribute": f"{DRIVER}/parentUUID"}]
        elif r < 0.35:
            devices["constraints"] = [{"requests": ["gpus"],
                                       "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
        if self.bad and not self.bad_done and rng.random() < 0.6:
            self.bad_done = True
            target = requests[0].get("exactly") or requests[0]["firstAvailable"][0]
            target.setdefault("selectors", []).insert(0, {"cel": {"expression": rng.choice(BAD_SELECTORS)}})
        return {"devices": devices}, total

    # -- the workloads --------------------------------------------------------------------------------

    def workload_list(self) -> None:
        rng = self.rng
        self.bad_done = False
        free = self.free_devices() + sum(self.classic.values())
        target = free * rng.uniform(0.3, 1.0)
        demand, k = 0.0, 0
        shared_names: list[str] = []
        while (demand < target and k < 8) or k < 2:
            demand += self.workload(k, shared_names)
            k += 1

    def workload(self, k: int, shared_names: list[str]) -> float:
        rng = self.rng
        r = rng.random()
        kind = "Pod" if r < 0.35 else "Deployment" if r < 0.8 else "Job"
        replicas = 1 if kind == "Pod" else rng.choice([1, 2, 2, 3, 4])
        name = f"{['train', 'infer', 'batch', 'eval', 'tune', 'embed', 'serve', 'probe'][k]}-{k}"
        pod_claims: list[dict] = []
        resources: dict = {"requests": {"cpu": rng.choice(["500m", "1", "1", "2", "4", "6", "12"]),
                                        "memory": rng.choice(["1Gi", "4Gi", "8Gi", "16Gi", "48Gi"])}}
        demand = 0.0
        r = rng.random()
        if r < 0.06 and self.classic:
            resources["limits"] = {"nvidia.com/gpu": str(rng.choice([1, 1, 2]))}
            demand = replicas * int(resources["limits"]["nvidia.com/gpu"])
        elif r < 0.1:
            demand = 0
        elif r < 0.2 and self.allocated:  # join a claim that is already allocated
            claim, _, _ = rng.choice(self.allocated)
            pod_claims.append({"name": "gpus", "resourceClaimName": claim})
            if rng.random() < 0.3:
                demand += self.template(name, 1, replicas, pod_claims)
        elif r < 0.33:  # a named claim shared by every pod of the workload (or by two workloads)
            if shared_names and rng.random() < 0.4:
                claim = rng.choice(shared_names)
            else:
                claim = f"shared-{k}"
                spec, demand = self.claim_spec()
                self.claims.append({"apiVersion": V1, "kind": "ResourceClaim",
                                    "metadata": {"name": claim, "namespace": NS}, "spec": spec})
                shared_names.append(claim)
            pod_claims.append({"name": "gpus", "resourceClaimName": claim})
            if rng.random() < 0.2:
                demand += self.template(name, 1, replicas, pod_claims)
        elif r < 0.35:  # a template that does not exist: the pod waits without a scheduling attempt
            pod_claims.append({"name": "gpus", "resourceClaimTemplateName": f"missing-{k}"})
        else:
            for j in range(2 if rng.random() < 0.12 else 1):
                demand += self.template(name, j, replicas, pod_claims)
        container: dict = {"name": "main", "image": f"registry.example.com/{name.split('-')[0]}:1",
                           "resources": resources}
        if pod_claims:
            container["resources"]["claims"] = [{"name": c["name"]} for c in pod_claims]
        spec: dict = {"containers": [container]}
        if pod_claims:
            spec["resourceClaims"] = pod_claims
        tolerations = []
        if rng.random() < 0.85:
            tolerations.append(dict(GPU_TOLERATION))
        if rng.random() < 0.5:
            tolerations.append(dict(DEDICATED_TOLERATION))
        if tolerations:
            spec["tolerations"] = tolerations
        r = rng.random()
        if r < 0.1:
            spec["nodeSelector"] = {"kubernetes.io/hostname": rng.choice(self.nodes)["metadata"]["name"]}
        elif r < 0.18:
            pools = [n["metadata"]["labels"][POOL_LABEL] for n in self.nodes]
            spec["nodeSelector"] = {POOL_LABEL: rng.choice(pools) if rng.random() < 0.9 else "mig"}
        labels = {"app": name}
        meta = {"name": name, "namespace": NS}
        if kind == "Pod":
            self.workloads.append({"apiVersion": "v1", "kind": "Pod", "metadata": {**meta, "labels": labels},
                                   "spec": spec})
        elif kind == "Deployment":
            self.workloads.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {
                "replicas": replicas, "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": spec}}})
        else:
            spec["restartPolicy"] = "Never"
            self.workloads.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {
                "parallelism": replicas, "completions": replicas + rng.choice([0, 0, 2]),
                "template": {"metadata": {"labels": labels}, "spec": spec}}})
        return demand

    def template(self, workload: str, j: int, replicas: int, pod_claims: list[dict]) -> float:
        """A ResourceClaimTemplate for the workload's pod claim `gpus` (j=0) or `more` (j=1)."""
        rng = self.rng
        template = f"{workload}-{['gpus', 'more'][j]}"
        spec, count = self.claim_spec()
        if rng.random() < 0.02:
            spec["devices"]["requests"][0].get("exactly", {})["deviceClassName"] = "gpu.example.com"
        if self.h100_class and rng.random() < 0.3:
            req = spec["devices"]["requests"][0]
            if req.get("exactly") and req["exactly"].get("deviceClassName") == GPU_CLASS:
                req["exactly"]["deviceClassName"] = "h100.nvidia.com"
        self.templates.append({"apiVersion": V1, "kind": "ResourceClaimTemplate",
                               "metadata": {"name": template, "namespace": NS}, "spec": {"spec": spec}})
        pod_claims.append({"name": ["gpus", "more"][j], "resourceClaimTemplateName": template})
        return replicas * count


def scenario(seed: int) -> dict:
    """{"nodes", "pods", "manifests"} of one generated cluster (see the module doc)."""
    return _Gen(seed).build()


def digest(s: dict) -> str:
    return hashlib.sha256(json.dumps(s, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def write(s: dict, directory: Path) -> tuple[Path, Path, Path]:
    """nodes.json, pods.json (kubectl Lists) and manifests.yaml (multi-document) in `directory`."""
    directory = Path(directory)
    paths = directory / "nodes.json", directory / "pods.json", directory / "manifests.yaml"
    for path, items in zip(paths[:2], (s["nodes"], s["pods"]), strict=True):
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=1))
    paths[2].write_text(yaml.safe_dump_all(s["manifests"], sort_keys=False))
    return paths
