"""The fleet report's model: pools -> node rows -> GPUs -> units, each unit with the workload placed on it.

Pure: nodes, running pods, the checked workloads and the check's placements in; a `FleetReport` out.
Which node a workload's pods land on is the check's packing placement. Which GPU or slice of that node a
pod gets is not modelled (the device plugin decides at run time): pods take free units in order, first
workload first, first GPU first, lowest slice first. Only the counts per node are the scheduler's.
Nodes of a pool whose GPUs, units and placed workloads are identical collapse into one row with a count.
With node groups, the nodes cluster-autoscaler's scale-up adds (and those on their way) are drawn apart, per
group, with the pods its simulation puts on them (gpufleet.scheduling.scaleup).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpufleet.capacity.memory_budget import node_gpu_memory
from gpufleet.capacity.model import BoundPod, Node
from gpufleet.capacity.requests import pod_requests
from gpufleet.manifests.workloads import PodWorkload
from gpufleet.report.devices import GPU, MIG_PREFIX, Gpu, Unit, node_gpus
from gpufleet.scheduler.filters import pod_terms, static_failure
from gpufleet.scheduling.result import CheckResult, Preemption, Unschedulable
from gpufleet.scheduling.result import Warning as CheckWarning

if TYPE_CHECKING:
    from gpufleet.autoscaler.nodegroups import NodeGroup
    from gpufleet.scheduling.scaleup import ScaleUpVerdicts

#: Node labels that name a node's pool, most specific first (managed Kubernetes services, Karpenter).
POOL_LABELS = ("gpufleet.io/node-pool", "agentpool", "kubernetes.azure.com/agentpool", "cloud.google.com/gke-nodepool",
               "eks.amazonaws.com/nodegroup", "karpenter.sh/nodepool")
RUNNING = "pods already running"
AFTER_SCALE_UP = "after scale-up"
#: The verdict of a workload placed in full, some pods only by evicting pods of lower priority.
PREEMPTS = "by preemption"
NOT_RUNNING = ("pending", "partly", "never", "rejected", "memory")
DEFAULT_SCHEDULER = "default-scheduler"  # the only scheduler whose rules the check models
ROW_NAMES_SHOWN = 3


@dataclass(frozen=True)
class ModelBar:
    """A served model on the device of its first node, as the engine accounts for it (MiB)."""

    visible_mib: int
    reserved_mib: int
    weights_mib: int
    overhead_mib: int
    """Peak activation, non-torch memory and counted CUDA graphs."""
    kv_mib: int
    kv_tokens: int
    concurrency: float
    max_model_len: int
    max_num_seqs: int | None
    starts: bool


@dataclass(frozen=True)
class WorkloadView:
    key: str
    index: int
    wanted: int
    placed: int
    gpu_request: tuple[tuple[str, int], ...]
    expected_mib: int | None = None
    budget_mib: int | None = None
    budget_what: str = ""
    #: placed | may pend | partly | pending | rejected | not checked | no GPU | running; with node groups also
    #: after scale-up | never (no node group helps its Pending pods)
    verdict: str = "placed"
    message: str = ""
    pools: tuple[str, ...] = ()  # for pods left pending: the pools whose nodes pass its taint/selector filters
    held_by: str = ""  # for pods left pending: who holds the nodes it could use (the check's blockedBy)
    fix: str = ""
    model: ModelBar | None = None
    added: int = 0
    """With node groups: its pods the scale-up places (on the nodes it adds, or where expendable pods leave)."""
    stopped_by: str = ""
    """With node groups, when the scale-up places only some of its Pending pods: what left the rest Pending."""


@dataclass(frozen=True)
class UnitView:
    unit: Unit
    workload: int | None  # index into FleetReport.workloads, None when free
    sharers: tuple[int, ...] = ()  # further workloads on the same device (a shared DRA claim)


@dataclass(frozen=True)
class GpuView:
    product: str
    memory_mib: int | None
    units: tuple[UnitView, ...]

    @property
    def used(self) -> bool:
        return any(u.workload is not None for u in self.units)


@dataclass
class NodeRow:
    names: list[str]
    gpus: tuple[GpuView, ...]
    pods: dict[int, int] = field(default_factory=dict)  # workload index -> pods on each node of the row

    @property
    def count(self) -> int:
        return len(self.names)

    @property
    def shown_names(self) -> list[str]:
        return self.names[:ROW_NAMES_SHOWN]


@dataclass
class PoolView:
    name: str
    rows: list[NodeRow] = field(default_factory=list)

    def _sum(self, per_gpu) -> int:
        return sum(r.count * per_gpu(g) for r in self.rows for g in r.gpus)

    @property
    def nodes(self) -> int:
        return sum(r.count for r in self.rows)

    @property
    def gpus(self) -> int:
        return self._sum(lambda g: 1)

    @property
    def gpus_used(self) -> int:
        return self._sum(lambda g: int(g.used))

    @property
    def mig_slices(self) -> int:
        return self._sum(lambda g: len({u.unit.slot for u in g.units if u.unit.mig_profile}))

    @property
    def mig_slices_used(self) -> int:
        return self._sum(lambda g: len({u.unit.slot for u in g.units if u.unit.mig_profile and u.workload is not None}))

    @property
    def shares(self) -> int:
        return self._sum(lambda g: sum(u.unit.kind in ("mps", "time-slicing") for u in g.units))

    @property
    def shares_used(self) -> int:
        return self._sum(lambda g: sum(u.unit.kind in ("mps", "time-slicing") and u.workload is not None
                                       for u in g.units))


@dataclass
class AddedGroup:
    """A node group's nodes that are not there yet: those its scale-up adds and those already on their way."""

    name: str
    before: int
    """Its target size before the scale-up."""
    after: int
    """Its target size after."""
    on_their_way: int
    """Nodes it had asked for before the scale-up and that have not registered yet."""
    pool: PoolView
    """The nodes, drawn as a pool's, with the pods the autoscaler's simulation puts on them."""


