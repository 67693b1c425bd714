"""Preemption inside a run (gpufleet.scheduling.simulation): a pod that fits no node goes through PostFilter
(DefaultPreemption), is nominated and holds the room while its victims terminate; the victims' controllers make
new pods; the pods waiting for room come back when a victim is deleted; the queue pops higher priorities first,
and a pod does not see the nominated pods of lower priority (docs/capacity.md, Preemption)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpufleet.manifests.workloads import PodWorkload
from gpufleet.scheduler.plugins.defaultpreemption import DefaultPreemption, PreemptionState, Preemptor
from gpufleet.scheduler.plugins.defaultpreemption.default_preemption import put_back, take_off
from gpufleet.scheduler.schedule_one import Cycle, Landed, schedule_replicas
from gpufleet.scheduler.snapshot import PodShape, Snapshot
from gpufleet.scheduling.run_state import STARTED_IN_CHECK, Outcome, PriorityInputs, Run

if TYPE_CHECKING:
    from gpufleet.scheduler.plugins.podtopologyspread.system_default import DefaultSpread
    from gpufleet.scheduler.pod_constraints import PodConstraints

_PREEMPTION = DefaultPreemption.name


class PreemptionTurns:
    """The preemption half of a run, mixed into gpufleet.scheduling.simulation.Simulation, which provides the
    workloads, their shapes and constraints, and the cycles that place pods."""

    workloads: list[PodWorkload]
    shapes: dict[int, PodShape]
    constraints: dict[int, PodConstraints]
    priorities: PriorityInputs | None
    _coming: list[int | None]
    _at: int

    def _by_rules(self, snap: Snapshot, index: int) -> bool:
        raise NotImplementedError

    def _place_waiting(self, snap: Snapshot, index: int, count: int, start: int, rng, tie, placed: Landed, run: Run,
                       pre: PreemptionState | None,
                       rules: PodConstraints | None) -> tuple[list[int], Cycle | None, int]:
        raise NotImplementedError

    def _one_by_one(self, snap: Snapshot, shape: PodShape, w: PodWorkload, index: int, pod: PodConstraints,
                    start: int, rng, run: Run, count: int | None = None) -> tuple[list[int], Cycle | None, int]:
        raise NotImplementedError

    def _spread(self, index: int, run: Run) -> DefaultSpread | None:
        raise NotImplementedError

    def _wait(self, pre: PreemptionState, index: int, count: int) -> None:
        """`count` pods of workload `index` found no room (and, if they may, nothing to preempt): they wait until
        a victim's deletion brings them back (`PreemptionState.let_go`). Pods with claims are left out: their
        victims' devices are not freed in a check."""
        if count > 0 and not self.workloads[index].spec.get("resourceClaims"):
            pre.waiting[index] = pre.waiting.get(index, 0) + count

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

    def _on_node(self, pre: PreemptionState, node: int, index: int, seq: int) -> None:
        """A pod of workload `index` landed on `node`: preemption may evict it later (and its pod
        (anti-)affinity terms, placed under its index, leave with it)."""
        from gpufleet.scheduler.framework.preemption import Victim

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
