"""gpu-request-shape: GPU requests the API server accepts and the device plugin can serve."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy

from gpufleet.nvidia.mig_profiles import TABLES, resource_name
from policies._common import (
    GPU_RESOURCE, LEGACY_GPU, NVIDIA_PREFIX, STACK_CONFIG_PROPERTIES, config_of, containers, describe, pod_spec,
    quantity, shown, stack_config_for,
)

#: nvidia.com/ names other GPU schedulers use (HAMi); not the device plugin's, so not judged here.
FOREIGN_NVIDIA_NAMES = {"nvidia.com/gpumem", "nvidia.com/gpucores", "nvidia.com/gpumem-percentage"}


def _planned(args) -> tuple[str | None, bool | None, set[str] | None]:
    """(MIG strategy, whether any pool renames shared GPUs, MIG profiles in use) from config or stack."""
    config = config_of(args)
    cfg = stack_config_for(args)
    strategy = config.get("migStrategy") or (cfg.device_plugin.mig_strategy if cfg else None)
    rename = config.get("renameByDefault")
    if rename is None and cfg is not None:
        rename = any(p.rename_by_default for p in cfg.device_plugin.sharing_profiles.values())
    profiles = config.get("migProfiles")
    if profiles is None and cfg is not None:
        profiles = sorted({p for pool in cfg.node_pools for p in cfg.mig_profiles_of_pool(pool)})
    return strategy, rename, set(profiles) if profiles is not None else None


def _known_mig_resources(profiles: set[str] | None) -> set[str]:
    names = profiles if profiles is not None else {p for t in TABLES.values() for p in t.profiles}
    return {resource_name(p) for p in names}


def _name_problem(res: str, strategy, rename, profiles) -> str | None:
    base = res[: -len(".shared")] if res.endswith(".shared") else res
    if res.endswith(".shared") and rename is False:
        return (f"'{res}' is advertised only when a sharing profile sets renameByDefault: true; "
                f"expected '{base}'")
    if base == "nvidia.com/gpu":
        return None
    if base.startswith("nvidia.com/mig-"):
        if strategy is not None and strategy != "mixed":
            return (f"'{res}' exists only under the mixed MIG strategy (planned: {strategy}); "
                    "expected nvidia.com/gpu")
        known = _known_mig_resources(profiles)
        if base not in known:
            allowed = ", ".join(sorted(known)) or "(no MIG geometry planned)"
            return f"'{res}' names no planned MIG profile; expected one of: {allowed}"
        return None
    return f"'{res}' is not a resource the NVIDIA device plugin advertises; expected nvidia.com/gpu, " \
           "nvidia.com/gpu.shared or nvidia.com/mig-<profile>"


def validate(args: ResourceValidationArgs, report_violation) -> None:
    spec = pod_spec(args.resource_type, args.props)
    if spec is None:
        return
    what = describe(args.resource_type, args.props, args.name)
    planned = None
    for c in containers(spec):
        res = c.get("resources") or {}
        limits = dict(res.get("limits") or {})
        requests = dict(res.get("requests") or {})
        where = f"{what} container '{c.get('name')}'"
        for name in sorted(set(limits) | set(requests)):
            if name == LEGACY_GPU:
                report_violation(f"{where} requests the removed '{LEGACY_GPU}'; expected nvidia.com/gpu "
                                 "(served by the NVIDIA device plugin).")
                continue
            if not name.startswith(NVIDIA_PREFIX) or name in FOREIGN_NVIDIA_NAMES:
                continue
            for section, values in (("limits", limits), ("requests", requests)):
                if name in values:
                    q = quantity(values[name])
                    if q is None or q < 0 or q != q.to_integral_value():
                        report_violation(f"{where} {section}[{name}] is {shown(values[name])}; expected a "
                                         "non-negative integer (the API server rejects fractions of extended resources).")
            if name in requests and name not in limits:
                report_violation(f"{where} requests {name} without a limit; expected limits[{name}] set "
                                 "(extended resources cannot be overcommitted).")
            elif name in requests and quantity(requests[name]) != quantity(limits[name]):
                report_violation(f"{where} requests {shown(requests[name])} {name} but limits {shown(limits[name])}; "
                                 "expected requests equal to limits.")
            if GPU_RESOURCE.match(name) or name.startswith(NVIDIA_PREFIX):
                if planned is None:
                    planned = _planned(args)
                problem = _name_problem(name, *planned)
                if problem:
                    report_violation(f"{where}: {problem}.")


POLICY = ResourceValidationPolicy(
    name="gpu-request-shape",
    description="GPU requests are integer limits equal to their requests and name a resource the planned device plugin setup advertises.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={
        **STACK_CONFIG_PROPERTIES,
        "migStrategy": {"type": "string", "enum": ["none", "single", "mixed"],
                        "description": "Planned MIG strategy; overrides the stack's devicePlugin.migStrategy."},
        "renameByDefault": {"type": "boolean",
                            "description": "Whether shared GPUs are advertised as <name>.shared; overrides the stack."},
        "migProfiles": {"type": "array", "items": {"type": "string"},
                        "description": "MIG profiles the nodes serve (e.g. 1g.10gb); overrides the stack's geometries."},
    }),
    validate=validate,
)
