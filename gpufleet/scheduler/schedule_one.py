"""One scheduling cycle, as pkg/scheduler/schedule_one.go runs it for one pod.

1. Filter: every node's first failing filter; nodes are visited from `next_start` in the scheduler's node
   order and the search stops once `num_feasible_nodes_to_find` feasible nodes are found (the adaptive
   percentageOfNodesToScore). The next cycle starts where this one stopped (nextStartNodeIndex).
2. No feasible node: the pod stays Pending with the FailedScheduling text.
3. One feasible node: it is chosen without scoring.
4. Score the feasible nodes with the pod's profile (gpufleet.scheduler.framework.runtime: PreScore once per
   pod shape, Score, NormalizeScore, weights from gpufleet.scheduler.plugins.default_plugins), sum;
   selectHost takes the best, a tie broken at random (uniformly, as its reservoir sampling does), with the
   run's own seeded random generator.

The filter search is sequential here: the scheduler checks nodes on 16 goroutines and may look at a few
more nodes than needed before it stops, which only shifts where the next cycle starts.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from gpufleet.scheduler.filters import failed_scheduling
from gpufleet.scheduler.snapshot import PodShape, Snapshot

if TYPE_CHECKING:
    from gpufleet.scheduler.plugins.podtopologyspread.system_default import DefaultSpread
    from gpufleet.scheduler.pod_constraints import PodConstraints

MIN_FEASIBLE_NODES_TO_FIND = 100
_MAX = np.maximum.reduce  # the ufunc itself: ndarray.max() adds a Python wrapper per call
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
BASE_PERCENTAGE_OF_NODES_TO_SCORE = 50

#: Nodes the further filter (DynamicResources) is asked about at once.
_CHUNK = 64


class ExtraFilter(Protocol):
    """A further filter (the DynamicResources plugin), asked about many nodes at once."""

    def codes(self, positions: np.ndarray) -> np.ndarray:
        """Per node: 0 when it passes, a reason's code (> 0), or < 0 for the filter's error."""

    def reason(self, code: int) -> str:
        """The reason string of a code."""

    def fail(self, pos: int) -> None:
        """Raise the filter's error for a node whose code is < 0."""


def num_feasible_nodes_to_find(num_all_nodes: int) -> int:
    """The adaptive percentageOfNodesToScore: 50% minus 1% per 125 nodes, at least 5% and 100 nodes."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = max(BASE_PERCENTAGE_OF_NODES_TO_SCORE - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass
class Cycle:
    node: int | None
    """The chosen node's position, None when the pod stays Pending."""
    processed: int
    """Nodes the filter search went through (advances nextStartNodeIndex)."""
    message: str = ""
    tied: np.ndarray | None = None
    """The positions that shared the best score, when more than one did."""
    blocked: np.ndarray | None = field(default=None, repr=False)
    extra_failures: dict[str, int] = field(default_factory=dict)
    """When Pending: how many nodes failed the extra filter (DynamicResources), by reason."""
    """When Pending: the nodes that passed the static filters but not NodeResourcesFit (or the extra filter)."""


