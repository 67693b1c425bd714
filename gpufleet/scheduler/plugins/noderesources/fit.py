"""NodeResourcesFit (pkg/scheduler/framework/plugins/noderesources/fit.go, v1.34.1).

Filter: the node's pod count must stay under its allocatable pods ("Too many pods"), and for every resource
the pod requests, the node's allocatable minus what its pods request must hold it ("Insufficient <name>");
a node reports every resource it lacks. A resource of unknown size (planned nodes) never fails. Score:
LeastAllocated (least_allocated.py), the default profile's scoring strategy.
"""

from __future__ import annotations

import numpy as np

from gpufleet.capacity.kubectl import non_zero
from gpufleet.capacity.quantity import CPU, MEMORY, PODS
from gpufleet.capacity.requests import pod_requests
from gpufleet.scheduler.framework.interface import Plugin, Reads
from gpufleet.scheduler.plugins.noderesources.least_allocated import least_allocated, least_allocated_one

TOO_MANY_PODS = "Too many pods"
#: What the pod's requests are computed from (computePodResourceRequest).
REQUESTS = ("containers.resources", "initContainers.resources", "initContainers.restartPolicy", "overhead")


class Fit(Plugin):
    name = "NodeResourcesFit"
    reads = Reads(pod=REQUESTS, node=("unknown",), per_node=("allocatable",))

    def pre_filter(self, spec: dict) -> tuple[dict[str, int], tuple[int, int]]:
        """(the pod's requests, its non-zero cpu and memory requests)."""
        requests = pod_requests(spec)
        return requests, non_zero(spec, requests)

    def filter_nodes(self, snap, shape, at) -> dict[str, np.ndarray]:
        short: dict[str, np.ndarray] = {}
        full = snap.pod_count[at] >= snap.alloc[PODS][at]
        if PODS in snap.unknown:
            full &= ~snap.unknown[PODS][at]
        short[TOO_MANY_PODS] = full
        for r, v in shape.fit.items():
            alloc, used = snap.alloc.get(r), snap.requested.get(r)
            free = (0 if alloc is None else alloc[at]) - (0 if used is None else used[at])
            known = alloc is not None or used is not None
            lacking = np.asarray(free < v) if known else np.ones(len(full), bool)
            if r in snap.unknown:
                lacking = lacking & ~snap.unknown[r][at]
            short[f"Insufficient {r}"] = lacking
        return short

    def fails_on(self, snap, shape, i: int) -> bool:
        if snap.pod_count[i] >= snap.alloc[PODS][i] and not (PODS in snap.unknown and snap.unknown[PODS][i]):
            return True
        for r, v in shape.fit.items():
            alloc, used = snap.alloc.get(r), snap.requested.get(r)
            free = (0 if alloc is None else int(alloc[i])) - (0 if used is None else int(used[i]))
            if free < v and not (r in snap.unknown and snap.unknown[r][i]):
                return True
        return False

    def pre_score(self, shape) -> tuple[int, int]:
        """The pod's non-zero cpu and memory requests."""
        return shape.nonzero

    def score(self, snap, state: tuple[int, int], nodes: np.ndarray) -> np.ndarray:
        return least_allocated(snap.score_alloc[CPU][nodes], snap.nonzero[CPU][nodes] + state[0],
                               snap.score_alloc[MEMORY][nodes], snap.nonzero[MEMORY][nodes] + state[1])

    def score_one(self, snap, state: tuple[int, int], i: int) -> int:
        return least_allocated_one(int(snap.score_alloc[CPU][i]), int(snap.nonzero[CPU][i]) + state[0],
                                   int(snap.score_alloc[MEMORY][i]), int(snap.nonzero[MEMORY][i]) + state[1])
