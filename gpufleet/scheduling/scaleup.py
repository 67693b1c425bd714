"""`check --node-groups`: the verdicts of a cluster that autoscales (docs/autoscaling.md).

The scheduler runs first on the nodes there are. The pods it leaves Pending go to the autoscaler's scale-up
loop (gpufleet.autoscaler), which decides how many nodes each group adds and, in its own simulation, which
pods they hold. The verdicts are that view, once it adds nothing more (a live autoscaler keeps adding until
it holds). Per workload Pending at first:
- every pod placed by the autoscaler's view: it runs after scale-up (`scaleUp`: the groups its pods went to);
- some: partly, naming what stopped the rest (a group's max size, --max-nodes-total, --gpu-total);
- none: never, with every group's reason (the filter's words on its template, or its cap).
Exit 0 when everything runs now or after scale-up.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpufleet.admission.priority import priority_classes
from gpufleet.autoscaler.limits import GpuLimit
from gpufleet.autoscaler.nodegroups import NodeGroup
from gpufleet.autoscaler.orchestrator import (
    EXPENDABLE,
    MAX_GPU,
    MAX_GROUP,
    MAX_TOTAL,
    MOST_ADDED,
    Pending,
    ScaleUpPlan,
    plan_scale_up,
)
from gpufleet.autoscaler.priorities import Priorities
from gpufleet.autoscaler.simulator import pending_pod
from gpufleet.capacity.kubectl import bound_pods, node_from_object
from gpufleet.capacity.model import BoundPod, Node
from gpufleet.capacity.quantity import CPU, MEMORY
from gpufleet.capacity.requests import pod_requests
from gpufleet.gc_pause import collector_paused
from gpufleet.manifests.workloads import flatten, workloads_of
from gpufleet.scheduling.engine import Spreading, check_workloads
from gpufleet.scheduling.result import CheckResult


@dataclass
class ScaleUpOptions:
    max_nodes_total: int = 0
    gpu_total: tuple[GpuLimit, ...] = ()
    """The GPU limits (`--gpu-total [TYPE:]MIN:MAX`, once per type)."""
    expander: str = "least-waste"
    expendable_cutoff: int = -10
    seed: int = 0
    priorities: Priorities | None = None
    """The priority expander's configuration (`--priority-config`), for `priority` in the expander chain."""


@dataclass
class ScaleUpVerdicts:
    plan: ScaleUpPlan
    expander: str = "least-waste"
    after: dict[str, dict[str, int]] = field(default_factory=dict)
    """Workloads that run once the groups grew: per group, how many of its pods went to new nodes."""
    partly: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    """Workloads of which only some pods run after scale-up: (running, wanted, what stopped the rest)."""
    never: dict[str, dict[str, str]] = field(default_factory=dict)
    """Workloads no scale-up helps: per group, why."""
    went: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per workload Pending at first: per group, its pods on the added nodes."""
    nodes: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per workload Pending at first: per group, the added nodes its pods went to."""
    freed: dict[str, int] = field(default_factory=dict)
    """Per workload Pending at first: its pods placed on existing nodes where expendable pods run (the
    autoscaler counts that room free, as preemption would make it)."""

    def lines(self) -> list[str]:
        """What the text output says of the scale-up, before the table."""
        if not self.plan.sizes:
            out = ["scale-up: none (every Pending pod fits the nodes there are, or no node group helps)"]
        else:
            out = ["scale-up: " + ", ".join(f"{g} {a} -> {b} (+{b - a} node(s))"
                                           for g, (a, b) in self.plan.sizes.items())]
        for group, added, others in self.plan.picks:
            if others:
                out.append(f"  expander {self.expander} picked {group} (+{added}) over {others}")
        for group, other, instead in self.plan.differ:
            out.append(f"  note: --expander {other} would pick {instead} where {self.expander} picked {group}")
        for w, by in self.after.items():
            where = [f"{g}: {n} pod(s) on {self.nodes[w].get(g, 0)} new node(s)" for g, n in by.items()]
            if self.freed.get(w):
                where.append(f"{self.freed[w]} pod(s) where expendable pods are preempted for it")
            out.append(f"after scale-up: {w} runs ({', '.join(where)})")
        return out

    def to_json(self) -> dict:
        return {"scaleUps": [{"nodeGroup": g, "from": a, "to": b} for g, (a, b) in self.plan.sizes.items()],
                "expander": self.expander,
                "otherExpanders": [{"picked": g, "expander": e, "wouldPick": i} for g, e, i in self.plan.differ],
                "scaledFor": [{"workload": w, "scaleUp": [{"nodeGroup": g, "nodes": self.nodes[w].get(g, 0), "pods": n}
                                                          for g, n in by.items()],
                               "onExpendableRoom": self.freed.get(w, 0)}
                              for w, by in self.after.items()]}


