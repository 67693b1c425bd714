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
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from gpufleet.manifests.workloads import PodWorkload
from gpufleet.scheduler.filters import has_pod_rules
from gpufleet.scheduler.plugins.defaultpreemption import PreemptionState
from gpufleet.scheduler.plugins.podtopologyspread.system_default import DefaultSpread
from gpufleet.scheduler.schedule_one import Cycle, Kept, Landed, schedule_one, schedule_replicas
from gpufleet.scheduler.snapshot import PodShape, Snapshot
from gpufleet.scheduling.preemption_turns import PreemptionTurns
from gpufleet.scheduling.queue_order import turns
from gpufleet.scheduling.run_state import Outcome, PriorityInputs, Run, SpreadInputs

if TYPE_CHECKING:
    from gpufleet.scheduler.pod_constraints import PodConstraints

#: Pod shapes whose feasibility and scores a run keeps up to date (two arrays over the fleet each).
KEPT_SHAPES = 64
#: Below this many nodes the scheduler scores every feasible node, so a tie between nodes in the same
#: state (class, images, requests) cannot change any later outcome.
_WHOLE_FLEET = 100


class Simulation(PreemptionTurns):
    def __init__(self, base: Snapshot, workloads: list[PodWorkload], shapes: dict[int, PodShape],
                 same_node_kind: np.ndarray, dra_base=None, constraints: dict[int, PodConstraints] | None = None,
                 priorities: PriorityInputs | None = None, spreads: dict[int, SpreadInputs] | None = None,
                 remade: dict[int, PodShape] | None = None, apart: Sequence[int] = ()):
        """`shapes`: the workloads to schedule (by index), in order; `same_node_kind`: per node, an id equal
        for nodes that every plugin sees alike (class and images); `constraints`: per workload, its pods
        against the others, when some pod's placement depends on where other pods are (`base` then keeps
        the pods on each node); `priorities`: when some pod may preempt others; `spreads`: per workload, its
        system default spreading, for those that get it; `remade`: the workloads (after the check's) that
        stand for the new pods running pods' controllers make when they are evicted, scheduled only then;
        `apart`: workloads (among `shapes`) that each come after all the others, alone on a copy of what they
        left (`_place_apart`)."""
        self.base, self.workloads, self.dra_base = base, workloads, dra_base
        alone = set(apart)
        self.apart = [i for i in shapes if i in alone]
        self.scheduled = [i for i in shapes if i not in alone]
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
            pre = PreemptionState(snap, [list(pods) for pods in self.priorities.running], self.priorities.budgets, rng,
                                  scales=self.priorities.scales)

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
        if self.apart:
            self._place_apart(snap, dra, start, rng, run)
        return run

    def _place_apart(self, snap: Snapshot, dra, start: int, rng: random.Random, run: Run) -> None:
        """Each workload of `apart` as if it came last and alone: on its own copy of the nodes, devices, node
        index and random draws the others left. Its pods hold no place in `run.occupants` (no other workload
        sees them; an explanation names only the workloads before it)."""
        draws, occupants = rng.getstate(), {node: dict(held) for node, held in run.occupants.items()}
        for index in self.apart:
            rng.setstate(draws)
            mine, devices = snap.copy(), (dra.copy() if dra is not None else None)
            shape, w = self.shapes[index], self.workloads[index]
            out = run.outcomes[index] = Outcome()

            def tie(best: np.ndarray, mine: Snapshot = mine, claims: bool = devices is not None) -> None:
                if self._decisive(mine, best, claims):
                    run.decisive_ties += 1

            if w.spec.get("resourceClaims"):
                self._claims_run(mine, devices, shape, w, start, rng, run, index, out, self._spread(index, run))
            else:
                pod = self.constraints.get(index)
                if pod is not None and self._by_rules(mine, index):
                    got, failed, _ = self._one_by_one(mine, shape, w, index, pod, start, rng, run)
                else:
                    got, failed, _ = schedule_replicas(mine, shape, w.replicas, start, rng, tie,
                                                       Kept(mine, shape, 0), Landed(), self._spread(index, run))
                out.nodes, out.placed = got, len(got)
                if failed is not None:
                    out.pending, out.message, out.blocked = w.replicas - len(got), failed.message, failed.blocked
            run.occupants = {node: dict(held) for node, held in occupants.items()}

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

    def _by_rules(self, snap: Snapshot, index: int) -> bool:
        """Whether workload `index`'s pods are placed against others: its own topology spread or pod
        (anti-)affinity, or a placed pod's terms that match it."""
        pod, w = self.constraints.get(index), self.workloads[index]
        return pod is not None and (has_pod_rules(w.spec) or (snap.placed is not None
                                                              and snap.placed.concern(w.namespace, w.labels)))

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
        for pod in range(w.replicas):
            while True:
                cycle, used, released = self._with_claims(snap, dra, shape, w, start, rng, spread)
                start = (start + cycle.processed) % snap.n if snap.n else 0
                if cycle.node is not None or released is None:
                    break
                # The deallocation is an update of a claim the pod uses: the scheduler requeues the pod and
                # tries it again (one claim per failed attempt, so this ends).
                out.released.append((pod, released))
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
            return Cycle(None, 0, needs.gated), None, None
        if needs.prefilter:
            return Cycle(None, snap.n, f"0/{snap.n} nodes are available: {needs.prefilter}."), None, None
        outcomes = plugin.filter_claims(dra, needs)
        try:
            cycle = schedule_one(snap, shape, start, rng, outcomes, spread=spread)
        except FilterError as e:
            return Cycle(None, snap.n, f'running "{plugin.name}" filter plugin: {e}'), None, None
        if cycle.node is None:  # Pending this attempt; PostFilter may free a claim, and then the pod is retried
            framework.run_post_filter_plugins({plugin.name: dra}, {plugin.name: needs}, cycle.extra_failures)
            return cycle, None, needs.released
        return cycle, plugin.reserve(dra, needs, outcomes, cycle.node), None

    def _decisive(self, snap: Snapshot, tied: np.ndarray, claims: bool) -> bool:
        if snap.n >= _WHOLE_FLEET or claims or snap.ports is not None:
            return True  # where a node sits in the order, which devices or host ports it has, matters later
        first = tied[0]
        arrays = [snap.pod_count, *snap.requested.values(), *snap.nonzero.values(), *snap.alloc.values(),
                  self.kind_of]
        return any(bool(np.any(a[tied] != a[first])) for a in arrays)
