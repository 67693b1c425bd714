"""`gpufleet:cluster.aks`: an AKS cluster this stack creates, with its system pool and GPU node pools.

Each GPU pool IS a gpufleet node pool: `GpuPool.node_pool()` derives the `gpufleet:nodePools` entry
(GPU product and count from the VM size, node count, taints, the `kubernetes.azure.com/agentpool`
selector, sharing profile and MIG geometry), so workloads, capacity planning and the checks treat it like
any other pool. AKS node names are dynamic, so the sharing/MIG selection labels are set through the
agent pool's `nodeLabels` instead of NodePatch (gpufleet.render.aks).
"""

from __future__ import annotations

import re
from typing import Literal, cast

from pydantic import Field, ValidationInfo, field_validator, model_validator

from gpufleet.azure.mig import AKS_MIG_PROFILES
from gpufleet.azure.vm_sizes import VM_SIZES, VmSize, find_vm_size
from gpufleet.config._base import Model
from gpufleet.config.k8s_types import GeometryName, LabelKey, LabelValue, SharingProfileName
from gpufleet.config.node_pools import NodePool, PoolAutoscaling, PoolGpu, Taint, TaintEffect
from gpufleet.k8s_names import label_value_errors, qualified_name_errors

#: The label AKS puts on every node with its agent pool's name.
AGENT_POOL_LABEL = "kubernetes.azure.com/agentpool"
#: The most nodes of one AKS agent pool (maxCount).
AKS_MAX_COUNT = 1000
_TAINT = re.compile(r"^(?P<key>[A-Za-z0-9][-A-Za-z0-9_./]*)(=(?P<value>[-A-Za-z0-9_.]*))?:"
                    r"(?P<effect>NoSchedule|PreferNoSchedule|NoExecute)$")
DriverInstaller = Literal["aks", "operator"]
GpuInstanceProfile = Literal[AKS_MIG_PROFILES]  # type: ignore[valid-type]  # the names are data (gpufleet.azure.mig)


class ResourceGroup(Model):
    """The Azure resource group holding the cluster."""

    name: str = Field(min_length=1, max_length=90)
    """Resource group name."""
    existing: bool = False
    """Use an existing group (looked up, never created or deleted). Defaults to false: the stack creates it."""


class Autoscale(Model):
    """Cluster-autoscaler bounds for a pool (AKS `enableAutoScaling`, `minCount`, `maxCount`)."""

    min_count: int = Field(ge=0, le=AKS_MAX_COUNT)
    """Fewest nodes; 0 lets an idle GPU pool scale to zero (user pools only)."""
    max_count: int = Field(ge=1, le=AKS_MAX_COUNT)
    """Most nodes the autoscaler grows the pool to."""

    @model_validator(mode="after")
    def _bounds(self):
        if self.min_count > self.max_count:
            raise ValueError(f"minCount {self.min_count} is above maxCount {self.max_count}")
        return self


class SystemPool(Model):
    """The AKS system pool (mode System): CoreDNS, metrics-server, the GPU operator's controllers."""

    name: str = Field(default="system", pattern=r"^[a-z][a-z0-9]{0,11}$")
    """Agent pool name: lowercase letters and digits, at most 12. Defaults to system."""
    vm_size: str = "Standard_D4ds_v5"
    """VM size of the system nodes (no GPU needed). Defaults to Standard_D4ds_v5."""
    count: int = Field(default=2, ge=1, le=1000)
    """Node count (the initial count when autoscale is set). Defaults to 2."""
    autoscale: Autoscale | None = None
    """Autoscaler bounds; unset: a fixed `count`."""


