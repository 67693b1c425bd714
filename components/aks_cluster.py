"""AksCluster: the resource group (created or looked up), the AKS cluster with its system pool, one
agent pool per GPU pool, and a Kubernetes provider fed by the cluster's user kubeconfig (a secret).

The provider depends on the GPU pools, so every Kubernetes resource deployed through it waits for the
GPU nodes' pools to exist. Decisions (labels, taints, driver) come from gpufleet.render.aks.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import containerservice as cs
from pulumi_azure_native import resources

from gpufleet.config.aks import AksConfig
from gpufleet.render.aks import AgentPoolSpec


@dataclass
class AksClusterArgs:
    config: AksConfig
    cluster_name: str
    """AKS cluster name (cluster.aks.clusterName, or a default from the stack)."""
    system_pool: AgentPoolSpec
    gpu_pools: list[AgentPoolSpec] = field(default_factory=list)


def _scale(spec: AgentPoolSpec) -> dict:
    if not spec.autoscaled:
        return {"count": spec.count}
    return {"count": spec.count, "enable_auto_scaling": True, "min_count": spec.min_count,
            "max_count": spec.max_count}


def decode_kubeconfig(value: str) -> str:
    """The AKS credentials API returns each kubeconfig base64-encoded."""
    return base64.b64decode(value).decode()


class AksCluster(pulumi.ComponentResource):
    """An AKS cluster with GPU node pools and the Kubernetes provider for it."""

    provider: k8s.Provider
    kubeconfig: pulumi.Output[str]

    def __init__(self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:AksCluster", name, None, opts)
        cfg = args.config
        child = pulumi.ResourceOptions(parent=self)
        if cfg.resource_group.existing:
            found = resources.get_resource_group_output(resource_group_name=cfg.resource_group.name,
                                                        opts=pulumi.InvokeOutputOptions(parent=self))
            rg_name, location = found.name, pulumi.Output.from_input(cfg.location) if cfg.location else found.location
        else:
            rg = resources.ResourceGroup(f"{name}-rg", resource_group_name=cfg.resource_group.name,
                                         location=cfg.location, opts=child)
            self.resource_group = rg
            rg_name, location = rg.name, rg.location
        sp = args.system_pool
        self.cluster = cs.ManagedCluster(
            f"{name}-cluster",
            resource_group_name=rg_name,
            resource_name_=args.cluster_name,
            location=location,
            dns_prefix=cfg.dns_prefix or args.cluster_name,
            kubernetes_version=cfg.kubernetes_version,
            enable_rbac=True,
            identity=cs.ManagedClusterIdentityArgs(type=cs.ResourceIdentityType.SYSTEM_ASSIGNED),
            agent_pool_profiles=[cs.ManagedClusterAgentPoolProfileArgs(
                name=sp.name, mode=cs.AgentPoolMode.SYSTEM, vm_size=sp.vm_size, os_type=cs.OSType.LINUX,
                os_sku=sp.os_sku, orchestrator_version=sp.orchestrator_version, **_scale(sp))],
            # GPU pools are separate AgentPool resources; the cluster reads them back into agentPoolProfiles,
            # and a cluster PUT may not add or drop pools (pulumi-azure-native#2719).
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["agentPoolProfiles"]),
        )
        self.gpu_pools = [
            cs.AgentPool(
                f"{name}-{p.name}",
                resource_group_name=rg_name,
                resource_name_=self.cluster.name,
                agent_pool_name=p.name,
                mode=cs.AgentPoolMode.USER,
                vm_size=p.vm_size,
                os_type=cs.OSType.LINUX,
                os_sku=p.os_sku,
                orchestrator_version=p.orchestrator_version,
                gpu_instance_profile=p.gpu_instance_profile,
                gpu_profile=cs.GPUProfileArgs(driver=p.gpu_driver),
                node_taints=p.node_taints or None,
                node_labels=p.node_labels or None,
                opts=child,
                **_scale(p),
            )
            for p in args.gpu_pools
        ]
        creds = cs.list_managed_cluster_user_credentials_output(
            resource_group_name=rg_name, resource_name=self.cluster.name,
            opts=pulumi.InvokeOutputOptions(parent=self))
        self.kubeconfig = pulumi.Output.secret(creds.kubeconfigs[0].value.apply(decode_kubeconfig))
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig,
                                     opts=pulumi.ResourceOptions(parent=self, depends_on=self.gpu_pools))
        self.register_outputs({"clusterName": self.cluster.name, "resourceGroupName": rg_name,
                               "kubeconfig": self.kubeconfig})
