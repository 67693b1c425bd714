"""Values and ConfigMaps of the GPU stack itself: gpu-operator, device plugin, sharing, MIG geometry."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml

from gpufleet.config.node_pools import NodePool
from gpufleet.config.stack import StackConfig
from gpufleet.nvidia import versions
from gpufleet.render import tolerations as tol
from gpufleet.render.labels import (
    CONFIG_HASH_ANNOTATION,
    DEVICE_PLUGIN_CONFIG_LABEL,
    DEVICE_PLUGIN_DEPLOY_LABEL,
    DEVICE_PLUGIN_POD_APP,
    GFD_DEPLOY_LABEL,
    GPU_PRESENT_LABEL,
    MIG_CONFIG_LABEL,
    MIG_CONFIGMAP,
    MIG_MANAGER_DEPLOY_LABEL,
    SHARING_CONFIGMAP,
    standard_labels,
)
from gpufleet.render.workloads import gpu_runtime_class

NO_SHARING = "no-sharing"


def _yaml(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def stack_namespace(cfg: StackConfig) -> str:
    """Namespace of the GPU stack's release and its ConfigMaps."""
    if cfg.mode == "operator":
        return cfg.operator.namespace
    return cfg.dra_driver.namespace if cfg.uses_dra() else cfg.device_plugin.namespace


def sharing_config_data(cfg: StackConfig) -> dict[str, str]:
    """The device plugin's named configs (`version: v1` documents), one ConfigMap key per profile.

    Empty when no sharing profile is declared (then no ConfigMap is created).
    """
    dp = cfg.device_plugin
    if not dp.sharing_profiles:
        return {}
    flags = {"migStrategy": dp.mig_strategy}
    data: dict[str, str] = {}
    if dp.default_sharing is None:
        data[NO_SHARING] = _yaml({"version": versions.DEVICE_PLUGIN_CONFIG_VERSION, "flags": flags})
    for name in sorted(dp.sharing_profiles):
        prof = dp.sharing_profiles[name]
        block: dict[str, Any] = {"renameByDefault": prof.rename_by_default}
        if prof.fail_requests_greater_than_one is not None:
            block["failRequestsGreaterThanOne"] = prof.fail_requests_greater_than_one
        block["resources"] = [{"name": r.name, "replicas": r.replicas} for r in prof.shared_resources()]
        data[name] = _yaml({"version": versions.DEVICE_PLUGIN_CONFIG_VERSION, "flags": flags,
                            "sharing": {prof.strategy: block}})
    return data


def default_sharing_key(cfg: StackConfig) -> str:
    return cfg.device_plugin.default_sharing or NO_SHARING


def mig_geometries_in_use(cfg: StackConfig) -> bool:
    return bool(cfg.mig.geometries) or any(p.mig_geometry for p in cfg.node_pools)


def runs_own_mig_manager(cfg: StackConfig) -> bool:
    """Standalone mode with MIG geometries: gpufleet deploys mig-manager (gpufleet.render.mig_manager)."""
    return cfg.mode == "standalone" and mig_geometries_in_use(cfg)


def mig_pause_node_selector(cfg: StackConfig) -> dict[str, str]:
    """What the standalone plugin and GFD pods require of a node, so mig-manager can pause them.

    The chart has one nodeSelector for both DaemonSets, so each requires both labels; mig-manager pauses
    both together, so either label leaving "true" empties the node of both.
    """
    selector = {DEVICE_PLUGIN_DEPLOY_LABEL: "true"}
    if cfg.device_plugin.gfd:
        selector[GFD_DEPLOY_LABEL] = "true"
    return selector


def gpu_client_deploy_labels(cfg: StackConfig, pool: NodePool) -> dict[str, str]:
    """Deploy labels gpufleet sets on a pool's nodes where it runs mig-manager itself (the operator sets
    its own): the plugin/GFD selector labels start "true", and MIG-capable nodes get mig-manager."""
    if not runs_own_mig_manager(cfg):
        return {}
    labels = mig_pause_node_selector(cfg)
    product = cfg.pool_product(pool)
    if pool.mig_geometry or (product is not None and product.mig_capable):
        labels[MIG_MANAGER_DEPLOY_LABEL] = "true"
    return labels


