"""Pinned chart and image versions (each project's release tags). Bump them together with `upstream/`."""

GPU_OPERATOR_CHART = "gpu-operator"
GPU_OPERATOR_VERSION = "v26.7.0"
GPU_OPERATOR_REPO = "https://helm.ngc.nvidia.com/nvidia"

DEVICE_PLUGIN_CHART = "nvidia-device-plugin"
DEVICE_PLUGIN_VERSION = "0.20.0"
DEVICE_PLUGIN_REPO = "https://nvidia.github.io/k8s-device-plugin"

#: NVIDIA's DRA driver for GPUs (resource.k8s.io); its chart is fetched with the others for the tests.
DRA_DRIVER_CHART = "dra-driver-nvidia-gpu"
DRA_DRIVER_VERSION = "0.4.1"
DRA_DRIVER_REPO = "oci://registry.k8s.io/dra-driver-nvidia/charts"

DRIVER_VERSION = "595.91.07"
MIG_MANAGER_IMAGE = "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0"

#: Device plugin config format understood by the plugin's config-manager (`api/config/v1`).
DEVICE_PLUGIN_CONFIG_VERSION = "v1"
#: mig-parted config format (`api/spec/v1`).
MIG_PARTED_CONFIG_VERSION = "v1"