@collector_paused()  # the loop makes no reference cycles; collections would only rescan the inputs
def check_with_scale_up(nodes: list[Node], pods: list[BoundPod], objects: list[dict], groups: list[NodeGroup],
                        options: ScaleUpOptions, *, extended_resource_toleration: bool = False,
                        default_spreading: Spreading = "direct",
                        ) -> tuple[CheckResult, ScaleUpVerdicts]:
    nodes = [n if isinstance(n, Node) else node_from_object(n) for n in nodes]
    # The scheduler's preemption is left out here: the autoscaler counts the room of expendable pods as free
    # (what preemption gives them), and its recorded runs place pods without preemption (docs/autoscaling.md).
    first = check_workloads(nodes, pods, objects, extended_resource_toleration=extended_resource_toleration,
                            preemption=False, default_spreading=default_spreading)
    flat = list(flatten(objects))
    workloads = {w.key: w for w in workloads_of(flat)}
    known = priority_classes(flat)
    priority = {key: known.of(w.spec) for key, w in workloads.items()}
    expendable = {key for key, value in priority.items() if value < options.expendable_cutoff}
    pending = []
    for u in first.unschedulable:
        w = workloads.get(u.workload)
        if u.reason != "pending" or w is None or u.pending <= 0:
            continue
        requests = pod_requests(w.spec)
        pod = pending_pod(w.spec, w.namespace, w.labels, extended_resource_toleration)
        pending.append(Pending(w.key, w.spec, pod, u.pending, priority[w.key],
                               (requests.get(CPU, 0), requests.get(MEMORY, 0))))
    daemonsets = [pending_pod(w.spec, w.namespace, w.labels, daemonset=True)
                  for w in (_daemonset(o) for o in flat) if w is not None]
    freed = _freed(nodes, pods, first.placements, workloads, expendable)
    plan = plan_scale_up(groups, pending, nodes, daemonsets, max_nodes_total=options.max_nodes_total,
                         gpu_total=options.gpu_total, expander=options.expander, seed=options.seed,
                         priorities=options.priorities,
                         expendable_cutoff=options.expendable_cutoff, freed=freed)
    verdicts = ScaleUpVerdicts(plan, options.expander)
    if not pending:
        return first, verdicts
    # The verdicts are the autoscaler's own view once it adds nothing more: the pods its simulation put on the
    # nodes it added (or on nodes it counts freed of expendable pods), and those still Pending. On a live
    # cluster it keeps adding until that view holds; the scheduler's own placement on the new nodes can differ.
    group_of = {node.name: group for group, node in plan.added}
    for p in pending:
        if p.workload in expendable:  # not scaled for, and no competitor for the new room
            verdicts.never[p.workload] = {g.name: EXPENDABLE for g in groups}
            continue
        on = plan.placed.get(p.workload, {})
        went: dict[str, int] = {}
        used: dict[str, int] = {}
        for name, count in on.items():
            if name in group_of:
                went[group_of[name]] = went.get(group_of[name], 0) + count
                used[group_of[name]] = used.get(group_of[name], 0) + 1
        verdicts.nodes[p.workload] = used
        verdicts.went[p.workload] = went
        verdicts.freed[p.workload] = sum(count for name, count in on.items() if name not in group_of)
        still = plan.still.get(p.workload, 0)
        if not still:
            verdicts.after[p.workload] = went
        elif still < p.count:
            stop = plan.caps.get(p.workload) or _why(plan, p.workload)
            verdicts.partly[p.workload] = (p.count - still, p.count, stop)
        else:
            reasons = dict(plan.reasons.get(p.workload, {}))
            verdicts.never[p.workload] = reasons or {g.name: "no scale-up was needed by its pods' groups"
                                                     for g in groups}
    result = _merged(first, verdicts)
    return result, verdicts


def _freed(nodes: list[Node], pods: list, placements: list[tuple[str, str, int]], workloads: dict,
           expendable: set[str]) -> list:
    """The existing nodes where expendable pods of the check were placed, as the autoscaler sees them: holding
    the other pods only."""
    from gpufleet.autoscaler.simulator import FreshNode

    where = {node for w, node, _ in placements if w in expendable}
    if not where:
        return []
    out = {n.name: FreshNode(n) for n in nodes if n.name in where}
    for bound in [p for p in pods if isinstance(p, BoundPod)] + bound_pods([p for p in pods if isinstance(p, dict)]):
        node = out.get(bound.node)
        if node is not None:
            node.add(pending_pod({}, bound.namespace, {}))  # one pod more on it
            for r, v in bound.requests.items():
                node.requested[r] = node.requested.get(r, 0) + v
    for w, name, count in placements:
        node = out.get(name)
        if node is not None and w not in expendable and w in workloads:
            pod = pending_pod(workloads[w].spec, workloads[w].namespace, workloads[w].labels)
            for _ in range(count):
                node.add(pod)
    return list(out.values())