def mig_config_data(cfg: StackConfig) -> dict[str, str]:
    """The mig-parted `version: v1` document under key `config.yaml` (what mig-manager mounts)."""
    configs: dict[str, Any] = {"all-disabled": [{"devices": "all", "mig-enabled": False}]}
    for name in sorted(cfg.mig.geometries):
        configs[name] = [g.model_dump(by_alias=True, exclude_none=True) for g in cfg.mig.geometries[name]]
        for entry in configs[name]:
            if not entry["mig-enabled"]:
                entry.pop("mig-devices", None)
    return {"config.yaml": _yaml({"version": versions.MIG_PARTED_CONFIG_VERSION, "mig-configs": configs})}


def config_hash(cfg: StackConfig) -> str:
    """Changes whenever a ConfigMap the GPU daemons read changes (the operator does not watch them)."""
    blob = json.dumps([sharing_config_data(cfg), mig_config_data(cfg) if mig_geometries_in_use(cfg) else {}],
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def configmap(name: str, namespace: str, data: dict[str, str], component: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": standard_labels(name, component)},
            "data": data}


def sharing_configmap(cfg: StackConfig) -> dict[str, Any] | None:
    data = sharing_config_data(cfg)
    return configmap(SHARING_CONFIGMAP, stack_namespace(cfg), data, "device-plugin-config") if data else None


def mig_configmap(cfg: StackConfig) -> dict[str, Any] | None:
    if not mig_geometries_in_use(cfg):
        return None
    return configmap(MIG_CONFIGMAP, stack_namespace(cfg), mig_config_data(cfg), "mig-config")


def operator_values(cfg: StackConfig) -> dict[str, Any]:
    """gpu-operator chart values. Every key exists in the pinned chart's values.yaml (a test checks it)."""
    op = cfg.operator
    values: dict[str, Any] = {}
    driver: dict[str, Any] = {"enabled": op.driver.enabled}
    if op.driver.enabled:
        driver["version"] = op.driver.version
    # A GPUCluster does not install the driver itself: it comes from the host or from an NVIDIADriver CR.
    if not op.driver.enabled or cfg.uses_dra():
        driver["nvidiaDriverCRD"] = {"enabled": op.driver.enabled}
    values["driver"] = driver
    toolkit: dict[str, Any] = {"enabled": op.toolkit.enabled}
    env = cfg.cluster.runtime.toolkit_env()
    if op.toolkit.enabled and env:
        toolkit["env"] = env
    values["toolkit"] = toolkit
    values["operator"] = {"runtimeClass": cfg.cluster.runtime.runtime_class}
    values["cdi"] = {"enabled": op.cdi}
    values["nfd"] = {"enabled": op.nfd}
    values["mig"] = {"strategy": cfg.device_plugin.mig_strategy}
    if sharing_config_data(cfg):
        values["devicePlugin"] = {"config": {"create": False, "name": SHARING_CONFIGMAP,
                                             "default": default_sharing_key(cfg)}}
    mig_manager: dict[str, Any] = {"enabled": mig_geometries_in_use(cfg)}
    if mig_geometries_in_use(cfg):
        mig_manager["config"] = {"create": False, "name": MIG_CONFIGMAP, "default": cfg.mig.default}
    values["migManager"] = mig_manager
    values["dcgmExporter"] = {"enabled": op.dcgm_exporter.enabled,
                              "serviceMonitor": {"enabled": op.dcgm_exporter.service_monitor}}
    if not op.validator.with_workload:
        values["validator"] = {"plugin": {"env": [{"name": "WITH_WORKLOAD", "value": "false"}]}}
    if sharing_config_data(cfg) or mig_geometries_in_use(cfg):
        values["daemonsets"] = {"annotations": {CONFIG_HASH_ANNOTATION: config_hash(cfg)}}
    operands = tol.with_pool_taints(tol.OPERATOR_DAEMONSETS, cfg)  # every operand DaemonSet of the operator
    if operands:
        values.setdefault("daemonsets", {})["tolerations"] = operands
    nfd_worker = tol.with_pool_taints(tol.OPERATOR_NFD_WORKER, cfg)
    if op.nfd and nfd_worker:
        values["node-feature-discovery"] = {"worker": {"tolerations": nfd_worker}}
    if cfg.uses_dra():
        # The DRA stack: a GPUCluster and no ClusterPolicy (the chart and the operator refuse both).
        values["clusterPolicy"] = {"deployCR": False}
        values["gpuCluster"] = {"deployCR": True}
        values["draDriver"] = dra_driver_settings(cfg, operator=True)
    return values


def dra_driver_settings(cfg: StackConfig, operator: bool) -> dict[str, Any]:
    """Feature gates, compute domains and image pin, as gpu-operator's `draDriver` or the driver chart's values."""
    d = cfg.dra_driver
    out: dict[str, Any] = {}
    if d.version is not None and operator:
        out["version"] = d.version
    elif d.version is not None:
        out["image"] = {"tag": d.version}
    if d.feature_gates:
        out["featureGates"] = dict(sorted(d.feature_gates.items()))
    if operator:
        out["computeDomains"] = {"enabled": d.compute_domains}
    return out


def dra_driver_values(cfg: StackConfig) -> dict[str, Any]:
    """dra-driver-nvidia-gpu chart values (standalone mode, gpuAllocation dra). The GPU part of the driver
    needs `gpuResourcesEnabledOverride`: the chart refuses it otherwise because the device plugin could run
    on the same nodes; gpufleet installs no device plugin in a DRA stack (docs/dra.md)."""
    plugin = tol.with_pool_taints(tol.DRA_KUBELET_PLUGIN, cfg)  # the kubelet plugin DaemonSet on GPU nodes
    return {"resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": cfg.dra_driver.compute_domains}},
            "gpuResourcesEnabledOverride": True, **dra_driver_settings(cfg, operator=False),
            **({"kubeletPlugin": {"tolerations": plugin}} if plugin else {})}


