"""What model-fits-gpu and model-concurrency share: the engine's verdicts on every deployed workload that
declares a model, from the stack's node pools or from discovered nodes (as `gpufleet check` makes them)."""

from __future__ import annotations

from pulumi_policy import StackValidationArgs

from policies._capacity import CapacityUnavailable, check_fit, extended_resource_toleration, plan_capacity
from policies._common import POD_SPEC_PATHS, config_of, each_known
from policies.gpu_capacity_fit import manifest_of

KIND = {"inference": "Deployment", "notebook": "Deployment", "job": "Job"}


def deployed_pods(args: StackValidationArgs) -> list[tuple[str, dict, str]]:
    """(Kind/namespace/name, manifest, urn) of every resource of the plan that runs pods."""
    found: list[tuple[str, dict, str]] = []

    def collect(r) -> None:
        if r.resource_type in POD_SPEC_PATHS:
            m = manifest_of(r.resource_type, r.props)
            meta = m.get("metadata") or {}
            found.append((f"{m['kind']}/{meta.get('namespace') or 'default'}/{meta.get('name') or r.name}", m, r.urn))

    each_known(args.resources, collect)
    return found


def report_model_verdicts(args: StackValidationArgs, report_violation, refusals: bool) -> None:
    """Report refusals (`refusals`) or concurrency shortfalls (otherwise), each against its resource."""
    config = config_of(args)
    manifests = deployed_pods(args)
    if not manifests:
        return
    urns = {key: urn for key, _, urn in manifests}
    try:
        capacity, cfg = plan_capacity(args, config)
    except CapacityUnavailable:
        return  # gpu-capacity-fit reports an unusable capacity source
    if capacity.source == "stack" and cfg is not None:
        from gpufleet.capacity import memory_budget

        keys = {f"workloads[{i}] '{w.name}'": f"{KIND[w.kind]}/{w.namespace}/{w.name}"
                for i, w in enumerate(cfg.workloads)}
        for problem in memory_budget(cfg):
            key = keys.get(problem.workload, "")
            if (problem.error if refusals else problem.advisory) and key in urns:
                report_violation(problem.message, urns[key])
        return
    ert = extended_resource_toleration(config, cfg)
    result = check_fit(capacity, [m for _, m, _ in manifests], ert)
    if refusals:
        for u in result.unschedulable:
            if u.reason == "memory":
                report_violation(f"{u.workload}: {u.message}", urns.get(u.workload))
    else:
        for w in result.warnings:
            if w.reason == "model":
                report_violation(f"{w.workload}: {w.message}", urns.get(w.workload))
