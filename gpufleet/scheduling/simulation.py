"""One run of the scheduler over the workloads: pods enter one after another, in manifest order.

This is the contract `gpufleet check` keeps: each workload's pods are created in input order (a
Deployment's replicas one after another, a Job's `min(parallelism, completions)`), and each is scheduled
(gpufleet.scheduler.schedule_one) before the next exists, on what the earlier ones left. Where some pod may
preempt, the truth is a real cluster's, whose controllers make the pods: workloads of one priority that may
preempt take turns, a bare Pod's and a Job's first (gpufleet.scheduling.queue_order). A run is
seeded: where scores tie, its random generator picks, as the scheduler's does. gpufleet.scheduling.engine
runs several and compares them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from gpufleet.capacity.dra import Device
from gpufleet.manifests.workloads import PodWorkload
from gpufleet.scheduler.filters import has_pod_rules
from gpufleet.scheduler.framework.preemption import Victim
from gpufleet.scheduler.plugins.defaultpreemption import DefaultPreemption, PreemptionState, Preemptor
from gpufleet.scheduler.plugins.defaultpreemption.default_preemption import put_back, take_off
from gpufleet.scheduler.plugins.podtopologyspread.system_default import DefaultSpread, Layout
from gpufleet.scheduler.schedule_one import Cycle, Kept, Landed, schedule_one, schedule_replicas
from gpufleet.scheduler.snapshot import PodShape, Snapshot
from gpufleet.scheduling.queue_order import turns

if TYPE_CHECKING:
    from gpufleet.scheduler.pod_constraints import PodConstraints

#: Pod shapes whose feasibility and scores a run keeps up to date (two arrays over the fleet each).
KEPT_SHAPES = 64
#: Below this many nodes the scheduler scores every feasible node, so a tie between nodes in the same
#: state (class, images, requests) cannot change any later outcome.
_WHOLE_FLEET = 100


@dataclass
class Outcome:
    """What one workload got in one run."""

    placed: int = 0
    pending: int = 0
    message: str = ""
    nodes: list[int] = field(default_factory=list)
    blocked: np.ndarray | None = None
    devices: list[tuple[int, list[Device], list[Device]]] = field(default_factory=list)
    """Per placed pod with claims: (node, devices it uses, devices allocated for it)."""
    by_preemption: int = 0
    """Its pods that run only because lower-priority pods were evicted for them."""
    evicted: list[tuple[int, Victim, str]] = field(default_factory=list)
    """The pods evicted for them: (node, the pod, the PodDisruptionBudget `ns/name` it broke or "")."""
    preempted_by: str = ""
    """The workload whose pods evicted some of this one's (its message names it when they find no room)."""


@dataclass
class Run:
    outcomes: dict[int, Outcome] = field(default_factory=dict)
    occupants: dict[int, dict[int, int]] = field(default_factory=dict)
    """node -> workload index -> pods placed there in this run."""
    decisive_ties: int = 0
    """Ties between nodes that are not interchangeable: another pick could change what follows."""
    running: np.ndarray | None = None
    """Per node, the pods that were running before the check."""

    def hold(self, node: int, index: int) -> None:
        """One more pod of workload `index` landed on `node`."""
        held = self.occupants.setdefault(node, {})
        held[index] = held.get(index, 0) + 1

    def release(self, node: int, index: int) -> None:
        """A pod of workload `index` was evicted from `node`."""
        held = self.occupants[node]
        held[index] -= 1
        if not held[index]:
            del held[index]

    def holders(self, shape: PodShape) -> Holders:
        """Who holds pods on the nodes that pass `shape`'s filters (at the end of the run), per workload
        (kept per set of such nodes: shapes with the same static filter results share it)."""
        found = self._holders.get(id(shape.eligible))
        if found is None:
            if self._pods is None:
                pairs = [(node, j, n) for node, held in self.occupants.items() for j, n in held.items()]
                self._pods = tuple(np.array([p[k] for p in pairs], dtype=np.int64) for k in range(3))
            node, owner, count = self._pods
            hit = shape.eligible[node] if len(node) else np.zeros(0, dtype=bool)
            size = int(owner.max()) + 1 if len(owner) else 0
            found = self._holders[id(shape.eligible)] = Holders(
                np.bincount(owner[hit], weights=count[hit], minlength=size).astype(np.int64),
                np.bincount(owner[hit], minlength=size))
        return found

    _pods: tuple | None = None
    _holders: dict = field(default_factory=dict)


