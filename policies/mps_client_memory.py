"""mps-client-memory: a GPU container on an MPS share that leaves little beside a CUDA context, and declares
no GPU memory, may fail (advisory) with CUDA out of memory while the GPU has memory free. Decided in
gpufleet.validation.mps_clients (`gpufleet check` reads the shares from GFD's labels); the shares here are the
stack's: each MPS pool's GPU memory / replicas, for the resource names only MPS pools advertise.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from gpufleet.nvidia.products import find_product
from gpufleet.nvidia.sharing import GPU, SHARED_SUFFIX, mps_share_mib
from gpufleet.validation.mps_clients import mps_client_messages
from gpufleet.validation.workload_policies import MPS_CLIENT_MEMORY
from policies._common import (
    STACK_CONFIG_PROPERTIES,
    describe,
    pod_spec,
    pod_template_metadata,
    stack_config_for,
)


def stack_mps_shares(cfg) -> dict[str, tuple[int, str]]:
    """resource -> (smallest share, how) where every pool advertising that resource runs MPS."""
    if cfg is None or cfg.uses_dra():
        return {}
    advertised: dict[str, list[tuple[int, str] | None]] = {}
    for pool in cfg.node_pools:
        profile, product = cfg.sharing_of_pool(pool), find_product(pool.gpu.product)
        name = GPU + SHARED_SUFFIX if profile is not None and profile.rename_by_default else GPU
        share: tuple[int, str] | None = None
        if profile is not None and profile.strategy == "mps" and product is not None:
            how = f"{product.memory_mib} MiB / {profile.replicas} replicas in node pool '{pool.name}'"
            share = (mps_share_mib(product.memory_mib, profile.replicas), how)
        advertised.setdefault(name, []).append(share)
    smallest: dict[str, tuple[int, str]] = {}
    for name, shares in advertised.items():
        known = [s for s in shares if s is not None]
        if shares and len(known) == len(shares):  # every pool advertising the resource runs MPS
            smallest[name] = min(known)
    return smallest


def validate(args: ResourceValidationArgs, report_violation) -> None:
    spec = pod_spec(args.resource_type, args.props)
    if spec is None:
        return
    shares = stack_mps_shares(stack_config_for(args))
    what = describe(args.resource_type, args.props, args.name)
    annotations = pod_template_metadata(args.resource_type, args.props).get("annotations")
    for message in mps_client_messages(what, spec, annotations, shares):
        report_violation(message)


POLICY = ResourceValidationPolicy(
    name=MPS_CLIENT_MEMORY.name,
    description="A GPU container on a small MPS share declares the GPU memory it needs.",
    enforcement_level=EnforcementLevel(MPS_CLIENT_MEMORY.level),
    config_schema=PolicyConfigSchema(properties={**STACK_CONFIG_PROPERTIES}),
    validate=validate,
)
