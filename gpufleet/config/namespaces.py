"""`gpufleet:namespaces`: what a GPU service's namespace carries (its GPU quota)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from gpufleet.config._base import Model

#: A GPU extended resource: whole GPUs, shared replicas, MIG profiles (nvidia.com/gpu, nvidia.com/gpu.shared,
#: nvidia.com/mig-1g.10gb).
GpuResource = Annotated[str,
                        StringConstraints(pattern=r"^nvidia\.com/(gpu|gpu\.shared|mig-[0-9]+g\.[0-9]+gb(\.me)?(\.shared)?)$")]


class NamespaceConfig(Model):
    """One namespace of the stack."""

    gpu_quota: dict[GpuResource, Annotated[int, Field(ge=0, le=1_000_000)]] = Field(default_factory=dict)
    """GPUs the namespace's pods may request in all, per resource (e.g. {nvidia.com/gpu: 4}): a ResourceQuota
    `gpufleet-gpu-quota` with `requests.<resource>`, the only key the API server counts extended resources
    under. The plan and `report --stack` refuse the replica that would cross it, in the API server's words."""


__all__ = ["NamespaceConfig"]
