"""What one run of the scheduler over the workloads records (per workload, per node), and what a check gives it
for preemption and default spreading (gpufleet.scheduling.simulation runs it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from gpufleet.capacity.dra import Device
from gpufleet.scheduler.plugins.podtopologyspread.system_default import Layout
from gpufleet.scheduler.snapshot import PodShape

if TYPE_CHECKING:  # loaded where some pod may preempt
    from gpufleet.scheduler.framework.preemption import Victim


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
    released: list[tuple[int, tuple[str, str]]] = field(default_factory=list)
    """(its pod's ordinal, the claim's (namespace, name)) for each claim the scheduler deallocated after that
    pod found no node; the pod was tried again."""


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
    scales: dict[str, int] = field(default_factory=dict)
    """Per controller (workload key) of a Deployment, ReplicaSet or StatefulSet: its replicas (for a running one,
    its pods, bound or Pending), which budgets in percent or with maxUnavailable expect."""


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
