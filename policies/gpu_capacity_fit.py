"""gpu-capacity-fit: every GPU workload of the stack fits the planned or discovered capacity.

Uses the engine of `gpufleet check` (API validation, kube-scheduler's filters in order, exact replica
counts), so the violation carries the API server's or the scheduler's own message. With the stack as
the capacity source, the stack's GPU memory budget (`gpu.memoryMiB` vs what a share or MIG instance
has) is checked too, and its autoscaled node pools are node groups: a workload that runs once the
autoscaler grew them (within their max) passes, as with `gpufleet check --stack`; one that runs only partly
or never is a violation in the check's words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from policies._capacity import (
    CAPACITY_PROPERTIES,
    CLAIM_TYPES,
    CapacityUnavailable,
    capacity_words,
    check_fit,
    extended_resource_toleration,
    manifests_to_check,
    plan_capacity,
    stack_groups,
)
from policies._common import (
    NVIDIA_PREFIX,
    POD_SPEC_PATHS,
    STACK_CONFIG_PROPERTIES,
    config_of,
    each_known,
    pod_spec,
    quantity,
)


def plain(value: Any) -> Any:
    """A plain copy of policy props (touching every value: an unknown one raises UnknownValueError).

    The analyzer protocol carries every number as a double, so an integral float is the int the program
    wrote (`count: 2` arrives as 2.0); the API server's integer fields refuse 2.0 from a file, not from us.
    """
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: Pulumi types of what admission reads before the scheduler (a namespace's quota shipped with its workloads).
ADMISSION_TYPES = ("kubernetes:core/v1:ResourceQuota", "kubernetes:core/v1:LimitRange",
                   "kubernetes:scheduling.k8s.io/v1:PriorityClass")


def manifest_of(resource_type: str, props: Any) -> dict:
    _, group_version, kind = resource_type.split(":")
    api = group_version[len("core/"):] if group_version.startswith("core/") else group_version
    return {"apiVersion": api, "kind": kind, **plain(props)}


def gpu_request_text(resource_type: str, props: Any) -> str:
    """`101 nvidia.com/gpu` per pod (limits, else requests, summed over the app containers)."""
    totals: dict[str, Any] = {}
    spec = pod_spec(resource_type, props) or {}
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        for name, value in {**(res.get("requests") or {}), **(res.get("limits") or {})}.items():
            if name.startswith(NVIDIA_PREFIX) and quantity(value) is not None:
                totals[name] = totals.get(name, 0) + quantity(value)
    return ", ".join(f"{int(v) if v == v.to_integral_value() else v} {k}" for k, v in sorted(totals.items()))


def validate(args: StackValidationArgs, report_violation) -> None:
    config = config_of(args)
    workloads: list[tuple[str, dict, str, str]] = []
    claims: list[dict] = []

    def collect(r) -> None:
        if r.resource_type in CLAIM_TYPES or r.resource_type in ADMISSION_TYPES:
            claims.append(manifest_of(r.resource_type, r.props))  # read beside the workloads, as check reads them
        if r.resource_type in POD_SPEC_PATHS:
            m = manifest_of(r.resource_type, r.props)
            meta = m.get("metadata") or {}
            key = f"{m['kind']}/{meta.get('namespace') or 'default'}/{meta.get('name') or r.name}"
            workloads.append((key, m, r.urn, gpu_request_text(r.resource_type, m)))

    each_known(args.resources, collect)
    gpu_workloads = [w for w in workloads if w[3]]
    if not workloads:
        return
    try:
        capacity, cfg = plan_capacity(args, config)
    except CapacityUnavailable as e:
        if gpu_workloads:
            report_violation(f"Cannot check {len(gpu_workloads)} GPU workload(s) against capacity: {e}; expected a "
                             "usable capacity source.")
        return
    ert = extended_resource_toleration(config, cfg)
    by_key = {key: (urn_, req) for key, _, urn_, req in workloads}
    groups = stack_groups(capacity, cfg)
    result = check_fit(capacity, manifests_to_check(capacity, cfg, claims, [m for _, m, _, _ in workloads]), ert,
                       groups)
    for u in result.unschedulable:
        if u.reason == "memory":  # a model that does not fit: model-fits-gpu reports it
            continue
        urn_, req = by_key.get(u.workload, (None, ""))
        asks = f" (requests {req} per pod)" if req else ""
        verdict = ("is rejected by the API server" if u.reason == "rejected"
                   else f"leaves {u.pending} pod(s) Pending")
        why = f" Why: {u.blocked.summary}. Fix: {u.blocked.fix}." if u.blocked is not None else ""
        if u.refused_by:
            why = (f" {u.admitted or 0} of {(u.admitted or 0) + u.pending} pods are admitted; {u.refused_by} refuses "
                   f"the rest.{why}")
        message = u.message if u.message.endswith(".") else u.message + "."
        report_violation(f"{u.workload}{asks} {verdict}: {message}{why} Expected it to fit "
                         f"{capacity_words(capacity, groups)}.", urn_)
    if capacity.source == "stack" and cfg is not None and config.get("checkMemoryBudget", True):
        from gpufleet.capacity import memory_budget

        for problem in memory_budget(cfg):
            if problem.error or problem.advisory:  # a model's verdicts: model-fits-gpu and model-concurrency
                continue
            report_violation(f"GPU memory budget: {problem.message}; expected gpu.memoryMiB within what the "
                             "workload's GPU share has.")


POLICY = StackValidationPolicy(
    name="gpu-capacity-fit",
    description="Every GPU workload of the stack is accepted by the API server and fits the planned or discovered GPU "
                "capacity.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={
        **STACK_CONFIG_PROPERTIES,
        **CAPACITY_PROPERTIES,
        "checkMemoryBudget": {"type": "boolean", "description": "Also check gpu.memoryMiB against what each GPU share "
                              "has (stack source only). Default: true."},
    }),
    validate=validate,
)
