"""The scale-up loop (core/scaleup/orchestrator, cluster-autoscaler-1.34.5), run as the autoscaler runs it
once per loop until nothing more is added.

One pass:
1. pods that fit the nodes on their way (upcoming: a group's target size above the nodes it has, and what
   earlier passes added) are no longer pending, higher priority first, walking the nodes round robin. The
   nodes on their way are fresh each pass: every pending pod is placed again, as each loop of the autoscaler
   builds its snapshot anew;
2. the node groups that can grow: below their max size, and adding one node keeps the cluster within its GPU
   limit (otherwise skipped, with the reason);
3. per group, the pending pod groups whose exemplar passes the filters on the group's template (with the
   DaemonSet pods a new node runs), and the binpacking estimate for them: an option;
4. the expander picks one option; its node count is capped by --max-nodes-total, the GPU limit and the group's
   max size; the group's target grows by that much.
Pods below the expendable priority cutoff (-10 unless given) are never scaled for.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

from gpufleet.autoscaler.estimator import MAX_NODES_PER_SCALEUP, PodGroup, estimate, node_limit
from gpufleet.autoscaler.expander import Option, best_option
from gpufleet.autoscaler.limits import GpuLimit
from gpufleet.autoscaler.nodegroups import NodeGroup, copy_of
from gpufleet.autoscaler.priorities import Priorities
from gpufleet.autoscaler.simulator import FreshNode, PendingPod, Rooms, round_robin
from gpufleet.capacity.model import Node

GPU = "nvidia.com/gpu"
MAX_GROUP = "max node group size reached"
MAX_TOTAL = "max cluster size reached (--max-nodes-total)"
#: The most nodes the simulation adds in all, whatever the groups' max sizes allow: Kubernetes' largest supported
#: cluster (5,000 nodes, kubernetes.io/docs/setup/best-practices/cluster-large). The autoscaler itself has no
#: such bound; no real answer needs more, and pods by the million are not simulated node by node.
MOST_ADDED = 5000
MOST_ADDED_REASON = "gpufleet adds at most 5,000 nodes in all (Kubernetes' largest supported cluster)"
MAX_GPU = "max cluster gpu limit reached (--gpu-total)"
EXPENDABLE = "priority below the expendable pods cutoff: the autoscaler does not scale up for it"
NOT_READY = "not ready for scale-up"
#: A group with nodes it did not ask for still on their way is unhealthy, and not scaled up, when those are
#: more than this many and more than this share of its registered nodes, or when it has none registered
#: (clusterstate IsNodeGroupHealthy; --ok-total-unready-count, --max-total-unready-percentage).
OK_TOTAL_UNREADY = 3
MAX_TOTAL_UNREADY_SHARE = 0.45
NO_GPU = "its template declares no nvidia.com/gpu, so a node added from zero holds none: "
NO_GPU_TEMPLATE = (NO_GPU + "give the template the GPUs its nodes have (Cluster API: the MachineDeployment's "
                   "capacity.cluster-autoscaler.kubernetes.io/gpu-count and gpu-type annotations; AKS: a GPU VM "
                   "size for the pool; a --node-groups file: status.allocatable and capacity)")
#: Passes of the loop at most (each adds at least one node; the groups' room bounds them long before).
_PASSES = 10_000


@dataclass
class Pending:
    """A workload's pods left Pending by the scheduler."""

    workload: str
    spec: dict
    pod: PendingPod
    count: int
    priority: int = 0
    requests: tuple[int, int] = (0, 0)
    """One pod's effective cpu (milli) and memory (bytes) requests (least-waste counts them)."""