def schedule_one(snap: Snapshot, shape: PodShape, next_start: int, rng: random.Random,
                 extra: ExtraFilter | None = None, pod: PodConstraints | None = None,
                 spread: DefaultSpread | None = None) -> Cycle:
    """`pod`: the workload's pod against the others (topology spread, pod affinity), when that matters;
    `spread`: the system default spreading's scores, for a pod that gets them.

    Only the nodes that pass the static filters are looked at (`shape.eligible_nodes`): the others fail
    there whatever the cluster holds, and their reasons are counted once per shape (`static_counts`)."""
    n = snap.n
    if n == 0:
        return Cycle(None, 0, failed_scheduling({}, 0))
    at = shape.eligible_nodes
    feasible, short = shape.fits_eligible(snap)  # over `at`
    later: dict[str, int] = {}  # reasons of the filters after NodeResourcesFit, on the nodes that reach them
    if pod is not None:
        for reason, mask in pod.filters(snap):
            mask = mask[at]
            count = int(np.count_nonzero(feasible & mask))
            if count:
                later[reason] = later.get(reason, 0) + count
                feasible &= ~mask
    candidates = at[feasible]
    k = num_feasible_nodes_to_find(n)
    extra_reasons: dict[str, int] = {}
    if extra is None:
        window, processed = _window(candidates, next_start, k, n)
    else:
        window, processed = _window_with(candidates, next_start, k, n, extra, extra_reasons)
    if not len(window):
        counts = dict(shape.static_counts)
        for reason, mask in short.items():
            hit = int(np.count_nonzero(mask))
            if hit:
                counts[reason] = counts.get(reason, 0) + hit
        for reason, hit in [*later.items(), *extra_reasons.items()]:
            counts[reason] = counts.get(reason, 0) + hit
        blocked = shape.eligible_nodes  # shared: read only
        return Cycle(None, n, failed_scheduling(counts, n), blocked=blocked, extra_failures=extra_reasons)
    if len(window) == 1:
        return Cycle(int(window[0]), processed)
    total = score(snap, shape, window)
    if pod is not None:
        more = pod.scores(snap, window)
        if more is not None:
            total = total + more
    found = spread.scores(window) if spread is not None else None
    if found is not None:
        total = total + found
    best = window[total == total.max()]
    if len(best) == 1:
        return Cycle(int(best[0]), processed)
    return Cycle(int(best[rng.randrange(len(best))]), processed, tied=best)


def _window(candidates: np.ndarray, start: int, k: int, n: int) -> tuple[np.ndarray, int]:
    """The first k feasible nodes from `start` (circular) and how many nodes the search went through."""
    if len(candidates) <= k:
        return candidates, n
    j = int(np.searchsorted(candidates, start))
    if len(candidates) - j > k:  # no wrap-around: a slice, no copy
        return candidates[j:j + k], int(candidates[j + k] - start)
    ordered = np.concatenate((candidates[j:], candidates[:j])) if j else candidates
    # The search stops when it finds one feasible node more than it needs: it went through every node
    # before that one.
    return ordered[:k], int(ordered[k] - start) % n


def _window_with(candidates: np.ndarray, start: int, k: int, n: int, extra: ExtraFilter,
                 reasons: dict[str, int]) -> tuple[np.ndarray, int]:
    """As `_window`, with a further filter run on each node that passed the others, in visiting order: the
    search stops at the (k+1)-th node that passes it. The filter answers for a chunk of nodes at a time
    (it may look at a few nodes past the stop; what it says there is not counted)."""
    j = int(np.searchsorted(candidates, start))
    ordered = np.concatenate((candidates[j:], candidates[:j])) if j else candidates
    found: list[np.ndarray] = []
    passed, at = 0, 0
    while at < len(ordered):
        chunk = ordered[at:at + max(_CHUNK, 8 * (k + 1 - passed))]
        at += len(chunk)
        codes = extra.codes(chunk)
        ok = codes == 0
        stop = int(np.searchsorted(np.cumsum(ok), k + 1 - passed))  # the first node past the window
        seen = codes[:stop]
        failed = np.flatnonzero(seen < 0)
        if len(failed):
            extra.fail(int(chunk[failed[0]]))
        for code, count in enumerate(np.bincount(seen[seen > 0]).tolist()):
            if count:
                reason = extra.reason(code)
                reasons[reason] = reasons.get(reason, 0) + count
        found.append(chunk[:stop][ok[:stop]])
        if stop < len(chunk):
            return np.concatenate(found), int(chunk[stop] - start) % n
        passed += int(np.count_nonzero(ok))
    return (np.concatenate(found) if found else candidates[:0]), n


def score(snap: Snapshot, shape: PodShape, window: np.ndarray) -> np.ndarray:
    """The weighted sum of every score plugin that runs for this pod, per node of the window."""
    return window_scores(shape, window, base_scores(snap, shape, window))


def base_scores(snap: Snapshot, shape: PodShape, nodes: np.ndarray) -> np.ndarray:
    """The weighted scores that each node gets on its own (no normalisation over the scored nodes)."""
    return shape.framework.base_scores(snap, shape.scores, nodes)


def window_scores(shape: PodShape, window: np.ndarray, base: np.ndarray) -> np.ndarray:
    """`base` plus the scores normalised over the scored nodes (TaintToleration, NodeAffinity)."""
    return shape.framework.window_scores(shape.scores, window, base)


