"""`check_workloads`: will every workload run, and if not, why, in the scheduler's own words.

Per workload, in input order: API validation (rejected) -> effective pod request -> static filters per
node -> NodeResourcesFit against free capacity. Earlier workloads consume capacity. Verdicts follow
scheduling-rules.md 4.2: an error only when pods pend under every placement (the workload alone does not
fit, or an exact search over the workloads so far finds no placement); a warning when the outcome
depends on how earlier workloads were placed.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from gpufleet.capacity.kubectl import bound_pods, node_from_object
from gpufleet.capacity.memory_budget import MemoryProblem, node_gpu_memory
from gpufleet.capacity.model import BoundPod, Node
from gpufleet.capacity.model_fit import check_manifest_model, container_argv
from gpufleet.capacity.requests import pod_requests
from gpufleet.errors import GpufleetError, InputError
from gpufleet.scheduling.filters import checked_request, failed_scheduling, fit_failures, pod_terms, static_failure
from gpufleet.scheduling.manifests import PodWorkload, workloads_of
from gpufleet.scheduling.placement import ClusterState, can_place_all, capacity_for, place
from gpufleet.scheduling.result import CheckResult, Unschedulable, Warning
from gpufleet.scheduling.validation import rejection

DEFAULT_SCHEDULER = "default-scheduler"


def _nodes(nodes: Iterable[Node | dict]) -> list[Node]:
    return [n if isinstance(n, Node) else node_from_object(n) for n in nodes]


def _pods(pods: Iterable[BoundPod | dict]) -> list[BoundPod]:
    items = list(pods)
    objects = [p for p in items if isinstance(p, dict)]
    return [p for p in items if isinstance(p, BoundPod)] + bound_pods(objects)


class _Planned:
    """One workload that was (at least partly) placed: what the exact search needs to replay it."""

    def __init__(self, eligible, requests, wanted):
        self.eligible, self.requests, self.wanted = eligible, requests, wanted


def check_workloads(nodes: Sequence[Node | dict], running_pods: Sequence[BoundPod | dict], manifests: list[dict],
                    *, extended_resource_toleration: bool = False) -> CheckResult:
    """Check manifest dicts (Kubernetes JSON shape) against nodes and the pods already bound to them.

    `nodes` are capacity-model Nodes or Node objects as `kubectl get nodes -o json` items; `running_pods`
    are BoundPods or Pod objects (terminal and unbound ones are ignored). Numbers may be ints, floats or
    quantity strings.
    """
    node_list = _nodes(nodes)
    base = ClusterState(node_list, _pods(running_pods))
    packed, spread = base.copy(), base.copy()
    result = CheckResult()
    planned: list[_Planned] = []
    for w in workloads_of(manifests):
        result.checked.append(w.key)
        try:
            _check_one(w, node_list, base, packed, spread, planned, result, extended_resource_toleration)
        except GpufleetError as e:
            raise InputError(f"{w.key}: {e}") from e
    return result


def _check_one(w: PodWorkload, node_list, base, packed, spread, planned, result, ert: bool) -> None:
    message = rejection(w)
    if message is not None:
        result.unschedulable.append(Unschedulable(w.key, "rejected", w.replicas, message))
        return
    if w.replicas <= 0:
        return
    scheduler = w.spec.get("schedulerName") or DEFAULT_SCHEDULER
    if scheduler != DEFAULT_SCHEDULER:
        result.warnings.append(Warning(w.key, f"scheduled by '{scheduler}', whose rules gpufleet does not model; "
                                              "not checked"))
        return
    requests = pod_requests(w.spec)
    terms = pod_terms(w.spec, requests, ert)
    static = [static_failure(n, terms) for n in node_list]
    eligible = [i for i, s in enumerate(static) if s is None]
    per_unknown: dict[frozenset, dict[str, int]] = {}
    req = {}
    for i in eligible:
        unknown = node_list[i].unknown
        if unknown not in per_unknown:
            per_unknown[unknown] = checked_request(requests, unknown)
        req[i] = per_unknown[unknown]
    wanted = w.replicas
    alone = capacity_for(base, eligible, req, wanted)
    placements = place(packed, eligible, req, wanted, "pack")
    result.placements += [(w.key, node_list[i].name, n) for i, n in placements]
    n_packed = sum(n for _, n in placements)
    n_spread = sum(n for _, n in place(spread, eligible, req, wanted, "spread"))
    best = max(n_packed, n_spread)
    if best < wanted:
        proven = alone < wanted
        if not proven:
            groups = [(p.eligible, p.requests, p.wanted) for p in planned] + [(eligible, req, wanted)]
            proven = can_place_all(base, groups) is False
        text = _pending_message(packed, node_list, static, req)
        if proven:
            result.unschedulable.append(Unschedulable(w.key, "pending", wanted - best, text))
        else:
            result.warnings.append(Warning(w.key, f"{wanted - best} of {wanted} pods may stay Pending, depending on "
                                                  f"where earlier workloads land: {text}"))
    elif n_spread < wanted:
        text = _pending_message(spread, node_list, static, req)
        result.warnings.append(Warning(
            w.key, f"{wanted - n_spread} of {wanted} pods fit only if earlier workloads are packed tightly; the "
                   f"default scheduler spreads pods (its scoring ignores GPUs) and may leave them Pending: {text}"))
    if best:
        planned.append(_Planned(eligible, req, best))
    if not _model_memory(w, [node_list[i] for i in eligible], requests, result):
        result.memory += _memory(w, node_list, requests, placements, result)


def _pending_message(state: ClusterState, node_list, static, req) -> str:
    reasons: list[str] = []
    for i, failure in enumerate(static):
        if failure is not None:
            reasons.append(failure)
        else:
            reasons += fit_failures(state.free[i], state.pods_free[i], req[i])
    return failed_scheduling(reasons, len(node_list))


def _model_memory(w: PodWorkload, eligible_nodes, requests, result: CheckResult) -> bool:
    """A workload's model against the GPU memory of the nodes it may land on; True when that decided it."""
    verdict = check_manifest_model(w.key, w.annotations, eligible_nodes, requests, container_argv(w.spec))
    if verdict is None:
        return False
    result.warnings += [Warning(w.key, m) for m in verdict.warnings]
    if verdict.error is not None:
        result.unschedulable.append(Unschedulable(w.key, "memory", w.replicas, verdict.error))
        result.memory.append(MemoryProblem(w.key, verdict.need_mib, verdict.budget_mib, verdict.error, error=True))
    return not verdict.overridden


def _memory(w: PodWorkload, node_list, requests, placements, result: CheckResult) -> list[MemoryProblem]:
    expected = w.expected_gpu_memory_mib
    if expected is None:
        return []
    problems = []
    for i, n in placements:
        got = node_gpu_memory(node_list[i], requests)
        if got is None:
            continue
        budget, how, what = got
        total = expected * n if how == "time-slicing" else expected
        if how == "time-slicing":
            devices = int(node_list[i].labels.get("nvidia.com/gpu.count", "1") or 1)
            budget *= devices
            what = f"{n} pod(s) on {devices} time-sliced device(s) of node {node_list[i].name}"
        if total > budget:
            problems.append(MemoryProblem(w.key, total, budget,
                                          f"{w.key} expects {total} MiB of GPU memory; {what} gives it {budget} MiB"))
    for p in problems:
        result.warnings.append(Warning(p.workload, p.message))
    return problems[:1] if problems else []
