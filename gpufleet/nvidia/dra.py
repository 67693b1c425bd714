"""Facts about NVIDIA's DRA driver for GPUs (dra-driver-nvidia-gpu 0.4.1): its driver names, the
DeviceClasses its chart ships, its feature gates and which sharing strategy needs which gate."""

from __future__ import annotations

import uuid

from gpufleet.nvidia.products import HGX2_V100, HGX_8

GPU_DRIVER = "gpu.nvidia.com"
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"

#: DeviceClass name -> the device `type` attribute it selects (templates deviceclass-*.yaml of the chart,
#: rendered when `resources.gpus.enabled`).
GPU_DEVICE_CLASSES = {"gpu.nvidia.com": "gpu", "mig.nvidia.com": "mig", "vfio.gpu.nvidia.com": "vfio"}
#: Rendered when `resources.computeDomains.enabled`: name -> (type, extra condition).
COMPUTE_DOMAIN_DEVICE_CLASSES = {
    "compute-domain-daemon.nvidia.com": "device.driver == 'compute-domain.nvidia.com' && "
                                        "device.attributes['compute-domain.nvidia.com'].type == 'daemon'",
    "compute-domain-default-channel.nvidia.com": "device.driver == 'compute-domain.nvidia.com' && "
                                                 "device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
                                                 "device.attributes['compute-domain.nvidia.com'].id == 0",
}

#: The driver's feature gates in 0.4.1 and their defaults.
FEATURE_GATES = {
    "TimeSlicingSettings": False,
    "MPSSupport": False,
    "IMEXDaemonsWithDNSNames": True,
    "PassthroughSupport": False,
    "DynamicMIG": False,
    "NVMLDeviceHealthCheck": False,
    "ComputeDomainCliques": True,
    "CrashOnNVLinkFabricErrors": True,
    "DeviceMetadata": False,
}
#: Pairs the driver refuses to start with.
EXCLUSIVE_GATES = (("DynamicMIG", "PassthroughSupport"), ("DynamicMIG", "NVMLDeviceHealthCheck"),
                   ("DynamicMIG", "MPSSupport"), ("PassthroughSupport", "NVMLDeviceHealthCheck"))
#: gate -> the gate it requires.
GATE_REQUIRES = {"ComputeDomainCliques": "IMEXDaemonsWithDNSNames", "DeviceMetadata": "PassthroughSupport"}

#: GpuConfig sharing strategy -> the gate the kubelet plugin needs to accept it at Prepare.
SHARING_GATE = {"TimeSlicing": "TimeSlicingSettings", "MPS": "MPSSupport"}
#: Opaque config kinds of the driver's `resource.nvidia.com/v1beta1` API, per device class.
OPAQUE_API_VERSION = "resource.nvidia.com/v1beta1"
OPAQUE_CONFIG_KIND = {"gpu.nvidia.com": "GpuConfig", "mig.nvidia.com": "MigDeviceConfig"}

#: Attribute names the GPU kubelet plugin publishes (unqualified ones live in the gpu.nvidia.com domain).
PCIE_ROOT_ATTRIBUTE = "resource.kubernetes.io/pcieRoot"
PCI_BUS_ID_ATTRIBUTE = "resource.kubernetes.io/pciBusID"


def effective_gates(overrides: dict[str, bool]) -> dict[str, bool]:
    return {**FEATURE_GATES, **overrides}


def gate_problems(overrides: dict[str, bool]) -> list[str]:
    """Why the driver would refuse to start with these gates (its own startup checks)."""
    gates = effective_gates(overrides)
    problems = [f"{a} and {b} cannot both be enabled" for a, b in EXCLUSIVE_GATES if gates[a] and gates[b]]
    problems += [f"{g} requires {need} to be enabled too" for g, need in GATE_REQUIRES.items()
                 if gates[g] and not gates[need]]
    return problems


def device_class_manifests(gpus: bool = True, compute_domains: bool = True,
                           extended_resource: bool = True) -> list[dict]:
    """The DeviceClasses the driver's chart installs (resource.k8s.io/v1), as raw objects. gpu-operator's
    own copies (GPUCluster) are the same but for `extendedResourceName`, which they leave out."""
    out = []
    if gpus:
        for name, dtype in GPU_DEVICE_CLASSES.items():
            expression = f"device.driver == '{GPU_DRIVER}' && device.attributes['{GPU_DRIVER}'].type == '{dtype}'"
            spec: dict = {"selectors": [{"cel": {"expression": expression}}]}
            if name == "gpu.nvidia.com" and extended_resource:
                spec["extendedResourceName"] = "nvidia.com/gpu"
            out.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                        "spec": spec})
    if compute_domains:
        for name, expression in COMPUTE_DOMAIN_DEVICE_CLASSES.items():
            out.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                        "spec": {"selectors": [{"cel": {"expression": expression}}]}})
    return out


#: productName as NVML reports it (and the driver publishes it), where it is not the GFD label with its
#: dashes turned back into spaces (GFD replaces every space with a dash; some names had dashes already).
_NVML_NAMES = {
    "A100-PCIE-40GB": "A100-PCIE-40GB",
    "NVIDIA-A100-SXM4-40GB": "NVIDIA A100-SXM4-40GB",
    "NVIDIA-A100-SXM4-80GB": "NVIDIA A100-SXM4-80GB",
    "Tesla-V100-SXM2-16GB": "Tesla V100-SXM2-16GB",
    "Tesla-V100-SXM2-32GB": "Tesla V100-SXM2-32GB",
    "Tesla-P100-PCIE-16GB": "Tesla P100-PCIE-16GB",
}
_ARCHITECTURES = {"kepler": "Kepler", "maxwell": "Maxwell", "volta": "Volta", "turing": "Turing",
                  "ampere": "Ampere", "hopper": "Hopper", "ada-lovelace": "Ada Lovelace", "blackwell": "Blackwell"}


def product_name(label: str) -> str:
    """The `productName` attribute of a GPU whose GFD product label is `label`."""
    return _NVML_NAMES.get(label, label.replace("-", " "))


def architecture(family: str) -> str:
    return _ARCHITECTURES.get(family, family.title())


#: GPUs behind one PCIe root complex (`resource.kubernetes.io/pcieRoot`). HGX 8-GPU boards (DGX A100 /
#: H100 / H200 / B200) connect their GPUs in pairs through four PCIe switches, each on its own root port
#: of a separate host bridge: 2 GPUs per root. PCIe cards get a root each (one card per slot).
HGX_GPUS_PER_PCIE_ROOT = 2


def gpus_per_pcie_root(max_gpus_per_node: int) -> int:
    """From the product's node ceiling: baseboard parts (8 or 16 per node) pair up, PCIe cards do not."""
    return HGX_GPUS_PER_PCIE_ROOT if max_gpus_per_node in (HGX_8, HGX2_V100) else 1


def semver(version: str) -> str:
    """A driver version (595.91.07) as the semantic version the driver publishes (leading zeros dropped)."""
    parts = [str(int(p)) for p in version.split(".")[:3] if p.isdigit()]
    return ".".join((parts + ["0", "0", "0"])[:3])


def fake_uuid(node: str, index: int) -> str:
    """A stable stand-in for a GPU's UUID (GPU-<uuid>), the same for the same node and index every run."""
    return f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{index}.{node}.gpufleet.invalid')}"
