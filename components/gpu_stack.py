"""GpuStack: the root component. Wires the GPU stack (operator or standalone plugin), its ConfigMaps,
the node labels and the workloads of one StackConfig. Every decision is made by gpufleet.render."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components._k8s import child_opts, from_manifest
from components.batch_job import BatchJob, BatchJobArgs
from components.device_plugin import DevicePlugin, DevicePluginArgs
from components.dra_driver import DraDriver, DraDriverArgs
from components.gpu_operator import GpuOperator, GpuOperatorArgs
from components.inference_service import InferenceService, InferenceServiceArgs
from components.mig_geometry import MigGeometry, MigGeometryArgs
from components.node_pool_labels import NodePoolLabels, NodePoolLabelsArgs
from components.notebook import Notebook, NotebookArgs
from components.sharing_config import SharingConfig, SharingConfigArgs
from gpufleet.config.stack import StackConfig
from gpufleet.render import gpu_stack as r
from gpufleet.render.claims import named_claims
from gpufleet.render.mig_manager import mig_manager_objects
from gpufleet.render.tolerations import MIG_MANAGER, with_pool_taints
from gpufleet.render.workloads import gpu_quotas, namespace, workload_objects


@dataclass
class GpuStackArgs:
    config: StackConfig
    secret: Callable[[str], pulumi.Output[str]]
    """Looks up a secret stack config key (e.g. a notebook token) as a Pulumi secret."""
    provider: pulumi.ProviderResource | None = None
    """Kubernetes provider; None uses the ambient kubeconfig (or one made from cluster.kubeconfig/context)."""


class GpuStack(pulumi.ComponentResource):
    def __init__(self, name: str, args: GpuStackArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:GpuStack", name, None, opts)
        cfg = args.config
        self._secret = args.secret
        self.provider = args.provider or self._provider_from_config(name, cfg)
        p = self.provider
        self.gpu_stack_ready: list[pulumi.Resource] = []
        if cfg.mode != "platform-managed":
            self._gpu_stack(name, cfg, p)
        labels = r.node_labels(cfg) if cfg.mode != "platform-managed" else {}
        self.node_labels = [
            NodePoolLabels(f"{name}-{pool.name}-labels",
                           NodePoolLabelsArgs({n: labels[n] for n in pool.nodes if n in labels}, p),
                           pulumi.ResourceOptions(parent=self))
            for pool in cfg.node_pools
            if any(n in labels for n in pool.nodes)
        ]
        self.namespaces = {
            ns: from_manifest(f"{name}-ns-{ns}", namespace(ns), child_opts(self, p)) for ns in cfg.namespace_names()
        }
        self.quotas = {  # before the workloads: admission counts their pods against them
            q["metadata"]["namespace"]: from_manifest(
                f"{name}-quota-{q['metadata']['namespace']}", q,
                child_opts(self, p, _in(self.namespaces, q["metadata"]["namespace"])))
            for q in gpu_quotas(cfg)
        }
        self.claims = {
            (c["metadata"]["namespace"], c["metadata"]["name"]): from_manifest(
                f"{name}-claim-{c['metadata']['namespace']}-{c['metadata']['name']}", c,
                child_opts(self, p, [*self.gpu_stack_ready, *_in(self.namespaces, c["metadata"]["namespace"])]))
            for c in named_claims(cfg)
        }
        self.workloads = [self._workload(name, cfg, w, p) for w in cfg.workloads]
        self.endpoints = {w.name: getattr(c, "endpoint", None)
                          for w, c in zip(cfg.workloads, self.workloads, strict=True)
                          if getattr(c, "endpoint", None) is not None}
        self.register_outputs({"endpoints": self.endpoints})

    @staticmethod
    def _provider_from_config(name: str, cfg: StackConfig) -> pulumi.ProviderResource | None:
        if cfg.cluster.kubeconfig is None and cfg.cluster.context is None:
            return None
        return k8s.Provider(f"{name}-k8s", kubeconfig=cfg.cluster.kubeconfig, context=cfg.cluster.context)

    def _gpu_stack(self, name: str, cfg: StackConfig, p) -> None:
        ns_name = r.stack_namespace(cfg)
        ns = from_manifest(f"{name}-ns-{ns_name}", namespace(ns_name), child_opts(self, p))
        configs: list[pulumi.Resource] = [ns]
        sharing = r.sharing_configmap(cfg)
        if sharing is not None:
            self.sharing = SharingConfig(f"{name}-sharing", SharingConfigArgs(sharing, p, [ns]),
                                         pulumi.ResourceOptions(parent=self))
            configs.append(self.sharing)
        mig = r.mig_configmap(cfg)
        if mig is not None:
            extra = (mig_manager_objects(ns_name, tolerations=with_pool_taints(MIG_MANAGER, cfg))
                     if cfg.mode == "standalone" else [])
            self.mig = MigGeometry(f"{name}-mig", MigGeometryArgs(mig, extra, p, [ns]),
                                   pulumi.ResourceOptions(parent=self))
            configs.append(self.mig)
        if cfg.mode == "operator":
            self.operator = GpuOperator(
                f"{name}-gpu-operator",
                GpuOperatorArgs(ns_name, r.operator_values(cfg), cfg.operator.chart_version,
                                cfg.operator.timeout_seconds, p, configs),
                pulumi.ResourceOptions(parent=self))
            self.gpu_stack_ready = [self.operator.release]
        elif cfg.uses_dra():
            # No device plugin in a DRA stack: the DRA driver serves every GPU node (docs/dra.md).
            self.dra_driver = DraDriver(
                f"{name}-dra-driver",
                DraDriverArgs(ns_name, r.dra_driver_values(cfg), cfg.dra_driver.chart_version,
                              provider=p, depends_on=configs),
                pulumi.ResourceOptions(parent=self))
            self.gpu_stack_ready = [self.dra_driver.release]
        else:
            self.device_plugin = DevicePlugin(
                f"{name}-device-plugin",
                DevicePluginArgs(ns_name, r.device_plugin_values(cfg), cfg.device_plugin.chart_version,
                                 provider=p, depends_on=configs),
                pulumi.ResourceOptions(parent=self))
            self.gpu_stack_ready = [self.device_plugin.release]

    def _workload(self, name: str, cfg: StackConfig, w, p):
        manifests = workload_objects(cfg, w)
        deps = [*self.gpu_stack_ready, *_in(self.namespaces, w.namespace), *_in(self.quotas, w.namespace)]
        if w.gpu is not None and w.gpu.shared_claim is not None:
            deps.append(self.claims[(w.namespace, w.gpu.shared_claim)])
        opts = pulumi.ResourceOptions(parent=self)
        cname = f"{name}-{w.namespace}-{w.name}"
        env: dict[str, pulumi.Input[str]] = {name: self._secret(key) for name, key in w.secret_env().items()}
        if w.kind == "inference":
            return InferenceService(cname, InferenceServiceArgs(manifests, env, p, deps), opts)
        if w.kind == "notebook":
            return Notebook(cname, NotebookArgs(manifests, self._secret(w.token_config_key), env, p, deps), opts)
        return BatchJob(cname, BatchJobArgs(manifests, env, p, deps), opts)


def _in(namespaces: dict, ns: str) -> list[pulumi.Resource]:
    return [namespaces[ns]] if ns in namespaces else []
