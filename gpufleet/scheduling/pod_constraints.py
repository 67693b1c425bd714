"""What a pod's placement depends on besides its own node: other pods, through topology spread and pod
(anti-)affinity. Wires gpufleet.scheduling.plugins.podtopologyspread and .interpodaffinity to one run's
state: the pods on each node (labels) and the terms of the pods the check placed.
"""

from __future__ import annotations

import numpy as np

from gpufleet.scheduling.plugins import WEIGHTS
from gpufleet.scheduling.plugins import interpodaffinity as ipa
from gpufleet.scheduling.plugins import podtopologyspread as pts
from gpufleet.scheduling.pods_on_nodes import PodsOnNodes


class PlacedTerms:
    """The (anti-)affinity terms of pods placed so far, with how many such pods each node holds."""

    def __init__(self, n: int):
        self.n = n
        self.owners: dict[int, np.ndarray] = {}
        self._anti: list[tuple[ipa.Term, int]] = []
        self._weighted: list[tuple[ipa.Term, int, int]] = []

    def copy(self) -> "PlacedTerms":
        twin = PlacedTerms(self.n)
        twin.owners = {k: a.copy() for k, a in self.owners.items()}
        twin._anti, twin._weighted = list(self._anti), list(self._weighted)
        return twin

    def place(self, workload: int, terms: ipa.Terms, node: int) -> None:
        owners = self.owners.get(workload)
        if owners is None:
            owners = self.owners[workload] = np.zeros(self.n, dtype=np.int64)
            self._anti += [(t, workload) for t in terms.anti]
            self._weighted += [(t, 1, workload) for t in terms.affinity]  # hardPodAffinityWeight 1
            self._weighted += [(t, t.weight, workload) for t in terms.preferred]
            self._weighted += [(t, -t.weight, workload) for t in terms.preferred_anti]
        owners[node] += 1

    @property
    def required_anti(self) -> list[tuple[ipa.Term, np.ndarray]]:
        return [(t, self.owners[w]) for t, w in self._anti]

    @property
    def weighted(self) -> list[tuple[ipa.Term, int, np.ndarray]]:
        return [(t, sign, self.owners[w]) for t, sign, w in self._weighted]

    def concern(self, namespace: str, labels: dict[str, str]) -> bool:
        """Whether a placed pod's term matches a pod with these labels."""
        return any(t.matches(namespace, labels) for t, _ in self._anti) or \
            any(t.matches(namespace, labels) for t, _, _ in self._weighted)


class PodConstraints:
    """One workload's pods against the others: filters and scores that depend on where pods are."""

    def __init__(self, spec: dict, namespace: str, labels: dict[str, str], affinity_ok: np.ndarray):
        self.namespace, self.labels, self.affinity_ok = namespace, labels, affinity_ok
        self.hard = pts.constraints(spec, labels, "DoNotSchedule")
        self.soft = pts.constraints(spec, labels, "ScheduleAnyway")
        self.terms = ipa.terms_of(spec, namespace)

    def filters(self, pods: PodsOnNodes, placed: PlacedTerms, domains) -> list[tuple[str, np.ndarray]]:
        out = pts.filter_failures(self.hard, pods, domains, self.affinity_ok, self.namespace) if self.hard else []
        return out + ipa.filter_failures(self.terms, self.namespace, self.labels, pods, domains, placed.required_anti)

    def scores(self, pods: PodsOnNodes, placed: PlacedTerms, domains, window: np.ndarray) -> np.ndarray | None:
        total = None
        if self.soft:
            total = WEIGHTS["PodTopologySpread"] * pts.score(self.soft, pods, domains, self.affinity_ok,
                                                             self.namespace, window)
        affinity = ipa.score(self.terms, self.namespace, self.labels, pods, domains, placed.weighted, window)
        if affinity is not None:
            total = WEIGHTS["InterPodAffinity"] * affinity + (0 if total is None else total)
        return total
