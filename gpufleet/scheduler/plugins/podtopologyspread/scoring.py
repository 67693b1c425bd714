"""PodTopologySpread's Score (pkg/scheduler/framework/plugins/podtopologyspread, v1.34.1: scoring.go), for
`ScheduleAnyway` constraints: per scored node, the sum over constraints of matching pods in its domain x
log(domains + 2) + maxSkew - 1, rounded; then reversed and scaled so fewer pods score higher."""

from __future__ import annotations

import math

import numpy as np

from gpufleet.scheduler.framework.interface import MAX_NODE_SCORE
from gpufleet.scheduler.plugins.podtopologyspread.filtering import Constraint, counted_nodes
from gpufleet.scheduler.plugins.podtopologyspread.system_default import HOSTNAME
from gpufleet.scheduler.pods_on_nodes import PodsOnNodes


def score(cons: list[Constraint], pods: PodsOnNodes, domains, affinity_ok: np.ndarray, namespace: str,
          window: np.ndarray) -> np.ndarray:
    """Normalised scores of the window's nodes (0 for a node without every constraint's label)."""
    ignored = np.zeros(len(window), dtype=bool)
    for c in cons:
        ignored |= domains(c.key)[window] < 0
    counted = counted_nodes(cons, domains, affinity_ok)
    raw = np.zeros(len(window), dtype=np.float64)
    for c in cons:
        dom = domains(c.key)
        counts = pods.count(c.selector, frozenset((namespace,)))
        if c.key == HOSTNAME:
            size = int(len(window) - ignored.sum())
            cnt = counts[window]
        else:
            size = len(set(dom[window][~ignored].tolist()))
            per_domain = np.bincount(dom[counted], weights=counts[counted], minlength=max(int(dom.max()) + 1, 1))
            cnt = per_domain[np.maximum(dom[window], 0)]
        raw = raw + (cnt * math.log(size + 2) + (c.max_skew - 1))
    rounded = np.floor(raw + 0.5).astype(np.int64)  # math.Round: half away from zero (all >= 0 here)
    kept = rounded[~ignored]
    if not len(kept):
        return np.zeros(len(window), dtype=np.int64)
    top, low = int(kept.max()), int(kept.min())
    if top == 0:
        normal = np.full(len(window), MAX_NODE_SCORE, dtype=np.int64)
    else:
        normal = MAX_NODE_SCORE * (top + low - rounded) // top
    return np.where(ignored, 0, normal)