def _why(plan: ScaleUpPlan, workload: str) -> str:
    """What stopped a workload's pods after some were placed: the caps of the groups that could take them,
    else every group's reason."""
    reasons = plan.reasons.get(workload, {})
    caps = {g: r for g, r in reasons.items() if r in (MAX_GROUP, MAX_TOTAL, MAX_GPU)}
    return "; ".join(f"{g}: {r}" for g, r in (caps or reasons).items()) or "the scheduler left them Pending"


def _runs_on(pod, node: Node) -> bool:
    from gpufleet.scheduler.filters import static_failure

    return static_failure(node, pod.terms) is None


def _daemonset(obj: dict):
    """A DaemonSet as a workload of one pod (its template), else None."""
    if obj.get("kind") != "DaemonSet":
        return None
    from gpufleet.manifests.workloads import workload_of

    as_set = {**obj, "kind": "ReplicaSet", "spec": {**(obj.get("spec") or {}), "replicas": 1}}
    return workload_of(as_set)


def _merged(first: CheckResult, verdicts: ScaleUpVerdicts) -> CheckResult:
    """The check's result with scale-up: workloads that run after it leave `unschedulable`; those that stay
    Pending carry the scheduler's words on the cluster as it is and the autoscaler's."""
    out = CheckResult(checked=first.checked, warnings=first.warnings, memory=first.memory,
                      placements=first.placements, devices=first.devices, device_uses=first.device_uses,
                      pending_by_run=first.pending_by_run)
    for u in first.unschedulable:
        if u.reason != "pending" or u.workload in verdicts.after:
            if u.reason != "pending":
                out.unschedulable.append(u)
            continue
        if u.workload in verdicts.partly:
            running, wanted, stop = verdicts.partly[u.workload]
            went = {g: n for g, n in verdicts.went.get(u.workload, {}).items() if n}
            out.unschedulable.append(replace(
                u, reason="partly", pending=wanted - running, scale_up=went, stopped_by=stop, blocked=None,
                on_expendable_room=verdicts.freed.get(u.workload, 0),
                message=f"{u.message} Scale-up places {running} of its {wanted} Pending pod(s); the rest stay "
                        f"Pending: {stop}."))
        elif u.workload in verdicts.never:
            groups = verdicts.never[u.workload]
            words = "; ".join(f"{g}: {r}" for g, r in groups.items())
            out.unschedulable.append(replace(u, reason="never", groups=groups,
                                             message=f"{u.message} No node group helps: {words}."))
        else:
            out.unschedulable.append(u)
    return out


@dataclass
class GrownFleet:
    """The fleet with its node groups grown (`grown_fleet`)."""

    nodes: list[Node]
    pods: list
    """The running pods, with the DaemonSet pods of the added nodes."""
    added: dict[str, int]
    """Nodes added per group (nodes on their way included), groups that add none left out."""
    at_max: dict[str, int]
    """Nodes each group would add at its max size, caps aside."""
    capped_by: tuple[str, ...] = ()
    """The cluster caps that kept a group below its max size: `--max-nodes-total N`, `--gpu-total MIN:MAX`."""
    per_gpu: bool = False
    """Whether the caps' room went to the groups by the probe's copies per GPU (under --gpu-total), else per node."""


def grown_fleet(nodes: list[Node], pods: list, objects: list[dict], groups: list[NodeGroup],
                options: ScaleUpOptions | None = None, probe: dict | None = None, *,
                extended_resource_toleration: bool = False) -> GrownFleet:
    """The fleet once every node group that can grow has grown to its max size (its nodes on their way
    included; a group the autoscaler counts unhealthy gets only those), as far as the cluster's caps allow.
    `headroom --node-groups` counts on it.

    The caps (`options`: --max-nodes-total, the MAX of --gpu-total) count as the autoscaler counts them: every
    node, those on their way too, and for a group's nodes its template's GPUs. Nodes on their way are there
    whatever the caps. Where the caps leave less room than the groups want, it goes first to the groups whose
    new node holds the most copies of `probe` (per GPU of the node under --gpu-total), ties in the file's
    order: the most the autoscaler could reach for that probe, whichever groups it picks."""
    from gpufleet.autoscaler.nodegroups import copy_of
    from gpufleet.autoscaler.orchestrator import unhealthy

    flat = list(flatten(objects))
    daemonsets = [pending_pod(w.spec, w.namespace, w.labels, daemonset=True)
                  for w in (_daemonset(o) for o in flat) if w is not None]
    at_max = {g.name: 0 if unhealthy(g) or g.cannot_scale else max(g.max_size - g.target_size, 0) for g in groups}
    grow, capped_by = _within_caps(nodes, groups, at_max, options, lambda g: _copies_per_node(
        g, daemonsets, flat, probe, extended_resource_toleration))
    added: list[Node] = []
    per_group: dict[str, int] = {}
    held = []
    for g in groups:
        count = g.upcoming + grow[g.name]
        made = [copy_of(g.template, f"{g.name}-new-{i}") for i in range(count)]
        added += made
        if not g.members:  # as the scale-up loop: a group with a node has its template's DaemonSet pods already
            held += _daemonset_pods(made, daemonsets)
        if count > 0:
            per_group[g.name] = count
    most = {g.name: g.upcoming + at_max[g.name] for g in groups if g.upcoming + at_max[g.name]}
    per_gpu = options is not None and bool(options.gpu_total)
    return GrownFleet([*nodes, *added], [*pods, *held], per_group, most, capped_by, per_gpu)


