"""A deterministic GPU fleet in kubectl / manifest shape, for the scale test and bench/check_bench.py.

`fleet(nodes, deployments)` builds Node objects in a mix of GPU products (H100, A100, L40S, T4 and CPU-only
pools, some tainted for training, a few cordoned), the pods already running there (DaemonSet pods on every
node, GPU pods on some, finished Job pods) and Deployments of 10 replicas asking for 1-8 GPUs with node
selectors, required node affinity and tolerations. GPU demand is about four times supply, so later
Deployments of every product pend.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import yaml

#: pool -> (share of nodes, GPU product label, GPUs per node, cpu, memory, extra taint)
POOLS = {
    "h100": (0.40, "NVIDIA-H100-80GB-HBM3", 8, "191500m", "1920Gi", None),
    "a100": (0.20, "NVIDIA-A100-SXM4-80GB", 8, "127500m", "960Gi", None),
    "train": (0.10, "NVIDIA-H100-80GB-HBM3", 8, "191500m", "1920Gi", ("dedicated", "training", "NoSchedule")),
    "l40s": (0.15, "NVIDIA-L40S", 8, "127500m", "960Gi", None),
    "t4": (0.05, "Tesla-T4", 4, "47500m", "180Gi", None),
    "system": (0.10, None, 0, "31500m", "120Gi", None),
}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
TRAIN_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoSchedule"}


def _pool_of(i: int, total: int) -> str:
    edge, at = 0.0, (i + 0.5) / total
    for name, (share, *_rest) in POOLS.items():
        edge += share
        if at < edge:
            return name
    return "system"


def node(i: int, total: int) -> dict:
    pool = _pool_of(i, total)
    _, product, gpus, cpu, memory, taint = POOLS[pool]
    name = f"{pool}-{i:05d}"
    alloc = {"cpu": cpu, "ephemeral-storage": "846234593869", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
             "memory": memory, "pods": "110"}
    labels = {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "pool": pool,
              "node.kubernetes.io/instance-type": f"{pool}.metal", "topology.kubernetes.io/region": "eu-west",
              "topology.kubernetes.io/zone": f"eu-west-{i % 3 + 1}"}
    taints = []
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
        labels.update({"nvidia.com/gpu.product": product, "nvidia.com/gpu.count": str(gpus),
                       "nvidia.com/gpu.present": "true", "nvidia.com/gpu.replicas": "1",
                       "nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/mig.strategy": "none"})
        taints.append({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"})
    if taint:
        taints.append(dict(zip(("key", "value", "effect"), taint, strict=False)))
    spec: dict = {"podCIDR": f"10.{i // 250}.{i % 250}.0/24", "providerID": f"metal://{name}"}
    if taints:
        spec["taints"] = taints
    if i % 97 == 13:
        spec["unschedulable"] = True
    conditions = [{"type": t, "status": "False", "reason": f"KubeletHas{r}", "message": f"kubelet has {m}",
                   "lastHeartbeatTime": "2026-11-20T10:00:00Z", "lastTransitionTime": "2026-11-01T08:00:00Z"}
                  for t, r, m in (("MemoryPressure", "SufficientMemory", "sufficient memory available"),
                                  ("DiskPressure", "NoDiskPressure", "no disk pressure"),
                                  ("PIDPressure", "SufficientPID", "sufficient PID available"))]
    conditions.append({"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is ready",
                       "lastHeartbeatTime": "2026-11-20T10:00:00Z", "lastTransitionTime": "2026-11-01T08:00:00Z"})
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"8a1c2f3e-0000-4000-8000-{i:012d}", "resourceVersion": str(1000 + i),
                         "creationTimestamp": "2026-11-01T08:00:00Z", "labels": labels,
                         "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                         "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": spec,
            "status": {"addresses": [{"type": "InternalIP", "address": f"10.1.{i // 250}.{i % 250}"},
                                     {"type": "Hostname", "address": name}],
                       "allocatable": alloc, "capacity": dict(alloc), "conditions": conditions,
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                       "nodeInfo": {"architecture": "amd64", "containerRuntimeVersion": "containerd://1.7.27",
                                    "kernelVersion": "6.8.0-49-generic", "kubeletVersion": "v1.34.1",
                                    "kubeProxyVersion": "v1.34.1", "operatingSystem": "linux",
                                    "osImage": "Ubuntu 24.04.1 LTS", "machineID": f"{i:032x}",
                                    "systemUUID": f"{i:032x}", "bootID": f"{i:032x}"}}}


def _container(name: str, image: str, cpu: str, memory: str, gpus: int = 0) -> dict:
    resources: dict = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}}
    if gpus:
        resources["limits"]["nvidia.com/gpu"] = gpus
    return {"name": name, "image": image, "imagePullPolicy": "IfNotPresent", "resources": resources,
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                              "readOnly": True}]}


def _running_pod(name: str, namespace: str, node_name: str, container: dict, phase: str = "Running") -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "4711",
                         "creationTimestamp": "2026-11-02T09:00:00Z", "labels": {"app": name.rsplit("-", 1)[0]},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                              "name": name.rsplit("-", 1)[0], "uid": "owner", "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": {"nodeName": node_name, "containers": [container], "restartPolicy": "Always",
                     "serviceAccountName": "default", "schedulerName": "default-scheduler",
                     "tolerations": [{"operator": "Exists"}], "dnsPolicy": "ClusterFirst"},
            "status": {"phase": phase, "hostIP": "10.1.0.1", "podIP": "10.2.0.1", "qosClass": "Burstable",
                       "startTime": "2026-11-02T09:00:00Z",
                       "conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2026-11-02T09:00:05Z"}]}}


def pods(nodes: list[dict]) -> list[dict]:
    """DaemonSet pods on every node, the device plugin on GPU nodes, a few running GPU jobs, finished pods."""
    out = []
    for i, n in enumerate(nodes):
        name = n["metadata"]["name"]
        out.append(_running_pod(f"kube-proxy-{i}", "kube-system", name,
                                _container("kube-proxy", "registry.k8s.io/kube-proxy:v1.34.1", "100m", "128Mi")))
        out.append(_running_pod(f"node-exporter-{i}", "monitoring", name,
                                _container("node-exporter", "quay.io/prometheus/node-exporter:v1.8.2", "50m", "64Mi")))
        if "nvidia.com/gpu" in n["status"]["allocatable"]:
            out.append(_running_pod(f"nvidia-device-plugin-{i}", "gpu-operator", name,
                                    _container("nvidia-device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                                               "50m", "100Mi")))
            if i % 7 == 0:
                out.append(_running_pod(f"finetune-{i}", "research", name,
                                        _container("trainer", "nvcr.io/nvidia/pytorch:25.01-py3", "8", "64Gi", 2)))
            if i % 11 == 0:
                out.append(_running_pod(f"eval-{i}", "research", name,
                                        _container("eval", "nvcr.io/nvidia/pytorch:25.01-py3", "4", "32Gi", 1),
                                        phase="Succeeded"))
    return out


#: (products the workload runs on, GPUs per pod, cpu, memory, needs the training taint): 1.4 GPUs a pod
SHAPES = [
    (["NVIDIA-H100-80GB-HBM3"], 1, "8", "96Gi", False),
    (["NVIDIA-H100-80GB-HBM3"], 2, "16", "192Gi", False),
    (["NVIDIA-H100-80GB-HBM3"], 4, "48", "480Gi", True),
    (["NVIDIA-A100-SXM4-80GB"], 1, "6", "64Gi", False),
    (["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"], 1, "4", "32Gi", False),
    (["NVIDIA-L40S"], 1, "4", "48Gi", False),
    (["NVIDIA-L40S"], 2, "8", "96Gi", False),
    (["Tesla-T4"], 1, "2", "8Gi", False),
    ([], 0, "2", "4Gi", False),
    (["NVIDIA-H100-80GB-HBM3"], 1, "12", "128Gi", False),
]


def deployment(i: int, replicas: int = 10) -> dict:
    products, gpus, cpu, memory, train = SHAPES[(i * 7 + i // 10) % len(SHAPES)]
    name = f"svc-{i:05d}"
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": f"team-{i % 25}"}
    main = _container("server", f"nvcr.io/nvidia/tritonserver:25.0{i % 3 + 1}-py3", cpu, memory, gpus)
    del main["volumeMounts"], main["terminationMessagePath"], main["terminationMessagePolicy"]
    main["ports"] = [{"name": "http", "containerPort": 8000}, {"name": "metrics", "containerPort": 8002}]
    main["env"] = [{"name": "MODEL_REPOSITORY", "value": f"s3://models/{name}"}, {"name": "LOG_VERBOSE", "value": "0"}]
    main["readinessProbe"] = {"httpGet": {"path": "/v2/health/ready", "port": "http"}, "periodSeconds": 10}
    spec: dict = {"containers": [main], "serviceAccountName": f"team-{i % 25}"}
    if gpus:
        spec["tolerations"] = [dict(GPU_TOLERATION)] + ([dict(TRAIN_TOLERATION)] if train else [])
        if len(products) == 1 and not train:
            spec["nodeSelector"] = {"nvidia.com/gpu.product": products[0]}
        else:
            terms = [{"key": "nvidia.com/gpu.product", "operator": "In", "values": products}]
            if train:
                terms.append({"key": "pool", "operator": "In", "values": ["train"]})
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": terms}]}}}
    else:
        spec["nodeSelector"] = {"pool": "system"}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": f"team-{i % 25}", "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


@dataclass
class Fleet:
    nodes: list[dict]
    pods: list[dict]
    deployments: list[dict]

    @property
    def gpu_supply(self) -> int:
        return sum(int(n["status"]["allocatable"].get("nvidia.com/gpu", 0)) for n in self.nodes)

    @property
    def gpu_demand(self) -> int:
        return sum(d["spec"]["replicas"] * int(c["resources"]["limits"].get("nvidia.com/gpu", 0))
                   for d in self.deployments for c in d["spec"]["template"]["spec"]["containers"])

    def write(self, directory: Path) -> tuple[Path, Path, Path]:
        """nodes.json and pods.json as kubectl Lists, deployments.yaml as one multi-document YAML."""
        paths = directory / "nodes.json", directory / "pods.json", directory / "deployments.yaml"
        for path, items in zip(paths[:2], (self.nodes, self.pods), strict=True):
            path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items,
                                        "metadata": {"resourceVersion": ""}}, indent=4))
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        paths[2].write_text(yaml.dump_all(self.deployments, Dumper=dumper, sort_keys=False))
        return paths


def fleet(nodes: int, deployments: int, seed: int = 7) -> Fleet:
    node_objs = [node(i, nodes) for i in range(nodes)]
    order = list(range(deployments))
    random.Random(seed).shuffle(order)
    return Fleet(node_objs, pods(node_objs), [deployment(i) for i in order])


def write(nodes: int, deployments: int, directory: Path) -> dict:
    """Write a fleet's files; what they hold, for a report (paths, counts, GPU supply and demand)."""
    f = fleet(nodes, deployments)
    paths = f.write(directory)
    return {"paths": [str(p) for p in paths], "nodes": len(f.nodes), "running": len(f.pods),
            "deployments": len(f.deployments), "to_place": sum(d["spec"]["replicas"] for d in f.deployments),
            "supply": f.gpu_supply, "demand": f.gpu_demand}
