"""Standard labels (app.kubernetes.io/*) and the names of gpufleet's own objects."""

from __future__ import annotations

PART_OF = "gpufleet"
SHARING_CONFIGMAP = "gpufleet-device-plugin-config"
MIG_CONFIGMAP = "gpufleet-mig-config"
EXPECTED_GPU_MEMORY_ANNOTATION = "gpufleet.io/expected-gpu-memory-mib"
#: JSON facts of a workload's model, from which `gpufleet check` recomputes its GPU memory need.
MODEL_MEMORY_ANNOTATION = "gpufleet.io/model-memory"
CONFIG_HASH_ANNOTATION = "gpufleet.io/config-hash"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_GPU_CLIENTS_CONFIGMAP = "gpufleet-mig-gpu-clients"

#: Per-component deploy labels of the NVIDIA stack. The operator sets them itself; mig-manager flips a
#: component's label to PAUSED_FOR_MIG_CHANGE while it changes MIG mode, then back to "true".
DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
GFD_DEPLOY_LABEL = "nvidia.com/gpu.deploy.gpu-feature-discovery"
MIG_MANAGER_DEPLOY_LABEL = "nvidia.com/gpu.deploy.mig-manager"
PAUSED_FOR_MIG_CHANGE = "paused-for-mig-change"
#: Set by gpu-operator on GPU nodes; one of the labels the DRA driver chart's kubelet plugin requires (the
#: others come from NFD), so gpufleet sets it on a standalone DRA stack's listed nodes.
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
#: The pod label mig-manager waits on (in DEFAULT_GPU_CLIENTS_NAMESPACE) before it touches MIG mode.
DEVICE_PLUGIN_POD_APP = "nvidia-device-plugin-daemonset"


def selector_labels(name: str) -> dict[str, str]:
    """The immutable subset used in selectors."""
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": name}


def standard_labels(name: str, component: str, managed_by: str = "pulumi") -> dict[str, str]:
    return {
        **selector_labels(name),
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": PART_OF,
        "app.kubernetes.io/managed-by": managed_by,
    }
