"""What NVIDIA's DRA driver for GPUs needs from the cluster before a claim can be served: the Kubernetes
version, the driver branch, CDI in the container runtime, the labels its kubelet plugin's node affinity
selects, and which GPUs its MIG and MPS features apply to.

Sources:
- dra-driver-nvidia-gpu 0.4.1 chart (Chart.yaml `kubeVersion: '>=1.32.0-0'`; values.yaml
  `kubeletPlugin.nodeSelector: {}`, `kubeletPlugin.tolerations` [nvidia.com/gpu Exists NoSchedule] and
  `kubeletPlugin.affinity`, whose nodeSelectorTerms are ORed: NFD's PCI vendor 10de labels in both
  namings, NFD's CPU vendor NVIDIA (Tegra), or the operator's nvidia.com/gpu.present).
- resource.k8s.io/v1 (DeviceClass, ResourceClaim, ResourceSlice) is served from Kubernetes 1.34, where
  DRA structured parameters went GA; gpufleet renders v1 objects.
- gpu-operator v26.7.0 docs (NVIDIA/cloud-native-docs gpu-operator/dra-intro-install.rst, "Prerequisites"
  of the GPUCluster workflow): Kubernetes v1.34.2 or later, NVIDIA GPU driver 580 or later, a container
  runtime that supports CDI and is configured to use it for DRA-allocated devices; the driver injects
  devices through CDI only ("Requires a Container Device Interface (CDI)-compatible runtime").
- MIG: `mig.nvidia.com` devices and DynamicMIG need MIG-capable GPUs (products with a MIG table).
- MPS: the driver's MPS sharing configures per-client thread and pinned-memory limits, Volta MPS features
  (architectures.py).
"""

from __future__ import annotations

#: resource.k8s.io/v1: Kubernetes 1.34.
MIN_KUBERNETES = (1, 34)
#: The GPUCluster workflow of gpu-operator v26.7.0.
OPERATOR_MIN_KUBERNETES = (1, 34, 2)
#: The dra-driver-nvidia-gpu 0.4.1 chart's kubeVersion (Helm refuses to install below it).
CHART_MIN_KUBERNETES = (1, 32)
#: The GPUCluster workflow of gpu-operator v26.7.0.
MIN_DRIVER_BRANCH = 580
#: The driver hands devices to containers through CDI specs only.
NEEDS_CDI = True

MIG_DEVICE_CLASS = "mig.nvidia.com"
DYNAMIC_MIG_GATE = "DynamicMIG"

#: kubeletPlugin.affinity of the 0.4.1 chart: a node runs the kubelet plugin when any one label matches.
KUBELET_PLUGIN_NODE_LABELS: tuple[tuple[str, str], ...] = (
    ("feature.node.kubernetes.io/pci-10de.present", "true"),
    ("feature.node.kubernetes.io/pci-0302_10de.present", "true"),
    ("feature.node.kubernetes.io/pci-0300_10de.present", "true"),
    ("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
    ("nvidia.com/gpu.present", "true"),
)
#: kubeletPlugin.tolerations of the 0.4.1 chart: only the nvidia.com/gpu taint (NoSchedule).
KUBELET_PLUGIN_TOLERATIONS = ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)


def kubelet_plugin_runs_on(labels: dict[str, str]) -> bool:
    """Whether the chart's kubelet plugin affinity selects a node with these labels."""
    return any(labels.get(key) == value for key, value in KUBELET_PLUGIN_NODE_LABELS)
