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
