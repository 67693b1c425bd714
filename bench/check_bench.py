"""Benchmark `gpufleet check` at scale: 1,000 nodes, 20,000 bound pods, a few hundred GPU workloads.

Writes kubectl-shaped JSON files to a temp dir, then times (a) parsing them (json.load) and (b) the check
(building the capacity model from the parsed objects + checking the manifests), and prints check/parse.
Target: <= 1.5. Run: .venv/bin/python bench/check_bench.py
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path

from gpufleet.capacity.kubectl import capacity_from_objects
from gpufleet.scheduling import check_workloads

NODES, PODS, WORKLOADS = 1000, 20000, 200


def _node(i: int) -> dict:
    gpus = random.choice([0, 4, 8])
    alloc = {"cpu": "63500m", "memory": "503Gi", "ephemeral-storage": "900Gi", "pods": "110", "hugepages-2Mi": "0"}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    labels = {"kubernetes.io/hostname": f"node-{i}", "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": f"z{i % 3}",
              "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3" if gpus else "none", "pool": f"p{i % 10}"}
    taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}] if gpus else []
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}", "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"}, "uid": f"uid-{i}"},
            "spec": {"taints": taints, "podCIDR": f"10.{i // 256}.{i % 256}.0/24"},
            "status": {"allocatable": alloc, "capacity": alloc, "conditions": [{"type": "Ready", "status": "True"}],
                       "nodeInfo": {"containerRuntimeVersion": "containerd://1.7.27", "kubeletVersion": "v1.33.2",
                                    "osImage": "Ubuntu 24.04", "kernelVersion": "6.8.0"}}}


def _pod(i: int) -> dict:
    containers = [{"name": "app", "image": f"registry/app:{i % 50}", "resources": {
        "requests": {"cpu": random.choice(["100m", "250m", "500m", "1"]), "memory": random.choice(["128Mi", "512Mi", "1Gi"])},
        "limits": {"memory": "2Gi"}}, "env": [{"name": "A", "value": "b"}], "ports": [{"containerPort": 8080}]}]
    if i % 10 == 0:
        containers.append({"name": "sidecar", "image": "envoy:1", "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}})
    phase = "Succeeded" if i % 25 == 0 else "Running"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pod-{i}", "namespace": f"ns-{i % 40}",
            "labels": {"app": f"a{i % 100}"}, "uid": f"puid-{i}"},
            "spec": {"nodeName": f"node-{i % NODES}", "containers": containers, "restartPolicy": "Always",
                     "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}]},
            "status": {"phase": phase, "podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "True"}]}}


def _workload(i: int) -> dict:
    spec = {"containers": [{"name": "main", "image": "nvcr.io/nvidia/tritonserver:25.01-py3",
                            "resources": {"limits": {"nvidia.com/gpu": random.choice([1, 2, 4]), "cpu": "4", "memory": "32Gi"}}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "nodeSelector": {"pool": f"p{i % 10}"}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"w{i}", "namespace": "ml"},
            "spec": {"replicas": random.choice([1, 2, 4]), "template": {"spec": spec}}}


def main() -> None:
    random.seed(7)
    with tempfile.TemporaryDirectory() as tmp:
        nodes_path, pods_path = Path(tmp, "nodes.json"), Path(tmp, "pods.json")
        nodes_path.write_text(json.dumps({"kind": "List", "items": [_node(i) for i in range(NODES)]}))
        pods_path.write_text(json.dumps({"kind": "List", "items": [_pod(i) for i in range(PODS)]}))
        manifests = [_workload(i) for i in range(WORKLOADS)]
        t0 = time.perf_counter()
        nodes = json.loads(nodes_path.read_text())["items"]
        pods = json.loads(pods_path.read_text())["items"]
        t1 = time.perf_counter()
        cap = capacity_from_objects(nodes, pods)
        result = check_workloads(cap.nodes, cap.pods, manifests)
        t2 = time.perf_counter()
    parse, check = t1 - t0, t2 - t1
    print(f"{NODES} nodes, {PODS} pods, {WORKLOADS} workloads: parse {parse:.3f}s, check {check:.3f}s, "
          f"check/parse {check / parse:.2f} (target <= 1.5); {len(result.unschedulable)} unschedulable, "
          f"{len(result.warnings)} warnings")


if __name__ == "__main__":
    main()
