"""Checks of a gpuAllocation dra stack against what NVIDIA's DRA driver needs from the cluster and the
GPUs: CDI in the container runtime, MIG-capable GPUs for DynamicMIG and MIG claims, Volta or newer GPUs for
MPS sharing, and MPS memory limits a CUDA context fits in. Each names the YAML path, the bad value, what
happens on the cluster and the fix."""

from __future__ import annotations

import re

from gpufleet.config._paths import yaml_path as _p
from gpufleet.config.dra import DeviceChoice, GpuClaim
from gpufleet.config.stack import StackConfig
from gpufleet.errors import ConfigIssue
from gpufleet.nvidia import dra_prerequisites as req
from gpufleet.nvidia.mig_profiles import TABLES
from gpufleet.nvidia.products import PRODUCTS, GpuProduct, find_product
from gpufleet.nvidia.sharing import CUDA_CONTEXT_FLOOR_MIB

#: MIG-capable GPUs by model (A100, A30, H100, ...), for the fixes.
_MIG_PRODUCTS = ", ".join(dict.fromkeys(p.key.removeprefix("NVIDIA-").split("-")[0]
                                        for p in PRODUCTS.values() if p.mig_capable))


def check_dra_prerequisites(cfg: StackConfig) -> list[ConfigIssue]:
    if not cfg.uses_dra():
        return []
    issues = []
    if req.NEEDS_CDI and not cfg.operator.cdi:
        issues.append(ConfigIssue(_p("operator", "cdi"), (
            "false under gpuAllocation dra: NVIDIA's DRA driver hands claimed devices to containers only through "
            "CDI, so with CDI off in the container runtime every pod with a GPU claim fails at container creation "
            "(unresolvable CDI devices) and sees no GPU; fix: operator.cdi: true, with CDI enabled in containerd "
            "(enable_cdi, on by default from containerd 2.0)")))
    issues += _dynamic_mig(cfg)
    for i, w in enumerate(cfg.workloads):
        if w.gpu is not None and w.gpu.claim is not None:
            pool = cfg.pool(w.node_pool)
            where = f"node pool '{pool.name}'" if pool is not None else "any node pool"
            products = _products(cfg, [pool] if pool else [])
            issues += _mig_claim(("workloads", i, "gpu", "claim"), w.gpu.claim, products, where)
    for i, claim in enumerate(cfg.claims):
        pools = _claim_pools(cfg, claim)
        where = ", ".join(f"node pool '{p.name}'" for p in pools) if pools else "any node pool"
        products = _products(cfg, pools)
        issues += _mig_claim(("claims", i), claim, products, where)
        if claim.sharing is not None and claim.sharing.strategy == "MPS" and products \
                and not any(p.mps_supported for p in products):
            issues.append(ConfigIssue(_p("claims", i, "sharing", "strategy"), (
                f"'MPS' on {where} ({_listed(products)}), older than Volta: the DRA driver's MPS sets per-client "
                "thread and memory limits, which MPS before Volta does not have (CUDA MPS docs), and its clients "
                "share one address space; the sharing the claim asks for is not enforced there; fix: strategy "
                "TimeSlicing, or a pool of Volta or newer GPUs")))
    return issues


def dra_prerequisite_warnings(cfg: StackConfig) -> list[ConfigIssue]:
    if not cfg.uses_dra():
        return []
    issues = []
    for i, claim in enumerate(cfg.claims):
        limit = claim.sharing.default_pinned_device_memory_limit if claim.sharing is not None else None
        mib = _quantity_mib(limit) if limit else None
        if mib is not None and mib < CUDA_CONTEXT_FLOOR_MIB:
            issues.append(ConfigIssue(_p("claims", i, "sharing", "defaultPinnedDeviceMemoryLimit"), (
                f"'{limit}' ({mib:g} MiB) per MPS client: a CUDA context with its libraries takes roughly "
                f"{CUDA_CONTEXT_FLOOR_MIB} MiB (unconfirmed; it depends on the CUDA version and libraries), so the "
                "pods sharing the claim may fail at start with CUDA out of memory; verify a client's footprint on "
                f"the node, or set at least {CUDA_CONTEXT_FLOOR_MIB}Mi")))
    return issues


