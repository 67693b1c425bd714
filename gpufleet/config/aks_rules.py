"""Checks that the AKS cluster and the GPU stack agree: driver installer, MIG owner, MIG profile, taints.

Run by `validate_references` when `cluster.aks` is set; every issue names its YAML path, the bad value and
what is allowed.
"""

from __future__ import annotations

from gpufleet.azure.mig import aks_mig_profile
from gpufleet.azure.vm_sizes import VM_SIZES
from gpufleet.config._paths import yaml_path as _p
from gpufleet.config.aks import AGENT_POOL_LABEL, AksConfig, GpuPool
from gpufleet.config.node_pools import Taint
from gpufleet.config.stack import StackConfig
from gpufleet.config.workloads import Toleration
from gpufleet.errors import ConfigIssue
from gpufleet.taints import tolerates_any


def check_aks(cfg: StackConfig, aks: AksConfig) -> list[ConfigIssue]:
    """The rules of `cluster.aks` (`aks`, the config's own)."""
    issues: list[ConfigIssue] = []
    for key, value in (("kubeconfig", cfg.cluster.kubeconfig), ("context", cfg.cluster.context)):
        if value is not None:
            issues.append(ConfigIssue(_p("cluster", key), f"'{value}' cannot be used with cluster.aks: the stack "
                                      "deploys onto the AKS cluster it creates, with that cluster's kubeconfig; "
                                      f"remove cluster.{key}, or cluster.aks to use an existing cluster"))
    aks_names = {g.name for g in aks.gpu_pools}
    for i, pool in enumerate(cfg.node_pools):
        if pool.name in aks_names and cfg.aks_pool(pool) is None:
            issues.append(ConfigIssue(_p("nodePools", i, "name"), f"'{pool.name}' is also an AKS GPU pool "
                                      "(cluster.aks.gpuPools), which is already a node pool; remove this entry"))
    for j, gpu_pool in enumerate(aks.gpu_pools):
        issues += _check_driver(cfg, j, gpu_pool)
        issues += _check_mig(cfg, j, gpu_pool)
    issues += _check_workload_taints(cfg, aks)
    return issues


def _operator_installs_driver(cfg: StackConfig) -> bool:
    return cfg.mode == "operator" and cfg.operator.driver.enabled


def _check_driver(cfg: StackConfig, j: int, pool: GpuPool) -> list[ConfigIssue]:
    """Exactly one driver installer per pool: the AKS node image or the GPU operator's DaemonSet."""
    path = _p("cluster", "aks", "gpuPools", j, "driver")
    if pool.driver == "aks" and _operator_installs_driver(cfg):
        return [ConfigIssue(path, f"'aks' while operator.driver.enabled is true: both AKS and the GPU operator "
                            f"would install the NVIDIA driver on pool '{pool.name}'; choose one: driver: operator "
                            "(the pool is created with gpuProfile.driver None), or operator.driver.enabled: false")]
    if pool.driver == "operator" and not _operator_installs_driver(cfg):
        why = ("operator.driver.enabled is false" if cfg.mode == "operator"
               else f"mode is '{cfg.mode}' (no GPU operator)")
        return [ConfigIssue(path, f"'operator' while {why}: nothing would install the NVIDIA driver on pool "
                            f"'{pool.name}'; allowed: driver: aks, or mode operator with "
                            "operator.driver.enabled: true")]
    return []


def _check_mig(cfg: StackConfig, j: int, pool: GpuPool) -> list[ConfigIssue]:
    """One MIG owner (AKS's gpuInstanceProfile or the operator's mig-manager), and a profile the GPU has."""
    if pool.gpu_instance_profile is None:
        return []
    path = _p("cluster", "aks", "gpuPools", j, "gpuInstanceProfile")
    profile = pool.gpu_instance_profile
    issues = []
    if pool.mig_geometry is not None:
        issues.append(ConfigIssue(path, f"'{profile}' and migGeometry '{pool.mig_geometry}' both partition pool "
                                  f"'{pool.name}' (AKS at node creation vs the operator's mig-manager) and are "
                                  "mutually exclusive; choose a single approach: remove gpuInstanceProfile or "
                                  "migGeometry"))
    gpu = pool.vm.gpu
    if aks_mig_profile(gpu, profile) is None:
        mig_sizes = [v.name for v in VM_SIZES.values() if v.gpu.mig_capable]
        issues.append(ConfigIssue(path, f"'{profile}' on {pool.vm_size}, whose {gpu.key} GPUs are not MIG-capable; "
                                  "allowed: no gpuInstanceProfile, or a VM size with MIG GPUs: "
                                  f"{', '.join(mig_sizes)}"))
    elif cfg.device_plugin.mig_strategy == "none":
        issues.append(ConfigIssue(path, f"'{profile}' splits the GPUs of pool '{pool.name}' but "
                                  "devicePlugin.migStrategy is 'none', so no MIG device is advertised; allowed: "
                                  "migStrategy single or mixed"))
    return issues


def _tolerates(taint: Taint, tolerations: list[Toleration]) -> bool:
    return tolerates_any((t.model_dump() for t in tolerations), taint.key, taint.value, taint.effect)


def _untolerated(cfg: StackConfig, pool: GpuPool, tolerations: list[Toleration]) -> list[str]:
    """The pool's scheduling taints a GPU pod with `tolerations` does not tolerate, as `key=value:Effect`."""
    auto = cfg.cluster.extended_resource_toleration  # GPU pods tolerate nvidia.com/gpu taints
    return [raw for raw, taint in zip(pool.taints, pool.taint_objects(), strict=True)
            if taint.effect != "PreferNoSchedule" and not (auto and taint.key == "nvidia.com/gpu")
            and not _tolerates(taint, tolerations)]


def _check_workload_taints(cfg: StackConfig, aks: AksConfig) -> list[ConfigIssue]:
    """GPU workloads placed without `nodePool` (which adds the pool's tolerations) must still fit a pool."""
    issues = []
    for i, w in enumerate(cfg.workloads):
        if w.gpu is None or w.gpu.visible_devices is not None or w.node_pool is not None or not aks.gpu_pools:
            continue
        target = w.node_selector.get(AGENT_POOL_LABEL)
        if target is not None:
            found = aks.gpu_pool(target)
            missing = _untolerated(cfg, found[1], w.tolerations) if found else []
            if missing:
                issues.append(ConfigIssue(_p("workloads", i, "tolerations"),
                                          f"do not tolerate {', '.join(missing)} of AKS pool '{target}' that "
                                          f"nodeSelector {AGENT_POOL_LABEL}={target} aims at, so the pod never "
                                          f"schedules; allowed: nodePool: {target} (adds the tolerations), or "
                                          "tolerations for these taints"))
        elif not w.node_selector and all(_untolerated(cfg, g, w.tolerations) for g in aks.gpu_pools):
            names = ", ".join(g.name for g in aks.gpu_pools)
            issues.append(ConfigIssue(_p("workloads", i, "nodePool"),
                                      "not set, and every AKS GPU pool has a taint this GPU workload does not "
                                      f"tolerate, so the pod never schedules; allowed: {names}"))
    return issues