class Landed:
    """Every pod's node in one run, in placement order (a growing array: the changes since a point are a view)."""

    __slots__ = ("nodes", "count")

    def __init__(self) -> None:
        self.nodes = np.zeros(1024, dtype=np.int64)
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def extend(self, nodes: list[int]) -> None:
        if self.count + len(nodes) > len(self.nodes):
            self.nodes = np.concatenate((self.nodes, np.zeros(max(len(self.nodes), len(nodes)), dtype=np.int64)))
        self.nodes[self.count:self.count + len(nodes)] = nodes
        self.count += len(nodes)

    def since(self, at: int) -> np.ndarray:
        return self.nodes[at:self.count]


class Kept:
    """One pod shape's feasibility and own scores over all nodes, kept within a run between its workloads and
    brought up to date from the nodes pods landed on since (capacity only shrinks, so a node that stopped
    fitting never fits again, and only those nodes' scores change)."""

    __slots__ = ("feasible", "base", "seen")

    def __init__(self, snap: Snapshot, shape: PodShape, seen: int):
        at = shape.eligible_nodes
        at = at[shape.fits_eligible(snap)[0]]
        self.feasible = np.zeros(snap.n, dtype=bool)
        self.feasible[at] = True
        self.base = np.zeros(snap.n, dtype=np.int64)
        self.base[at] = base_scores(snap, shape, at)  # an infeasible node is never scored
        self.seen = seen

    def refresh(self, snap: Snapshot, shape: PodShape, landed: Landed) -> None:
        """`landed`: every pod's node in placement order; those after `seen` changed."""
        if len(landed) > self.seen:
            changed = landed.since(self.seen)
            changed = changed[self.feasible[changed]]  # a node that did not fit never fits again
            if len(changed):
                changed = np.unique(changed)
                still = shape.fits_mask(snap, changed)[0]
                self.feasible[changed] = still
                kept = changed[still]
                if len(kept):
                    self.base[kept] = base_scores(snap, shape, kept)
        self.seen = len(landed)


def schedule_replicas(snap: Snapshot, shape: PodShape, count: int, start: int, rng: random.Random,
                      on_tie: Callable[[np.ndarray], None], kept: Kept | None = None,
                      landed: Landed | None = None,
                      spread: DefaultSpread | None = None) -> tuple[list[int], Cycle | None, int]:
    """`count` pods of one shape, one cycle each, placed as they are chosen: (their nodes, the cycle that
    left one Pending or None, the next start index). The same as `schedule_one` per pod; the per-node scores
    that do not depend on the other scored nodes are kept (`kept`, refreshed from `landed`, the run's pods'
    nodes so far) and refreshed only on the nodes pods land on. `spread`: the system default spreading,
    whose counts grow with each pod placed."""
    n = snap.n
    if n == 0:
        return [], schedule_one(snap, shape, start, rng), start
    landed = Landed() if landed is None else landed
    if kept is None:
        kept = Kept(snap, shape, len(landed))
    kept.refresh(snap, shape, landed)
    feasible, base = kept.feasible, kept.base
    candidates = np.flatnonzero(feasible)
    if not len(candidates):
        return [], schedule_one(snap, shape, start, rng), start
    k = num_feasible_nodes_to_find(n)
    placed: list[int] = []
    framework, scores = shape.framework, shape.scores
    for _ in range(count):
        window, processed = _window(candidates, start, k, n)
        if not len(window):
            kept.seen += len(placed)
            return placed, schedule_one(snap, shape, start, rng), start
        if len(window) == 1:
            node = int(window[0])
        else:
            total = framework.window_scores(scores, window, base[window])
            if spread is not None:
                found = spread.scores(window)
                if found is not None:
                    total = total + found
            best = window[total == _MAX(total)]
            node = int(best[rng.randrange(len(best))]) if len(best) > 1 else int(best[0])
            if len(best) > 1:
                on_tie(best)
        start = (start + processed) % n
        snap.place(node, shape.requests, shape.nonzero, shape.ports)
        placed.append(node)
        if spread is not None:
            spread.add(node)
        if framework.fits_one(snap, shape, node):
            base[node] = framework.base_score_one(snap, scores, node)
        else:
            feasible[node] = False
            candidates = candidates[candidates != node]
    kept.seen += len(placed)  # its own pods are accounted for already
    return placed, None, start