class Holders:
    """Per workload index: its pods on a set of nodes, and on how many of them."""

    def __init__(self, pods: np.ndarray, spots: np.ndarray):
        self.pods, self.spots = pods, spots
        order = np.lexsort((np.arange(len(pods)), -pods))  # most pods first, then input order
        self.ranked = order[pods[order] > 0].tolist()
        self.cum = np.cumsum(pods)
        self.cum_count = np.cumsum(pods > 0)

    def before(self, index: int, limit: int) -> list[tuple[int, int, int]]:
        """(workload, pods, nodes) of the workloads before `index` with pods there, the largest first."""
        out: list[tuple[int, int, int]] = []
        for j in self.ranked:
            if len(out) == limit:
                break
            if j < index:
                out.append((j, int(self.pods[j]), int(self.spots[j])))
        return out

    def total_before(self, index: int) -> tuple[int, int]:
        """(pods, workloads) of the workloads before `index` on these nodes."""
        k = min(index, len(self.pods))
        return (int(self.cum[k - 1]), int(self.cum_count[k - 1])) if k > 0 else (0, 0)


@dataclass
class PriorityInputs:
    """What preemption needs of a check (gpufleet.scheduling.engine builds it when some pod may preempt)."""

    priority: dict[int, int]
    """Per workload index, its pods' priority."""
    preempts: dict[int, bool]
    """Per workload index, whether its pods may preempt (not preemptionPolicy Never)."""
    running: list[list[Victim]]
    """Per node, the pods running there before the check."""
    budgets: list = field(default_factory=list)
    """The PodDisruptionBudgets (gpufleet.scheduler.framework.preemption.Budget)."""


@dataclass(frozen=True)
class SpreadInputs:
    """One workload's system default spreading (gpufleet.scheduler.plugins.podtopologyspread.system_default):
    the pods its default selector matches are `base` (running pods, per node; None: none) and the pods of
    the check's workloads `matchers` (itself among them) where a run has placed them."""

    base: np.ndarray | None
    matchers: tuple[int, ...]
    layout: Layout
    affinity_ok: np.ndarray
    weight: int


#: When pods placed during a check start (seconds): after every running pod, in placement order.
STARTED_IN_CHECK = 1e12
_PREEMPTION = DefaultPreemption.name


