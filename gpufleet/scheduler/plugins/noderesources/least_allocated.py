"""leastResourceScorer (pkg/scheduler/framework/plugins/noderesources/least_allocated.go, v1.34.1): the
score NodeResourcesFit gives with its default LeastAllocated strategy, over cpu and memory, weight 1 each.

It counts the node's NonZeroRequested plus the pod's non-zero request (a container without a cpu or memory
request counts 100m / 200Mi). A resource whose allocatable is 0 (or unknown, on planned nodes) is left out,
as the scheduler leaves out a zero allocatable.
"""

from __future__ import annotations

import numpy as np

from gpufleet.scheduler.framework.interface import MAX_NODE_SCORE


def _least_requested(requested: np.ndarray, capacity: np.ndarray, has: np.ndarray) -> np.ndarray:
    """`has`: capacity > 0 (a node without the resource scores 0 for it)."""
    score = (capacity - requested) * MAX_NODE_SCORE // np.where(has, capacity, 1)
    return np.where(has & (requested <= capacity), score, 0)


def least_allocated(alloc_cpu: np.ndarray, requested_cpu: np.ndarray, alloc_mem: np.ndarray,
                    requested_mem: np.ndarray) -> np.ndarray:
    """leastResourceScorer over cpu and memory: the mean (integer division) of each resource's score (0 on a
    node with neither, whose scores are both 0)."""
    has_cpu, has_mem = alloc_cpu > 0, alloc_mem > 0
    total = (_least_requested(requested_cpu, alloc_cpu, has_cpu)
             + _least_requested(requested_mem, alloc_mem, has_mem))
    return total // np.maximum(has_cpu.astype(np.int64) + has_mem, 1)


def least_allocated_one(alloc_cpu: int, requested_cpu: int, alloc_mem: int, requested_mem: int) -> int:
    """`least_allocated` for one node, in Python integers (the same arithmetic)."""
    total = weights = 0
    for alloc, requested in ((alloc_cpu, requested_cpu), (alloc_mem, requested_mem)):
        if alloc > 0:
            weights += 1
            total += (alloc - requested) * MAX_NODE_SCORE // alloc if requested <= alloc else 0
    return total // weights if weights else 0
