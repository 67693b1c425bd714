"""A standalone mig-manager (standalone mode has no operator to run one), shaped like the DaemonSet the
gpu-operator deploys (its `state-mig-manager` assets): RBAC, the GPU-clients ConfigMap and a privileged
DaemonSet on nodes labelled `nvidia.com/gpu.deploy.mig-manager=true`. It applies the geometry named by each
node's `nvidia.com/mig.config` label from the MIG ConfigMap.

Before changing a GPU's MIG mode it pauses the GPU's clients: it sets their `nvidia.com/gpu.deploy.*` node
labels to `paused-for-mig-change`, waits until no pod labelled `app=nvidia-device-plugin-daemonset` /
`app=gpu-feature-discovery` is left on the node in DEFAULT_GPU_CLIENTS_NAMESPACE, and restores the labels
afterwards. `gpu_stack.device_plugin_values` makes the standalone plugin and GFD honour that protocol.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpufleet.nvidia import versions
from gpufleet.render.labels import (
    MIG_CONFIGMAP,
    MIG_GPU_CLIENTS_CONFIGMAP,
    MIG_MANAGER_DEPLOY_LABEL,
    selector_labels,
    standard_labels,
)
from gpufleet.render.tolerations import MIG_MANAGER

NAME = "nvidia-mig-manager"
#: Mount points inside the container (the operator's layout).
CONFIG_DIR = "/mig-parted-config"
GPU_CLIENTS_DIR = "/gpu-clients"
HOST_ROOT = "/host"
#: Host services that hold the GPU open and must be stopped around a MIG mode change (driver on the host).
HOST_GPU_CLIENT_SERVICES = (
    "nvsm.service", "nvsm-mqtt.service", "nvsm-core.service", "nvsm-api-gateway.service", "nvsm-notifier.service",
    "nv_peer_mem.service", "nvidia-dcgm.service", "dcgm.service", "dcgm-exporter.service",
)


def gpu_clients_configmap(namespace: str) -> dict[str, Any]:
    """The `GPU_CLIENTS_FILE` document (mig-parted's gpu-clients `version: v1`)."""
    doc = {"version": "v1", "systemd-services": list(HOST_GPU_CLIENT_SERVICES)}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": MIG_GPU_CLIENTS_CONFIGMAP, "namespace": namespace,
                         "labels": standard_labels(MIG_GPU_CLIENTS_CONFIGMAP, "mig-manager")},
            "data": {"clients.yaml": yaml.safe_dump(doc, sort_keys=False)}}


def _rbac(namespace: str, labels: dict[str, str]) -> list[dict[str, Any]]:
    """Nodes cluster-wide (labels); pods and ConfigMaps only in its own namespace, where the GPU clients run."""
    rbac = "rbac.authorization.k8s.io"
    subject = [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}]
    return [
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRole", "metadata": {"name": NAME, "labels": labels},
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "update", "patch"]},
                   {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]},
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": NAME, "labels": labels},
         "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": NAME}, "subjects": subject},
        {"apiVersion": f"{rbac}/v1", "kind": "Role",
         "metadata": {"name": NAME, "namespace": namespace, "labels": labels},
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]},
                   {"apiGroups": [""], "resources": ["configmaps"],
                    "verbs": ["create", "get", "list", "update", "patch"]}]},
        {"apiVersion": f"{rbac}/v1", "kind": "RoleBinding",
         "metadata": {"name": NAME, "namespace": namespace, "labels": labels},
         "roleRef": {"apiGroup": rbac, "kind": "Role", "name": NAME}, "subjects": subject},
    ]


