"""public-loadbalancer: a LoadBalancer Service reachable from anywhere (no source ranges, or ranges that
cover a whole IP family such as 0.0.0.0/0) must be allowed explicitly."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy

from gpufleet.exposure import SOURCE_RANGES_ANNOTATION, effective_source_ranges, is_public
from policies._common import SERVICE_TYPE, STACK_CONFIG_PROPERTIES, config_of, dig, stack_config_for


def _allowed(args, namespace: str, name: str) -> bool:
    if f"{namespace}/{name}" in (config_of(args).get("allowedServices") or []):
        return True
    cfg = stack_config_for(args)
    if cfg is None:
        return False
    return any(w.namespace == namespace and w.name == name and getattr(getattr(w, "service", None), "public", False)
               for w in cfg.workloads)


def validate(args: ResourceValidationArgs, report_violation) -> None:
    if args.resource_type != SERVICE_TYPE or dig(args.props, "spec", "type") != "LoadBalancer":
        return
    meta = args.props.get("metadata") or {}
    annotation = (meta.get("annotations") or {}).get(SOURCE_RANGES_ANNOTATION)
    ranges = effective_source_ranges(dig(args.props, "spec", "loadBalancerSourceRanges") or [],
                                     str(annotation) if annotation else None)
    if not is_public(ranges):
        return
    namespace, name = meta.get("namespace") or "default", meta.get("name") or args.name
    if _allowed(args, namespace, name):
        return
    why = (f"whose source ranges {ranges} cover every address of an IP family" if ranges
           else "without loadBalancerSourceRanges")
    report_violation(f"Service {namespace}/{name} is a LoadBalancer {why}, reachable from anywhere; expected "
                     "narrower source ranges, or an explicit allow (workload service.public: true in the stack, or "
                     "allowedServices in the policy config).")


POLICY = ResourceValidationPolicy(
    name="public-loadbalancer",
    description="A LoadBalancer Service reachable from anywhere (no source ranges, or ranges covering all of IPv4 "
                "or IPv6) is allowed only when the config says so explicitly.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={
        **STACK_CONFIG_PROPERTIES,
        "allowedServices": {"type": "array", "items": {"type": "string"},
                            "description": "Services (namespace/name) allowed to be public LoadBalancers."},
    }),
    validate=validate,
)
