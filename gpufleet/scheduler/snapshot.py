"""The cluster as one run of the scheduler sees it, and the pod shapes it schedules.

`Snapshot`: per node, in the scheduler's node order (gpufleet.scheduler.node_tree), what its NodeInfo
holds: allocatable, Requested, NonZeroRequested (cpu, memory) and the number of pods, as numpy arrays,
updated as pods are placed. `PodShape`: what one pod template asks of every node, computed once per
template and shared by every run: its request, its static filter result per node (the profile's filters
that read the pod and the node alone, once per node class) and its score plugins' states after PreScore
(the raw scores that do not change as pods land: TaintToleration, NodeAffinity, ImageLocality).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from gpufleet.capacity.model import BoundPod, Node
from gpufleet.capacity.quantity import CPU, MEMORY, PODS
from gpufleet.scheduler.classes import NodeClasses
from gpufleet.scheduler.filters import PodTerms
from gpufleet.scheduler.framework.runtime import Framework
from gpufleet.scheduler.plugins.imagelocality import ImageStates
from gpufleet.scheduler.plugins.nodeports import NodePorts, UsedPorts
from gpufleet.scheduler.plugins.noderesources import Fit

_T = TypeVar("_T")

if TYPE_CHECKING:  # the modules that fill them in import this one
    from gpufleet.scheduler.pod_constraints import PlacedTerms
    from gpufleet.scheduler.pods_on_nodes import PodsOnNodes

_INT = np.int64


class Snapshot:
    def __init__(self, nodes: Sequence[Node], pods: Sequence[BoundPod] = ()):
        self.nodes = list(nodes)
        n = self.n = len(self.nodes)
        self.index = {node.name: i for i, node in enumerate(self.nodes)}
        names = sorted({r for node in self.nodes for r in node.allocatable} | {CPU, MEMORY, PODS})
        self.alloc = {r: np.array([node.allocatable.get(r, 0) for node in self.nodes], dtype=_INT) for r in names}
        self.unknown = {r: np.array([r in node.unknown for node in self.nodes], dtype=bool)
                        for r in sorted({r for node in self.nodes for r in node.unknown})}
        self.requested = {r: np.zeros(n, dtype=_INT) for r in names if r != PODS}
        self.nonzero = {CPU: np.zeros(n, dtype=_INT), MEMORY: np.zeros(n, dtype=_INT)}
        self.pod_count = np.zeros(n, dtype=_INT)
        self.ports: UsedPorts | None = None  # made when a pod holds a host port
        for pod in pods:
            i = self.index.get(pod.node)
            if i is not None:
                self.place(i, pod.requests, pod.non_zero(), pod.ports)
        self._domains: dict[str, np.ndarray] = {}
        # kept when pods' placement depends on others
        self.pods: PodsOnNodes | None = None
        self.placed: PlacedTerms | None = None
        # What scoring reads as allocatable: 0 where it is unknown (the scheduler leaves a 0 out).
        self.score_alloc = {r: np.where(self.unknown[r], 0, self.alloc[r]) if r in self.unknown else self.alloc[r]
                            for r in (CPU, MEMORY)}

    def copy(self) -> Snapshot:
        twin = Snapshot.__new__(Snapshot)
        twin.nodes, twin.n, twin.index, twin.alloc = self.nodes, self.n, self.index, self.alloc
        twin.unknown, twin.score_alloc = self.unknown, self.score_alloc
        twin.requested = {r: a.copy() for r, a in self.requested.items()}
        twin.nonzero = {r: a.copy() for r, a in self.nonzero.items()}
        twin.pod_count = self.pod_count.copy()
        twin.ports = None if self.ports is None else self.ports.copy()
        twin._domains = self._domains
        twin.pods = None if self.pods is None else self.pods.copy()
        twin.placed = None if self.placed is None else self.placed.copy()
        return twin

    def domains(self, key: str) -> np.ndarray:
        """Per node, an id of its value of label `key` (equal values, equal ids), -1 without the label."""
        found = self._domains.get(key)
        if found is None:
            ids: dict[str, int] = {}
            found = self._domains[key] = np.array(
                [-1 if key not in node.labels else ids.setdefault(node.labels[key], len(ids)) for node in self.nodes],
                dtype=np.int64)
        return found

    def place(self, i: int, requests: dict[str, int], nonzero: tuple[int, int], ports: tuple = ()) -> None:
        """A pod lands on node i: its requests count against the node, its host ports are held there
        (NodeInfo.AddPod)."""
        if ports:
            if self.ports is None:
                self.ports = UsedPorts(self.n)
            self.ports.add(i, ports)
        for r, v in requests.items():
            if r == PODS or not v:
                continue
            have = self.requested.get(r)
            if have is None:
                have = self.requested[r] = np.zeros(self.n, dtype=_INT)
            have[i] += v
        self.nonzero[CPU][i] += nonzero[0]
        self.nonzero[MEMORY][i] += nonzero[1]
        self.pod_count[i] += 1

    def unplace(self, i: int, requests: dict[str, int], nonzero: tuple[int, int], ports: tuple = ()) -> None:
        """A pod leaves node i (preempted): the reverse of `place` (NodeInfo.RemovePod)."""
        if ports and self.ports is not None:
            self.ports.remove(i, ports)
        for r, v in requests.items():
            if r != PODS and v:
                self.requested[r][i] -= v
        self.nonzero[CPU][i] -= nonzero[0]
        self.nonzero[MEMORY][i] -= nonzero[1]
        self.pod_count[i] -= 1


class PodShape:
    """One pod template as every node sees it (the same for every replica and every run)."""

    def __init__(self, spec: dict, terms: PodTerms, classes: NodeClasses, static: list[str | None],
                 images: ImageStates, class_of: np.ndarray):
        self.spec, self.terms, self.classes = spec, terms, classes
        self.images, self.class_of = images, class_of
        self.framework: Framework = classes.framework
        self.requests, self.nonzero = _FIT.pre_filter(spec)
        self.cpu, self.memory = self.requests.get(CPU, 0), self.requests.get(MEMORY, 0)
        self.best_effort = not self.cpu and not self.memory
        self.fit = {r: v for r, v in self.requests.items() if v > 0 and r != PODS}
        self.ports = _PORTS.pre_filter(spec)
        # Arrays over the fleet are shared by the shapes with equal inputs (the static result, tolerations,
        # preferred terms, images): a fleet's thousands of workloads have a few dozen of each.
        self.static = static
        self.static_of, self.eligible, self.static_counts, self.eligible_nodes = classes.shared(
            ("static", id(static)), lambda: _static_arrays(static, classes, class_of))
        self.scores = self.framework.pre_score(self)
        self.beyond: dict[int, bool] = {}
        """id(other shape) -> whether the other's pods may use nodes this one cannot (gpufleet.scheduling.blocked)."""
        self._possible: np.ndarray | None = None
        self._memo: dict[str, Any] = {}  # each name's value is of the type its `compute` returns

    def fits_mask(self, snap: Snapshot, nodes: np.ndarray | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(nodes that pass every filter so far, per reason the nodes failing it), over all nodes or the given
        positions (the framework's `run_filter_plugins`)."""
        return self.framework.run_filter_plugins(snap, self, slice(None) if nodes is None else nodes)

    def fits_eligible(self, snap: Snapshot) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """`fits_mask` over the nodes that pass the static filters only (`eligible_nodes`, in order): a node
        that fails them fits nowhere, and a workload that selects a pool reads that pool's arrays, not the
        fleet's."""
        at = self.eligible_nodes
        if 4 * len(at) < snap.n:
            return self.fits_mask(snap, at)
        feasible, short = self.fits_mask(snap)
        return feasible[at], {reason: mask[at] for reason, mask in short.items()}

    def memo(self, name: str, compute: Callable[[], _T]) -> _T:
        """A value derived from this shape alone (the same in every run), computed once."""
        if name not in self._memo:
            self._memo[name] = compute()
        return self._memo[name]

    def possible(self, snap: Snapshot) -> np.ndarray:
        """Nodes that pass the static filters and could hold one pod when empty (allocatable >= request)."""
        if self._possible is None:
            ok = self.eligible.copy()
            for r, v in self.fit.items():
                alloc = snap.alloc.get(r)
                enough = np.zeros(snap.n, dtype=bool) if alloc is None else alloc >= v
                if r in snap.unknown:
                    enough |= snap.unknown[r]
                ok &= enough
            self._possible = ok
        return self._possible

    def fits_one(self, snap: Snapshot, i: int) -> bool:
        """`fits_mask` for one node."""
        return self.framework.fits_one(snap, self, i)


def _static_arrays(static: list[str | None], classes: NodeClasses, class_of: np.ndarray) -> tuple:
    """(per node the code of its first failing static filter or -1, the nodes that pass as a mask and as
    positions, per reason the nodes failing it)."""
    codes = np.array([-1 if s is None else j for j, s in enumerate(static)], dtype=np.int32)
    static_of = codes[class_of] if len(class_of) else np.zeros(0, dtype=np.int32)
    counts: dict[str, int] = {}
    for c, reason in enumerate(static):
        if reason is not None:
            counts[reason] = counts.get(reason, 0) + len(classes.members[c])
    eligible = static_of < 0
    return static_of, eligible, counts, np.flatnonzero(eligible)


_FIT, _PORTS = Fit(), NodePorts()
