"""Free capacity per node, and the exact search that proves a small set of workloads cannot all fit.

`ClusterState` holds allocatable minus the requests of bound non-terminal pods (the scheduler's
NodeInfo.Requested), one dict per node. `can_place_all` is an exact search over every placement, used to
prove that a set of workloads cannot fit under any placement; it decides instances of at most 64 pods and
32 nodes (beyond that, gpufleet.scheduling.bounds proves what it can). `SmallSearch` keeps the workloads
placed so far in the search's terms while they stay within those limits.
"""

from __future__ import annotations

from typing import Sequence

from gpufleet.capacity.model import BoundPod, Node
from gpufleet.capacity.quantity import PODS

SEARCH_MAX_PODS = 64
SEARCH_MAX_NODES = 32
SEARCH_BUDGET = 200_000


class ClusterState:
    """Per node: allocatable minus the requests of the pods bound to it, and free pod slots (None: unknown)."""

    def __init__(self, nodes: Sequence[Node], pods: Sequence[BoundPod] = ()):
        self.nodes = list(nodes)
        self.free = [dict(n.allocatable) for n in self.nodes]
        self.pods_free: list[int | None] = [None if PODS in n.unknown else n.allocatable.get(PODS, 0) for n in self.nodes]
        index = {n.name: i for i, n in enumerate(self.nodes)}
        for pod in pods:
            i = index.get(pod.node)
            if i is None:
                continue
            free = self.free[i]
            for r, v in pod.requests.items():
                if v:
                    free[r] = free.get(r, 0) - v
            if self.pods_free[i] is not None:
                self.pods_free[i] -= 1


class _OutOfBudget(Exception):
    pass


def can_place_all(state: ClusterState, groups: list[tuple[Sequence[int], dict[int, dict[str, int]], int]]) -> bool | None:
    """Can every pod of every group (eligible nodes, per-node request, pods) be placed at once?

    Exact depth-first search with memoised states; None when the instance is too large to decide.
    """
    nodes = sorted({i for eligible, _, _ in groups for i in eligible})
    if sum(n for _, _, n in groups) > SEARCH_MAX_PODS or len(nodes) > SEARCH_MAX_NODES:
        return None
    resources = sorted({r for _, reqs, _ in groups for req in reqs.values() for r in req})
    big = 1 << 62
    free = {i: [state.free[i].get(r, 0) for r in resources] + [big if state.pods_free[i] is None else state.pods_free[i]]
            for i in nodes}
    pods = []  # (group, eligible, {node: vector})
    for g, (eligible, reqs, n) in sorted(enumerate(groups), key=lambda e: -sum(next(iter(e[1][1].values()), {}).values())):
        vecs = {i: [reqs[i].get(r, 0) for r in resources] + [1] for i in eligible}
        pods += [(g, list(eligible), vecs)] * n
    seen: set = set()
    steps = [0]

    def dfs(k: int, start: int) -> bool:
        if k == len(pods):
            return True
        key = (k, start, tuple(tuple(free[i]) for i in nodes))
        if key in seen:
            return False
        steps[0] += 1
        if steps[0] > SEARCH_BUDGET:
            raise _OutOfBudget
        g, eligible, vecs = pods[k]
        for pos, i in enumerate(eligible):
            if pos < start:
                continue
            have, want = free[i], vecs[i]
            if all(h >= w for h, w in zip(have, want)):
                for j, w in enumerate(want):
                    have[j] -= w
                same = k + 1 < len(pods) and pods[k + 1][0] == g
                ok = dfs(k + 1, pos if same else 0)
                for j, w in enumerate(want):
                    have[j] += w
                if ok:
                    return True
        seen.add(key)
        return False

    try:
        return dfs(0, 0)
    except _OutOfBudget:
        return None


class SmallSearch:
    """The workloads placed so far as search groups (eligible nodes, per-node request, pods), while small."""

    def __init__(self, base: ClusterState, classes):
        self.base, self.classes = base, classes
        self.groups: list[tuple[list[int], dict[int, dict[str, int]], int]] = []
        self.pods = 0
        self.used: set[int] = set()
        self.too_big = False

    def _nodes(self, classes: set[int]) -> int:
        return sum(len(self.classes.members[c]) for c in classes)

    def _group(self, requests: dict[int, dict[str, int]], pods: int):
        of = self.classes.of
        eligible = sorted(i for c in requests for i in self.classes.members[c])
        return eligible, {i: requests[of[i]] for i in eligible}, pods

    def add(self, requests: dict[int, dict[str, int]], pods: int) -> None:
        if self.too_big:
            return
        self.pods += pods
        self.used |= requests.keys()
        if self.pods > SEARCH_MAX_PODS or self._nodes(self.used) > SEARCH_MAX_NODES:
            self.too_big, self.groups = True, []
        else:
            self.groups.append(self._group(requests, pods))

    def can_place_all(self, requests: dict[int, dict[str, int]], pods: int) -> bool | None:
        """Can the placed groups and `pods` more of this request all be placed at once? None: too big to say."""
        if (self.too_big or self.pods + pods > SEARCH_MAX_PODS
                or self._nodes(self.used | requests.keys()) > SEARCH_MAX_NODES):
            return None
        return can_place_all(self.base, self.groups + [self._group(requests, pods)])
