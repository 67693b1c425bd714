"""A standalone mig-manager (standalone mode has no operator to run one): RBAC and a DaemonSet that
applies the geometry named by each node's `nvidia.com/mig.config` label from the MIG ConfigMap."""

from __future__ import annotations

from typing import Any

from gpufleet.nvidia import versions
from gpufleet.render.labels import MIG_CONFIGMAP, selector_labels, standard_labels

NAME = "nvidia-mig-manager"


def mig_manager_objects(namespace: str) -> list[dict[str, Any]]:
    labels = standard_labels(NAME, "mig-manager")
    meta = {"name": NAME, "namespace": namespace, "labels": labels}
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": NAME, "labels": labels},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch", "update"]},
                      {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "delete"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": NAME, "labels": labels},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
               "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}]}
    env = [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "CONFIG_FILE", "value": "/mig-parted-config/config.yaml"},
        {"name": "WITH_REBOOT", "value": "false"},
        {"name": "HOST_ROOT_MOUNT", "value": "/host"},
        {"name": "DEFAULT_GPU_CLIENTS_NAMESPACE", "value": namespace},
    ]
    container = {
        "name": NAME, "image": versions.MIG_MANAGER_IMAGE, "imagePullPolicy": "IfNotPresent", "env": env,
        "securityContext": {"privileged": True},
        "volumeMounts": [{"name": "mig-parted-config", "mountPath": "/mig-parted-config"},
                         {"name": "host-root", "mountPath": "/host"},
                         {"name": "host-sys", "mountPath": "/sys"}],
    }
    daemonset = {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta,
        "spec": {
            "selector": {"matchLabels": selector_labels(NAME)},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": NAME, "hostPID": True, "priorityClassName": "system-node-critical",
                    "nodeSelector": {"nvidia.com/mig.capable": "true"},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [container],
                    "volumes": [{"name": "mig-parted-config", "configMap": {"name": MIG_CONFIGMAP}},
                                {"name": "host-root", "hostPath": {"path": "/", "type": "Directory"}},
                                {"name": "host-sys", "hostPath": {"path": "/sys", "type": "Directory"}}],
                },
            },
        },
    }
    return [sa, role, binding, daemonset]