class GpuPool(Model):
    """One AKS user agent pool of GPU VMs, and the gpufleet node pool it is."""

    name: str = Field(pattern=r"^[a-z][a-z0-9]{0,11}$")
    """Agent pool name (also the node pool name workloads use in `nodePool`): lowercase letters and
    digits, starting with a letter, at most 12."""
    vm_size: str
    """Azure VM size, e.g. Standard_NC4as_T4_v3; decides the GPU product and count per node."""
    count: int | None = Field(default=None, ge=0, le=1000)
    """Fixed node count. Defaults to 1 when neither count nor autoscale is set."""
    autoscale: Autoscale | None = None
    """Autoscaler bounds instead of a fixed count (AKS's spelling, minCount/maxCount). The pool is created with
    minCount nodes, and is a node group the checks may grow to maxCount (docs/autoscaling.md)."""
    autoscaling: PoolAutoscaling | None = None
    """The same bounds in `nodePools`' spelling, `{min, max}` (at most 1000 each, as AKS allows); set one of
    autoscale and autoscaling."""
    gpu_instance_profile: GpuInstanceProfile | None = None
    """AKS-managed static MIG (MIG1g, MIG2g, MIG3g, MIG4g, MIG7g): every GPU is split at node creation
    into the most instances of that profile. Unset: no AKS MIG. Excludes `migGeometry`."""
    driver: DriverInstaller = "aks"
    """Who installs the NVIDIA driver: aks (the node image, AKS's default) or operator (the GPU operator's
    driver DaemonSet; the pool is created with gpuProfile.driver None). Defaults to aks."""
    taints: list[str] = Field(default_factory=list)
    """Node taints as `key=value:Effect`, e.g. `sku=gpu:NoSchedule`. Workloads aimed at the pool
    (`nodePool`) tolerate them automatically."""
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    """Further node labels (AKS `nodeLabels`)."""
    sharing: SharingProfileName | None = None
    """Name of a `devicePlugin.sharingProfiles` entry for these nodes (set as a node label)."""
    mig_geometry: GeometryName | None = None
    """Name of a `mig.geometries` entry the operator's mig-manager applies (set as a node label). Excludes
    `gpuInstanceProfile`."""
    os_sku: Literal["Ubuntu", "AzureLinux"] = "Ubuntu"
    """Node OS. Defaults to Ubuntu (the GPU operator's driver containers support Ubuntu)."""

    @field_validator("vm_size")
    @classmethod
    def _known_vm_size(cls, value: str) -> str:
        size = find_vm_size(value)
        if size is None:
            raise ValueError(f"'{value}' is not a GPU VM size gpufleet knows; allowed: {', '.join(VM_SIZES)}")
        return size.name

    @field_validator("taints")
    @classmethod
    def _taint_syntax(cls, value: list[str]) -> list[str]:
        for t in value:
            m = _TAINT.match(t)
            if not m:
                raise ValueError(f"'{t}' is not a taint; allowed: key=value:Effect with Effect NoSchedule, "
                                 "PreferNoSchedule or NoExecute (e.g. sku=gpu:NoSchedule)")
            problems = [f"key {p}" for p in qualified_name_errors(m["key"])]
            problems += [f"value {p}" for p in label_value_errors(m["value"] or "")]
            if problems:
                raise ValueError(f"'{t}' is not a valid taint: {'; '.join(problems)}")
        return value

    @field_validator("autoscaling")
    @classmethod
    def _one_spelling(cls, value: PoolAutoscaling | None, info: ValidationInfo) -> PoolAutoscaling | None:
        if value is None:
            return value
        if info.data.get("autoscale") is not None:
            raise ValueError("set together with this pool's autoscale: both give the autoscaler bounds "
                             "(autoscale: {minCount, maxCount}, autoscaling: {min, max}); allowed: one of them")
        if value.max > AKS_MAX_COUNT:
            raise ValueError(f"max {value.max} is above {AKS_MAX_COUNT}, the most nodes of an AKS agent pool; "
                             f"allowed: 1 to {AKS_MAX_COUNT}")
        return value

    @model_validator(mode="after")
    def _count_or_autoscale(self):
        if self.count is not None and self.bounds() is not None:
            key = "autoscale" if self.autoscale is not None else "autoscaling"
            raise ValueError(f"count and {key} are mutually exclusive; set a fixed count or autoscale bounds")
        return self

    def bounds(self) -> tuple[int, int] | None:
        """(min, max) of the autoscaler, in either spelling; None for a fixed count."""
        if self.autoscale is not None:
            return self.autoscale.min_count, self.autoscale.max_count
        if self.autoscaling is not None:
            return self.autoscaling.min, self.autoscaling.max
        return None

    @property
    def vm(self) -> VmSize:
        return VM_SIZES[self.vm_size]

    def node_count(self) -> int:
        """The nodes the pool is created with: the fixed count, or the autoscaler's minimum (the checks grow it as
        a node group up to the maximum)."""
        bounds = self.bounds()
        if bounds is not None:
            return bounds[0]
        return 1 if self.count is None else self.count

    def taint_objects(self) -> list[Taint]:
        out = []
        for t in self.taints:
            m = _TAINT.match(t)
            assert m is not None  # _taint_syntax refused every taint _TAINT does not match
            # the pattern's effect group admits only the three effects Taint allows
            out.append(Taint(key=m["key"], value=m["value"] or "", effect=cast(TaintEffect, m["effect"])))
        return out

    def node_pool(self) -> NodePool:
        """The `gpufleet:nodePools` entry this agent pool stands for."""
        return NodePool(
            name=self.name,
            node_selector={AGENT_POOL_LABEL: self.name},
            count=self.node_count(),
            autoscaling=PoolAutoscaling(min=bounds[0], max=bounds[1]) if (bounds := self.bounds()) else None,
            gpu=PoolGpu(product=self.vm.product, count=self.vm.gpu_count),
            taints=self.taint_objects(),
            sharing=self.sharing,
            mig_geometry=self.mig_geometry,
            labels=dict(self.labels),
        )


class AksConfig(Model):
    """An AKS cluster created by this stack; its user kubeconfig feeds every Kubernetes resource."""

    resource_group: ResourceGroup
    location: str | None = None
    """Azure region, e.g. westeurope. Defaults to the provider's `azure-native:location` (for a new group)
    or the existing group's region."""
    cluster_name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][-_A-Za-z0-9]{0,62}$")
    """AKS cluster name. Defaults to `<stack>-aks`."""
    dns_prefix: str | None = None
    """DNS prefix of the API server FQDN. Defaults to the cluster name."""
    kubernetes_version: str | None = None
    """Kubernetes version (e.g. "1.33") of the control plane and the pools. Defaults to AKS's default."""
    system_pool: SystemPool = Field(default_factory=SystemPool)
    gpu_pools: list[GpuPool] = Field(default_factory=list)
    """The GPU user pools; each is also a gpufleet node pool of the same name."""

    def gpu_pool(self, name: str | None) -> tuple[int, GpuPool] | None:
        return next(((i, p) for i, p in enumerate(self.gpu_pools) if p.name == name), None)