@dataclass
class FleetReport:
    title: str
    pools: list[PoolView]
    workloads: list[WorkloadView]
    warnings: list[tuple[str, str]]
    #: How many more of each standard shape fit after the workloads (gpufleet.scheduling.headroom):
    #: (shape, tolerates the GPU taint, instances, least, most).
    headroom: list[tuple[str, bool, int, int, int]] = field(default_factory=list)
    #: With node groups: what the autoscaler decides, in `check --node-groups`'s words (None without them).
    scale_up: list[str] | None = None
    #: With node groups: per group that gets nodes, the nodes to be added.
    added: list[AddedGroup] = field(default_factory=list)
    #: Workloads that run only by evicting pods of lower priority, with their victims (`check`'s
    #: `fits by preemption`); the evicted running pods are not drawn on the map.
    preemptions: list[Preemption] = field(default_factory=list)

    @property
    def nodes(self) -> int:
        """The nodes there are (not those to be added)."""
        return sum(p.nodes for p in self.pools)

    @property
    def nodes_added(self) -> int:
        return sum(g.pool.nodes for g in self.added)

    @property
    def not_running(self) -> list[WorkloadView]:
        return [w for w in self.workloads if w.verdict in NOT_RUNNING]

    @property
    def after_scale_up(self) -> list[WorkloadView]:
        """Workloads Pending now that run in full once the node groups grew."""
        return [w for w in self.workloads if w.verdict == AFTER_SCALE_UP]

    def pending_in(self, pool: str) -> list[WorkloadView]:
        """Workloads with pods left pending that only lack capacity here (the pool's nodes pass their filters)."""
        return [w for w in self.not_running if pool in w.pools]


