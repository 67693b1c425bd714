"""Checks of the device plugin's GPU sharing against what the GPUs and the sharing modes do: MPS on GPUs
older than Volta (error), MPS shares smaller than a CUDA context, and time-slicing where a workload would
get two slices of one GPU or share a GPU's memory unchecked (warnings: they depend on the workload). Each
names the YAML path, the bad value, what happens on the cluster and the fix."""

from __future__ import annotations

import math
from typing import NamedTuple

from gpufleet.config._paths import yaml_path as _p
from gpufleet.config.device_plugin import SharingProfile
from gpufleet.config.node_pools import NodePool
from gpufleet.config.stack import StackConfig
from gpufleet.config.workloads import BatchJob, GpuRequest, InferenceService, Workload
from gpufleet.errors import ConfigIssue
from gpufleet.nvidia.model_memory.flags import flag_value
from gpufleet.nvidia.model_memory.vllm import DEFAULT_UTILIZATION
from gpufleet.nvidia.products import GpuProduct, find_product
from gpufleet.nvidia.sharing import CUDA_CONTEXT_FLOOR_MIB, MPS_WORKLOAD_ROOM_MIB, mps_share_mib


def check_sharing_facts(cfg: StackConfig) -> list[ConfigIssue]:
    if cfg.uses_dra():
        return []
    issues = []
    for i, pool, product, name, profile in _shared_pools(cfg):
        if profile.strategy == "mps" and not product.mps_supported:
            cc = ".".join(map(str, product.compute_capability))
            issues.append(ConfigIssue(_sharing_path(cfg, i), (
                f"MPS profile '{name}' on node pool '{pool.name}' ({product.key}, {product.architecture.name}, "
                f"compute capability {cc}): the device plugin's MPS pins each client to 1/{profile.replicas} of "
                "the GPU's memory and threads with Volta MPS controls; MPS before Volta has no per-client limits "
                "and no separate address spaces (CUDA MPS docs), so the shares the plugin advertises are not "
                "enforced there and one client's fault or allocation reaches the others; fix: a timeSlicing "
                "profile for this pool, or MPS on Volta or newer GPUs")))
    return issues


def sharing_warnings(cfg: StackConfig) -> list[ConfigIssue]:
    if cfg.uses_dra():
        return []
    return [*_small_mps_shares(cfg), *_undeclared_mps_clients(cfg), *_two_slices(cfg),
            *_unisolated_memory(cfg)]


def _shared_pools(cfg: StackConfig):
    """(index, pool, product, profile name, profile) of each pool whose GPUs the device plugin shares."""
    for i, pool in enumerate(cfg.node_pools):
        product = find_product(pool.gpu.product)
        profile = cfg.sharing_of_pool(pool)
        if product is not None and profile is not None:
            yield i, pool, product, pool.sharing or cfg.device_plugin.default_sharing, profile


def _sharing_path(cfg: StackConfig, i: int) -> str:
    pool = cfg.node_pools[i]
    if pool.sharing is None:
        return _p("devicePlugin", "defaultSharing")
    aks = cfg.aks_pool(pool)
    return _p("cluster", "aks", "gpuPools", aks[0], "sharing") if aks else _p("nodePools", i, "sharing")


def _small_mps_shares(cfg: StackConfig) -> list[ConfigIssue]:
    issues, seen = [], set()
    for _, pool, product, name, profile in _shared_pools(cfg):
        share = mps_share_mib(product.memory_mib, profile.replicas)
        if profile.strategy != "mps" or share >= CUDA_CONTEXT_FLOOR_MIB or (name, product.key) in seen:
            continue
        seen.add((name, product.key))
        most = product.memory_mib // CUDA_CONTEXT_FLOOR_MIB
        issues.append(ConfigIssue(_p("devicePlugin", "sharingProfiles", name, "replicas"), (
            f"{profile.replicas} MPS replicas pin each client on {product.key} (node pool '{pool.name}') to {share} "
            f"MiB ({product.memory_mib} MiB / {profile.replicas}); a CUDA context with its libraries takes roughly "
            f"{CUDA_CONTEXT_FLOOR_MIB} MiB (unconfirmed; it depends on the CUDA version and libraries), so clients "
            "may fail at start with CUDA out of memory before doing any work; verify a client's footprint on the "
            f"node (nvidia-smi while it runs), or use at most {most} replicas ({CUDA_CONTEXT_FLOOR_MIB} MiB or "
            "more each)")))
    return issues


