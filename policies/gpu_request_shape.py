"""gpu-request-shape: GPU requests the API server accepts and the device plugin can serve.

The rule is decided in gpufleet.validation.gpu_requests; this module reads the planned device plugin
setup (MIG strategy, renameByDefault, MIG profiles) from the policy config or the stack.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy

from gpufleet.validation.gpu_requests import DevicePluginFacts, request_shape_messages
from gpufleet.validation.workload_policies import GPU_REQUEST_SHAPE
from policies._common import STACK_CONFIG_PROPERTIES, config_of, describe, pod_spec, stack_config_for


def _planned(args) -> DevicePluginFacts:
    """MIG strategy, whether a pool renames shared GPUs, and the MIG profiles in use, from config or stack."""
    config = config_of(args)
    cfg = stack_config_for(args)
    strategy = config.get("migStrategy") or (cfg.device_plugin.mig_strategy if cfg else None)
    rename = config.get("renameByDefault")
    if rename is None and cfg is not None:
        rename = any(p.rename_by_default for p in cfg.device_plugin.sharing_profiles.values())
    profiles = config.get("migProfiles")
    if profiles is None and cfg is not None:
        profiles = sorted({p for pool in cfg.node_pools for p in cfg.mig_profiles_of_pool(pool)})
    return DevicePluginFacts(strategy, rename, frozenset(profiles) if profiles is not None else None)


def validate(args: ResourceValidationArgs, report_violation) -> None:
    spec = pod_spec(args.resource_type, args.props)
    if spec is None:
        return
    what = describe(args.resource_type, args.props, args.name)
    for message in request_shape_messages(what, spec, lambda: _planned(args)):
        report_violation(message)


POLICY = ResourceValidationPolicy(
    name=GPU_REQUEST_SHAPE.name,
    description="GPU requests are integer limits equal to their requests and name a resource the planned device plugin "
                "setup advertises.",
    enforcement_level=EnforcementLevel(GPU_REQUEST_SHAPE.level),
    config_schema=PolicyConfigSchema(properties={
        **STACK_CONFIG_PROPERTIES,
        "migStrategy": {"type": "string", "enum": ["none", "single", "mixed"],
                        "description": "Planned MIG strategy; overrides the stack's devicePlugin.migStrategy."},
        "renameByDefault": {"type": "boolean",
                            "description": "Whether shared GPUs are advertised as <name>.shared; overrides the stack."},
        "migProfiles": {"type": "array", "items": {"type": "string"},
                        "description": "MIG profiles the nodes serve (e.g. 1g.10gb); "
                                       "overrides the stack's geometries."},
    }),
    validate=validate,
)