#: `grown_fleet` adds no more nodes in all than the scale-up loop does (orchestrator.MOST_ADDED).
MOST_ADDED_NAME = f"{MOST_ADDED:,} nodes added (Kubernetes' largest supported cluster)"


def _within_caps(nodes: list[Node], groups: list[NodeGroup], wanted: dict[str, int],
                 options: ScaleUpOptions | None, copies) -> tuple[dict[str, int], tuple[str, ...]]:
    """Nodes each group adds above its target size within --max-nodes-total and each --gpu-total's MAX, and
    the caps that bound; `copies(group)`: the probe's copies on one new node of it (asked only under a cap)."""
    from gpufleet.autoscaler.orchestrator import _gpus

    total = options.max_nodes_total if options is not None else 0
    limits = list(options.gpu_total) if options is not None else []
    if not total and not limits and sum(wanted.values()) <= MOST_ADDED:
        return dict(wanted), ()
    members = {name for g in groups for name in g.members}
    infinite = float("inf")
    node_room = total - len(nodes) - sum(g.upcoming for g in groups) if total else infinite
    cap_name = f"--max-nodes-total {total}"
    if node_room > MOST_ADDED:
        node_room, cap_name = MOST_ADDED, MOST_ADDED_NAME
    gpu_rooms = [limit.high - sum(limit.gpus(n) for n in nodes if n.name not in members)
                 - sum(g.target_size * limit.gpus(g.template) for g in groups) for limit in limits]
    growing = [g for g in groups if wanted[g.name]]
    if len(growing) > 1:  # a stable sort: ties stay in the file's order

        def rank(g: NodeGroup) -> float:  # a node without GPUs takes none of the GPU caps' room
            n, gpus = copies(g), _gpus(g.template)
            return -(n / gpus if limits and gpus else n)

        growing.sort(key=rank)
    grow = dict.fromkeys(wanted, 0)
    bound: list[str] = []
    for g in growing:
        per_node = [limit.gpus(g.template) for limit in limits]
        rooms = [(cap_name, node_room)] + [(limit.flag, room // per if per else infinite)
                                           for limit, room, per in zip(limits, gpu_rooms, per_node, strict=True)]
        least = min(room for _, room in rooms)
        give = int(max(min(wanted[g.name], least), 0))
        if give < wanted[g.name]:
            bound += [name for name, room in rooms if room <= least]
        grow[g.name] = give
        node_room -= give
        gpu_rooms = [room - give * per for room, per in zip(gpu_rooms, per_node, strict=True)]
    return grow, tuple(dict.fromkeys(bound))


def _copies_per_node(group: NodeGroup, daemonsets: list, objects: list[dict], probe: dict | None,
                     ert: bool) -> int:
    """How many copies of the probe one new node of the group holds (with the DaemonSet pods it runs)."""
    if probe is None:
        return 0
    from gpufleet.autoscaler.nodegroups import copy_of
    from gpufleet.manifests.workloads import workload_of
    from gpufleet.scheduling.headroom import headroom

    node = copy_of(group.template, f"{group.name}-new-0")
    held = [] if group.members else _daemonset_pods([node], daemonsets)
    beside = [o for o in objects if workload_of(o) is None]  # classes and claims, not the workloads placed first
    return headroom([node], held, beside, probe, extended_resource_toleration=ert, tie_runs=1).instances


def _daemonset_pods(nodes: list[Node], daemonsets: list) -> list[BoundPod]:
    """The DaemonSet pods each of these new nodes runs, as running pods."""
    return [BoundPod("kube-system", f"{node.name}-ds-{i}", node.name, dict(ds.requests), ports=ds.ports)
            for node in nodes for i, ds in enumerate(d for d in daemonsets if _runs_on(d, node))]