def _undeclared_mps_clients(cfg: StackConfig) -> list[ConfigIssue]:
    """A workload on an MPS pool that declares no GPU memory, where the pinned share leaves less than
    MPS_WORKLOAD_ROOM_MIB beside a CUDA context (shares below the context itself: _small_mps_shares)."""
    issues = []
    for i, w in enumerate(cfg.workloads):
        gpu = w.gpu
        pool = cfg.pool(w.node_pool)
        if gpu is None or gpu.uses_dra() or not gpu.shared or pool is None:
            continue
        profile, product = cfg.sharing_of_pool(pool), find_product(pool.gpu.product)
        if profile is None or product is None or profile.strategy != "mps":
            continue
        share = mps_share_mib(product.memory_mib, profile.replicas)
        left = share - CUDA_CONTEXT_FLOOR_MIB
        if gpu.memory_mib is not None or w.model is not None or left < 0 or left >= MPS_WORKLOAD_ROOM_MIB:
            continue
        most = product.memory_mib // (CUDA_CONTEXT_FLOOR_MIB + MPS_WORKLOAD_ROOM_MIB)
        issues.append(ConfigIssue(_p("workloads", i, "gpu"), (
            f"node pool '{pool.name}' pins each MPS client to {share} MiB ({product.key}: "
            f"{product.memory_mib} MiB / "
            f"{profile.replicas} replicas); a CUDA context takes roughly {CUDA_CONTEXT_FLOOR_MIB} MiB of it, "
            "leaving "
            f"about {left} MiB for this workload, which declares no GPU memory (gpu.memoryMiB or model:), so "
            "gpufleet cannot check that it fits; past its share a client fails with CUDA out of memory while "
            "the "
            "GPU has memory free; fix: declare gpu.memoryMiB (checked against the share), or use at most "
            f"{most} "
            f"replicas ({CUDA_CONTEXT_FLOOR_MIB + MPS_WORKLOAD_ROOM_MIB} MiB or more each)")))
    return issues


class _TimeSliced(NamedTuple):
    pool: NodePool
    product: GpuProduct
    profile: SharingProfile
    gpu: GpuRequest


def _time_sliced(cfg: StackConfig, w) -> _TimeSliced | None:
    """(pool, product, profile, the workload's GPU request) where workload `w` takes time-slices of a GPU;
    None otherwise."""
    gpu = w.gpu
    if gpu is None or gpu.uses_dra() or not gpu.shared or gpu.visible_devices is not None:
        return None
    pool = cfg.pool(w.node_pool)
    profile = cfg.sharing_of_pool(pool) if pool is not None else None
    product = find_product(pool.gpu.product) if pool is not None else None
    if pool is None or profile is None or product is None or profile.strategy != "timeSlicing":
        return None
    return _TimeSliced(pool, product, profile, gpu)


