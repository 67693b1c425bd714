"""The check engine as it was before fleet-scale checking: the reference the scheduler emulation must match.

A straightforward per-node engine (every node, every pod template): static filters per node, free
capacity as one dict per node, replicas placed packed and spread, and an exact search (at most 64 pods
and 32 nodes) to prove that a set of workloads cannot fit. tests/scheduling/test_differential.py runs
random small clusters through this and `gpufleet.scheduling.check_workloads` and expects them to agree.

Its filters (NodeUnschedulable, TaintToleration with the ExtendedResourceToleration admission plugin's
tolerations, NodeAffinity's nodeSelector and required terms, NodeResourcesFit) and the FailedScheduling text
are written here from the Kubernetes rules (k8s.io/kubernetes v1.34 pkg/scheduler/framework/plugins/
nodeunschedulable, tainttoleration, nodeaffinity, noderesources; k8s.io/api v0.34 core/v1/toleration.go
ToleratesTaint; k8s.io/component-helpers v0.34 scheduling/corev1/nodeaffinity; plugin/pkg/admission/
extendedresourcetoleration; pkg/scheduler/framework types.go FitError), sharing no filter code with
gpufleet.scheduling or gpufleet.taints, so a broken filter there shows as a disagreement. It reads only the
capacity model's data (nodes, bound pods, quantities, pod requests), the API server's validation, the
manifest reader and the result types. Keep its placement logic as it is: it is what "today's verdicts" means.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from gpufleet.admission.validation import rejection
from gpufleet.capacity.kubectl import bound_pods, node_from_object
from gpufleet.capacity.memory_budget import MemoryProblem, node_gpu_memory
from gpufleet.capacity.model import BoundPod, Node
from gpufleet.capacity.quantity import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from gpufleet.capacity.requests import pod_requests
from gpufleet.errors import GpufleetError, InputError
from gpufleet.manifests.workloads import PodWorkload, workloads_of
from gpufleet.scheduling.result import CheckResult, Unschedulable, Warning

DEFAULT_SCHEDULER = "default-scheduler"
_FIRST = (CPU, MEMORY, EPHEMERAL_STORAGE)
SEARCH_MAX_PODS = 64
SEARCH_MAX_NODES = 32
SEARCH_BUDGET = 200_000


class ClusterState:
    def __init__(self, nodes: Sequence[Node], pods: Sequence[BoundPod] = (), *, _copy: ClusterState | None = None):
        self.nodes = list(nodes)
        if _copy is not None:
            self.free = [dict(f) for f in _copy.free]
            self.pods_free = list(_copy.pods_free)
            return
        self.free = [dict(n.allocatable) for n in self.nodes]
        self.pods_free: list[int | None] = [None if PODS in n.unknown else n.allocatable.get(PODS, 0)
                                            for n in self.nodes]
        index = {n.name: i for i, n in enumerate(self.nodes)}
        for pod in pods:
            i = index.get(pod.node)
            if i is None:
                continue
            free = self.free[i]
            for r, v in pod.requests.items():
                if v:
                    free[r] = free.get(r, 0) - v
            if self.pods_free[i] is not None:
                self.pods_free[i] -= 1

    def copy(self) -> ClusterState:
        return ClusterState(self.nodes, _copy=self)

    def count(self, i: int, request: dict[str, int], cap: int) -> int:
        return fit_count(self.free[i], self.pods_free[i], request, cap)

    def take(self, i: int, request: dict[str, int], n: int) -> None:
        free = self.free[i]
        for r, v in request.items():
            free[r] = free.get(r, 0) - v * n
        if self.pods_free[i] is not None:
            self.pods_free[i] -= n


def capacity_for(state: ClusterState, eligible: Sequence[int], requests: dict[int, dict[str, int]], cap: int) -> int:
    """Sum over eligible nodes of min_r floor(free_r / req_r): exact for identical pods, any order."""
    total = 0
    for i in eligible:
        total += state.count(i, requests[i], cap)
        if total >= cap:
            return cap
    return total


def place(state: ClusterState, eligible: Sequence[int], requests: dict[int, dict[str, int]], wanted: int,
          mode: str) -> list[tuple[int, int]]:
    """Place up to `wanted` pods; returns [(node index, pods)] and updates the state."""
    room = [(state.count(i, requests[i], wanted), i) for i in eligible]
    room = [(m, i) for m, i in room if m > 0]
    placed: dict[int, int] = {}
    left = wanted
    if mode == "pack":
        for m, i in sorted(room):
            n = min(m, left)
            placed[i] = n
            left -= n
            if not left:
                break
    else:
        heap = [(-m, i) for m, i in room]
        heapq.heapify(heap)
        while left and heap:
            m, i = heapq.heappop(heap)
            placed[i] = placed.get(i, 0) + 1
            left -= 1
            if m + 1 < 0:
                heapq.heappush(heap, (m + 1, i))
    for i, n in placed.items():
        state.take(i, requests[i], n)
    return sorted(placed.items())


class _OutOfBudget(Exception):
    pass


def can_place_all(state: ClusterState,
                  groups: list[tuple[Sequence[int], dict[int, dict[str, int]], int]]) -> bool | None:
    """Can every pod of every group (eligible nodes, per-node request, pods) be placed at once?

    Exact depth-first search with memoised states; None when the instance is too large to decide.
    """
    nodes = sorted({i for eligible, _, _ in groups for i in eligible})
    if sum(n for _, _, n in groups) > SEARCH_MAX_PODS or len(nodes) > SEARCH_MAX_NODES:
        return None
    resources = sorted({r for _, reqs, _ in groups for req in reqs.values() for r in req})
    big = 1 << 62
    free = {i: [state.free[i].get(r, 0) for r in resources]
            + [big if state.pods_free[i] is None else state.pods_free[i]]
            for i in nodes}
    pods = []  # (group, eligible, {node: vector})
    def demand(e):
        return -sum(next(iter(e[1][1].values()), {}).values())

    for g, (eligible, reqs, n) in sorted(enumerate(groups), key=demand):
        vecs = {i: [reqs[i].get(r, 0) for r in resources] + [1] for i in eligible}
        pods += [(g, list(eligible), vecs)] * n
    seen: set = set()
    steps = [0]

    def dfs(k: int, start: int) -> bool:
        if k == len(pods):
            return True
        key = (k, start, tuple(tuple(free[i]) for i in nodes))
        if key in seen:
            return False
        steps[0] += 1
        if steps[0] > SEARCH_BUDGET:
            raise _OutOfBudget
        g, eligible, vecs = pods[k]
        for pos, i in enumerate(eligible):
            if pos < start:
                continue
            have, want = free[i], vecs[i]
            if all(h >= w for h, w in zip(have, want, strict=False)):
                for j, w in enumerate(want):
                    have[j] -= w
                same = k + 1 < len(pods) and pods[k + 1][0] == g
                ok = dfs(k + 1, pos if same else 0)
                for j, w in enumerate(want):
                    have[j] += w
                if ok:
                    return True
        seen.add(key)
        return False

    try:
        return dfs(0, 0)
    except _OutOfBudget:
        return None



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
    static = [static_failure(n, w.spec, ert) for n in node_list]
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
    result.memory += _memory(w, node_list, requests, placements, result)


def _pending_message(state: ClusterState, node_list, static, req) -> str:
    reasons: list[str] = []
    for i, failure in enumerate(static):
        if failure is not None:
            reasons.append(failure)
        else:
            reasons += fit_failures(state.free[i], state.pods_free[i], req[i])
    return failed_scheduling(reasons, len(node_list))


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


# The filters before NodeResourcesFit, from the Kubernetes rules (nothing shared with gpufleet.scheduling).
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"


def toleration_tolerates(toleration: dict, key: str, value: str, effect: str) -> bool:
    """core/v1 Toleration.ToleratesTaint: an effect and a key, when given, must be the taint's; `Exists`
    tolerates any value, `Equal` (or no operator) only the same value, any other operator nothing."""
    if toleration.get("effect") and toleration["effect"] != effect:
        return False
    if toleration.get("key") and toleration["key"] != key:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (value or "")


def _is_extended(resource: str) -> bool:
    """IsExtendedResourceName: a domain-prefixed name outside kubernetes.io, not a quota `requests.` name."""
    return "/" in resource and "kubernetes.io/" not in resource and not resource.startswith("requests.")


def pod_tolerations(spec: dict, extended_resource_toleration: bool) -> list[dict]:
    """The pod's tolerations after admission: ExtendedResourceToleration adds `Exists`/`NoSchedule` for each
    extended resource a container or init container requests (its limits are its requests once defaulted)."""
    tolerations = list(spec.get("tolerations") or [])
    if extended_resource_toleration:
        names = set()
        for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
            resources = c.get("resources") or {}
            for part in ("requests", "limits"):
                names |= {r for r in resources.get(part) or {} if _is_extended(r)}
        tolerations += [{"key": r, "operator": "Exists", "effect": "NoSchedule"} for r in sorted(names)]
    return tolerations


def _expression_holds(expr: dict, labels: dict[str, str]) -> bool:
    """A NodeSelectorRequirement: In, NotIn, Exists, DoesNotExist, and Gt/Lt on integer values."""
    key, op = expr.get("key"), expr.get("operator")
    values = [str(v) for v in expr.get("values") or []]
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op in ("Gt", "Lt"):
        if key not in labels or len(values) != 1:
            return False
        try:
            label, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return label > bound if op == "Gt" else label < bound
    return False


def _term_holds(term: dict, node: Node) -> bool:
    """A NodeSelectorTerm: every expression on the labels and every field (metadata.name) holds; an empty
    term selects no node."""
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not fields:
        return False
    return (all(_expression_holds(e, node.labels) for e in expressions)
            and all(_expression_holds(f, {"metadata.name": node.name}) for f in fields))


def node_affinity_allows(spec: dict, node: Node) -> bool:
    """NodeAffinity's filter: every nodeSelector label equal, and one required term (ORed) holding."""
    for key, value in (spec.get("nodeSelector") or {}).items():
        if key not in node.labels or node.labels[key] != str(value):
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return any(_term_holds(t, node) for t in required.get("nodeSelectorTerms") or [])


