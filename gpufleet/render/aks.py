"""What each AKS agent pool is created with: plain values the AksCluster component passes on unchanged.

The selection labels that NodePatch sets on named nodes elsewhere (device plugin config, MIG config) are
agent pool `nodeLabels` here, because AKS names its nodes itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufleet.config.aks import AksConfig, GpuPool
from gpufleet.config.stack import StackConfig
from gpufleet.render.gpu_stack import gpu_client_deploy_labels
from gpufleet.render.labels import DEVICE_PLUGIN_CONFIG_LABEL, MIG_CONFIG_LABEL, MIG_MANAGER_DEPLOY_LABEL

# The operator skips mig-manager on nodes with MIG_MANAGER_DEPLOY_LABEL set to "false" (AKS owns MIG there).


@dataclass(frozen=True)
class AgentPoolSpec:
    """One AKS agent pool, in the terms of `containerservice.AgentPool` / `ManagedClusterAgentPoolProfile`."""

    name: str
    vm_size: str
    mode: str = "User"
    count: int = 1
    min_count: int | None = None
    max_count: int | None = None
    os_sku: str = "Ubuntu"
    orchestrator_version: str | None = None
    gpu_instance_profile: str | None = None
    #: "Install" (AKS installs the NVIDIA driver) or "None" (the GPU operator does); None for CPU pools.
    gpu_driver: str | None = None
    node_taints: list[str] = field(default_factory=list)
    node_labels: dict[str, str] = field(default_factory=dict)

    @property
    def autoscaled(self) -> bool:
        return self.max_count is not None


def gpu_pool_labels(cfg: StackConfig, pool: GpuPool) -> dict[str, str]:
    """The pool's own labels plus gpufleet's selection labels (sharing profile, MIG geometry / owner)."""
    labels = dict(pool.labels)
    node_pool = cfg.pool(pool.name)
    if node_pool is not None:
        labels.update(gpu_client_deploy_labels(cfg, node_pool))
    if pool.sharing:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = pool.sharing
    if pool.mig_geometry:
        labels[MIG_CONFIG_LABEL] = pool.mig_geometry
    if pool.gpu_instance_profile and cfg.mode == "operator":
        labels[MIG_MANAGER_DEPLOY_LABEL] = "false"
    return labels


def gpu_agent_pool(cfg: StackConfig, aks: AksConfig, pool: GpuPool) -> AgentPoolSpec:
    bounds = pool.bounds()  # autoscale {minCount, maxCount} or autoscaling {min, max}
    return AgentPoolSpec(
        name=pool.name,
        vm_size=pool.vm_size,
        count=pool.node_count(),
        min_count=bounds[0] if bounds else None,
        max_count=bounds[1] if bounds else None,
        os_sku=pool.os_sku,
        orchestrator_version=aks.kubernetes_version,
        gpu_instance_profile=pool.gpu_instance_profile,
        gpu_driver="None" if pool.driver == "operator" else "Install",
        node_taints=list(pool.taints),
        node_labels=gpu_pool_labels(cfg, pool),
    )


def system_agent_pool(aks: AksConfig) -> AgentPoolSpec:
    sp = aks.system_pool
    scale = sp.autoscale
    return AgentPoolSpec(name=sp.name, vm_size=sp.vm_size, mode="System", count=sp.count,
                         min_count=scale.min_count if scale else None, max_count=scale.max_count if scale else None,
                         orchestrator_version=aks.kubernetes_version)


def gpu_agent_pools(cfg: StackConfig) -> list[AgentPoolSpec]:
    aks = cfg.cluster.aks
    return [gpu_agent_pool(cfg, aks, p) for p in aks.gpu_pools] if aks else []
