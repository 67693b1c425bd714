"""The node labels each part of the GPU stack finds GPU nodes by, as facts of the pinned charts.

Sources:
- gpu-operator: the operator deploys its operands only on nodes it finds GPUs on, by NFD's PCI labels
  (`gpuNodeLabels` in controllers/state_manager.go); with `nfd.enabled` its own NFD writes them
  (`deviceLabelFields: [vendor]`, values.yaml of the v26.7.0 chart).
- nvidia-device-plugin 0.20.0: values.yaml `affinity` (three terms, any one suffices); its NFD subchart labels
  `pci-10de.present` (`deviceLabelFields: [vendor]`).
- dra-driver-nvidia-gpu 0.4.1: values.yaml `kubeletPlugin.affinity` (five terms) and
  `kubeletPlugin.nodeSelector`; the chart installs no NFD.

And the tolerations those pods get where the values set none: each chart's default list, from the same
values.yaml files (gpufleet.render.tolerations adds the pool taints to them; a test compares them).
"""

from __future__ import annotations

from gpufleet.nvidia.dra_prerequisites import KUBELET_PLUGIN_NODE_LABELS

NFD_VENDOR = "feature.node.kubernetes.io/pci-10de.present"
NFD_3D_CONTROLLER = "feature.node.kubernetes.io/pci-0302_10de.present"
NFD_VGA = "feature.node.kubernetes.io/pci-0300_10de.present"
NFD_TEGRA = "feature.node.kubernetes.io/cpu-model.vendor_id"
GPU_PRESENT = "nvidia.com/gpu.present"

_GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
#: gpu-operator v26.7.0 `daemonsets.tolerations`: what the operator gives every operand DaemonSet (driver,
#: toolkit, device plugin, GFD, DCGM exporter, validator, mig-manager; DRA kubelet plugin under a GPUCluster).
OPERATOR_DAEMONSET_TOLERATIONS = (_GPU_TOLERATION,)
#: nvidia-device-plugin 0.20.0 `tolerations` (the plugin, GFD and MPS control daemon DaemonSets).
DEVICE_PLUGIN_TOLERATIONS = ({"key": "CriticalAddonsOnly", "operator": "Exists"}, _GPU_TOLERATION)
#: dra-driver-nvidia-gpu 0.4.1 `kubeletPlugin.tolerations` (the DaemonSet on GPU nodes).
DRA_KUBELET_PLUGIN_TOLERATIONS = (_GPU_TOLERATION,)

Term = tuple[tuple[str, str], ...]  # one nodeSelectorTerm of single-value `In` expressions
OPERATOR_GPU_NODE_LABELS: tuple[Term, ...] = (((NFD_VENDOR, "true"),), ((NFD_3D_CONTROLLER, "true"),),
                                              ((NFD_VGA, "true"),))
DEVICE_PLUGIN_AFFINITY: tuple[Term, ...] = (((NFD_VENDOR, "true"),), ((NFD_TEGRA, "NVIDIA"),),
                                            ((GPU_PRESENT, "true"),))
#: One term per label, from the facts of the pinned chart (gpufleet.nvidia.dra_prerequisites).
DRA_KUBELET_PLUGIN_AFFINITY: tuple[Term, ...] = tuple((label,) for label in KUBELET_PLUGIN_NODE_LABELS)


def as_terms(terms: tuple[Term, ...]) -> list[list[dict]]:
    return [[{"key": k, "operator": "In", "values": [v]} for k, v in term] for term in terms]


def as_affinity(terms: tuple[Term, ...]) -> dict:
    """A pod spec's required node affinity of these terms (ORed)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": t} for t in as_terms(terms)]}}}