def static_failure(node: Node, spec: dict, extended_resource_toleration: bool) -> str | None:
    """The first of NodeUnschedulable, TaintToleration and NodeAffinity to refuse the node, as its reason."""
    tolerations = pod_tolerations(spec, extended_resource_toleration)
    if node.unschedulable and not any(toleration_tolerates(t, UNSCHEDULABLE_TAINT_KEY, "", "NoSchedule")
                                      for t in tolerations):
        return "node(s) were unschedulable"
    for taint in node.taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(toleration_tolerates(t, taint.key, taint.value, taint.effect) for t in tolerations):
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    if not node_affinity_allows(spec, node):
        return "node(s) didn't match Pod's node affinity/selector"
    return None


def failed_scheduling(reasons: list[str], total_nodes: int) -> str:
    """FitError's text: each reason with how many nodes gave it, sorted as strings, after `0/N nodes are
    available:`; with no nodes at all, ErrNoNodesAvailable's."""
    if not total_nodes:
        return "no nodes available to schedule pods"
    counts: dict[str, int] = {}
    for reason in reasons:
        counts[reason] = counts.get(reason, 0) + 1
    histogram = sorted(f"{n} {r}" for r, n in counts.items())
    return f"0/{total_nodes} nodes are available: " + ", ".join(histogram) + "."


