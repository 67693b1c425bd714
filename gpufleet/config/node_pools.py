"""`gpufleet:nodePools`: groups of GPU nodes with their hardware, taints, sharing and MIG geometry."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpufleet.config._base import Model
from gpufleet.config.k8s_types import (
    DnsLabel,
    GeometryName,
    LabelKey,
    LabelValue,
    NodeName,
    SharingProfileName,
    TaintKey,
    TaintValue,
)
from gpufleet.k8s_names import INT32_MAX

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(Model):
    """A node taint (`key=value:effect`)."""

    key: TaintKey
    value: TaintValue = ""
    effect: TaintEffect = "NoSchedule"


class PoolGpu(Model):
    """The GPUs of each node in the pool."""

    product: str
    """GPU model as GFD labels it, e.g. Tesla-T4, A100-PCIE-40GB, NVIDIA-H100-80GB-HBM3."""
    count: int = Field(default=1, ge=1)
    """Physical GPUs per node (at most what one server of the product holds)."""


class PoolResources(Model):
    """Allocatable CPU, memory and pods per node, for planning before the cluster exists."""

    cpu: str | None = None
    """Allocatable CPU per node (a Kubernetes quantity, e.g. "8" or "7500m")."""
    memory: str | None = None
    """Allocatable memory per node (e.g. "30Gi")."""
    pods: int = Field(default=110, ge=1, le=INT32_MAX)
    """Maximum pods per node (kubelet maxPods). Defaults to 110."""
    ephemeral_storage: str | None = None
    """Allocatable ephemeral storage per node."""


class NodePool(Model):
    """A set of identical GPU nodes."""

    name: DnsLabel
    """Pool name (a DNS label)."""
    nodes: list[NodeName] = Field(default_factory=list)
    """Node names. gpufleet labels these nodes for their sharing profile and MIG geometry."""
    node_selector: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    """Labels that select the pool's nodes (used by workloads aimed at the pool)."""
    count: int | None = Field(default=None, ge=0, le=INT32_MAX)
    """Number of nodes, where `nodes` does not list them (capacity planning)."""
    gpu: PoolGpu
    taints: list[Taint] = Field(default_factory=list)
    """Taints on the pool's nodes; workloads aimed at the pool tolerate them."""
    sharing: SharingProfileName | None = None
    """Name of a `devicePlugin.sharingProfiles` entry applied to these nodes."""
    mig_geometry: GeometryName | None = None
    """Name of a `mig.geometries` entry applied to these nodes."""
    resources: PoolResources = Field(default_factory=PoolResources)
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    """Further labels the nodes carry (for capacity planning and selectors)."""

    def node_count(self) -> int:
        if self.nodes:
            return len(self.nodes)
        return self.count if self.count is not None else 1