def gpu_request(requests: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """The GPU resources (whole, shared, MIG) in an effective pod request."""
    return tuple(sorted((r, n) for r, n in requests.items() if n > 0 and r.startswith("nvidia.com/")
                        and (r.removesuffix(".shared") == GPU or r.startswith(MIG_PREFIX))))


def pool_of_node(node: Node) -> str:
    for label in POOL_LABELS:
        if node.labels.get(label):
            return node.labels[label]
    return node.labels.get("nvidia.com/gpu.product") or "nodes without a pool label"


DRA_CLAIM = "DRA-claimed GPU"
_DRA_GPU = re.compile(r"/gpu-(\d+)$")


def _dra_devices(result: CheckResult, drawn: dict[str, list[tuple[str, Gpu]]],
                 claimed: frozenset[str] = frozenset()) -> dict[str, dict[str, list[int]]]:
    """workload -> node -> the GPU indexes its DRA claims were allocated there: positions among the node's
    GPUs drawn from its ResourceSlices (`drawn`), else the N of a `gpu-N` device. `claimed`: the device
    labels of existing claims' allocations, under RUNNING."""
    position = {node: {label: i for i, (label, _) in enumerate(gpus)} for node, gpus in drawn.items()}
    held = [(RUNNING, node, label) for node, gpus in drawn.items() for label, _ in gpus if label in claimed]
    out: dict[str, dict[str, list[int]]] = {}
    for key, node, label in [*result.device_uses, *held]:
        if node in position:
            at = position[node].get(label)
        else:
            m = _DRA_GPU.search(label)
            at = int(m.group(1)) if m else None
        if at is not None:
            out.setdefault(key, {}).setdefault(node, []).append(at)
    return out


def _assign(gpus: list[Gpu], pods: list[tuple[int, tuple[tuple[str, int], ...]]],
            claimed: dict[int, list[int]] | None = None) -> tuple[GpuView, ...]:
    """Give each pod (workload index, GPU request) the first free units of the resources it asks for; GPUs
    DRA claims were allocated (`claimed`: GPU index -> the workloads using it, first first) are theirs, whole:
    the first owns it, the others share it (a named claim several workloads use)."""
    owner: dict[tuple[int, int], int] = {}
    sharers: dict[tuple[int, int], tuple[int, ...]] = {}
    for g, users in (claimed or {}).items():
        if g < len(gpus) and users:
            owner.update({(g, u): users[0] for u in range(len(gpus[g].units))})
            sharers.update({(g, u): tuple(users[1:]) for u in range(len(gpus[g].units))})
    order = [(g, u) for g, gpu in enumerate(gpus) for u in range(len(gpu.units))]
    for workload, request in pods:
        for resource, n in request:
            for g, u in order:
                if n == 0:
                    break
                if (g, u) not in owner and gpus[g].units[u].resource == resource:
                    owner[(g, u)] = workload
                    n -= 1
    return tuple(GpuView(gpu.product, gpu.memory_mib,
                         tuple(UnitView(unit, owner.get((g, u)), sharers.get((g, u), ()))
                               for u, unit in enumerate(gpu.units)))
                 for g, gpu in enumerate(gpus))


def _verdicts(result: CheckResult) -> dict[str, tuple[str, str, int]]:
    """workload -> (reason, message, pods that do not run). A workload admission let in part of (a quota
    crossed partway) counts its refused and its Pending pods together, both messages kept."""
    out: dict[str, tuple[str, str, int]] = {}
    for u in result.unschedulable:
        message = u.message
        reason: str = u.reason
        if u.refused_by and u.admitted:
            reason = "refused"  # some replicas got in: not the whole workload
            message = (f"{u.pending} of {u.admitted + u.pending} pods refused by {u.refused_by}: {u.message}")
        if u.workload in out:
            before = out[u.workload]
            out[u.workload] = (before[0] if before[0] != "refused" else reason, f"{before[1]}; {message}",
                               before[2] + u.pending)
        else:
            out[u.workload] = (reason, message, u.pending)
    return out


def _blocked(result: CheckResult) -> dict[str, tuple[str, str]]:
    """workload -> (who holds the capacity it needed, the fix), for Pending and warned workloads."""
    out: dict[str, tuple[str, str]] = {}
    entries: list[Unschedulable | CheckWarning] = [*result.unschedulable, *result.warnings]
    for entry in entries:
        if entry.blocked is not None:
            out.setdefault(entry.workload, (entry.blocked.summary, entry.blocked.fix))
    return out


def _pools_passing(w: PodWorkload, requests: dict[str, int], nodes: Sequence[Node], pool_name, ert: bool,
                   known: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The pools with a node whose static filters the workload's pods pass, in node order. `known`: the
    answers so far, by what the filters read of a pod (pending workloads of one shape ask once); a pool that
    has such a node is not asked again."""
    terms = pod_terms(w.spec, requests, ert)
    asked = repr(terms)
    found = known.get(asked)
    if found is None:
        passing: dict[str, None] = {}
        for n in nodes:
            pool = pool_name(n)
            if pool not in passing and static_failure(n, terms) is None:
                passing[pool] = None
        found = known[asked] = tuple(passing)
    return found


def build_report(title: str, nodes: Sequence[Node], running: Sequence[BoundPod], workloads: Sequence[PodWorkload],
                 result: CheckResult, pool_of: dict[str, str] | None = None, *,
                 extended_resource_toleration: bool = False,
                 dra_gpus: dict[str, list[tuple[str, Gpu]]] | None = None,
                 dra_claimed: frozenset[str] = frozenset(), scale_up: ScaleUpVerdicts | None = None,
                 groups: Sequence[NodeGroup] = ()) -> FleetReport:
    """The report of a check: `workloads` as checked (input order), `result` from `check_workloads`.
    `dra_gpus`: per node, the GPUs its ResourceSlices publish (`devices.dra_gpus`), drawn where the node
    advertises none; `dra_claimed`: the device labels (driver/pool/name) of existing claims' allocations,
    drawn as RUNNING's. `scale_up` (with `result` from `check_with_scale_up`) and the node `groups` it grew:
    the verdicts after scale-up, and the nodes to be added drawn apart."""
    ert = extended_resource_toleration

    def pool_name(node: Node) -> str:
        return (pool_of or {}).get(node.name) or pool_of_node(node)

    by_key: dict[str, PodWorkload] = {}
    for workload in workloads:
        by_key.setdefault(workload.key, workload)
    placed: dict[str, list[tuple[str, int]]] = {}
    for key, node_name, n in result.placements:
        placed.setdefault(key, []).append((node_name, n))
    node_by_name = {n.name: n for n in nodes}
    if scale_up is not None:
        node_by_name.update({n.name: n for _, n in scale_up.plan.added})
    verdicts = _verdicts(result)
    scaled = _scaled(scale_up)
    preempting = {p.workload for p in result.preemptions if p.pods}
    blocked = _blocked(result)
    published = dra_gpus or {}
    drawn = {n.name: published[n.name] for n in nodes if n.name in published and not node_gpus(n)}
    dra = _dra_devices(result, drawn, dra_claimed)
    views: list[WorkloadView] = []
    passing_known: dict[str, tuple[str, ...]] = {}
    for key in dict.fromkeys(result.checked):
        w = by_key.get(key)
        if w is None:
            continue
        requests = pod_requests(w.spec) if w.replicas > 0 else {}
        request = gpu_request(requests)
        if not request and key in dra:
            per_pod = max(1, sum(len(g) for g in dra[key].values()) // max(1, sum(n for _, n in placed.get(key, []))))
            request = ((DRA_CLAIM, per_pod),)
        where = placed.get(key, [])
        n_placed = sum(n for _, n in where)
        first = where[0][0] if where else None  # the node whose GPU share the memory bar shows
        if first is None and scale_up is not None:  # it runs only where the scale-up makes room
            first = next(iter(scale_up.plan.placed.get(key, {})), None)
        verdict, message, added, stopped_by = "placed", "", 0, ""
        if key in scaled:
            verdict, added, stopped_by = scaled[key]
            message = verdicts[key][1] if key in verdicts else ""
        elif key in verdicts:
            reason, message, pending = verdicts[key]
            verdict = reason if reason == "rejected" or pending >= w.replicas else "partly"
        elif (w.spec.get("schedulerName") or DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
            verdict = "not checked"
        elif not request:
            verdict = "no GPU"
        elif n_placed < w.replicas:
            verdict = "may pend"  # fits only under another placement: the check's warning says which
        elif key in preempting:
            verdict = PREEMPTS
        budget = node_gpu_memory(node_by_name[first], requests) if first in node_by_name and request else None
        passing = _pools_passing(w, requests, nodes, pool_name, ert, passing_known) \
            if verdict in ("pending", "partly", "never") else ()
        held_by, fix = blocked.get(key, ("", ""))
        bar = _model_bar(w, node_by_name[first], requests) if first in node_by_name and request else None
        views.append(WorkloadView(key, len(views), w.replicas, n_placed, request, w.expected_gpu_memory_mib,
                                  budget[0] if budget else None, budget[2] if budget else "", verdict, message,
                                  passing, held_by, fix, bar, added, stopped_by))
    running_index = None
    per_node: dict[str, list[tuple[int, tuple[tuple[str, int], ...]]]] = {}
    if running or RUNNING in dra:
        running_index = len(views)
        staying = _not_evicted(running, result.preemptions)
        # evicted pods that their controllers made again, where the check placed the new ones
        first_pod: dict[str, BoundPod] = {}
        for p in running:
            first_pod.setdefault(p.key, p)
        remade = [(first_pod[key], node_name) for key, node_name, n in result.remade_placements
                  if key in first_pod for _ in range(n)]
        count = len(staying) + len(remade)
        views.append(WorkloadView(RUNNING, running_index, count, count, (), verdict="running"))
        for pod, node_name in [*((p, p.node) for p in staying), *remade]:
            per_node.setdefault(node_name, []).append((running_index, gpu_request(pod.requests)))
    for view in views[:running_index]:
        for node_name, n in placed.get(view.key, []):
            per_node.setdefault(node_name, []).extend([(view.index, view.gpu_request)] * n)
    index_of = {v.key: v.index for v in views}

    def claims_on(node: str) -> dict[int, list[int]]:
        """GPU index -> the workloads whose DRA claims hold it (a GPU their claims share is split between them)."""
        claimed: dict[int, list[int]] = {}
        for key, devices in dra.items():
            for g in devices.get(node, []):
                users = claimed.setdefault(g, [])
                if key in index_of and index_of[key] not in users:
                    users.append(index_of[key])
        return claimed

    pools = _pool_views(nodes, per_node, pool_name, claims_on, drawn)
    to_add = _added_groups(scale_up, groups, views[:running_index]) if scale_up is not None else []
    warnings = [(w.workload, w.message) for w in result.warnings]
    return FleetReport(title, pools, views, warnings, scale_up=scale_up.lines() if scale_up is not None else None,
                       added=to_add, preemptions=list(result.preemptions))


def _not_evicted(running: Sequence[BoundPod], preemptions: Sequence[Preemption]) -> list[BoundPod]:
    """The running pods less those the preemptions evict: per victim group (workload, node), that many of
    the workload's pods on the node, the last listed first (the check names groups, not pods)."""
    evicting: dict[tuple[str, str], int] = {}
    for p in preemptions:
        for v in p.victims:
            evicting[(v.workload, v.node)] = evicting.get((v.workload, v.node), 0) + v.pods
    kept: list[BoundPod] = []
    for pod in reversed(running):
        where = (pod.key, pod.node)
        if evicting.get(where, 0) > 0:
            evicting[where] -= 1
            continue
        kept.append(pod)
    return kept[::-1]


def _pool_views(nodes: Sequence[Node], per_node: dict[str, list[tuple[int, tuple[tuple[str, int], ...]]]],
                pool_name, claims_on=None, drawn: dict[str, list[tuple[str, Gpu]]] | None = None) -> list[PoolView]:
    """The nodes per pool, each with the pods `per_node` puts on it (workload index, GPU request) on the units
    of its GPUs (`claims_on(node)`: the GPUs DRA claims hold), identical nodes of a pool in one row."""
    pools: dict[str, PoolView] = {}
    rows: dict[tuple, NodeRow] = {}
    for node in nodes:
        pool = pool_name(node)
        pods = per_node.get(node.name, [])
        gpus = _assign(node_gpus(node) or [gpu for _, gpu in (drawn or {}).get(node.name, ())], pods,
                       claims_on(node.name) if claims_on is not None else None)
        counts: dict[int, int] = {}
        for index, _ in pods:
            counts[index] = counts.get(index, 0) + 1
        signature = (pool, gpus, tuple(sorted(counts.items())))
        row = rows.get(signature)
        if row is None:
            row = rows[signature] = NodeRow([], gpus, counts)
            pools.setdefault(pool, PoolView(pool)).rows.append(row)
        row.names.append(node.name)
    for pool_view in pools.values():  # busiest rows first: where the scheduler put pods is not where nodes are listed
        pool_view.rows.sort(key=lambda r: -sum(r.pods.values()))
    return list(pools.values())


def _scaled(scale_up: ScaleUpVerdicts | None) -> dict[str, tuple[str, int, str]]:
    """Workload Pending at first -> (its verdict after scale-up, its pods the scale-up places, what stopped
    the rest), as `check --node-groups` says them."""
    if scale_up is None:
        return {}
    placed = {w: sum(on.values()) for w, on in scale_up.plan.placed.items()}
    out = {w: (AFTER_SCALE_UP, placed.get(w, 0), "") for w in scale_up.after}
    out.update({w: ("partly", running, stop) for w, (running, _, stop) in scale_up.partly.items()})
    out.update({w: ("never", 0, "") for w in scale_up.never})
    return out


def _added_groups(scale_up: ScaleUpVerdicts, groups: Sequence[NodeGroup],
                  views: Sequence[WorkloadView]) -> list[AddedGroup]:
    """Per group with nodes to be added (by the scale-up, or on their way), in the order they come: those
    nodes, with the pods the autoscaler's simulation put on them."""
    plan = scale_up.plan
    new: dict[str, list[Node]] = {}
    for group_name, node in plan.added:
        new.setdefault(group_name, []).append(node)
    per_node: dict[str, list[tuple[int, tuple[tuple[str, int], ...]]]] = {}
    for view in views:
        for name, n in plan.placed.get(view.key, {}).items():
            per_node.setdefault(name, []).extend([(view.index, view.gpu_request)] * n)
    by_name = {g.name: g for g in groups}
    out = []
    for name, members in new.items():
        group = by_name.get(name)
        target = group.target_size if group is not None else 0
        before, after = plan.sizes.get(name, (target, target))
        pool = _pool_views(members, per_node, lambda node, name=name: name)[0]
        out.append(AddedGroup(name, before, after, group.upcoming if group is not None else 0, pool))
    return out

def _model_bar(w, node: Node, requests: dict[str, int]) -> ModelBar | None:
    """The engine's start-up of a workload's model on the node it landed on; None without a usable model."""
    from gpufleet.capacity.model_fit import MODEL_ANNOTATION, node_device, read_annotation
    from gpufleet.errors import InputError
    from gpufleet.nvidia.model_memory.verdict import assess

    raw = (w.annotations or {}).get(MODEL_ANNOTATION)
    if raw is None:
        return None
    device = node_device(node, requests)
    if device is None:
        return None
    try:
        served = read_annotation(w.key, raw)
    except InputError:
        return None
    a = assess(w.key, served, device)
    s, mib = a.startup, 1 << 20
    return ModelBar(s.visible // mib, s.requested // mib, s.weights // mib,
                    (s.activation + s.non_torch + s.cudagraph) // mib, max(s.kv_available, 0) // mib, s.kv_tokens,
                    s.max_concurrency, served.args.max_model_len, served.args.max_num_seqs, a.error is None)
