"""The binpacking estimator (estimator/binpacking_estimator.go, cluster-autoscaler-1.34.5): how many nodes of
a group's template the pending pods need, First-Fit Decreasing.

Pod groups are ordered by their exemplar's size against the template (DecreasingPodOrderer: the containers'
cpu requests over the node's allocatable cpu plus the same for memory, largest first). For each group, its pods
go first onto the nodes already added in this estimate (the first that fits), and the rest onto the node
added last, a new node being added when the last one cannot take the pod. Adding stops when the last node
added got no pod (a pod that does not fit an empty node fits no new one), or when the limiter says no: the
group's room (max size - target size), the cluster's room (--max-nodes-total) and --max-nodes-per-scaleup
(1000), whichever is least.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpufleet.autoscaler.simulator import FreshNode, PendingPod
from gpufleet.capacity.quantity import CPU, MEMORY
from gpufleet.capacity.requests import container_requests

MAX_NODES_PER_SCALEUP = 1000


@dataclass
class PodGroup:
    """Equivalent pending pods (one workload's: same controller, same spec): the estimator's unit."""

    workload: str
    spec: dict
    pod: PendingPod
    count: int


def _size(group: PodGroup, template: FreshNode) -> float:
    cpu = memory = 0
    for container in group.spec.get("containers") or ():
        requests = container_requests(container) if isinstance(container, dict) else {}
        cpu, memory = cpu + requests.get(CPU, 0), memory + requests.get(MEMORY, 0)
    score = 0.0
    alloc = template.node.allocatable
    if alloc.get(CPU, 0) > 0:
        score += cpu / alloc[CPU]
    if alloc.get(MEMORY, 0) > 0:
        score += memory / alloc[MEMORY]
    return score


def node_limit(*limits: int) -> int:
    """The threshold-based limiter: the least positive limit; 0 where any limit leaves no room."""
    if any(limit <= 0 for limit in limits):
        return 0
    return min(limits)


def estimate(groups: list[PodGroup], fresh: Callable[[], FreshNode], limit: int) -> tuple[int, dict[str, int]]:
    """(nodes needed, pods placed per workload) for these pod groups on copies of one template (`fresh` makes
    one, its DaemonSet pods on it); at most `limit` nodes are added."""
    template = fresh()
    ordered = sorted(groups, key=lambda g: -_size(g, template))  # stable: equal sizes keep their order
    nodes: list[FreshNode] = []
    used: set[int] = set()
    placed: dict[str, int] = {}
    for group in ordered:
        left = group.count
        while left and any(not n.failure(group.pod) for n in nodes):  # onto the nodes added so far
            i = next(i for i, n in enumerate(nodes) if not n.failure(group.pod))
            nodes[i].add(group.pod)
            used.add(i)
            placed[group.workload] = placed.get(group.workload, 0) + 1
            left -= 1
        while left:
            if nodes and not nodes[-1].failure(group.pod):
                nodes[-1].add(group.pod)
            else:
                if nodes and len(nodes) - 1 not in used:
                    break  # the last node added is empty and the pod does not fit it
                if len(nodes) >= limit:
                    break
                nodes.append(fresh())
                if nodes[-1].failure(group.pod):
                    break
                nodes[-1].add(group.pod)
            used.add(len(nodes) - 1)
            placed[group.workload] = placed.get(group.workload, 0) + 1
            left -= 1
    return len(used), placed
