"""What a pod's placement depends on besides its own node: other pods, through the profile's plugins that
count them (PodTopologySpread, InterPodAffinity), and the state of one run they read: the pods on each node
(labels) and the terms of the pods the check placed.
"""

from __future__ import annotations

import numpy as np

from gpufleet.scheduler.framework.runtime import Framework
from gpufleet.scheduler.plugins.interpodaffinity.filtering import AffinityState, Term, Terms


class PlacedTerms:
    """The (anti-)affinity terms of pods placed so far, with how many such pods each node holds."""

    def __init__(self, n: int):
        self.n = n
        self.owners: dict[int, np.ndarray] = {}
        self._anti: list[tuple[Term, int]] = []
        self._weighted: list[tuple[Term, int, int]] = []

    def copy(self) -> PlacedTerms:
        twin = PlacedTerms(self.n)
        twin.owners = {k: a.copy() for k, a in self.owners.items()}
        twin._anti, twin._weighted = list(self._anti), list(self._weighted)
        return twin

    def place(self, workload: int, terms: Terms, node: int) -> None:
        owners = self.owners.get(workload)
        if owners is None:
            owners = self.owners[workload] = np.zeros(self.n, dtype=np.int64)
            self._anti += [(t, workload) for t in terms.anti]
            self._weighted += [(t, 1, workload) for t in terms.affinity]  # hardPodAffinityWeight 1
            self._weighted += [(t, t.weight, workload) for t in terms.preferred]
            self._weighted += [(t, -t.weight, workload) for t in terms.preferred_anti]
        owners[node] += 1

    def remove(self, owner: int, node: int) -> None:
        """One pod of `owner` leaves `node` (evicted): its terms no longer count there."""
        owners = self.owners.get(owner)
        if owners is not None and owners[node] > 0:
            owners[node] -= 1

    def restore(self, owner: int, node: int) -> None:
        """The reverse of `remove`."""
        self.owners[owner][node] += 1

    @property
    def required_anti(self) -> list[tuple[Term, np.ndarray]]:
        return [(t, self.owners[w]) for t, w in self._anti]

    @property
    def weighted(self) -> list[tuple[Term, int, np.ndarray]]:
        return [(t, sign, self.owners[w]) for t, sign, w in self._weighted]

    def concern(self, namespace: str, labels: dict[str, str]) -> bool:
        """Whether a placed pod's term matches a pod with these labels."""
        return any(t.matches(namespace, labels) for t, _ in self._anti) or \
            any(t.matches(namespace, labels) for t, _, _ in self._weighted)


class PodConstraints:
    """One workload's pods against the others: the filters and scores that depend on where pods are."""

    def __init__(self, framework: Framework, spec: dict, namespace: str, labels: dict[str, str],
                 affinity_ok: np.ndarray):
        self.framework = framework
        self.states = framework.pod_states(spec, namespace, labels, affinity_ok)
        found = [s.terms for _, s in self.states if isinstance(s, AffinityState)]
        self.terms = found[0] if found else Terms([], [], [], [])
        """The pod's own (anti-)affinity terms, which later pods' InterPodAffinity reads."""

    def filters(self, snap) -> list[tuple[str, np.ndarray]]:
        return self.framework.run_pod_filters(self.states, snap)

    def scores(self, snap, window: np.ndarray) -> np.ndarray | None:
        return self.framework.run_pod_scores(self.states, snap, window)