def _env(gpu_clients_namespace: str) -> list[dict[str, Any]]:
    def field(path: str) -> dict[str, Any]:
        return {"fieldRef": {"fieldPath": path}}

    return [
        {"name": "NODE_NAME", "valueFrom": field("spec.nodeName")},
        {"name": "POD_NAME", "valueFrom": field("metadata.name")},
        {"name": "POD_NAMESPACE", "valueFrom": field("metadata.namespace")},
        {"name": "CONFIG_FILE", "value": f"{CONFIG_DIR}/config.yaml"},
        {"name": "GPU_CLIENTS_FILE", "value": f"{GPU_CLIENTS_DIR}/clients.yaml"},
        {"name": "DEFAULT_GPU_CLIENTS_NAMESPACE", "value": gpu_clients_namespace},
        {"name": "WITH_REBOOT", "value": "false"},
        # Standalone mode runs on a driver installed on the host: stop host GPU clients around a change,
        # and find the driver through the host root mount (not the operator's /run/nvidia/driver).
        {"name": "WITH_SHUTDOWN_HOST_GPU_CLIENTS", "value": "true"},
        {"name": "HOST_ROOT_MOUNT", "value": HOST_ROOT},
        {"name": "NVIDIA_DRIVER_ROOT", "value": "/"},
        {"name": "DRIVER_ROOT_CTR_PATH", "value": HOST_ROOT},
    ]


def mig_manager_daemonset(namespace: str, gpu_clients_namespace: str,
                          tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    labels = {**standard_labels(NAME, "mig-manager"), "app": NAME}
    container = {
        "name": NAME, "image": versions.MIG_MANAGER_IMAGE, "imagePullPolicy": "IfNotPresent",
        "env": _env(gpu_clients_namespace),
        "securityContext": {"privileged": True},
        "volumeMounts": [
            {"name": "host-sys", "mountPath": "/sys"},
            {"name": "host-root", "mountPath": HOST_ROOT, "mountPropagation": "HostToContainer"},
            {"name": "gpu-clients", "mountPath": GPU_CLIENTS_DIR},
            {"name": "mig-parted-config", "mountPath": CONFIG_DIR},
            {"name": "cdi-root", "mountPath": "/var/run/cdi"},
        ],
    }
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": namespace, "labels": labels},
        "spec": {
            "selector": {"matchLabels": selector_labels(NAME)},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": NAME, "hostPID": True, "hostIPC": True,
                    "priorityClassName": "system-node-critical",
                    "nodeSelector": {MIG_MANAGER_DEPLOY_LABEL: "true"},
                    "tolerations": tolerations or [dict(t) for t in MIG_MANAGER],
                    "containers": [container],
                    "volumes": [
                        {"name": "host-sys", "hostPath": {"path": "/sys", "type": "Directory"}},
                        {"name": "host-root", "hostPath": {"path": "/", "type": "Directory"}},
                        {"name": "gpu-clients", "configMap": {"name": MIG_GPU_CLIENTS_CONFIGMAP}},
                        {"name": "mig-parted-config", "configMap": {"name": MIG_CONFIGMAP}},
                        {"name": "cdi-root", "hostPath": {"path": "/var/run/cdi", "type": "DirectoryOrCreate"}},
                    ],
                },
            },
        },
    }


def mig_manager_objects(namespace: str, gpu_clients_namespace: str | None = None,
                        tolerations: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """ServiceAccount, RBAC, the GPU-clients ConfigMap and the DaemonSet, in creation order.

    `gpu_clients_namespace`: where the device plugin and GFD run (default: the mig-manager's namespace).
    `tolerations`: the DaemonSet's (default MIG_MANAGER: nvidia.com/gpu only); callers pass
    `tolerations.with_pool_taints(MIG_MANAGER, cfg)`, which adds the stack's pool taints.
    """
    labels = standard_labels(NAME, "mig-manager")
    sa = {"apiVersion": "v1", "kind": "ServiceAccount",
          "metadata": {"name": NAME, "namespace": namespace, "labels": labels}}
    return [sa, *_rbac(namespace, labels), gpu_clients_configmap(namespace),
            mig_manager_daemonset(namespace, gpu_clients_namespace or namespace, tolerations)]