@dataclass
class ScaleUpPlan:
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per group that grows: (target size before, after)."""
    picks: list[tuple[str, int, str]] = field(default_factory=list)
    """Per pass that added nodes: (group, nodes added, what else the expander weighed: other options)."""
    differ: list[tuple[str, str, str]] = field(default_factory=list)
    """Per pass where another expander would pick another group among the same options: (the group picked,
    the other expander, the group it would pick)."""
    reasons: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per workload, per group that cannot take its pods: why (the filter's words, or the group's cap)."""
    caps: dict[str, str] = field(default_factory=dict)
    """Per workload whose pods a cap left Pending where a group could have taken them: which cap."""
    expendable: list[str] = field(default_factory=list)
    added: list[tuple[str, Node]] = field(default_factory=list)
    """The nodes added and on their way: (group, node), node names `<group>-new-<i>`."""
    placed: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per workload, the pods the autoscaler's simulation put on each node on its way (or freed of expendable
    pods), by node name: what it counts as placed once it has scaled up."""
    still: dict[str, int] = field(default_factory=dict)
    """Per workload, the pods still Pending in the autoscaler's view when it adds nothing more."""


def _gpus(node: Node) -> int:
    return node.capacity.get(GPU, node.allocatable.get(GPU, 0))


class _Groups:
    def __init__(self, groups: list[NodeGroup], daemonsets: list[PendingPod]):
        self.groups = groups
        self.daemonsets = daemonsets
        self._ds: dict[str, list[PendingPod]] = {}
        self._static: dict[str, dict[int, str | None]] = {}  # per group: its template's static filter answers

    def fresh(self, group: NodeGroup, name: str | None = None) -> FreshNode:
        node = FreshNode(group.template if name is None else copy_of(group.template, name),
                         self._static.setdefault(group.name, {}))
        found = self._ds.get(group.name)
        if found is None:  # the DaemonSets whose pods a new node of the group runs (placement rules, not room)
            # A template made from a node of the group holds the DaemonSet pods that node runs, which the
            # running pods already show; only a group with no node gets every DaemonSet that would run there
            # (SanitizedTemplateNodeInfoFromNodeInfo's forceDaemonSets).
            found = self._ds[group.name] = [] if group.members else [
                d for d in self.daemonsets if not _placement_failure(node, d)]
        for pod in found:
            node.add(pod)
        return node


def _placement_failure(node: FreshNode, pod: PendingPod) -> bool:
    from gpufleet.scheduler.filters import static_failure

    return static_failure(node.node, pod.terms) is not None


def unhealthy(group: NodeGroup) -> bool:
    """Whether the autoscaler counts the group unhealthy at the start: nodes on their way that it did not ask
    for, with none registered, or more than it tolerates."""
    waiting, registered = group.upcoming, len(group.members)
    if not waiting:
        return False
    return not registered or (waiting > OK_TOTAL_UNREADY and waiting > MAX_TOTAL_UNREADY_SHARE * registered)


