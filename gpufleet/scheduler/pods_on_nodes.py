"""The pods on each node as label selectors see them (namespace and labels), for the plugins that count
pods: PodTopologySpread and InterPodAffinity.

`count(selector, namespaces)` is the number of matching pods per node, as a numpy array kept up to date as
pods are placed (each selector is matched once per pod). Kept only when some pod of the check has pod
affinity or topology spread constraints.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from gpufleet.labels import selector_matches


def selector_key(selector: dict | None, namespaces: frozenset[str] | None) -> str:
    return repr((selector, None if namespaces is None else sorted(namespaces)))


class PodsOnNodes:
    def __init__(self, n: int, pods: Iterable[tuple[int, str, dict[str, str]]] = ()):
        self.n = n
        self.pods: list[tuple[int, str, dict[str, str]]] = list(pods)
        self._counts: dict[str, tuple[tuple, np.ndarray]] = {}

    def copy(self) -> PodsOnNodes:
        twin = PodsOnNodes(self.n, self.pods)
        twin._counts = {k: (terms, a.copy()) for k, (terms, a) in self._counts.items()}
        return twin

    def add(self, node: int, namespace: str, labels: dict[str, str]) -> None:
        self.pods.append((node, namespace, labels))
        for terms, counts in self._counts.values():
            if _all(terms, namespace, labels):
                counts[node] += 1

    def remove(self, node: int, namespace: str, labels: dict[str, str]) -> None:
        """A pod leaves the node (evicted): the reverse of `add`."""
        for i, (at, ns, held) in enumerate(self.pods):
            if at == node and ns == namespace and held == labels:
                del self.pods[i]
                break
        else:
            return
        for terms, counts in self._counts.values():
            if _all(terms, namespace, labels):
                counts[node] -= 1

    def count(self, selector: dict | None, namespaces: frozenset[str] | None) -> np.ndarray:
        """Per node, the pods in `namespaces` (None: all) whose labels `selector` matches (do not modify)."""
        return self.count_all(((selector, namespaces),))

    def count_all(self, terms: tuple[tuple[dict | None, frozenset[str] | None], ...]) -> np.ndarray:
        """Per node, the pods that every (selector, namespaces) of `terms` matches (do not modify)."""
        key = repr([selector_key(s, ns) for s, ns in terms])
        found = self._counts.get(key)
        if found is None:
            counts = np.zeros(self.n, dtype=np.int64)
            for node, namespace, labels in self.pods:
                if _all(terms, namespace, labels):
                    counts[node] += 1
            found = self._counts[key] = (terms, counts)
        return found[1]


def _all(terms, namespace: str, labels: dict[str, str]) -> bool:
    return all((namespaces is None or namespace in namespaces) and selector_matches(selector, labels)
               for selector, namespaces in terms)
