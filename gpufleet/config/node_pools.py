"""`gpufleet:nodePools`: groups of GPU nodes with their hardware, taints, sharing and MIG geometry."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

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
#: The most nodes of one node group: the largest cluster Kubernetes documents as supported (5,000 nodes).
MAX_CLUSTER_NODES = 5000


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


class PoolAutoscaling(Model):
    """Cluster-autoscaler bounds of a pool: it is a node group the autoscaler grows from its nodes now (`count`,
    or the listed `nodes`) up to `max` and never shrinks below `min`."""

    min: int = Field(ge=0, le=MAX_CLUSTER_NODES)
    """Fewest nodes (0: the pool may scale to zero; the autoscaler then adds nodes from the planned template)."""
    max: int = Field(ge=1, le=MAX_CLUSTER_NODES)
    """Most nodes the autoscaler grows the pool to (at most 5000, the most nodes Kubernetes supports in a
    cluster)."""

    @model_validator(mode="after")
    def _bounds(self):
        if self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}; allowed: min <= max")
        return self


class NodePool(Model):
    """A set of identical GPU nodes."""

    name: DnsLabel
    """Pool name (a DNS label)."""
    nodes: list[NodeName] = Field(default_factory=list)
    """Node names. gpufleet labels these nodes for their sharing profile and MIG geometry."""
    node_selector: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    """Labels that select the pool's nodes (used by workloads aimed at the pool)."""
    count: int | None = Field(default=None, ge=0, le=INT32_MAX)
    """Number of nodes, where `nodes` does not list them (capacity planning); with `autoscaling`, the nodes the
    pool has now (defaults to `autoscaling.min`)."""
    autoscaling: PoolAutoscaling | None = None
    """The cluster autoscaler grows the pool from its nodes now up to `max` (docs/autoscaling.md); listed
    `nodes` are then the nodes it has now. Unset: a fixed size."""
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
        """The nodes the pool has now: the listed ones, else `count`, else `autoscaling.min`, else 1."""
        if self.nodes:
            return len(self.nodes)
        if self.count is not None:
            return self.count
        return self.autoscaling.min if self.autoscaling is not None else 1

    def most_nodes(self) -> int:
        """The most nodes the pool can have: `autoscaling.max`, else the nodes it has now."""
        return self.autoscaling.max if self.autoscaling is not None else self.node_count()
