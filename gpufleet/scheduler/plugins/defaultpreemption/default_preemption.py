"""DefaultPreemption: the PostFilter that, when a pod fits no node, looks for a node where evicting pods of lower
priority makes it fit, and nominates it (gpufleet.scheduler.framework.preemption weighs victims and nodes).

- A pod whose preemptionPolicy is Never (its own, or its PriorityClass's) preempts nothing.
- The nodes looked at are those that failed a filter that evictions could change (resources, pod count, host
  ports, topology spread skew, pod anti-affinity): a node that fails a filter reading only the pod and the node
  (taints, node affinity, cordon), or whose first failing filter is a spread constraint's missing label or the
  pod's own unmet pod affinity, is left out, as upstream leaves out nodes whose status is
  UnschedulableAndUnresolvable.
- A pod with topology spread or pod (anti-)affinity (`Preemptor.constraints`) is asked its filters on each
  node with the victims taken off: their labels leave the pods the constraints count, and their own terms
  leave with them (upstream's PreFilterExtensions RemovePod and AddPod).
- Upstream does not try every such node: it wants max(10% of them, 100) candidates, capped at their number,
  and starts at a random offset among them, stopping once it has that many candidates, at least one of them
  breaking no PodDisruptionBudget. The offset here is drawn from the run's seeded generator, so one run is
  reproducible and the check's several runs see several offsets (a draw happens only when some node has a
  lower-priority pod, so a check without priorities draws nothing and runs as before).
- Budgets: each budget's allowed disruptions are its status.disruptionsAllowed less the pods already evicted
  in the run, or, without status, computed from minAvailable or maxUnavailable over the pods it covers, as the
  disruption controller does (`_computed`).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gpufleet.scheduler.framework.interface import Plugin

if TYPE_CHECKING:  # the evaluator loads when a pod may preempt (gpufleet.scheduling.preempting), not before
    from gpufleet.scheduler.framework.preemption import Budget, Candidate, NodeOps, Victim

#: DefaultPreemptionArgs' defaults.
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100


def candidates_to_find(potential: int) -> int:
    """How many candidate nodes the dry run looks for among `potential` nodes."""
    return min(max(potential * MIN_CANDIDATE_NODES_PERCENTAGE // 100, MIN_CANDIDATE_NODES_ABSOLUTE), potential)


@dataclass
class Preemptor:
    """The pod that found no node (PostFilter's pod state)."""

    shape: Any
    """Its PodShape (gpufleet.scheduler.snapshot)."""
    priority: int
    preempts: bool
    constraints: Any = None
    """Its PodConstraints (gpufleet.scheduler.pod_constraints) when its filters count other pods."""


@dataclass
class PreemptionState:
    """One run's pods per node as preemption sees them, the budgets, and the last decision."""

    snap: Any
    """The run's Snapshot (gpufleet.scheduler.snapshot)."""
    on_node: list[list[Victim]]
    budgets: list[Budget]
    rng: random.Random
    evicted: list[Counter[str]] = field(default_factory=list)
    """Per budget: the pods it covers evicted so far in the run, counted per controller (workload key)."""
    decision: Candidate | None = None
    random_pick: bool = False
    """Whether the last decision rested on the run's random draws (the offset or a full tie)."""
    evictions: dict[int, int] = field(default_factory=dict)
    """Per workload of the check: its pods evicted and not made again yet (their controller remakes them)."""
    waiting: dict[int, int] = field(default_factory=dict)
    """Per workload of the check: its pods Pending for room, in the scheduler's unschedulable queue."""
    retry: dict[int, int] = field(default_factory=dict)
    """Per workload of the check: its waiting pods a victim's deletion brought back to the queue (`let_go`),
    not scheduled yet."""
    scales: dict[str, int] = field(default_factory=dict)
    """Per controller (workload key): its replicas, which a budget without status in percent or with
    maxUnavailable expects (the disruption controller reads its scale); a controller not named counts its pods."""

    def __post_init__(self) -> None:
        self.evicted = [Counter() for _ in self.budgets]
        self.leaving: dict[int, tuple[int, Victim]] = {}
        """The victims deleted but still on their node, terminating (by id: their node and the pod), in the order
        they were deleted."""
        self.nominated: list[tuple[int, int, int]] = []
        """Pods of the check holding their nominated node's room while the victims terminate: (node, workload
        index, placement sequence). They are bound, and may be victims in turn, once the victims are gone."""
        self.held: list[tuple[int, int, int]] = []
        """Nominated pods whose victims are gone, waiting in the queue behind pods of higher priority to be bound."""
        self._covering: dict[Victim, tuple[int, ...]] = {}

    def covering(self, pod: Victim) -> tuple[int, ...]:
        """The budgets (by index) that cover a pod, matched once per pod."""
        found = self._covering.get(pod)
        if found is None:
            found = self._covering[pod] = tuple(i for i, b in enumerate(self.budgets) if b.covers(pod))
        return found

    def allowed(self) -> list[int]:
        """Per budget, the disruptions it allows now."""
        covered: list[list[Victim]] = [[] for _ in self.budgets]
        if any(b.allowed is None for b in self.budgets):
            for pods in self.on_node:
                for p in pods:
                    if id(p) not in self.leaving:
                        for i in self.covering(p):
                            covered[i].append(p)
        return [b.allowed - self.evicted[i].total() if b.allowed is not None
                else _computed(b, covered[i], self.evicted[i], self.scales)
                for i, b in enumerate(self.budgets)]

    def terminate(self, node: int, victim: Victim) -> bool:
        """A victim on `node` is deleted: the budgets covering it count it gone at once (the disruption
        controller takes a terminating pod as unhealthy), while it keeps its room until `let_go`. False when it
        was already."""
        if id(victim) in self.leaving:
            return False
        self.leaving[id(victim)] = (node, victim)
        for i in self.covering(victim):
            self.evicted[i][victim.key] += 1
        return True

    def let_go(self) -> bool:
        """Every terminating victim is gone, its room free, and the pods waiting for room back in the queue
        (upstream moves the pods a deleted pod may help back to the active queue); whether any victim was left."""
        leaving, self.leaving = self.leaving, {}
        for node, victim in leaving.values():
            self.on_node[node].remove(victim)
            take_off(self.snap, node, victim)
        if leaving:
            for index, count in self.waiting.items():
                self.retry[index] = self.retry.get(index, 0) + count
            self.waiting = {}
        return bool(leaving)


def take_off(snap: Any, node: int, victim: Victim) -> None:
    """A pod leaves `node`: its requests and ports, and, where the snapshot keeps them (some pod's placement
    depends on the pods around it), its labels and its (anti-)affinity terms (NodeInfo.RemovePod and the
    PreFilter extensions' RemovePod)."""
    snap.unplace(node, victim.requests, victim.nonzero, victim.ports)
    if snap.pods is not None:
        snap.pods.remove(node, victim.namespace, victim.labels)
    if victim.group is not None and snap.placed is not None:
        snap.placed.remove(victim.group, node)


def put_back(snap: Any, node: int, victim: Victim) -> None:
    """The reverse of `take_off` (AddPod)."""
    snap.place(node, victim.requests, victim.nonzero, victim.ports)
    if snap.pods is not None:
        snap.pods.add(node, victim.namespace, victim.labels)
    if victim.group is not None and snap.placed is not None:
        snap.placed.restore(victim.group, node)


#: Workload kinds whose scale the disruption controller can read (a budget in percent or maxUnavailable needs it).
SCALABLE = ("Deployment", "ReplicaSet", "StatefulSet")


def _computed(budget: Budget, covered: list[Victim], evicted: Counter[str] | None = None,
              scales: dict[str, int] | None = None) -> int:
    """The disruptions a budget without status allows, as the disruption controller computes them: an integer
    minAvailable counts every covered pod; a percentage or maxUnavailable expects the scale of the controllers
    of the covered pods, those evicted included (`evicted`: per controller; `scales`: their replicas, pods
    Pending among them; a controller not in it counts its pods here and evicted; a pod of none is left out), and
    allows nothing when a covered pod has another controller (a Job: the controller finds no scale and fails
    safe)."""
    healthy = len(covered)
    counts = Counter(p.key for p in covered)
    counts.update(evicted or {})
    if budget.max_unavailable is not None or isinstance(budget.min_available, str):
        kinds = {key.split("/", 1)[0] for key in counts}
        if kinds - {*SCALABLE, "Pod"}:
            return 0
        scales = scales or {}
        expected = sum(scales.get(key, n) for key, n in counts.items() if key and key.split("/", 1)[0] != "Pod")
        return max(0, healthy - _desired(budget, expected))
    return max(0, healthy - _desired(budget, counts.total()))


def _scaled(value: int | str, expected: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * expected / 100)
    return int(value)


def _desired(budget: Budget, expected: int) -> int:
    """The healthy pods a budget wants (the disruption controller's desiredHealthy)."""
    if budget.max_unavailable is not None:
        return max(0, expected - _scaled(budget.max_unavailable, expected))
    if budget.min_available is not None:
        return _scaled(budget.min_available, expected)
    return 0


def _node_ops(snap: Any, shape: Any, node: int, constraints: Any = None) -> NodeOps:
    """The evaluator's view of one node of the run's snapshot, for one pod shape (and its filters that count
    other pods, when it has such)."""

    def fits() -> bool:
        if not shape.fits_one(snap, node):
            return False
        return constraints is None or not any(mask[node] for _, mask in constraints.filters(snap))

    from gpufleet.scheduler.framework.preemption import NodeOps

    return NodeOps(lambda victim: take_off(snap, node, victim), lambda victim: put_back(snap, node, victim), fits)


#: Pod filters' reasons upstream gives as UnschedulableAndUnresolvable: preemption cannot help such a node.
UNRESOLVABLE = ("node(s) didn't match pod topology spread constraints (missing required label)",
                "node(s) didn't match pod affinity rules")


def _potential(snap: Any, shape: Any, constraints: Any) -> list[int]:
    """The nodes preemption might help: those passing the pod's static filters, less those that fit its
    resources but fail an unresolvable filter that counts other pods (a node's status is its first failure)."""
    nodes = shape.eligible_nodes
    if constraints is None:
        return nodes.tolist()
    fitting = shape.fits_eligible(snap)[0]
    unresolvable = np.zeros(len(nodes), dtype=bool)
    for reason, mask in constraints.filters(snap):
        if reason in UNRESOLVABLE:
            unresolvable |= mask[nodes]
    return nodes[~(fitting & unresolvable)].tolist()


class DefaultPreemption(Plugin):
    name = "DefaultPreemption"

    def post_filter(self, state: Any, pod_state: Any, failures: dict[str, int]) -> int | None:
        """The node nominated for the pod (its victims in `state.decision`), or None."""
        if not isinstance(state, PreemptionState) or not isinstance(pod_state, Preemptor):
            return None
        from gpufleet.scheduler.framework.preemption import pick_one_node, select_victims_on_node

        state.decision, state.random_pick = None, False
        if not pod_state.preempts:
            return None
        snap, shape, priority = state.snap, pod_state.shape, pod_state.priority
        constraints = pod_state.constraints
        potential = _potential(snap, shape, constraints)
        if not potential:
            return None
        if not any(p.priority < priority for i in potential for p in state.on_node[i]):
            return None
        wanted = candidates_to_find(len(potential))
        offset = state.rng.randrange(len(potential))
        allowed = state.allowed()
        fine: list[Candidate] = []
        violating: list[Candidate] = []
        for k in range(len(potential)):
            node = potential[(offset + k) % len(potential)]
            ops = _node_ops(snap, shape, node, constraints)
            found = select_victims_on_node(node, priority, state.on_node[node], ops, state.budgets, allowed,
                                           state.covering)
            if found is None or not found.victims:
                continue
            (violating if found.violations else fine).append(found)
            if fine and len(fine) + len(violating) >= wanted:
                break
        candidates = fine + violating
        if not candidates:
            return None
        chosen, tied = pick_one_node(candidates, state.rng)
        state.decision = chosen
        state.random_pick = tied or wanted < len(potential)
        return chosen.node