def _two_slices(cfg: StackConfig) -> list[ConfigIssue]:
    issues = []
    for i, w in enumerate(cfg.workloads):
        found = _time_sliced(cfg, w)
        if found is None or found.gpu.count < 2 or found.profile.effective_fail_requests_greater_than_one():
            continue
        pool, gpu = found.pool, found.gpu
        units = cfg.mig_profiles_of_pool(pool).get(gpu.profile, 0) if gpu.profile else pool.gpu.count
        how = "are" if units == 1 else "may be"
        issues.append(ConfigIssue(_p("workloads", i, "gpu", "count"), (
            f"{gpu.count} time-sliced GPUs per pod on node pool '{pool.name}': the device plugin hands out "
            f"replicas without regard to which GPU they belong to, so they {how} slices of one GPU and the container "
            "sees fewer GPUs than it asked for (a multi-GPU or tensor-parallel program fails or runs on one); "
            "fix: count 1 per pod, or whole GPUs from a pool without sharing for multi-GPU work")))
    return issues


def _pods(w) -> int:
    """Pods of a workload running at once."""
    if isinstance(w, InferenceService):
        return w.replicas
    return w.parallelism if isinstance(w, BatchJob) else 1


def _unisolated_memory(cfg: StackConfig) -> list[ConfigIssue]:
    """Time-slicing gives no memory isolation; reported only where more slices are taken than the pool has
    devices (so two pods certainly share one; an autoscaled pool counted at its max) and a workload's memory
    use is unchecked or a vLLM server's reservation cannot fit beside another."""
    groups: dict[tuple[str, str | None], list[tuple[int, Workload, GpuRequest]]] = {}
    pools: dict[str, NodePool] = {}
    for i, w in enumerate(cfg.workloads):
        found = _time_sliced(cfg, w)
        if found is not None:
            pools[found.pool.name] = found.pool
            groups.setdefault((found.pool.name, found.gpu.profile), []).append((i, w, found.gpu))
    issues = []
    for (pool_name, mig), users in groups.items():
        pool = pools[pool_name]
        devices = (cfg.mig_profiles_of_pool(pool).get(mig, 0) if mig else pool.gpu.count) * pool.most_nodes()
        slices = sum(_pods(w) * gpu.count for _, w, gpu in users)
        if devices == 0 or slices <= devices:
            continue
        per_device = math.ceil(slices / devices)
        what = f"MIG {mig} instance" if mig else "GPU"
        for i, w, _ in users:
            issues += _memory_issue(i, w, pool_name, what, devices, slices, per_device)
    return issues


def _memory_issue(i, w, pool_name, what, devices, slices, per_device) -> list[ConfigIssue]:
    shared = (f"node pool '{pool_name}' time-slices {devices} {what}(s) among {slices} pod slices, so at least "
              f"{per_device} pods share one {what} and its memory, with no isolation")
    if "vllm" in w.image.lower():
        argv = [*(w.command or []), *(w.args or [])]
        raw = flag_value(argv, "--gpu-memory-utilization")
        declared = w.model.gpu_memory_utilization if w.model is not None else None
        try:
            util = float(raw) if raw is not None else (declared or DEFAULT_UTILIZATION)
        except ValueError:
            return []
        fit = math.floor(90 / per_device) / 100  # room for the others' CUDA contexts beside the shares
        if util <= fit:
            return []
        return [ConfigIssue(_p("workloads", i, "args" if w.args else "gpu"), (
            f"vLLM reserves --gpu-memory-utilization {util} of the whole {what}'s memory at start, whatever its "
            f"model needs; {shared}: the later vLLM pods fail at start (free memory on the device is less than "
            f"the desired utilization); fix: --gpu-memory-utilization {fit} or less in args, an MPS profile "
            "(each client pinned to its share), or whole GPUs"))]
    if w.gpu.memory_mib is not None or w.model is not None:
        return []  # declared: the capacity check adds up what the pods sharing a device expect
    return [ConfigIssue(_p("workloads", i, "gpu"), (
        f"{shared}, and this workload declares no GPU memory (gpu.memoryMiB or model:), so gpufleet cannot check "
        "that the pods sharing a device fit in it together: one pod can take all of it and the others fail with "
        "CUDA out of memory; fix: declare gpu.memoryMiB (checked against the shared device), or use an MPS "
        "profile (each client pinned to 1/replicas of the memory)"))]
