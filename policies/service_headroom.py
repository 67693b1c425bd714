"""service-headroom: a GPU service that fits today, but has no room for one more replica (advisory).

For every Deployment the plan creates that asks for GPUs and is placed in full, copies of its pod are placed
after everything the plan deploys, one after another as kube-scheduler would place them, until one does not
fit (the answer `gpufleet headroom` gives; gpufleet.scheduling.headroom), on the planned capacity (the
stack's node pools, its autoscaled pools grown to their max as `headroom --node-groups` grows them) or the
discovered one. A service that cannot add a single replica is reported with what
stops it, before an autoscaler or a rollout with surge finds out. Services with room are not reported: every
plan would otherwise list each one; `gpufleet headroom` and the report's table give the counts.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from policies._capacity import (
    CAPACITY_PROPERTIES,
    CapacityUnavailable,
    capacity_words,
    check_fit,
    extended_resource_toleration,
    plan_capacity,
    stack_groups,
)
from policies._common import STACK_CONFIG_PROPERTIES, config_of
from policies._model import deployed_pods

#: Seeded runs per service: a plan-time estimate (`gpufleet headroom` takes the median of more).
RUNS = 3


def _gpus(manifest: dict) -> bool:
    from gpufleet.capacity.requests import pod_requests
    from gpufleet.manifests.workloads import workload_of

    w = workload_of(manifest)
    return w is not None and any(r.startswith("nvidia.com/") and n > 0 for r, n in pod_requests(w.spec).items())


def validate(args: StackValidationArgs, report_violation) -> None:
    config = config_of(args)
    manifests = deployed_pods(args)
    services = [(key, m, urn) for key, m, urn in manifests if m.get("kind") == "Deployment" and _gpus(m)]
    if not services:
        return
    try:
        capacity, cfg = plan_capacity(args, config)
    except CapacityUnavailable:
        return  # gpu-capacity-fit reports an unusable capacity source
    from gpufleet.scheduling.headroom import headroom

    ert = extended_resource_toleration(config, cfg)
    everything = [m for _, m, _ in manifests]
    groups = stack_groups(capacity, cfg)
    result = check_fit(capacity, everything, ert, groups)
    short = {u.workload for u in result.unschedulable} | {w.workload for w in result.warnings}
    nodes, pods = capacity.nodes, capacity.pods
    if groups:  # the room an autoscaled pool has is the room of its max size
        from gpufleet.scheduling.scaleup import grown_fleet

        grown = grown_fleet(nodes, pods, everything, groups, extended_resource_toleration=ert)
        nodes, pods = grown.nodes, grown.pods
    for key, manifest, urn in services:
        if key in short:
            continue  # not placed in full: gpu-capacity-fit's
        answer = headroom(nodes, pods, everything, manifest,
                          extended_resource_toleration=ert, tie_runs=RUNS)
        if answer.instances_range[1] > 0:
            continue
        stop = answer.stopped_by.rstrip(".")
        report_violation(f"{key}: no room for one more replica on {capacity_words(capacity, groups)}: {stop}. "
                         "Expected room to scale by at least one "
                         "replica (for a rollout's surge or an autoscaler); add capacity or keep the replica "
                         "count.", urn)


POLICY = StackValidationPolicy(
    name="service-headroom",
    description="Every GPU service that fits has room for one more replica on the planned or discovered capacity.",
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(properties={**STACK_CONFIG_PROPERTIES, **CAPACITY_PROPERTIES}),
    validate=validate,
)