# NodeResourcesFit per node as dicts, as the engine before the scheduler emulation computed it.
TOO_MANY_PODS = "Too many pods"
def checked_request(requests: dict[str, int], unknown: frozenset[str]) -> dict[str, int]:
    """The dimensions NodeResourcesFit compares: positive requests, minus resources of unknown size."""
    return {r: v for r, v in requests.items() if v > 0 and r != PODS and r not in unknown}


def fit_failures(free: dict[str, int], pods_free: int | None, request: dict[str, int]) -> list[str]:
    """NodeResourcesFit reasons (all failing dimensions) for one more pod on a node."""
    reasons = []
    if pods_free is not None and pods_free < 1:
        reasons.append(TOO_MANY_PODS)
    for name in _FIRST:
        if name in request and request[name] > free.get(name, 0):
            reasons.append(f"Insufficient {name}")
    for name in sorted(request):
        if name not in _FIRST and request[name] > free.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


def fit_count(free: dict[str, int], pods_free: int | None, request: dict[str, int], cap: int) -> int:
    """How many more copies of the pod fit on the node (at most `cap`): min over r of floor(free_r/req_r)."""
    n = cap if pods_free is None else min(cap, pods_free)
    for name, want in request.items():
        have = free.get(name, 0)
        if have < want:
            return 0
        n = min(n, have // want)
    return max(n, 0)
