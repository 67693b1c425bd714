"""The cluster as one run of the scheduler sees it, and the pod shapes it schedules.

`Snapshot`: per node, in the scheduler's node order (gpufleet.scheduling.node_tree), what its NodeInfo
holds: allocatable, Requested, NonZeroRequested (cpu, memory) and the number of pods, as numpy arrays,
updated as pods are placed. `PodShape`: what one pod template asks of every node, computed once per
template and shared by every run: its request, its static filter result per node (NodeUnschedulable,
TaintToleration, NodeAffinity: gpufleet.scheduling.filters, once per node class) and its raw scores that
do not change as pods land (TaintToleration, NodeAffinity, ImageLocality).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from gpufleet.capacity.kubectl import non_zero
from gpufleet.capacity.model import BoundPod, Node
from gpufleet.capacity.ports import host_ports
from gpufleet.capacity.quantity import CPU, MEMORY, PODS
from gpufleet.capacity.requests import pod_requests
from gpufleet.scheduling.classes import NodeClasses
from gpufleet.scheduling.filters import TOO_MANY_PODS, PodTerms
from gpufleet.scheduling.plugins.imagelocality import ImageStates
from gpufleet.scheduling.plugins.nodeaffinity import preferred_score, preferred_terms
from gpufleet.scheduling.plugins.nodeports import REASON as PORTS_TAKEN
from gpufleet.scheduling.plugins.nodeports import UsedPorts
from gpufleet.scheduling.plugins.tainttoleration import intolerable_prefer_no_schedule

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
        self.pods = self.placed = None  # PodsOnNodes, PlacedTerms: kept when pods' placement depends on others
        # What scoring reads as allocatable: 0 where it is unknown (the scheduler leaves a 0 out).
        self.score_alloc = {r: np.where(self.unknown[r], 0, self.alloc[r]) if r in self.unknown else self.alloc[r]
                            for r in (CPU, MEMORY)}

    def copy(self) -> "Snapshot":
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


class PodShape:
    """One pod template as every node sees it (the same for every replica and every run)."""

    def __init__(self, spec: dict, terms: PodTerms, classes: NodeClasses, static: list[str | None],
                 images: ImageStates, class_of: np.ndarray):
        self.spec = spec
        self.requests = pod_requests(spec)
        self.nonzero = non_zero(spec, self.requests)
        self.cpu, self.memory = self.requests.get(CPU, 0), self.requests.get(MEMORY, 0)
        self.best_effort = not self.cpu and not self.memory
        self.fit = {r: v for r, v in self.requests.items() if v > 0 and r != PODS}
        self.ports = host_ports(spec)
        # Arrays over the fleet are shared by the shapes with equal inputs (the static result, tolerations,
        # preferred terms, images): a fleet's thousands of workloads have a few dozen of each.
        self.static = static
        self.static_of, self.eligible, self.static_counts, self.eligible_nodes = classes.shared(
            ("static", id(static)), lambda: _static_arrays(static, classes, class_of))
        self.taint_raw = classes.shared(("taints", repr(terms.tolerations)), lambda: _by_class(
            [intolerable_prefer_no_schedule(node, terms.tolerations) for node in classes.nodes], class_of))
        preferred = preferred_terms(spec)
        self.affinity_raw = classes.shared(("preferred", repr(preferred)), lambda: _by_class(
            [preferred_score(node, preferred) for node in classes.nodes] if preferred else [], class_of))
        self.image_raw = _image_scores(spec, images, classes)
        self.beyond: dict[int, bool] = {}
        """id(other shape) -> whether the other's pods may use nodes this one cannot (gpufleet.scheduling.blocked)."""
        self._possible: np.ndarray | None = None
        self._memo: dict = {}

    def fits_mask(self, snap: Snapshot, nodes: np.ndarray | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(nodes that pass every filter so far, per NodeResourcesFit reason the nodes it fails), over all
        nodes or the given positions."""
        at = slice(None) if nodes is None else nodes
        feasible = self.eligible[at].copy()
        short: dict[str, np.ndarray] = {}
        taken = None
        if self.ports and snap.ports is not None:  # NodePorts, before NodeResourcesFit
            taken = short[PORTS_TAKEN] = snap.ports.taken(self.ports, at)
            feasible &= ~taken
        full = snap.pod_count[at] >= snap.alloc[PODS][at]
        if PODS in snap.unknown:
            full &= ~snap.unknown[PODS][at]
        short[TOO_MANY_PODS] = full
        feasible &= ~full
        for r, v in self.fit.items():
            alloc, used = snap.alloc.get(r), snap.requested.get(r)
            free = (0 if alloc is None else alloc[at]) - (0 if used is None else used[at])
            lacking = np.asarray(free < v) if alloc is not None or used is not None else np.ones(len(feasible), bool)
            if r in snap.unknown:
                lacking = lacking & ~snap.unknown[r][at]
            short[f"Insufficient {r}"] = lacking
            feasible &= ~lacking
        if taken is not None:  # a node that failed NodePorts never reached NodeResourcesFit
            for reason in short:
                if reason != PORTS_TAKEN:
                    short[reason] = short[reason] & ~taken
        return feasible, short

    def fits_eligible(self, snap: Snapshot) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """`fits_mask` over the nodes that pass the static filters only (`eligible_nodes`, in order): a node
        that fails them fits nowhere, and a workload that selects a pool reads that pool's arrays, not the
        fleet's."""
        at = self.eligible_nodes
        if 4 * len(at) < snap.n:
            return self.fits_mask(snap, at)
        feasible, short = self.fits_mask(snap)
        return feasible[at], {reason: mask[at] for reason, mask in short.items()}

    def memo(self, name: str, compute):
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
        if not self.eligible[i]:
            return False
        if self.ports and snap.ports is not None and snap.ports.taken_on(self.ports, i):
            return False
        if snap.pod_count[i] >= snap.alloc[PODS][i] and not (PODS in snap.unknown and snap.unknown[PODS][i]):
            return False
        for r, v in self.fit.items():
            alloc, used = snap.alloc.get(r), snap.requested.get(r)
            free = (0 if alloc is None else int(alloc[i])) - (0 if used is None else int(used[i]))
            if free < v and not (r in snap.unknown and snap.unknown[r][i]):
                return False
        return True


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


def _by_class(values: list[int], class_of: np.ndarray) -> np.ndarray | None:
    """Per node its class's value; None when every class has the same (the score cannot differ)."""
    return np.array(values, dtype=_INT)[class_of] if len(set(values)) > 1 else None


def _image_scores(spec: dict, images: ImageStates, classes: NodeClasses) -> np.ndarray | None:
    if not images:
        return None
    containers = [c for key in ("initContainers", "containers") for c in spec.get(key) or () if isinstance(c, dict)]
    if not containers:
        return None
    names = tuple(str(c.get("image") or "") for c in containers)
    return classes.shared(("images", names), lambda: images.scores(names, len(containers)))
