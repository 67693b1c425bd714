"""Node, Pod and DRA objects as a real API server returns them (managedFields, GFD labels, images, statuses),
about 9 KB a GPU node and 5 KB a pod, deterministic. For tests/discovery and bench/discover_bench.py."""

from __future__ import annotations

import json
from pathlib import Path

PRODUCTS = [("NVIDIA-H100-80GB-HBM3", "81559", "hopper", 8), ("NVIDIA-A100-SXM4-40GB", "40960", "ampere", 8),
            ("Tesla-T4", "15360", "turing", 1), ("NVIDIA-L40S", "46068", "ada-lovelace", 4)]
TIME = "2026-11-20T10:00:00Z"


def _managed(manager: str, operation: str, fields: dict, subresource: str | None = None) -> dict:
    entry = {"manager": manager, "operation": operation, "apiVersion": "v1", "time": TIME, "fieldsType": "FieldsV1",
             "fieldsV1": fields}
    if subresource:
        entry["subresource"] = subresource
    return entry


def node(i: int, total: int) -> dict:
    """A GPU node (every 5th a CPU node), with the labels GPU feature discovery and NFD put on it."""
    name = f"node-{i:05d}"
    cpu_only = i % 5 == 4
    product, memory, family, count = PRODUCTS[i % len(PRODUCTS)]
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
              "node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5" if not cpu_only else "Standard_D16s_v5",
              "topology.kubernetes.io/region": "westeurope", "topology.kubernetes.io/zone": f"westeurope-{i % 3 + 1}",
              "agentpool": "gpu" if not cpu_only else "system"}
    if not cpu_only:
        labels |= {"nvidia.com/gpu.product": product, "nvidia.com/gpu.memory": memory, "nvidia.com/gpu.family": family,
                   "nvidia.com/gpu.count": str(count), "nvidia.com/gpu.present": "true",
                   "nvidia.com/gpu.machine": "Virtual-Machine", "nvidia.com/gpu.replicas": "1",
                   "nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/gpu.mode": "compute",
                   "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0",
                   "nvidia.com/cuda.driver-version.full": "580.82.07", "nvidia.com/cuda.driver.major": "580",
                   "nvidia.com/cuda.driver.minor": "82", "nvidia.com/cuda.driver.rev": "07",
                   "nvidia.com/cuda.runtime-version.full": "13.0", "nvidia.com/cuda.runtime.major": "13",
                   "nvidia.com/cuda.runtime.minor": "0", "nvidia.com/gfd.timestamp": "1763632800",
                   "nvidia.com/mig.capable": "false", "nvidia.com/mps.capable": "false",
                   "nvidia.com/gpu.deploy.container-toolkit": "true", "nvidia.com/gpu.deploy.device-plugin": "true",
                   "nvidia.com/gpu.deploy.dcgm-exporter": "true", "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
                   "nvidia.com/gpu.deploy.node-status-exporter": "true",
                   "nvidia.com/gpu.deploy.operator-validator": "true",
                   "feature.node.kubernetes.io/pci-10de.present": "true",
                   "feature.node.kubernetes.io/kernel-version.full": "5.15.0-1079-azure",
                   "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
                   "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04"}
    allocatable = {"cpu": "15820m" if cpu_only else "94", "memory": "57383676Ki" if cpu_only else "1843289516Ki",
                   "pods": "110", "ephemeral-storage": "119703055367", "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
    if not cpu_only:
        allocatable["nvidia.com/gpu"] = str(count)
    images = [{"names": [f"registry.example.com/team-{j % 7}/image-{j}@sha256:{(i * 31 + j) % 10**6:064d}",
                         f"registry.example.com/team-{j % 7}/image-{j}:v1.{j}.0"], "sizeBytes": 100_000_000 + j * 7919}
              for j in range(24)]
    obj = {
        "metadata": {
            "name": name, "uid": f"00000000-0000-4000-8000-{i:012d}", "resourceVersion": str(5000 + i),
            "creationTimestamp": TIME, "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "nfd.node.kubernetes.io/feature-labels": ",".join(k for k in labels if k.startswith("feature")),
                "csi.volume.kubernetes.io/nodeid": json.dumps({"disk.csi.azure.com": name, "file.csi.azure.com": name}),
            },
            "managedFields": [
                _managed("kubelet", "Update", {"f:metadata": {
                    "f:annotations": {".": {}, "f:volumes.kubernetes.io/controller-managed-attach-detach": {}},
                    "f:labels": {f"f:{k}": {} for k in list(labels)[:8]}}}),
                _managed("nfd-master", "Update", {"f:metadata": {
                    "f:labels": {f"f:{k}": {} for k in labels if "feature" in k or "nvidia" in k}}}),
                _managed("kubelet", "Update", {"f:status": {
                    "f:allocatable": {f"f:{k}": {} for k in allocatable},
                    "f:conditions": {f'k:{{"type":"{c}"}}': {"f:lastHeartbeatTime": {}}
                                     for c in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")},
                    "f:images": {}, "f:nodeInfo": {"f:bootID": {}}}}, "status"),
            ],
        },
        "spec": {"podCIDR": f"10.244.{i % 256}.0/24", "providerID": f"azure:///subscriptions/s/resourceGroups/rg/vm/{name}"},
        "status": {
            "capacity": dict(allocatable), "allocatable": allocatable,
            "conditions": [{"type": c, "status": "True" if c == "Ready" else "False", "lastHeartbeatTime": TIME,
                            "lastTransitionTime": TIME, "reason": f"Kubelet{c}", "message": f"kubelet reports {c}"}
                           for c in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")],
            "addresses": [{"type": "InternalIP", "address": f"10.224.{i // 256 % 256}.{i % 256}"},
                          {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": f"{i:032x}", "systemUUID": f"{i:032x}", "bootID": f"{i:032x}",
                         "kernelVersion": "5.15.0-1079-azure", "osImage": "Ubuntu 22.04.5 LTS",
                         "containerRuntimeVersion": "containerd://1.7.28-1", "kubeletVersion": "v1.34.1",
                         "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
            "images": images,
        },
    }
    if i % 11 == 3:
        obj["spec"]["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    if i % 97 == 5:
        obj["spec"]["unschedulable"] = True
    return obj


def pod(i: int, nodes: int) -> dict:
    """A pod bound to a node (one in 40 Succeeded, one in 50 Pending), GPU workers on GPU nodes."""
    node_index = i % nodes
    gpu = node_index % 5 != 4 and i % 3 == 0
    name, namespace = f"worker-{i:06d}", f"team-{i % 13}"
    resources = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
    if gpu:
        resources["limits"]["nvidia.com/gpu"] = "1"
    container = {
        "name": "main", "image": f"registry.example.com/team-{i % 7}/image-{i % 24}:v1.{i % 24}.0",
        "command": ["python", "-m", "serve"], "args": ["--port", "8080", "--workers", "4"],
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "env": [{"name": f"SETTING_{k}", "value": f"value-{k}-{i}"} for k in range(12)],
        "resources": resources,
        "volumeMounts": [{"name": "data", "mountPath": "/data"},
                         {"name": f"kube-api-access-{i % 10000:05d}",
                          "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True}],
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }
    phase = "Succeeded" if i % 40 == 7 else "Pending" if i % 50 == 9 else "Running"
    spec = {"containers": [container], "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "default", "schedulerName": "default-scheduler",
            "securityContext": {}, "priority": 0, "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300},
                            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "volumes": [{"name": "data", "emptyDir": {}},
                        {"name": f"kube-api-access-{i % 10000:05d}",
                         "projected": {"sources": [
                             {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}]}
    if i % 17 == 2:
        spec["initContainers"] = [{"name": "proxy", "image": "registry.example.com/proxy:v2", "restartPolicy": "Always",
                                   "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                                  {"name": "migrate", "image": "registry.example.com/migrate:v1",
                                   "resources": {"requests": {"cpu": "1", "memory": "256Mi"}}}]
    if i % 23 == 4:
        spec["overhead"] = {"cpu": "250m", "memory": "120Mi"}
    if phase != "Pending":
        spec["nodeName"] = f"node-{node_index:05d}"
    return {
        "metadata": {
            "name": name, "namespace": namespace, "uid": f"10000000-0000-4000-8000-{i:012d}",
            "resourceVersion": str(90000 + i), "creationTimestamp": TIME, "generateName": "worker-",
            "labels": {"app": f"svc-{i % 97}", "pod-template-hash": f"{i % 9973:08x}", "team": f"team-{i % 13}"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": TIME, "prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"svc-{i % 97}-{i % 9973:08x}",
                                 "uid": f"20000000-0000-4000-8000-{i % 97:012d}", "controller": True,
                                 "blockOwnerDeletion": True}],
            "managedFields": [
                _managed("kube-controller-manager", "Update", {
                    "f:metadata": {"f:generateName": {},
                                   "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                                   "f:ownerReferences": {".": {}}},
                    "f:spec": {"f:containers": {
                        'k:{"name":"main"}': {".": {}, "f:image": {}, "f:resources": {".": {}}}}}}),
                _managed("kubelet", "Update",
                         {"f:status": {"f:conditions": {".": {}}, "f:containerStatuses": {}, "f:hostIP": {},
                                       "f:phase": {}, "f:podIP": {}}}, "status"),
            ],
        },
        "spec": spec,
        "status": {
            "phase": phase, "qosClass": "Burstable", "hostIP": f"10.224.0.{node_index % 256}",
            "podIP": f"10.244.{i // 256 % 256}.{i % 256}",
            "podIPs": [{"ip": f"10.244.{i // 256 % 256}.{i % 256}"}], "startTime": TIME,
            "conditions": [{"type": c, "status": "True", "lastProbeTime": None, "lastTransitionTime": TIME}
                           for c in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                     "PodScheduled")],
            "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0, "started": True,
                                   "image": container["image"],
                                   "imageID": f"registry.example.com/team-{i % 7}/image-{i % 24}@sha256:{i:064d}",
                                   "containerID": f"containerd://{i:064x}", "state": {"running": {"startedAt": TIME}}}],
        },
    }


def dra_objects() -> dict[str, list[dict]]:
    """A DeviceClass, a ResourceSlice and a ResourceClaim of resource.k8s.io/v1, as a list answer holds them."""
    meta = {"managedFields": [_managed("kubectl", "Apply", {"f:spec": {}})], "uid": "u", "resourceVersion": "7"}
    return {
        "deviceclasses": [{"metadata": {"name": "gpu.nvidia.com", **meta},
                           "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}}],
        "resourceslices": [{"metadata": {"name": "node-00000-gpu.nvidia.com-x7k2p", **meta},
                            "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-00000",
                                     "pool": {"name": "node-00000", "generation": 1, "resourceSliceCount": 1},
                                     "devices": [{"name": f"gpu-{g}",
                                                  "attributes": {"productName": {"string": "NVIDIA H100 80GB HBM3"}},
                                                  "capacity": {"memory": {"value": "80Gi"}}} for g in range(2)]}}],
        "resourceclaims": [{"metadata": {"name": "shared-gpu", "namespace": "team-1", **meta},
                            "spec": {"devices": {"requests": [{"name": "gpu",
                                                               "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}],
    }


def cluster(nodes: int, pods: int) -> tuple[list[dict], list[dict]]:
    return [node(i, nodes) for i in range(nodes)], [pod(i, nodes) for i in range(pods)]


def kubectl_files(directory: Path, nodes: list[dict], pods: list[dict], dra: dict[str, list[dict]] | None = None
                  ) -> dict[str, Path]:
    """What `kubectl get nodes -o json`, `kubectl get pods -A -o json` and the DRA lists would write: every
    item with its kind and apiVersion, and without managedFields (kubectl's default)."""

    def as_kubectl(obj: dict, kind: str, api: str) -> dict:
        meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
        return {"apiVersion": api, "kind": kind, **obj, "metadata": meta}

    def write(name: str, items: list[dict]) -> Path:
        path = directory / name
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                                    "items": items}, indent=4))
        return path

    out = {"nodes": write("nodes.json", [as_kubectl(n, "Node", "v1") for n in nodes]),
           "pods": write("pods.json", [as_kubectl(p, "Pod", "v1") for p in pods])}
    if dra:
        kinds = {"deviceclasses": "DeviceClass", "resourceslices": "ResourceSlice", "resourceclaims": "ResourceClaim"}
        out["dra"] = write("dra.json", [as_kubectl(o, kinds[r], "resource.k8s.io/v1") for r, objs in dra.items()
                                        for o in objs])
    return out
