"""preemption-evictions: a workload of the plan that runs only by evicting pods of another namespace (advisory).

kube-scheduler's DefaultPreemption makes room for a pod that fits nowhere by evicting pods of lower priority.
gpufleet's engine does the same (`gpufleet check`'s `fits by preemption`), on the discovered capacity with
its running pods (`podsFile` or `kubeconfig`) or the planned one, with the stack's PriorityClasses and
PodDisruptionBudgets beside the cluster's. Evicting one's own namespace is the usual way priorities are used;
evicting another namespace's work is someone else's job stopped by this deploy, and is reported with every
victim (workload, pods, node, priority, a PodDisruptionBudget it breaks) before anything is deployed.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from policies._capacity import (
    CAPACITY_PROPERTIES,
    CLAIM_TYPES,
    CapacityUnavailable,
    check_fit,
    extended_resource_toleration,
    manifests_to_check,
    plan_capacity,
    stack_groups,
)
from policies._common import STACK_CONFIG_PROPERTIES, config_of, each_known
from policies._model import deployed_pods
from policies.gpu_capacity_fit import ADMISSION_TYPES, manifest_of

#: What the engine reads beside the workloads: PriorityClasses and quotas, DRA claims, and the budgets that
#: steer which pods are evicted.
BESIDE = (*ADMISSION_TYPES, *CLAIM_TYPES, "kubernetes:policy/v1:PodDisruptionBudget")


def namespace_of(workload: str) -> str:
    """`Kind/namespace/name` -> namespace."""
    parts = workload.split("/")
    return parts[1] if len(parts) >= 3 else ""


def validate(args: StackValidationArgs, report_violation) -> None:
    config = config_of(args)
    workloads = deployed_pods(args)
    if not workloads:
        return
    beside: list[dict] = []
    each_known(args.resources, lambda r: beside.append(manifest_of(r.resource_type, r.props))
               if r.resource_type in BESIDE else None)
    try:
        capacity, cfg = plan_capacity(args, config)
    except CapacityUnavailable:
        return  # gpu-capacity-fit reports an unusable capacity source
    groups = stack_groups(capacity, cfg)
    if groups:  # preemption is not emulated together with the autoscaler's node groups
        return
    manifests = manifests_to_check(capacity, cfg, beside, [m for _, m, _ in workloads])
    result = check_fit(capacity, manifests, extended_resource_toleration(config, cfg))
    urns = {key: urn for key, _, urn in workloads}
    cause = {p.workload: p.remade_after for p in result.preemptions if p.remade_after}
    for p in result.preemptions:
        own = namespace_of(p.workload)
        foreign = [v for v in p.victims if namespace_of(v.workload) != own]
        if not foreign:
            continue
        if p.remade_after:  # a running workload's new pods, made after the plan's evicted its own
            root, seen = p.remade_after, {p.workload}
            while root in cause and root not in seen:
                seen.add(root)
                root = cause[root]
            report_violation(
                f"{p.remade_after} evicts pods of running {p.workload}; its controller makes new ones, and they "
                "evict pods of another namespace in turn: " + ", ".join(v.words() for v in foreign)
                + f". Expected evictions within namespace {own}; to stop this, give {root} a PriorityClass no "
                "higher than the pods it evicts or preemptionPolicy: Never, or make room for it.",
                urns.get(root))
            continue
        report_violation(
            f"{p.workload} runs only by evicting pods of another namespace: "
            + ", ".join(v.words() for v in foreign)
            + f". Expected evictions within namespace {own}; to stop this, give the workload a PriorityClass no "
            "higher than theirs or preemptionPolicy: Never, or make room for it.",
            urns.get(p.workload))


POLICY = StackValidationPolicy(
    name="preemption-evictions",
    description="No workload of the plan runs only by evicting (preempting) running pods of another namespace.",
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(properties={**STACK_CONFIG_PROPERTIES, **CAPACITY_PROPERTIES}),
    validate=validate,
)
