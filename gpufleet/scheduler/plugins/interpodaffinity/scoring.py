"""InterPodAffinity's Score (pkg/scheduler/framework/plugins/interpodaffinity, v1.34.1: scoring.go): per
topology domain, + weight for each pod a preferred affinity term matches, - weight for each a preferred
anti-affinity term matches, and the same for earlier pods' preferred terms (and their required affinity
terms, weight 1) that match this pod; scaled to 0..100 between the lowest and highest node."""

from __future__ import annotations

import numpy as np

from gpufleet.scheduler.framework.interface import MAX_NODE_SCORE
from gpufleet.scheduler.plugins.interpodaffinity.filtering import Term, Terms, per_domain
from gpufleet.scheduler.pods_on_nodes import PodsOnNodes


def score(own: Terms, namespace: str, labels: dict[str, str], pods: PodsOnNodes, domains,
          existing: list[tuple[Term, int, np.ndarray]], window: np.ndarray) -> np.ndarray | None:
    """Normalised scores of the window's nodes; None when no term applies (the plugin skips).
    `existing`: earlier pods' weighted terms (sign included) with their pods per node."""
    by_key: dict[str, np.ndarray] = {}

    def add(key: str, per: np.ndarray) -> None:
        have = by_key.get(key)
        by_key[key] = per if have is None else _grow(have, per) + _grow(per, have)

    for t in own.preferred:
        add(t.key, t.weight * per_domain(domains(t.key), pods.count(t.selector, t.namespaces)))
    for t in own.preferred_anti:
        add(t.key, -t.weight * per_domain(domains(t.key), pods.count(t.selector, t.namespaces)))
    for t, signed, owners in existing:
        if t.matches(namespace, labels):
            add(t.key, signed * per_domain(domains(t.key), owners))
    if not by_key or not any(np.any(v) for v in by_key.values()):
        return None
    raw = np.zeros(len(window), dtype=np.int64)
    for key, per in by_key.items():
        dom = domains(key)[window]
        raw += np.where(dom >= 0, np.asarray(per, dtype=np.int64)[np.maximum(dom, 0)] if len(per) else 0, 0)
    low, high = int(raw.min()), int(raw.max())
    if high == low:
        return np.zeros(len(window), dtype=np.int64)
    return (MAX_NODE_SCORE * ((raw - low) / (high - low))).astype(np.int64)


def _grow(a: np.ndarray, like: np.ndarray) -> np.ndarray:
    return np.pad(a, (0, max(0, len(like) - len(a))))
