"""Checks of the DRA parts of a StackConfig: the Kubernetes version, the driver's feature gates and
namespace, every GPU claim's shape, named shared claims and their sharing, and what the device plugin's
settings mean once GPUs are claimed instead. Every issue names its YAML path, the bad value and what is
allowed."""

from __future__ import annotations

import re

from gpufleet.config._paths import yaml_path as _p
from gpufleet.config.dra import DeviceChoice, GpuClaim, NamedClaim
from gpufleet.config.stack import StackConfig
from gpufleet.errors import ConfigIssue
from gpufleet.nvidia import dra

MIN_KUBERNETES = (1, 34)


def _version(text: str) -> tuple[int, int] | None:
    m = re.match(r"^v?(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_dra(cfg: StackConfig) -> list[ConfigIssue]:
    if not cfg.uses_dra():
        return _claims_without_dra(cfg)
    issues: list[ConfigIssue] = []
    version = _version(cfg.cluster.kubernetes_version)
    if version is None or version < MIN_KUBERNETES:
        issues.append(ConfigIssue(_p("cluster", "kubernetesVersion"),
                                  f"'{cfg.cluster.kubernetes_version}' does not serve resource.k8s.io/v1, which "
                                  "gpuAllocation dra needs; allowed: 1.34 or later"))
    for problem in dra.gate_problems(dict(cfg.dra_driver.feature_gates)):
        issues.append(ConfigIssue(_p("draDriver", "featureGates"), f"{problem} (the driver refuses to start)"))
    if cfg.mode == "standalone" and cfg.dra_driver.namespace == "default":
        issues.append(ConfigIssue(_p("draDriver", "namespace"), "'default': the dra-driver-nvidia-gpu chart refuses "
                                  "the default namespace; allowed: another namespace"))
    issues += _device_plugin_settings(cfg)
    seen: set[tuple[str, str]] = set()
    for i, claim in enumerate(cfg.claims):
        if (claim.namespace, claim.name) in seen:
            issues.append(ConfigIssue(_p("claims", i, "name"),
                                      f"'{claim.name}' is used twice in namespace '{claim.namespace}'"))
        seen.add((claim.namespace, claim.name))
        issues += _check_claim(("claims", i), claim)
        issues += _check_sharing(cfg, i, claim)
    for i, w in enumerate(cfg.workloads):
        issues += _check_workload_gpu(cfg, i, w)
    issues += _shared_claim_pools(cfg)
    return issues


def _shared_claim_pools(cfg: StackConfig) -> list[ConfigIssue]:
    """A named claim is allocated once, on one node: the workloads sharing it must be able to meet there."""
    issues = []
    first: dict[tuple[str, str], tuple[int, str | None]] = {}
    for i, w in enumerate(cfg.workloads):
        if w.gpu is None or w.gpu.shared_claim is None:
            continue
        key = (w.namespace, w.gpu.shared_claim)
        if key not in first:
            first[key] = (i, w.node_pool)
            continue
        j, pool = first[key]
        if pool is not None and w.node_pool is not None and pool != w.node_pool:
            issues.append(ConfigIssue(_p("workloads", i, "nodePool"),
                                      f"'{w.node_pool}', but workloads[{j}] shares claim '{w.gpu.shared_claim}' from "
                                      f"node pool '{pool}': a shared claim's device is on one node; "
                                      f"allowed: nodePool '{pool}'"))
    return issues


def _claims_without_dra(cfg: StackConfig) -> list[ConfigIssue]:
    issues = []
    if cfg.claims:
        issues.append(ConfigIssue(_p("claims"), f"{len(cfg.claims)} named claim(s), but gpuAllocation is "
                                  f"'{cfg.gpu_allocation}'; allowed: set gpuAllocation: dra, or remove claims"))
    for i, w in enumerate(cfg.workloads):
        if w.gpu is not None and w.gpu.uses_dra():
            field = "claim" if w.gpu.claim is not None else "sharedClaim"
            issues.append(ConfigIssue(_p("workloads", i, "gpu", field),
                                      f"a GPU claim needs gpuAllocation dra (gpuAllocation is '{cfg.gpu_allocation}'); "
                                      "allowed: gpu.count/shared/profile, or gpuAllocation: dra"))
    return issues


def _device_plugin_settings(cfg: StackConfig) -> list[ConfigIssue]:
    """Sharing profiles and MIG geometries configure the device plugin and mig-manager, which do not run
    with gpuAllocation dra."""
    issues = []
    if cfg.device_plugin.default_sharing is not None:
        issues.append(ConfigIssue(_p("devicePlugin", "defaultSharing"),
                                  f"'{cfg.device_plugin.default_sharing}' configures the device plugin, which does not "
                                  "run with gpuAllocation dra; allowed: unset (share a GPU through a named claim's "
                                  "sharing)"))
    for i, pool in enumerate(cfg.node_pools):
        if pool.sharing is not None:
            issues.append(ConfigIssue(_p("nodePools", i, "sharing"),
                                      f"'{pool.sharing}' configures the device plugin, which does not run with "
                                      "gpuAllocation dra; allowed: unset (share a GPU through a named claim's "
                                      "sharing)"))
        if pool.mig_geometry is not None:
            issues.append(ConfigIssue(_p("nodePools", i, "migGeometry"),
                                      f"'{pool.mig_geometry}': with gpuAllocation dra gpufleet does not partition GPUs "
                                      "(no mig-manager runs); allowed: unset (docs/dra.md)"))
    return issues


def _choice_issues(path: tuple, choice: DeviceChoice) -> list[ConfigIssue]:
    issues = []
    if choice.allocation_mode == "All" and choice.count is not None:
        issues.append(ConfigIssue(_p(*path, "count"), f"{choice.count} with allocationMode All; allowed: no count "
                                  "(All takes every matching device), or allocationMode ExactCount"))
    if choice.profile is not None and choice.device_class != "mig.nvidia.com":
        issues.append(ConfigIssue(_p(*path, "profile"), f"'{choice.profile}' is a MIG profile, but deviceClass is "
                                  f"'{choice.device_class}'; allowed: deviceClass mig.nvidia.com"))
    return issues


def _check_claim(path: tuple, claim: GpuClaim) -> list[ConfigIssue]:
    if not claim.first_available:
        return _choice_issues(path, claim)
    issues = []
    own = {"count", "allocation_mode", "product", "min_memory", "profile", "selectors", "device_class"}
    for field in sorted(own & claim.model_fields_set):
        alias = GpuClaim.model_fields[field].alias or field
        issues.append(ConfigIssue(_p(*path, alias), "set together with firstAvailable; allowed: put it in each "
                                  "firstAvailable alternative (a request is exactly one device choice or a list)"))
    for j, alt in enumerate(claim.first_available):
        issues += _choice_issues((*path, "firstAvailable", j), alt)
    return issues


def _classes(claim: GpuClaim) -> set[str]:
    return {a.device_class for a in claim.first_available} or {claim.device_class}


def _check_sharing(cfg: StackConfig, i: int, claim: NamedClaim) -> list[ConfigIssue]:
    if claim.sharing is None:
        return []
    path = ("claims", i, "sharing", "strategy")
    strategy = claim.sharing.strategy
    issues = []
    gate = dra.SHARING_GATE[strategy]
    if not cfg.dra_driver.gates()[gate]:
        issues.append(ConfigIssue(_p(*path), f"'{strategy}' needs the driver feature gate {gate}, which is off (the "
                                  "kubelet plugin refuses the claim at Prepare); allowed: "
                                  f"draDriver.featureGates.{gate}: true"))
    classes = _classes(claim)
    unknown = sorted(classes - set(dra.OPAQUE_CONFIG_KIND))
    if unknown:
        issues.append(ConfigIssue(_p(*path), f"sharing is NVIDIA driver config, but the claim's deviceClass is "
                                  f"{', '.join(unknown)}; allowed: gpu.nvidia.com or mig.nvidia.com"))
    if strategy == "TimeSlicing" and "mig.nvidia.com" in classes:
        issues.append(ConfigIssue(_p(*path), "'TimeSlicing' has no effect on MIG devices; allowed: MPS"))
    if len({dra.OPAQUE_CONFIG_KIND.get(c) for c in classes}) > 1:
        issues.append(ConfigIssue(_p(*path), f"one sharing config for devices of classes {sorted(classes)}; allowed: "
                                  "alternatives of one class (gpu.nvidia.com or mig.nvidia.com)"))
    return issues


def _check_workload_gpu(cfg: StackConfig, i: int, w) -> list[ConfigIssue]:
    gpu = w.gpu
    path = ("workloads", i, "gpu")
    if gpu is None or gpu.visible_devices is not None:
        return []
    if not gpu.uses_dra():
        return [ConfigIssue(_p(*path), "with gpuAllocation dra a workload claims its GPUs; allowed: gpu.claim "
                            "(devices per pod) or gpu.sharedClaim (a named claim)")]
    issues = []
    for field, alias in (("count", "count"), ("shared", "shared"), ("profile", "profile")):
        if field in gpu.model_fields_set:
            issues.append(ConfigIssue(_p(*path, alias), "set together with a claim; allowed: only gpu.claim or "
                                      "gpu.sharedClaim (say it in the claim: count, deviceClass, profile)"))
    if gpu.claim is not None and gpu.shared_claim is not None:
        issues.append(ConfigIssue(_p(*path, "sharedClaim"),
                                  f"'{gpu.shared_claim}' together with gpu.claim; allowed: one of them"))
    if gpu.claim is not None:
        issues += _check_claim((*path, "claim"), gpu.claim)
    if gpu.shared_claim is not None and cfg.claim(gpu.shared_claim, w.namespace) is None:
        names = sorted(c.name for c in cfg.claims if c.namespace == w.namespace)
        issues.append(ConfigIssue(_p(*path, "sharedClaim"), f"'{gpu.shared_claim}' is not a claim in namespace "
                                  f"'{w.namespace}'; allowed: {', '.join(names) or '(none defined)'}"))
    return issues
