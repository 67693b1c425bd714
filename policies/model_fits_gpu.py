"""model-fits-gpu: a workload's model fits the GPU memory it gets (whole GPU, MIG instance, MPS slice).

The need is computed from the workload's `model:` (weights + KV cache at maxModelLen x maxNumSeqs +
activation + runtime; docs/model-memory.md). With the stack as the capacity source it is checked against
each workload's node pool (gpufleet.capacity.memory_budget); with discovered nodes, against the GPU memory
labels of every node the pod may land on (the `gpufleet.io/model-memory` annotation, as `gpufleet check`
does). The violation names the need, the budget and the fixes.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from policies._capacity import CAPACITY_PROPERTIES, CapacityUnavailable, check_fit, load_capacity
from policies._common import POD_SPEC_PATHS, STACK_CONFIG_PROPERTIES, config_of, each_known, load_stack_config, stack_ref
from policies.gpu_capacity_fit import manifest_of

KIND = {"inference": "Deployment", "notebook": "Deployment", "job": "Job"}


def validate(args: StackValidationArgs, report_violation) -> None:
    config = config_of(args)
    manifests: list[tuple[str, dict, str]] = []

    def collect(r) -> None:
        if r.resource_type in POD_SPEC_PATHS:
            m = manifest_of(r.resource_type, r.props)
            meta = m.get("metadata") or {}
            manifests.append((f"{m['kind']}/{meta.get('namespace') or 'default'}/{meta.get('name') or r.name}", m, r.urn))

    each_known(args.resources, collect)
    if not manifests:
        return
    urns = {key: urn for key, _, urn in manifests}
    ref = stack_ref(config, args.resources[0].urn if args.resources else None)
    cfg = load_stack_config(ref)
    try:
        capacity = load_capacity(config, cfg, ref)
    except CapacityUnavailable:
        return  # gpu-capacity-fit reports an unusable capacity source
    if capacity.source == "stack" and cfg is not None:
        from gpufleet.capacity import memory_budget

        keys = {f"workloads[{i}] '{w.name}'": f"{KIND[w.kind]}/{w.namespace}/{w.name}"
                for i, w in enumerate(cfg.workloads)}
        for problem in memory_budget(cfg):
            key = keys.get(problem.workload, "")
            if problem.error and key in urns:  # the stack's workloads that this plan deploys
                report_violation(problem.message, urns[key])
        return
    ert = config.get("extendedResourceToleration")
    if ert is None:
        ert = bool(cfg and cfg.cluster.extended_resource_toleration)
    result = check_fit(capacity, [m for _, m, _ in manifests], bool(ert))
    for u in result.unschedulable:
        if u.reason == "memory":
            report_violation(u.message, urns.get(u.workload))


POLICY = StackValidationPolicy(
    name="model-fits-gpu",
    description="Every workload that declares a model gets enough GPU memory for its weights, KV cache and runtime.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={
        **STACK_CONFIG_PROPERTIES,
        **CAPACITY_PROPERTIES,
    }),
    validate=validate,
)