def _products(cfg: StackConfig, pools) -> list[GpuProduct]:
    """The known products of these pools, or of every pool where none is given."""
    found = [find_product(p.gpu.product) for p in (pools or cfg.node_pools)]
    return list(dict.fromkeys(p for p in found if p is not None))


def _claim_pools(cfg: StackConfig, claim) -> list:
    """The pools of the workloads sharing a named claim (those that name one)."""
    names = [w.node_pool for w in cfg.workloads
             if w.gpu is not None and w.gpu.shared_claim == claim.name and w.namespace == claim.namespace]
    return [p for p in (cfg.pool(n) for n in dict.fromkeys(names)) if p is not None]


def _listed(products: list[GpuProduct]) -> str:
    return ", ".join(f"{p.key}: {p.architecture.name}" for p in products)


def _dynamic_mig(cfg: StackConfig) -> list[ConfigIssue]:
    products = _products(cfg, [])
    if not cfg.dra_driver.gates()[req.DYNAMIC_MIG_GATE] or not products or any(p.mig_capable for p in products):
        return []
    return [ConfigIssue(_p("draDriver", "featureGates", req.DYNAMIC_MIG_GATE), (
        f"true, but no node pool has MIG-capable GPUs ({_listed(products)}): DynamicMIG creates MIG devices for "
        "claims, there is nothing it can partition, and claims for mig.nvidia.com devices stay Pending; fix: "
        f"false, or a pool of MIG-capable GPUs ({_MIG_PRODUCTS})"))]


def _why_not(choice: DeviceChoice, product: GpuProduct) -> str | None:
    """Why no device of `product` can serve this choice; None when one can (or it is not a MIG choice)."""
    if choice.device_class != req.MIG_DEVICE_CLASS and choice.profile is None:
        return None
    if product.mig_table is None:  # not MIG-capable
        return f"{product.key} has no MIG"
    profiles = TABLES[product.mig_table].profiles
    if choice.profile is not None and choice.profile not in profiles:
        return f"{product.key} has no MIG profile {choice.profile} (its profiles: {', '.join(profiles)})"
    return None


def _mig_claim(path: tuple, claim: GpuClaim, products: list[GpuProduct], where: str) -> list[ConfigIssue]:
    choices = claim.first_available or [claim]
    if not products:
        return []
    reasons: list[str] = []
    for choice in choices:
        why = [_why_not(choice, p) for p in products]
        if any(w is None for w in why):
            return []  # some alternative can be served somewhere
        reasons += [w for w in why if w is not None and w not in reasons]
    field = "firstAvailable" if claim.first_available else ("profile" if claim.profile else "deviceClass")
    asked = "every alternative asks" if claim.first_available else "asks"
    return [ConfigIssue(_p(*path, field), (
        f"{asked} for a MIG device on {where}, where none can exist: {'; '.join(reasons)}; no ResourceSlice offers "
        "such a device, so the claim is never allocated and its pods stay Pending; fix: deviceClass gpu.nvidia.com "
        f"(whole GPUs), a profile of the pool's GPUs, or a pool of MIG-capable GPUs ({_MIG_PRODUCTS})"))]


_UNITS = {"": 1 / 2**20, "k": 1e3 / 2**20, "M": 1e6 / 2**20, "G": 1e9 / 2**20, "T": 1e12 / 2**20,
          "P": 1e15 / 2**20, "E": 1e18 / 2**20, "Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024**2, "Pi": 1024**3,
          "Ei": 1024**4}


def _quantity_mib(text: str) -> float | None:
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?", text)
    return float(m.group(1)) * _UNITS[m.group(2) or ""] if m else None
