"""The preemption evaluator (pkg/scheduler/framework/preemption/preemption.go, v1.34): which pods to evict on a
node so that a higher-priority pod fits there, and which node's evictions cost least.

On one node (`select_victims_on_node`): every pod of lower priority than the preemptor is taken off; if the
preemptor still does not fit, the node is no candidate. Otherwise the removed pods are put back one by one,
most important first (higher priority, then the earlier start), those whose eviction would break a
PodDisruptionBudget before the others; a pod stays (is reprieved) when the preemptor still fits with it back,
else it is a victim. Budgets are honoured by preference, never as a prohibition: a victim that breaks one
only counts against its node.

Among the candidate nodes (`pick_one_node`), each criterion keeps the nodes that score best on it and the
next decides among those: fewest budget violations, the lowest priority of the most important victim, the
smallest sum of victim priorities (each counted from the lowest 32-bit integer up, so a victim more always
weighs more), the fewest victims, the latest start of the highest-priority victims. Nodes still tied are in
the order a Go map yields them upstream, that is, any: the run's seeded generator picks one.

The node state is read and changed through callbacks (`NodeOps`), so the evaluator does not depend on how a
snapshot stores pods.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gpufleet.labels import selector_matches

#: Every priority is counted from here in the sum criterion (upstream adds MaxInt32 + 1 to each).
_SUM_BASE = 2 ** 31


@dataclass(eq=False)
class Victim:
    """A pod on a node, as preemption weighs it."""

    priority: int
    start: float
    """When it started (seconds; later is larger). Pods not started yet count as started now."""
    key: str
    """Its workload key."""
    index: int
    """The workload of the check it belongs to, or -1 for a pod that was running before the check."""
    namespace: str
    labels: dict[str, str]
    requests: dict[str, int]
    nonzero: tuple[int, int]
    ports: tuple = ()
    group: int | None = None
    """Who holds its pod (anti-)affinity terms among the placed terms (PlacedTerms), when it has some: they
    leave with it."""
    remade: int = -1
    """For a pod running before the check: the workload of the check's run that stands for the new pod its
    controller makes when it is evicted (-1: none is made, as for a bare Pod)."""


@dataclass(frozen=True)
class Budget:
    """A PodDisruptionBudget as preemption reads it: which pods it covers and how many it lets go."""

    namespace: str
    name: str
    selector: dict
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    allowed: int | None = None
    """status.disruptionsAllowed when given; else computed from the pods there are (`disruptions_allowed`)."""

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    def covers(self, pod: Victim) -> bool:
        """The budget's namespace and a non-empty selector that matches the pod's labels (an empty selector
        covers nothing, as upstream's preemption reads it)."""
        if pod.namespace != self.namespace or not self.selector or not pod.labels:
            return False
        return selector_matches(self.selector, pod.labels)


def more_important(pods: Sequence[Victim]) -> list[Victim]:
    """Higher priority first; among equal priorities the pod that started earlier (MoreImportantPod)."""
    return sorted(pods, key=lambda p: (-p.priority, p.start))


Covering = Callable[[Victim], Sequence[int]]
"""The budgets (by index) that cover a pod."""


def split_by_budget(pods: Sequence[Victim], budgets: Sequence[Budget], allowed: list[int],
                    covering: Covering | None = None) -> tuple[list[Victim], list[Victim], dict[int, str]]:
    """(pods whose eviction breaks a budget, the others, per breaking pod the first budget it breaks), in the
    given order: each pod a budget covers uses one of its allowed disruptions, and breaks it once none is left.
    `allowed` is per budget and is not changed; `covering` may answer which budgets cover a pod from a cache."""
    left = list(allowed)
    violating: list[Victim] = []
    fine: list[Victim] = []
    broken: dict[int, str] = {}
    for pod in pods:
        hit = ""
        for i in (covering(pod) if covering is not None
                  else [i for i, budget in enumerate(budgets) if budget.covers(pod)]):
            left[i] -= 1
            if left[i] < 0 and not hit:
                hit = budgets[i].ref
        if hit:
            violating.append(pod)
            broken[id(pod)] = hit
        else:
            fine.append(pod)
    return violating, fine, broken


@dataclass
class NodeOps:
    """How the evaluator changes one node of the cluster and asks whether the preemptor fits it."""

    remove: Callable[[Victim], None]
    add: Callable[[Victim], None]
    fits: Callable[[], bool]


@dataclass
class Candidate:
    node: int
    victims: list[Victim]
    """Most important first."""
    violations: int
    broken: dict[int, str] = field(default_factory=dict)
    """Per victim (by id) that breaks a budget: the budget, `namespace/name`."""


def select_victims_on_node(node: int, priority: int, pods: Sequence[Victim], ops: NodeOps,
                           budgets: Sequence[Budget], allowed: list[int],
                           covering: Covering | None = None) -> Candidate | None:
    """The pods to evict on `node` so that a pod of `priority` fits there, or None when evicting every
    lower-priority pod is not enough (or there is none). The node is left as it was."""
    lower = more_important([p for p in pods if p.priority < priority])
    if not lower:
        return None
    for pod in lower:
        ops.remove(pod)
    if not ops.fits():
        for pod in lower:
            ops.add(pod)
        return None
    violating, fine, broken = split_by_budget(lower, budgets, allowed, covering)
    victims: list[Victim] = []
    violations = 0
    for group, counts in ((violating, True), (fine, False)):
        for pod in group:
            ops.add(pod)
            if not ops.fits():
                ops.remove(pod)
                victims.append(pod)
                violations += counts
    for pod in victims:
        ops.add(pod)
    if violating and fine:
        victims = more_important(victims)
    return Candidate(node, victims, violations, {id(v): broken[id(v)] for v in victims if id(v) in broken})


def _earliest_top_start(victims: Sequence[Victim]) -> float:
    """The earliest start among the victims of the highest priority."""
    top = max(v.priority for v in victims)
    return min(v.start for v in victims if v.priority == top)


#: The criteria in order, each a score where larger is better.
CRITERIA: tuple[Callable[[Candidate], float], ...] = (
    lambda c: -c.violations,
    lambda c: -c.victims[0].priority,
    lambda c: -sum(v.priority + _SUM_BASE for v in c.victims),
    lambda c: -len(c.victims),
    lambda c: _earliest_top_start(c.victims),
)


def pick_one_node(candidates: Sequence[Candidate], rng: random.Random) -> tuple[Candidate, bool]:
    """The candidate whose evictions cost least (module docstring), and whether a tie was broken at random."""
    left = list(candidates)
    for criterion in CRITERIA:
        if len(left) == 1:
            return left[0], False
        scores = [criterion(c) for c in left]
        best = max(scores)
        left = [c for c, s in zip(left, scores, strict=True) if s == best]
    if len(left) == 1:
        return left[0], False
    return left[rng.randrange(len(left))], True
