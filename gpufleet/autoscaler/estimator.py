"""The binpacking estimator (estimator/binpacking_estimator.go, cluster-autoscaler-1.34.5): how many nodes of
a group's template the pending pods need, largest pods first.

Pod groups are ordered by their exemplar's size against the template (DecreasingPodOrderer: the containers'
cpu requests over the node's allocatable cpu plus the same for memory, largest first). For each group, its
pods go first onto the nodes already added in this estimate, walked round robin as the simulator walks nodes
(each search starts at the node after the one the last pod went to, so equal pods spread one a node per
round), and the rest onto the node added last, a new node being added when the last one cannot take the pod.
Adding stops when the last node added got no pod (a pod that does not fit an empty node fits no new one), or
when the limiter says no: the group's room (max size - target size), the cluster's room (--max-nodes-total)
and --max-nodes-per-scaleup (1000), whichever is least.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpufleet.autoscaler.simulator import FreshNode, PendingPod, round_robin
from gpufleet.capacity.quantity import CPU, MEMORY, PODS
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
    one, its DaemonSet pods on it); at most `limit` nodes are added. Pods without host ports or anti-affinity
    are packed by counts over all the nodes at once (`_by_counts`); the answer is the same."""
    template = fresh()
    ordered = sorted(groups, key=lambda g: -_size(g, template))  # stable: equal sizes keep their order
    if not any(g.pod.ports or g.pod.anti for g in ordered):
        return _by_counts(ordered, template, limit)
    return _by_pods(ordered, fresh, limit)


def _by_pods(ordered: list[PodGroup], fresh: Callable[[], FreshNode], limit: int) -> tuple[int, dict[str, int]]:
    """`estimate` node by node, every filter of the simulator asked."""
    nodes: list[FreshNode] = []
    used: set[int] = set()
    placed: dict[str, int] = {}
    walk = 0  # where the next search over the nodes added starts
    for group in ordered:
        left = group.count
        if nodes:  # first onto the nodes added so far, round robin
            order = _walk_from(walk, len(nodes))
            take, after = round_robin([nodes[i].room(group.pod) for i in order], left)
            for i, k in zip(order, take, strict=True):
                if k:
                    nodes[i].add(group.pod, k)
                    used.add(i)
                    left -= k
            if after is not None:
                walk = (order[after] + 1) % len(nodes)
        while left:
            k = min(nodes[-1].room(group.pod), left) if nodes else 0
            if not k:
                if nodes and len(nodes) - 1 not in used:
                    break  # the last node added is empty and the pod does not fit it
                if len(nodes) >= limit:
                    break
                nodes.append(fresh())
                k = min(nodes[-1].room(group.pod), left)
                if not k:
                    break
            nodes[-1].add(group.pod, k)
            used.add(len(nodes) - 1)
            left -= k
        if left < group.count:
            placed[group.workload] = placed.get(group.workload, 0) + group.count - left
    return len(used), placed


def _walk_from(start: int, n: int) -> list[int]:
    return [*range(start, n), *range(start)]


def _by_counts(ordered: list[PodGroup], template: FreshNode, limit: int) -> tuple[int, dict[str, int]]:
    """`estimate` where only resources and the pod count decide: each node is a vector of what it holds."""
    import numpy as np

    node = template.node
    names = sorted({r for g in ordered for r, v in g.pod.requests.items()
                    if v > 0 and r != PODS and r not in node.unknown})
    pods_room = (node.allocatable.get(PODS, 0) - template.pods) if PODS not in node.unknown else 1 << 40
    cap = np.array([node.allocatable.get(r, 0) - template.requested.get(r, 0) for r in names] + [pods_room],
                   dtype=np.int64)
    used = np.zeros((0, len(cap)), dtype=np.int64)
    touched = np.zeros(0, dtype=bool)
    placed: dict[str, int] = {}
    walk = 0  # where the next search over the nodes added starts
    for group in ordered:
        need = np.array([group.pod.requests.get(r, 0) for r in names] + [1], dtype=np.int64)
        asked = need > 0
        left = group.count
        if len(used):
            room = ((cap - used)[:, asked] // need[asked]).min(axis=1).clip(min=0)
            order = _walk_from(walk, len(used))
            take_walked, after = round_robin([int(room[i]) for i in order], left)
            take = np.zeros(len(used), dtype=np.int64)
            take[order] = take_walked
            used += take[:, None] * need
            touched |= take > 0
            left -= int(take.sum())
            if after is not None:
                walk = (order[after] + 1) % len(used)
        empty = int(((cap)[asked] // need[asked]).min()) if asked.any() else 0
        while left:
            if len(used) and not touched[-1]:
                break  # the last node added is empty and the pod does not fit it
            if len(used) >= limit:
                break
            k = min(max(empty, 0), left)
            used = np.vstack((used, (k * need)[None, :]))
            touched = np.append(touched, k > 0)
            if not k:
                break
            left -= k
        if left < group.count:
            placed[group.workload] = placed.get(group.workload, 0) + group.count - left
    return int(touched.sum()), placed
