"""gpu-taint-toleration: a workload aimed at a tainted GPU node pool tolerates the pool's taints.

A workload is aimed at a pool when its nodeSelector includes the pool's nodeSelector, or it selects
the pool's nodes by `kubernetes.io/hostname` (nodeSelector or required node affinity). Only NoSchedule
and NoExecute taints keep pods off a node. With the ExtendedResourceToleration admission plugin, a pod
requesting a resource tolerates NoSchedule taints keyed by that resource's name.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy

from gpufleet.taints import tolerates_any
from policies._capacity import extended_resource_toleration
from policies._common import STACK_CONFIG_PROPERTIES, config_of, containers, describe, dig, pod_spec, stack_config_for

HOSTNAME = "kubernetes.io/hostname"
FILTERING_EFFECTS = ("NoSchedule", "NoExecute")


def _selected_hostnames(spec: dict) -> set[str]:
    names = set()
    if (spec.get("nodeSelector") or {}).get(HOSTNAME):
        names.add(spec["nodeSelector"][HOSTNAME])
    terms = dig(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms") or []
    for term in terms:
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") == HOSTNAME and expr.get("operator") == "In":
                names.update(expr.get("values") or [])
    return names


def aimed_pools(cfg, spec: dict) -> list:
    selector = spec.get("nodeSelector") or {}
    hosts = _selected_hostnames(spec)
    pools = []
    for pool in cfg.node_pools:
        by_selector = bool(pool.node_selector) and all(selector.get(k) == v for k, v in pool.node_selector.items())
        if by_selector or (hosts and hosts & set(pool.nodes)):
            pools.append(pool)
    return pools


def validate(args: ResourceValidationArgs, report_violation) -> None:
    spec = pod_spec(args.resource_type, args.props)
    if spec is None:
        return
    cfg = stack_config_for(args)
    if cfg is None or not any(p.taints for p in cfg.node_pools):
        return
    config = config_of(args)
    ert = extended_resource_toleration(config, cfg)
    requested = {n for c in containers(spec) for n in (dig(c, "resources", "limits") or {})}
    tolerations = list(spec.get("tolerations") or [])
    for pool in aimed_pools(cfg, spec):
        for taint in pool.taints:
            if taint.effect not in FILTERING_EFFECTS:
                continue
            if ert and taint.effect == "NoSchedule" and taint.key in requested:
                continue
            if not tolerates_any(tolerations, taint.key, taint.value, taint.effect):
                shown = f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"
                report_violation(f"{describe(args.resource_type, args.props, args.name)} is aimed at node pool "
                                 f"'{pool.name}' but does not tolerate its taint {shown}; expected a toleration "
                                 f"{{key: {taint.key}, operator: Exists, effect: {taint.effect}}} (else its pods stay "
                                 "Pending: node(s) had untolerated taint).")


POLICY = ResourceValidationPolicy(
    name="gpu-taint-toleration",
    description="Workloads aimed at a tainted GPU node pool tolerate the pool's NoSchedule and NoExecute taints.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={
        **STACK_CONFIG_PROPERTIES,
        "extendedResourceToleration": {"type": "boolean", "description": "Whether the API server runs the "
                                       "ExtendedResourceToleration admission plugin; overrides the stack's cluster "
                                       "config."},
    }),
    validate=validate,
)