def device_plugin_values(cfg: StackConfig) -> dict[str, Any]:
    """nvidia-device-plugin chart values (standalone mode): the plugin, GFD and NFD in one release."""
    dp = cfg.device_plugin
    values: dict[str, Any] = {}
    if dp.mig_strategy != "none":
        values["migStrategy"] = dp.mig_strategy
    if sharing_config_data(cfg):
        values["config"] = {"name": SHARING_CONFIGMAP, "default": default_sharing_key(cfg)}
    values["gfd"] = {"enabled": dp.gfd}
    nfd_worker = tol.with_pool_taints(tol.DEVICE_PLUGIN_NFD_WORKER, cfg)
    if not dp.nfd:
        values["nfd"] = {"enabled": False}
    elif nfd_worker:
        values["nfd"] = {"worker": {"tolerations": nfd_worker}}
    if gpu_runtime_class(cfg) is not None:  # the plugin and GFD read NVML through the nvidia runtime
        values["runtimeClassName"] = gpu_runtime_class(cfg)
    daemons = tol.with_pool_taints(tol.DEVICE_PLUGIN, cfg)  # the plugin, GFD and MPS control daemon DaemonSets
    if daemons:
        values["tolerations"] = daemons
    if sharing_config_data(cfg) or mig_geometries_in_use(cfg):
        values["podAnnotations"] = {CONFIG_HASH_ANNOTATION: config_hash(cfg)}
    if runs_own_mig_manager(cfg):
        # mig-manager's pause protocol: it flips the deploy labels and waits for pods with this label.
        values["nodeSelector"] = mig_pause_node_selector(cfg)
        values["selectorLabelsOverride"] = {"app": DEVICE_PLUGIN_POD_APP}
    return values


def node_labels(cfg: StackConfig) -> dict[str, dict[str, str]]:
    """node name -> the labels gpufleet sets on it (sharing profile and MIG geometry selection, the GPU
    stack's deploy labels where gpufleet runs mig-manager, and nvidia.com/gpu.present for the standalone
    DRA driver's kubelet plugin)."""
    out: dict[str, dict[str, str]] = {}
    for pool in cfg.node_pools:
        labels: dict[str, str] = gpu_client_deploy_labels(cfg, pool)
        if cfg.mode == "standalone" and cfg.uses_dra():
            labels[GPU_PRESENT_LABEL] = "true"  # where the driver chart's kubelet plugin runs (no NFD here)
        if pool.sharing:
            labels[DEVICE_PLUGIN_CONFIG_LABEL] = pool.sharing
        if pool.mig_geometry:
            labels[MIG_CONFIG_LABEL] = pool.mig_geometry
        if labels:
            for node in pool.nodes:
                out[node] = labels
    return out