def plan_scale_up(groups: list[NodeGroup], pending: list[Pending], nodes: list[Node],
                  daemonsets: Sequence[PendingPod] = (), *, max_nodes_total: int = 0,
                  gpu_total: Sequence[GpuLimit] = (), expander: str = "least-waste", seed: int = 0,
                  expendable_cutoff: int = -10, freed: Sequence[FreshNode] = (),
                  priorities: Priorities | None = None) -> ScaleUpPlan:
    """`freed`: existing nodes as the autoscaler sees them where expendable pods run (it counts their room
    free, as preemption would make it): pending pods that fit there are not scaled for."""
    rng = random.Random(seed)
    plan = ScaleUpPlan()
    made = _Groups(groups, list(daemonsets))
    target = {g.name: g.target_size for g in groups}
    members = {name for g in groups for name in g.members}
    on_way: list[tuple[NodeGroup, str]] = []  # the nodes on their way: (group, node name)
    for g in groups:
        for _ in range(g.upcoming):
            _add(plan, made, on_way, g)
    limits = list(gpu_total)
    gpus_outside = [sum(gl.gpus(n) for n in nodes if n.name not in members) for gl in limits]
    left = []
    for p in pending:
        if p.priority < expendable_cutoff:
            plan.expendable.append(p.workload)
        else:
            left.append(p)
    not_ready = {g.name for g in groups if unhealthy(g)}
    walk = _Walk()  # where the simulator's next search over nodes starts, kept across passes
    grown = 0  # nodes added by the passes, in all
    freed_names = {f.node.name for f in freed}
    kept: dict[str, dict[str, int]] = {}  # pods on existing nodes freed of expendable pods: they stay there
    remaining = left
    for _ in range(_PASSES):
        # Every pass places the pending pods again on fresh nodes on their way, as each loop of the autoscaler
        # builds its snapshot anew: what an earlier pass put there is not remembered (those pods are still
        # Pending), so pods of another workload may take that room this time.
        took: dict[str, dict[str, int]] = {}
        remaining = _not_on([*freed, *(made.fresh(g, name) for g, name in on_way)], left, walk, took)
        left = _keep_freed(left, took, freed_names, kept)
        plan.placed = _merged_counts(kept, {w: {n: k for n, k in on.items() if n not in freed_names}
                                            for w, on in took.items()})
        if not remaining:
            break
        current = len(nodes) + sum(max(target[g.name] - len(g.members), 0) for g in groups)
        gpus_now = [outside + sum(target[g.name] * gl.gpus(g.template) for g in groups)
                    for gl, outside in zip(limits, gpus_outside, strict=True)]
        options: list[Option] = []
        for g in groups:
            skip = None
            if g.cannot_scale:
                skip = g.cannot_scale
            elif g.name in not_ready:
                skip = NOT_READY
            elif target[g.name] >= g.max_size:
                skip = MAX_GROUP
            elif any(gl.gpus(g.template) and now + gl.gpus(g.template) > gl.high
                     for gl, now in zip(limits, gpus_now, strict=True)):
                skip = MAX_GPU
            if skip is not None:
                for p in remaining:
                    plan.reasons.setdefault(p.workload, {})[g.name] = skip
                continue
            template = made.fresh(g)
            fits = []
            for p in remaining:
                failure = template.failure(p.pod)
                if failure:
                    words = ", ".join(failure)
                    if f"Insufficient {GPU}" in failure and GPU not in g.template.allocatable and not g.members:
                        words += f" ({NO_GPU + g.gpu_fix if g.gpu_fix else NO_GPU_TEMPLATE})"
                    plan.reasons.setdefault(p.workload, {})[g.name] = words
                else:
                    fits.append(PodGroup(p.workload, p.spec, p.pod, p.count))
            if not fits:
                continue
            room = (max_nodes_total - current) if max_nodes_total else MAX_NODES_PER_SCALEUP
            limit = node_limit(MAX_NODES_PER_SCALEUP, g.max_size - target[g.name], room, MOST_ADDED - grown)
            if limit <= 0:
                for f in fits:
                    plan.reasons.setdefault(f.workload, {})[g.name] = MAX_TOTAL if room <= 0 else MOST_ADDED_REASON
                continue
            count, placed = estimate(fits, partial(made.fresh, g), limit)
            if count and placed:
                by = {p.workload: p for p in remaining}
                cpu = sum(by[w].requests[0] * n for w, n in placed.items())
                memory = sum(by[w].requests[1] * n for w, n in placed.items())
                options.append(Option(g.name, count, placed, (cpu, memory), g.template))
        if not options:
            break
        best = best_option(options, expander, rng, priorities)
        for other in ("least-waste", "most-pods"):
            if other != expander:
                alone = _alone(options, other)
                if alone is not None and alone.group != best.group:
                    plan.differ.append((best.group, other, alone.group))
        group = next(g for g in groups if g.name == best.group)
        new, cap = best.nodes, ""
        if max_nodes_total and current + new > max_nodes_total:
            new, cap = max_nodes_total - current, MAX_TOTAL
        for gpu_limit, now in zip(limits, gpus_now, strict=True):
            per_node = gpu_limit.gpus(group.template)
            if per_node and now + new * per_node > gpu_limit.high:
                new, cap = (gpu_limit.high - now) // per_node, MAX_GPU
        if target[group.name] + new > group.max_size:
            new, cap = group.max_size - target[group.name], MAX_GROUP
        if grown + new > MOST_ADDED:
            new, cap = MOST_ADDED - grown, MOST_ADDED_REASON
        if new <= 0:
            break
        if cap:
            for w in best.placed:
                plan.caps[w] = cap
        others = ", ".join(f"{o.group} ({o.nodes} node(s))" for o in options if o is not best)
        plan.picks.append((group.name, new, others))
        before = plan.sizes.get(group.name, (target[group.name], 0))[0]
        target[group.name] += new
        grown += new
        plan.sizes[group.name] = (before, target[group.name])
        for _ in range(new):
            _add(plan, made, on_way, group)
    plan.still = {p.workload: p.count for p in remaining}
    return plan