class Simulation:
    def __init__(self, base: Snapshot, workloads: list[PodWorkload], shapes: dict[int, PodShape],
                 same_node_kind: np.ndarray, dra_base=None, constraints: dict[int, PodConstraints] | None = None,
                 priorities: PriorityInputs | None = None, spreads: dict[int, SpreadInputs] | None = None,
                 remade: dict[int, PodShape] | None = None):
        """`shapes`: the workloads to schedule (by index), in order; `same_node_kind`: per node, an id equal
        for nodes that every plugin sees alike (class and images); `constraints`: per workload, its pods
        against the others, when some pod's placement depends on where other pods are (`base` then keeps
        the pods on each node); `priorities`: when some pod may preempt others; `spreads`: per workload, its
        system default spreading, for those that get it; `remade`: the workloads (after the check's) that
        stand for the new pods running pods' controllers make when they are evicted, scheduled only then."""
        self.base, self.workloads, self.dra_base = base, workloads, dra_base
        self.scheduled = list(shapes)
        self.shapes = {**shapes, **(remade or {})}
        if dra_base is not None:
            dra_base.attach(base.nodes)
        self.kind_of = same_node_kind
        self.constraints = constraints or {}
        self.priorities = priorities
        self.spreads = spreads or {}

    def run(self, seed: int) -> Run:
        rng = random.Random(seed)
        snap = self.base.copy()
        dra = self.dra_base.copy() if self.dra_base is not None else None
        run, start = Run(running=self.base.pod_count), 0
        placed = Landed()  # every pod's node, in placement order
        failed_before: dict[int, tuple[int, Cycle]] = {}  # shape -> (len(placed) then, the cycle that failed)
        kept_for: dict[int, Kept] = {}  # shape -> its feasibility and scores, kept up to date
        pre = None
        if self.priorities is not None:
            pre = PreemptionState(snap, [list(pods) for pods in self.priorities.running], self.priorities.budgets, rng)

        def tie(best: np.ndarray) -> None:
            if self._decisive(snap, best, dra is not None):
                run.decisive_ties += 1

        hidden: list[tuple[int, int, int]] = []
        order = self._turns()
        self._coming = self._later_priorities(order)
        for at, (index, count) in enumerate(order):
            shape, w = self.shapes[index], self.workloads[index]
            self._at = at
            if pre is not None and (hidden or pre.nominated):
                kept_for.clear()  # nominated pods leave or come back: the caches' room changes
                failed_before.clear()
                start = self._restore(snap, pre, hidden, run, placed, rng, tie, start, index)
                if pre.held:
                    self._bind_held(pre)
                hidden = self._hide(snap, pre, index) if snap.pods is None and not w.spec.get("resourceClaims") \
                    else []
            out = run.outcomes.get(index)
            if out is None:
                out = run.outcomes[index] = Outcome()
            if w.spec.get("resourceClaims"):
                if pre is not None and self._let_go(pre):  # claims are not preempted for: the victims' room is free
                    kept_for.clear()
                    failed_before.clear()
                start = self._claims_run(snap, dra, shape, w, start, rng, run, index, out,
                                         self._spread(index, run))
                placed.extend(out.nodes)
                continue

            pod = self.constraints.get(index)
            # the snapshot keeps the placed pods' terms whenever a pod has constraints
            rules = pod if self._by_rules(snap, index) else None
            if pre is not None and self.priorities is not None and self.priorities.preempts[index]:
                start = self._preempting(snap, shape, index, count, start, rng, tie, placed, run, pre, rules)
                if pre.evictions:  # evictions gave capacity back: what the caches say no longer holds
                    kept_for.clear()
                    failed_before.clear()
                    after = order[at + 1][0] if at + 1 < len(order) else None
                    if hidden:  # the new pods see the nominated pods of no lower priority than theirs
                        start = self._restore(snap, pre, hidden, run, placed, rng, tie, start, after)
                    start = self._replace_evicted(snap, rng, tie, placed, run, pre, start, after)
                continue
            got: list[int] = []
            if rules is not None:
                got, failed, start = self._one_by_one(snap, shape, w, index, rules, start, rng, run, count)
            elif id(shape) in failed_before:
                # Capacity only shrinks during a check: a pod that fitted nowhere still fits nowhere (and the
                # search went through every node, so the start index stays). Only the message may change,
                # when pods landed on nodes it could use.
                was, failed = failed_before[id(shape)]
                if len(placed) > was and shape.eligible[placed.since(was)].any():
                    failed = schedule_one(snap, shape, start, rng)
                    failed_before[id(shape)] = (len(placed), failed)
            else:
                kept = kept_for.pop(id(shape), None) or Kept(snap, shape, len(placed))
                kept_for[id(shape)] = kept  # most recently used last
                if len(kept_for) > KEPT_SHAPES:
                    del kept_for[next(iter(kept_for))]
                got, failed, start = schedule_replicas(snap, shape, count, start, rng, tie, kept, placed,
                                                       self._spread(index, run))
                if snap.pods is not None:  # others' selectors may count these pods later
                    for node in got:
                        snap.pods.add(node, w.namespace, w.labels)
            if failed is not None and pre is not None and self._let_go(pre):
                # the pod waits for the terminating victims of earlier preemptors: their room may hold it
                kept_for.clear()
                failed_before.clear()
                more, failed, start = self._place_waiting(snap, index, count - len(got), start, rng, tie,
                                                          placed, run, pre, rules)
                if rules is None and snap.pods is not None:
                    for node in more:
                        snap.pods.add(node, w.namespace, w.labels)
                got = [*got, *more]
            out.nodes.extend(got)
            out.placed += len(got)
            placed.extend(got)
            for node in got:
                run.hold(node, index)
            if pre is not None:
                for node in got:
                    self._on_node(pre, node, index, len(placed))
            if failed is not None:
                # Nothing frees capacity during a check: the remaining replicas fail the same way.
                out.pending += count - len(got)
                out.message, out.blocked = failed.message, failed.blocked
                if pod is None:
                    failed_before[id(shape)] = (len(placed), failed)
                if pre is not None:
                    self._wait(pre, index, count - len(got))
            if pre is not None and pre.retry:
                kept_for.clear()
                failed_before.clear()
                after = order[at + 1][0] if at + 1 < len(order) else None
                if hidden:
                    start = self._restore(snap, pre, hidden, run, placed, rng, tie, start, after)
                start = self._replace_evicted(snap, rng, tie, placed, run, pre, start, after)
        self._at = len(order)
        if pre is not None and hidden:
            start = self._restore(snap, pre, hidden, run, placed, rng, tie, start)
        if pre is not None and pre.held:
            self._bind_held(pre)
        # In the end every victim is gone: the pods waiting for room try again on what they left.
        while pre is not None and (self._let_go(pre) or pre.retry or pre.evictions):
            start = self._replace_evicted(snap, rng, tie, placed, run, pre, start)
        return run

    def _wait(self, pre: PreemptionState, index: int, count: int) -> None:
        """`count` pods of workload `index` found no room (and, if they may, nothing to preempt): they wait until
        a victim's deletion brings them back (`PreemptionState.let_go`). Pods with claims are left out: their
        victims' devices are not freed in a check."""
        if count > 0 and not self.workloads[index].spec.get("resourceClaims"):
            pre.waiting[index] = pre.waiting.get(index, 0) + count

    def _turns(self) -> list[tuple[int, int]]:
        """(workload index, pods) in the order the scheduler takes them: manifest order, whole workloads,
        unless some pod may preempt (gpufleet.scheduling.queue_order)."""
        indices = self.scheduled
        replicas = {i: self.workloads[i].replicas for i in indices}
        if self.priorities is None:
            return [(i, replicas[i]) for i in indices]
        pr = self.priorities
        return turns(indices, {i: self.workloads[i].kind for i in indices}, replicas, pr.priority,
                     lambda i: pr.preempts[i] and not self.workloads[i].spec.get("resourceClaims")
                     and i not in self.constraints)

    def _let_go(self, pre: PreemptionState) -> bool:
        """The terminating victims are gone, the nominated pods bound where they were nominated (they may be
        victims from now on), and the pods waiting for room back in the queue (`pre.retry`); whether any victim
        was left."""
        if not pre.let_go():
            return False
        assert self.priorities is not None
        priority = self.priorities.priority
        top = self._queued_top(pre)
        # a nominated pod is bound in its next cycle: pods of higher priority in the queue go first (those brought
        # back, and the check's pods still to come), and they do not see it (`_hide`); it holds its room until then
        pre.held = [e for e in pre.nominated if top is not None and priority[e[1]] < top]
        for node, index, seq in pre.nominated:
            if top is None or priority[index] >= top:
                self._on_node(pre, node, index, seq)
        pre.nominated = list(pre.held)
        return True

    def _later_priorities(self, order: list[tuple[int, int]]) -> list[int | None]:
        """Per turn, the highest priority among it and the turns after it (None after the last)."""
        out: list[int | None] = [None] * (len(order) + 1)
        if self.priorities is not None:
            priority = self.priorities.priority
            for k in range(len(order) - 1, -1, -1):
                later = out[k + 1]
                mine = priority[order[k][0]]
                out[k] = mine if later is None else max(later, mine)
        return out

    def _queued_top(self, pre: PreemptionState) -> int | None:
        """The highest priority of the pods in the queue besides the nominated ones: those a deletion brought
        back, and the check's pods whose turn is now or still to come (applied together, they are queued
        already)."""
        assert self.priorities is not None
        priority = self.priorities.priority
        tops = [priority[i] for i in pre.retry]
        later = self._coming[self._at] if self._at < len(self._coming) else None
        if later is not None:
            tops.append(later)
        return max(tops, default=None)

    def _bind_held(self, pre: PreemptionState) -> None:
        """The nominated pods held behind pods of higher priority are bound once none of those is left in the
        queue (those that lost their room to them were scheduled again by `_restore`)."""
        assert self.priorities is not None
        priority = self.priorities.priority
        top = self._queued_top(pre)
        bound = [e for e in pre.held if e in pre.nominated and (top is None or priority[e[1]] >= top)]
        for node, index, seq in bound:
            pre.nominated.remove((node, index, seq))
            self._on_node(pre, node, index, seq)
        pre.held = [e for e in pre.held if e in pre.nominated]

    def _hide(self, snap: Snapshot, pre: PreemptionState, index: int) -> list[tuple[int, int, int]]:
        """The nominated pods of lower priority than workload `index`'s: its pods do not see them (upstream adds
        only nominated pods of equal or higher priority to a node in the filters), nor may they evict them (a
        nominated pod is not on the node yet). Returned, and taken off the snapshot until `_restore`."""
        assert self.priorities is not None
        priority = self.priorities.priority
        hidden = [e for e in pre.nominated if priority[e[1]] < priority[index]]
        if hidden:
            pre.nominated = [e for e in pre.nominated if priority[e[1]] >= priority[index]]
            for node, i, _ in hidden:
                shape = self.shapes[i]
                snap.unplace(node, shape.requests, shape.nonzero, shape.ports)
        return hidden

    def _restore(self, snap: Snapshot, pre: PreemptionState, hidden: list[tuple[int, int, int]], run: Run,
                 placed: Landed, rng, tie, start: int, after: int | None = None) -> int:
        """The nominated pods `_hide` took off come back to their nodes where they still fit once the pods
        terminating there are gone (the room they were nominated to is their victims', which is not free yet);
        where a pod of higher priority took the room, the nominated one goes back to the queue and is scheduled
        again (it may preempt again). Returns the next start."""
        displaced: dict[int, int] = {}
        for node, index, seq in hidden:
            shape = self.shapes[index]
            if self._fits_once_gone(snap, pre, shape, node):
                snap.place(node, shape.requests, shape.nonzero, shape.ports)
                pre.nominated.append((node, index, seq))
                continue
            out = run.outcomes[index]
            out.nodes.remove(node)
            out.placed -= 1
            out.by_preemption -= 1
            run.release(node, index)
            displaced[index] = displaced.get(index, 0) + 1
        hidden.clear()
        for index, count in displaced.items():
            start = self._again(snap, index, count, start, rng, tie, placed, run, pre)
        if pre.evictions:
            start = self._replace_evicted(snap, rng, tie, placed, run, pre, start, after)
        return start

    @staticmethod
    def _fits_once_gone(snap: Snapshot, pre: PreemptionState, shape: PodShape, node: int) -> bool:
        """Whether a pod of `shape` fits `node` once the pods terminating there are gone (the snapshot is left
        as it was)."""
        leaving = [v for n, v in pre.leaving.values() if n == node]
        for v in leaving:
            take_off(snap, node, v)
        try:
            return shape.fits_one(snap, node)
        finally:
            for v in leaving:
                put_back(snap, node, v)

    def _by_rules(self, snap: Snapshot, index: int) -> bool:
        """Whether workload `index`'s pods are placed against others: its own topology spread or pod
        (anti-)affinity, or a placed pod's terms that match it."""
        pod, w = self.constraints.get(index), self.workloads[index]
        return pod is not None and (has_pod_rules(w.spec) or (snap.placed is not None
                                                              and snap.placed.concern(w.namespace, w.labels)))

    def _on_node(self, pre: PreemptionState, node: int, index: int, seq: int) -> None:
        """A pod of workload `index` landed on `node`: preemption may evict it later (and its pod
        (anti-)affinity terms, placed under its index, leave with it)."""
        w, shape = self.workloads[index], self.shapes[index]
        assert self.priorities is not None
        pod = self.constraints.get(index)
        group = index if pod is not None and pod.terms else None
        pre.on_node[node].append(Victim(self.priorities.priority[index], STARTED_IN_CHECK + seq, w.key, index,
                                        w.namespace, dict(w.labels), shape.requests, shape.nonzero, shape.ports,
                                        group))

    def _preempting(self, snap: Snapshot, shape: PodShape, index: int, count: int, start: int, rng, tie,
                    placed: Landed, run: Run, pre: PreemptionState, rules: PodConstraints | None = None) -> int:
        """`count` pods of a workload that may preempt, made together: each that finds no node goes through
        PostFilter (DefaultPreemption). When it nominates a node, the pod holds its room there at once (a
        nominated pod counts in the filters of pods of no higher priority) while its victims terminate: they
        stay on the node, so the workload's next pods find it full and may preempt too, choosing the same
        terminating pods again (no new eviction) or others. The nominated pods run where they were nominated.
        The victims stay on their nodes, terminating, for the pods of the workloads after it too (the check's
        workloads are made together, and the scheduler takes their pods faster than victims terminate), until a
        pod finds no room and nothing to preempt: their deletion brings it back, and it tries again on the room
        they left (`PreemptionState.let_go`). `rules`: the pods are placed against others (topology spread,
        pod affinity), one cycle each, and preemption asks their filters too. Returns the next start."""
        assert self.priorities is not None
        w, out = self.workloads[index], run.outcomes[index]
        pod = Preemptor(shape, self.priorities.priority[index], True, rules)
        left = count
        while left:
            if rules is not None:
                got, failed, start = self._one_by_one(snap, shape, w, index, rules, start, rng, run, left)
            else:
                got, failed, start = schedule_replicas(snap, shape, left, start, rng, tie, None, placed,
                                                       self._spread(index, run))
            for node in got:
                self._land(pre, placed, run, index, node, counted=rules is not None)
            left -= len(got)
            if failed is None:
                break
            nominated = shape.framework.run_post_filter_plugins({_PREEMPTION: pre}, {_PREEMPTION: pod}, {})
            decision = pre.decision
            if nominated is None or decision is None:
                if self._let_go(pre):  # the victims' deletion brings the pod back: their room may hold it now
                    continue
                out.pending += left
                out.message, out.blocked = failed.message, failed.blocked
                self._wait(pre, index, left)
                break
            if pre.random_pick:
                run.decisive_ties += 1
            for victim in decision.victims:
                if not pre.terminate(nominated, victim):
                    continue  # already on its way out for an earlier pod
                out.evicted.append((nominated, victim, decision.broken.get(id(victim), "")))
                if victim.index >= 0:
                    held = run.outcomes[victim.index]
                    held.nodes.remove(nominated)
                    held.placed -= 1
                    held.preempted_by = held.preempted_by or w.key
                    run.release(nominated, victim.index)
                    pre.evictions[victim.index] = pre.evictions.get(victim.index, 0) + 1
                elif victim.remade >= 0:  # a running pod: its controller makes a new one
                    held = run.outcomes.setdefault(victim.remade, Outcome())
                    held.preempted_by = held.preempted_by or w.key
                    pre.evictions[victim.remade] = pre.evictions.get(victim.remade, 0) + 1
            snap.place(nominated, shape.requests, shape.nonzero, shape.ports)
            if rules is not None and rules.terms and snap.placed is not None:
                snap.placed.place(index, rules.terms, nominated)
            self._land(pre, placed, run, index, nominated, waits=True)
            out.by_preemption += 1
            left -= 1
        return start

    def _land(self, pre: PreemptionState, placed: Landed, run: Run, index: int, node: int,
              counted: bool = False, waits: bool = False) -> None:
        """A pod of workload `index` runs on `node` (`counted`: the pods others' selectors count have it;
        `waits`: it is nominated there and holds the room until its victims are gone, then is bound)."""
        out = run.outcomes[index]
        if pre.snap.pods is not None and not counted:  # others' selectors may count it
            w = self.workloads[index]
            pre.snap.pods.add(node, w.namespace, w.labels)
        out.nodes.append(node)
        out.placed += 1
        placed.extend([node])
        run.hold(node, index)
        if waits:
            pre.nominated.append((node, index, len(placed)))
        else:
            self._on_node(pre, node, index, len(placed))

    def _replace_evicted(self, snap: Snapshot, rng, tie, placed: Landed, run: Run, pre: PreemptionState,
                         start: int, after: int | None = None) -> int:
        """The evicted pods' controllers make new ones, scheduled after the preemptor's (the scheduler's queue
        pops the highest priority first); a bare Pod is gone for good. New ones may preempt in turn (only
        pods of lower priority still, so this ends). The pods waiting for room that a deletion brought back
        (`pre.retry`) are taken in the same queue: by priority, the new pods first among equals. `after`: the
        workload whose turn is next; pods of no higher priority wait for it."""
        assert self.priorities is not None
        priority = self.priorities.priority
        while pre.evictions or pre.retry:
            queued = [(i, 0) for i in pre.evictions] + [(i, 1) for i in pre.retry]
            index, again = min(queued, key=lambda e: (-priority[e[0]], e[1], e[0]))
            if after is not None and priority[index] <= priority[after]:
                break  # the queue pops the next workload's pods first
            w, out = self.workloads[index], run.outcomes[index]
            # each pod sees the nominated pods of no lower priority than its own (`_hide`)
            hidden = self._hide(snap, pre, index) if snap.pods is None else []
            if again:  # pods that were Pending, back in the queue: they preempt or wait as before
                count = pre.retry.pop(index)
                out.pending -= count
                start = self._again(snap, index, count, start, rng, tie, placed, run, pre)
                if hidden:
                    start = self._restore(snap, pre, hidden, run, placed, rng, tie, start, after)
                continue
            count = pre.evictions.pop(index)
            if w.kind == "Pod":
                out.pending += count
                out.message = (f"preempted by {out.preempted_by}: the scheduler evicted it for a pod of higher "
                               f"priority, and a bare Pod is not made again")
                if hidden:
                    start = self._restore(snap, pre, hidden, run, placed, rng, tie, start, after)
                continue
            before = out.pending
            start = self._again(snap, index, count, start, rng, tie, placed, run, pre)
            if hidden:
                start = self._restore(snap, pre, hidden, run, placed, rng, tie, start, after)
            if out.pending > before:
                out.message = f"preempted by {out.preempted_by}, its new pods find no room: {out.message}"
        if pre.held:
            self._bind_held(pre)
        return start

    def _again(self, snap: Snapshot, index: int, count: int, start: int, rng, tie, placed: Landed, run: Run,
               pre: PreemptionState) -> int:
        """`count` pods of workload `index` scheduled again (made anew after an eviction, or back in the queue
        after losing their nominated node): they preempt if the workload may, else wait as `_place_waiting`
        does; those that find no room leave it Pending. Returns the next start."""
        assert self.priorities is not None
        rules = self.constraints[index] if self._by_rules(snap, index) else None
        if self.priorities.preempts[index]:
            return self._preempting(snap, self.shapes[index], index, count, start, rng, tie, placed, run, pre, rules)
        got, failed, start = self._place_waiting(snap, index, count, start, rng, tie, placed, run, pre, rules)
        for node in got:
            self._land(pre, placed, run, index, node, counted=rules is not None)
        if failed is not None:
            out = run.outcomes[index]
            out.pending += count - len(got)
            out.message, out.blocked = failed.message, failed.blocked
            self._wait(pre, index, count - len(got))
        return start

    def _place_waiting(self, snap: Snapshot, index: int, count: int, start: int, rng, tie, placed: Landed, run: Run,
                       pre: PreemptionState | None,
                       rules: PodConstraints | None) -> tuple[list[int], Cycle | None, int]:
        """`count` pods of workload `index` that do not preempt, one cycle each (`rules`: placed against the pods
        around them): (their nodes, the cycle that found no node or None, the next start). When one finds no room
        while victims of earlier preemptors terminate, it waits for them (`_let_go`) and tries again on their
        room."""
        shape, w = self.shapes[index], self.workloads[index]
        got: list[int] = []
        while True:
            if rules is not None:
                more, failed, start = self._one_by_one(snap, shape, w, index, rules, start, rng, run, count - len(got))
            else:
                more, failed, start = schedule_replicas(snap, shape, count - len(got), start, rng, tie, None, placed,
                                                        self._spread(index, run))
            got += more
            if failed is None or pre is None or not self._let_go(pre):
                return got, failed, start

    def _one_by_one(self, snap: Snapshot, shape: PodShape, w: PodWorkload, index: int, pod: PodConstraints,
                    start: int, rng, run: Run, count: int | None = None) -> tuple[list[int], Cycle | None, int]:
        """Pods whose filters or scores count other pods (`count` of them, else the workload's replicas): each
        cycle sees the pods placed before it."""
        nodes: list[int] = []
        pods, placed = snap.pods, snap.placed
        assert pods is not None and placed is not None, "kept by the snapshot whenever a pod has constraints"
        spread = self._spread(index, run)
        for _ in range(w.replicas if count is None else count):
            cycle = schedule_one(snap, shape, start, rng, pod=pod, spread=spread)
            start = (start + cycle.processed) % snap.n if snap.n else 0
            if cycle.node is None:
                return nodes, cycle, start
            if cycle.tied is not None:
                run.decisive_ties += 1
            snap.place(cycle.node, shape.requests, shape.nonzero, shape.ports)
            pods.add(cycle.node, w.namespace, w.labels)
            if spread is not None:
                spread.add(cycle.node)
            if pod.terms:
                placed.place(index, pod.terms, cycle.node)
            nodes.append(cycle.node)
        return nodes, None, start

    def _spread(self, index: int, run: Run) -> DefaultSpread | None:
        """Workload `index`'s system default spreading, counted from what `run` has placed so far (a pod
        evicted for another is no longer among its workload's nodes: terminating pods do not count)."""
        found = self.spreads.get(index)
        if found is None:
            return None
        counts = np.zeros(self.base.n, dtype=np.int64) if found.base is None else found.base.copy()
        for other in found.matchers:
            held = run.outcomes.get(other)
            if held is not None and held.nodes:
                np.add.at(counts, held.nodes, 1)
        return DefaultSpread(counts, found.layout, found.affinity_ok, found.weight)

    def _claims_run(self, snap, dra, shape, w, start, rng, run, index, out, spread) -> int:
        for _ in range(w.replicas):
            cycle, used = self._with_claims(snap, dra, shape, w, start, rng, spread)
            start = (start + cycle.processed) % snap.n if snap.n else 0
            if cycle.node is None:
                out.pending, out.message, out.blocked = w.replicas - out.placed, cycle.message, cycle.blocked
                break
            if cycle.tied is not None:
                run.decisive_ties += 1
            snap.place(cycle.node, shape.requests, shape.nonzero, shape.ports)
            out.placed += 1
            out.nodes.append(cycle.node)
            if spread is not None:
                spread.add(cycle.node)
            run.hold(cycle.node, index)
            out.devices.append((cycle.node, *used))
        return start

    def _with_claims(self, snap: Snapshot, dra, shape: PodShape, w: PodWorkload, start: int, rng, spread=None):
        """A pod with DRA claims, through the profile's claims plugin (DynamicResources): its PreFilter, then the
        cycle with its Filter last, on the nodes that pass the rest; PostFilter when no node passes, Reserve on
        the chosen node."""
        from gpufleet.scheduler.plugins.dynamicresources.structured import FilterError

        framework = shape.framework
        plugin = framework.claims_plugins[0]
        needs = plugin.pre_filter(dra, w.namespace, w.name, w.spec)
        if needs.gated:
            return Cycle(None, 0, needs.gated), None
        if needs.prefilter:
            return Cycle(None, snap.n, f"0/{snap.n} nodes are available: {needs.prefilter}."), None
        outcomes = plugin.filter_claims(dra, needs)
        try:
            cycle = schedule_one(snap, shape, start, rng, outcomes, spread=spread)
        except FilterError as e:
            return Cycle(None, snap.n, f'running "{plugin.name}" filter plugin: {e}'), None
        if cycle.node is None:  # the pod stays Pending this attempt; what PostFilter frees, later pods may have
            framework.run_post_filter_plugins({plugin.name: dra}, {plugin.name: needs}, cycle.extra_failures)
            return cycle, None
        return cycle, plugin.reserve(dra, needs, outcomes, cycle.node)

    def _decisive(self, snap: Snapshot, tied: np.ndarray, claims: bool) -> bool:
        if snap.n >= _WHOLE_FLEET or claims or snap.ports is not None:
            return True  # where a node sits in the order, which devices or host ports it has, matters later
        first = tied[0]
        arrays = [snap.pod_count, *snap.requested.values(), *snap.nonzero.values(), *snap.alloc.values(),
                  self.kind_of]
        return any(bool(np.any(a[tied] != a[first])) for a in arrays)
