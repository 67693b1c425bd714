"""DRA (Dynamic Resource Allocation) config: `gpufleet:draDriver` (NVIDIA's DRA driver for GPUs),
GPU claims of workloads (`gpu.claim`) and named shared claims (`gpufleet:claims`). docs/dra.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from gpufleet.config._base import Model
from gpufleet.config.k8s_types import DnsLabel, Namespace, ObjectName
from gpufleet.nvidia import dra, versions

#: A Kubernetes quantity such as 80Gi or 40G (what `quantity()` in a CEL selector accepts).
Quantity = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")]
#: A fully qualified attribute name, `<domain>/<name>` (what `matchAttribute` needs).
QualifiedAttribute = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z_][A-Za-z0-9_]{0,31}$")]
if TYPE_CHECKING:  # the gate names are data (gpufleet.nvidia.dra); statically a gate is a string
    FeatureGate = str
else:  # pydantic validates against the names themselves
    FeatureGate = Literal[tuple(dra.FEATURE_GATES)]


class DraDriverConfig(Model):
    """NVIDIA's DRA driver for GPUs: the gpu-operator's `draDriver` (operator mode, GPUCluster) or the
    dra-driver-nvidia-gpu chart (standalone mode). Used when `gpuAllocation` is dra."""

    feature_gates: dict[FeatureGate, bool] = Field(default_factory=dict)
    """Driver feature gates to set (the rest keep their defaults), e.g. {TimeSlicingSettings: true}."""
    compute_domains: bool = False
    """Run the ComputeDomain (multi-node NVLink / IMEX) part of the driver. Defaults to false."""
    version: str | None = Field(default=None, pattern=r"^v?[0-9]+\.[0-9]+\.[0-9]+([-.][0-9A-Za-z.-]+)?$")
    """Driver image tag, a version (never latest). Unset: the pinned chart's own (gpu-operator v26.7.0:
    v0.5.0; dra-driver-nvidia-gpu 0.4.1: v0.4.1)."""
    chart_version: str = versions.DRA_DRIVER_VERSION
    """dra-driver-nvidia-gpu chart version (standalone mode)."""
    namespace: Namespace = "nvidia-dra-driver-gpu"
    """Namespace of the standalone release (the chart refuses `default`)."""

    def gates(self) -> dict[str, bool]:
        return dra.effective_gates(dict(self.feature_gates))


class Sharing(Model):
    """How the pods of a named claim share its device: the driver's opaque GpuConfig (MigDeviceConfig for
    MIG devices). TimeSlicing needs the driver gate TimeSlicingSettings, MPS needs MPSSupport."""

    strategy: Literal["TimeSlicing", "MPS"]
    interval: Literal["Default", "Short", "Medium", "Long"] | None = None
    """TimeSlicing: how long each context runs before the next. Defaults to Default."""
    default_active_thread_percentage: int | None = Field(default=None, ge=0, le=100)
    """MPS: share of the GPU's threads each client may use (0 to 100)."""
    default_pinned_device_memory_limit: Quantity | None = None
    """MPS: GPU memory each client may pin, e.g. 10Gi."""

    @model_validator(mode="after")
    def _fields_of_the_strategy(self):
        """The driver refuses MPS settings with TimeSlicing; an interval means nothing to MPS."""
        mps = [n for n in ("defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit")
               if getattr(self, _SNAKE[n]) is not None]
        if self.strategy == "TimeSlicing" and mps:
            raise ValueError(f"{', '.join(mps)} with strategy 'TimeSlicing'; allowed: interval (MPS settings need "
                             "strategy MPS)")
        if self.strategy == "MPS" and self.interval is not None:
            raise ValueError(f"interval '{self.interval}' with strategy 'MPS'; allowed: defaultActiveThreadPercentage, "
                             "defaultPinnedDeviceMemoryLimit (interval needs strategy TimeSlicing)")
        return self


_SNAKE = {"defaultActiveThreadPercentage": "default_active_thread_percentage",
          "defaultPinnedDeviceMemoryLimit": "default_pinned_device_memory_limit"}


class DeviceChoice(Model):
    """Which devices: a DeviceClass plus shorthands that become CEL selectors."""

    device_class: ObjectName = "gpu.nvidia.com"
    """DeviceClass: gpu.nvidia.com (whole GPUs), mig.nvidia.com (MIG devices), or one the cluster declares."""
    count: int | None = Field(default=None, ge=1, le=32)
    """Devices per pod (default 1); not with allocationMode All."""
    allocation_mode: Literal["ExactCount", "All"] = "ExactCount"
    """ExactCount (count devices) or All (every matching device of the node)."""
    product: str | None = Field(default=None, max_length=64)
    """productName attribute, e.g. "NVIDIA H100 80GB HBM3"."""
    min_memory: Quantity | None = None
    """At least this much device memory, e.g. 80Gi."""
    profile: str | None = Field(default=None, pattern=r"^[0-9]+g\.[0-9]+gb(\+[a-z]+)?$")
    """MIG profile (deviceClass mig.nvidia.com), e.g. 1g.5gb."""
    selectors: list[Annotated[str, Field(min_length=1, max_length=10240)]] = Field(default_factory=list)
    """Further CEL selectors, each true for a device to qualify."""


class GpuClaim(DeviceChoice):
    """The devices a workload claims (one ResourceClaimTemplate: fresh devices per pod)."""

    first_available: list[DeviceChoice] = Field(default_factory=list, max_length=8)
    """Ordered alternatives: the first that fits is allocated. Excludes the fields above but sameAttribute."""
    same_attribute: QualifiedAttribute | None = None
    """All devices share this attribute's value (matchAttribute), e.g. resource.kubernetes.io/pcieRoot."""


class NamedClaim(GpuClaim):
    """A ResourceClaim shared by every workload that names it (`gpu: {sharedClaim: <name>}`)."""

    name: DnsLabel
    """Name of the ResourceClaim; workloads refer to it with `gpu.sharedClaim`."""
    namespace: Namespace = "default"
    """Namespace of the claim; only workloads of this namespace can share it."""
    sharing: Sharing | None = None
    """How the workloads sharing the claim share its device (the driver's opaque GpuConfig)."""