def _add(plan: ScaleUpPlan, made: _Groups, on_way: list[tuple[NodeGroup, str]], group: NodeGroup) -> None:
    """One more node of the group on its way, named `<group>-new-<i>`."""
    name = f"{group.name}-new-{sum(1 for g, _ in on_way if g.name == group.name)}"
    on_way.append((group, name))
    plan.added.append((group.name, made.fresh(group, name).node))


def _keep_freed(left: list[Pending], took: dict[str, dict[str, int]], freed: set[str],
                kept: dict[str, dict[str, int]]) -> list[Pending]:
    """`left` less the pods placed on existing nodes freed of expendable pods, which stay placed (the
    scheduler binds them there); `kept` counts them."""
    if not freed:
        return left
    out = []
    for p in left:
        on = {n: k for n, k in took.get(p.workload, {}).items() if n in freed}
        for n, k in on.items():
            mine = kept.setdefault(p.workload, {})
            mine[n] = mine.get(n, 0) + k
        count = p.count - sum(on.values())
        if count:
            out.append(Pending(p.workload, p.spec, p.pod, count, p.priority, p.requests))
    return out


def _merged_counts(a: dict[str, dict[str, int]], b: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    out = {w: dict(on) for w, on in a.items()}
    for w, on in b.items():
        mine = out.setdefault(w, {})
        for n, k in on.items():
            mine[n] = mine.get(n, 0) + k
    return {w: on for w, on in out.items() if on}


def _alone(options: list[Option], expander: str) -> Option | None:
    """The option an expander picks with no tie left to chance; None where it leaves a tie."""
    from gpufleet.autoscaler.expander import most_pods_or_least_waste

    found = most_pods_or_least_waste(options, expander)
    return found[0] if len(found) == 1 else None


class _Walk:
    """The predicate runner's round-robin position: the next search starts at the node after `last`'s."""

    last = 0


def _not_on(upcoming: list[FreshNode], pending: list[Pending], walk: _Walk,
            placed: dict[str, dict[str, int]]) -> list[Pending]:
    """What stays pending once the nodes on their way took what fits, higher priority first; the nodes keep
    what they took, and `placed` counts it (workload -> node name -> pods).

    As the autoscaler's simulator walks nodes: each pod goes to the first node that fits, searching from the
    node after the one the previous pod went to (its predicate runner's round robin), so equal pods spread
    one a node per round while nodes have room. A pod that fits nowhere stops its workload's others."""
    import numpy as np

    out = []
    n = len(upcoming)
    last = walk.last % n if n else 0
    runs: dict[int, tuple[FreshNode, list[int]]] = {}  # copies of one template share its static answers
    for i, node in enumerate(upcoming):
        runs.setdefault(id(node.static), (node, []))[1].append(i)
    members = [(first, np.array(at, dtype=np.int64)) for first, at in runs.values()]
    rooms = Rooms(upcoming, [p.pod for p in pending])
    for p in sorted(pending, key=lambda p: -p.priority):
        left = p.count
        if n:
            # The walk from `last`, over the nodes whose template does not refuse the pod (the others have no room).
            fit = np.sort(np.concatenate([at for first, at in members if first.static_failure(p.pod) is None]
                                         or [np.zeros(0, dtype=np.int64)]))
            walked = np.concatenate((fit[fit >= last], fit[fit < last]))
            room = rooms.rooms(p.pod, walked)
            order = walked[room > 0].tolist()  # the walk passes full nodes by
            take, after = round_robin(room[room > 0].tolist(), left)
            for j, k in zip(order, take, strict=True):
                if k:
                    rooms.add(j, p.pod, k)
                    on = placed.setdefault(p.workload, {})
                    on[upcoming[j].node.name] = on.get(upcoming[j].node.name, 0) + k
                    left -= k
            if after is not None:
                last = (order[after] + 1) % n
        if left:
            out.append(Pending(p.workload, p.spec, p.pod, left, p.priority, p.requests))
    walk.last = last
    return out


