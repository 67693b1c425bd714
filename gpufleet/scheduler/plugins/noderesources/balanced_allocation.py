"""NodeResourcesBalancedAllocation (pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go,
v1.34.1): how evenly the pod would leave cpu and memory used, weight 1 each.

It counts real requests (not the non-zero defaults) and is skipped for a pod that requests neither. A
resource whose allocatable is 0 (or unknown) is left out.
"""

from __future__ import annotations

import numpy as np

from gpufleet.capacity.quantity import CPU, MEMORY
from gpufleet.scheduler.framework.interface import MAX_NODE_SCORE, Plugin, Reads
from gpufleet.scheduler.plugins.noderesources.fit import REQUESTS


def balanced_allocation(alloc_cpu: np.ndarray, requested_cpu: np.ndarray, alloc_mem: np.ndarray,
                        requested_mem: np.ndarray) -> np.ndarray:
    """balancedResourceScorer: (1 - std of the requested fractions, each at most 1) x 100, truncated."""
    has_cpu, has_mem = alloc_cpu > 0, alloc_mem > 0
    cpu = np.minimum(requested_cpu / np.where(has_cpu, alloc_cpu, 1), 1.0)  # never divides by 0
    mem = np.minimum(requested_mem / np.where(has_mem, alloc_mem, 1), 1.0)
    both = has_cpu & has_mem
    std = np.where(both, np.abs((cpu - mem) / 2), 0.0)
    return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)


def balanced_allocation_one(alloc_cpu: int, requested_cpu: int, alloc_mem: int, requested_mem: int) -> int:
    """`balanced_allocation` for one node, in Python floats (IEEE doubles, as Go's float64)."""
    if alloc_cpu <= 0 or alloc_mem <= 0:
        return MAX_NODE_SCORE
    cpu, mem = min(requested_cpu / alloc_cpu, 1.0), min(requested_mem / alloc_mem, 1.0)
    return int((1 - abs((cpu - mem) / 2)) * MAX_NODE_SCORE)


class BalancedAllocation(Plugin):
    name = "NodeResourcesBalancedAllocation"
    reads = Reads(pod=REQUESTS, per_node=("allocatable", "unknown"))

    def pre_score(self, shape) -> tuple[int, int] | None:
        """The pod's cpu and memory requests; None (skip) for a pod that requests neither."""
        return None if shape.best_effort else (shape.cpu, shape.memory)

    def score(self, snap, state: tuple[int, int], nodes: np.ndarray) -> np.ndarray:
        cpu, memory = state
        return balanced_allocation(snap.score_alloc[CPU][nodes], snap.requested[CPU][nodes] + cpu,
                                   snap.score_alloc[MEMORY][nodes], snap.requested[MEMORY][nodes] + memory)

    def score_one(self, snap, state: tuple[int, int], i: int) -> int:
        cpu, memory = state
        alloc, requested = snap.score_alloc, snap.requested
        return balanced_allocation_one(int(alloc[CPU][i]), int(requested[CPU][i]) + cpu,
                                       int(alloc[MEMORY][i]), int(requested[MEMORY][i]) + memory)
