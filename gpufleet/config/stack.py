"""The root of a stack's config: its sections and lookups across them (the checks are in rules.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpufleet.azure.mig import aks_mig_profile
from gpufleet.config._base import Model
from gpufleet.config.aks import GpuPool
from gpufleet.config.cluster import ClusterConfig
from gpufleet.config.device_plugin import DevicePluginConfig
from gpufleet.config.dra import DraDriverConfig, NamedClaim
from gpufleet.config.k8s_types import Namespace
from gpufleet.config.mig import MigConfig, MigDeviceGroup
from gpufleet.config.namespaces import NamespaceConfig
from gpufleet.config.node_pools import NodePool
from gpufleet.config.operator import OperatorConfig
from gpufleet.config.workloads import BatchJob, InferenceService, Notebook, Workload
from gpufleet.nvidia.products import GpuProduct, find_product

BUILTIN_GEOMETRIES = ("all-disabled",)
Mode = Literal["operator", "standalone", "platform-managed"]

#: Top-level config keys (`gpufleet:<key>` in Pulumi.<stack>.yaml), in YAML spelling.
SECTION_KEYS = ("version", "mode", "gpuAllocation", "cluster", "operator", "devicePlugin", "draDriver", "mig",
                "nodePools", "claims", "namespaces", "workloads")


class StackConfig(Model):
    """Everything a stack declares. Each field is one `gpufleet:<key>` entry of Pulumi.<stack>.yaml."""

    version: Literal["v1alpha1"] = "v1alpha1"
    """Config format version. Defaults to v1alpha1, the only one."""
    mode: Mode = "operator"
    """operator (gpu-operator chart), standalone (device plugin + GFD charts) or platform-managed
    (the platform owns the GPU stack; only workloads are deployed)."""
    gpu_allocation: Literal["devicePlugin", "dra"] = "devicePlugin"
    """How pods get GPUs: devicePlugin (`nvidia.com/gpu` extended resources) or dra (ResourceClaims served
    by NVIDIA's DRA driver; Kubernetes 1.34 or later). docs/dra.md."""
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    operator: OperatorConfig = Field(default_factory=OperatorConfig)
    device_plugin: DevicePluginConfig = Field(default_factory=DevicePluginConfig)
    dra_driver: DraDriverConfig = Field(default_factory=DraDriverConfig)
    mig: MigConfig = Field(default_factory=MigConfig)
    node_pools: list[NodePool] = Field(default_factory=list)
    claims: list[NamedClaim] = Field(default_factory=list)
    """Named ResourceClaims (gpuAllocation dra) that several workloads share with `gpu: {sharedClaim: <name>}`."""
    namespaces: dict[Namespace, NamespaceConfig] = Field(default_factory=dict)
    """Namespaces of the GPU services with what they carry: a GPU quota (a ResourceQuota the plan deploys and the
    capacity checks count pods against, as the API server's admission does)."""
    workloads: list[Workload] = Field(default_factory=list)

    @model_validator(mode="after")
    def _with_aks_pools(self):
        """Each `cluster.aks.gpuPools` entry is a node pool: append the derived entries to `node_pools`.

        Idempotent (a dumped and re-read config keeps one copy). An explicit node pool of the same name
        stays as written; validate_references reports the clash.
        """
        if self.cluster.aks is None:
            return self
        names = {p.name for p in self.node_pools}
        derived = [g.node_pool() for g in self.cluster.aks.gpu_pools if g.name not in names]
        if derived:
            object.__setattr__(self, "node_pools", [*self.node_pools, *derived])
        return self

    def aks_pool(self, pool: NodePool) -> tuple[int, GpuPool] | None:
        """The AKS GPU pool (index, config) a node pool was derived from; None for other pools."""
        found = self.cluster.aks.gpu_pool(pool.name) if self.cluster.aks is not None else None
        return found if found is not None and found[1].node_pool() == pool else None

    def uses_dra(self) -> bool:
        return self.gpu_allocation == "dra"

    def claim(self, name: str | None, namespace: str) -> NamedClaim | None:
        return next((c for c in self.claims if c.name == name and c.namespace == namespace), None)

    def pool(self, name: str | None) -> NodePool | None:
        return next((p for p in self.node_pools if p.name == name), None)

    def pool_product(self, pool: NodePool) -> GpuProduct | None:
        return find_product(pool.gpu.product)

    def geometry(self, name: str | None) -> list[MigDeviceGroup] | None:
        if name is None:
            return None
        if name == "all-disabled":
            return [MigDeviceGroup(devices="all", mig_enabled=False)]
        return self.mig.geometries.get(name)

    def mig_profiles_of_pool(self, pool: NodePool) -> dict[str, int]:
        """MIG instances per node of a pool (profile -> count over all its GPUs)."""
        aks = self.aks_pool(pool)
        if aks is not None and aks[1].gpu_instance_profile is not None:
            product = find_product(pool.gpu.product)
            profile = aks_mig_profile(product, aks[1].gpu_instance_profile) if product else None
            return {profile.name: profile.max_count * pool.gpu.count} if profile else {}
        groups = self.geometry(pool.mig_geometry) or []
        counts: dict[str, int] = {}
        for group in groups:
            if not group.mig_enabled:
                continue
            gpus = pool.gpu.count if group.devices == "all" else len(group.devices)
            for name, n in group.mig_devices.items():
                counts[name] = counts.get(name, 0) + n * gpus
        return counts

    def sharing_of_pool(self, pool: NodePool):
        name = pool.sharing or self.device_plugin.default_sharing
        return self.device_plugin.sharing_profiles.get(name) if name else None

    def secret_config_keys(self) -> list[str]:
        """Every secret stack config key the workloads read (notebook tokens, secret env values)."""
        return sorted({k for w in self.workloads for k in w.secret_config_keys()})

    def namespace_names(self) -> list[str]:
        """Every namespace the stack creates: its workloads', its claims' and the configured ones."""
        return sorted(({w.namespace for w in self.workloads} | {c.namespace for c in self.claims}
                       | set(self.namespaces)) - {"default"})


__all__ = ["StackConfig", "SECTION_KEYS", "Workload", "InferenceService", "Notebook", "BatchJob"]
