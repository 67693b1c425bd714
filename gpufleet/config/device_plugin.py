"""`gpufleet:devicePlugin`: MIG strategy and named GPU sharing profiles."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpufleet.config._base import Model
from gpufleet.config.k8s_types import Namespace, SharingProfileName
from gpufleet.k8s_names import INT32_MAX
from gpufleet.nvidia import versions


class SharedResource(Model):
    """One resource of a sharing profile (time-slicing a mixed-MIG profile, say)."""

    name: str
    """`nvidia.com/gpu`, or `nvidia.com/mig-<profile>` under the mixed MIG strategy."""
    replicas: int = Field(ge=2, le=INT32_MAX)
    """How many workloads share one device (at least 2)."""


class SharingProfile(Model):
    """How the GPUs of the nodes that select this profile are shared."""

    strategy: Literal["timeSlicing", "mps"]
    """timeSlicing (interleaved contexts) or mps (CUDA MPS: memory and compute split evenly)."""
    replicas: int = Field(ge=2, le=INT32_MAX)
    """How many workloads share each GPU (at least 2). Multiplies the advertised count."""
    rename_by_default: bool = False
    """Advertise `<resource>.shared` instead of the plain name, so shared GPUs are requested explicitly."""
    fail_requests_greater_than_one: bool | None = None
    """Fail (UnexpectedAdmissionError) containers asking for more than one shared GPU. Unset: the plugin's
    default, true for MPS and false for time-slicing."""
    resources: list[SharedResource] | None = None
    """Per-resource replicas (time-slicing under mixed MIG). Defaults to `nvidia.com/gpu` with `replicas`."""

    def effective_fail_requests_greater_than_one(self) -> bool:
        if self.fail_requests_greater_than_one is not None:
            return self.fail_requests_greater_than_one
        return self.strategy == "mps"

    def shared_resources(self) -> list[SharedResource]:
        return self.resources or [SharedResource(name="nvidia.com/gpu", replicas=self.replicas)]


class DevicePluginConfig(Model):
    """The NVIDIA device plugin, in either mode (operator operand or standalone chart)."""

    mig_strategy: Literal["none", "single", "mixed"] = "none"
    """How MIG devices are advertised: none, single (as nvidia.com/gpu) or mixed (nvidia.com/mig-<profile>)."""
    sharing_profiles: dict[SharingProfileName, SharingProfile] = Field(default_factory=dict)
    """Named sharing profiles; a node pool selects one with `sharing:`."""
    default_sharing: str | None = None
    """Profile for GPU nodes that select none. Unset: such nodes do not share their GPUs."""
    chart_version: str = versions.DEVICE_PLUGIN_VERSION
    """nvidia-device-plugin chart version (standalone mode)."""
    namespace: Namespace = "nvidia-device-plugin"
    """Namespace of the standalone release."""
    gfd: bool = True
    """Run GPU feature discovery with the standalone plugin (labels nodes with product, memory, MIG)."""
    nfd: bool = True
    """Run Node Feature Discovery with the standalone plugin; false where NFD already runs."""
