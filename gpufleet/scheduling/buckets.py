"""Free capacity of a fleet, kept as buckets of interchangeable nodes, and placing a template's replicas in bulk.

A bucket is every node of one class (gpufleet.scheduling.classes) with the same free capacity (the
scheduler's allocatable minus NodeInfo.Requested) and pod slots; its nodes are kept in input order. A
fleet of 10,000 nodes is a few hundred buckets, so placing a Deployment costs the buckets it could use
(found through an index on each extended resource's free amount, which skips full GPU nodes) plus the
nodes it lands on, not the whole fleet.

Placement is per node exactly as `gpufleet.scheduling` has always defined it, ties broken by input order:
- pack: nodes by (room, index) ascending, each filled up to its room (tightest first: leaves the most room
  for later pods);
- spread: one pod at a time on the node with the most room, lowest index first (what LeastAllocated
  scoring does when GPUs are not scored). Done in bulk as water-filling: every unit of room is ranked by
  (room left, index), and the first `wanted` units are taken.
Here "room" is `min(wanted, min_r floor(free_r / request_r), free pod slots)`.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from gpufleet.scheduling.classes import NodeClasses
from gpufleet.scheduling.filters import fit_count, fit_failures

Request = dict[str, int]


class Bucket:
    __slots__ = ("cls", "free", "pods_free", "nodes", "key")

    def __init__(self, cls: int, free: dict[str, int], pods_free: int | None, nodes: list[int]):
        self.cls, self.free, self.pods_free, self.nodes = cls, free, pods_free, nodes
        self.key = (cls, tuple(sorted(free.items())), pods_free)


class FreeState:
    """Buckets per class, with an index per class and extended resource: free amount -> buckets."""

    def __init__(self, classes: NodeClasses, free: Sequence[dict[str, int]], pods_free: Sequence[int | None]):
        self.classes = classes
        self.buckets: dict[tuple, Bucket] = {}
        self.by_class: list[dict[tuple, Bucket]] = [{} for _ in range(len(classes))]
        self.indexed: list[tuple[str, ...]] = []
        for members in classes.members:
            names = set()
            for i in members:
                names.update(r for r in free[i] if "/" in r)
            self.indexed.append(tuple(sorted(names)))
        self.index: list[dict[str, dict[int, dict[tuple, Bucket]]]] = [
            {r: {} for r in names} for names in self.indexed]
        self.version = [0] * len(classes)
        groups: dict[tuple, list[int]] = {}
        for i, c in enumerate(classes.of):
            groups.setdefault((c, tuple(sorted(free[i].items())), pods_free[i]), []).append(i)
        for (c, items, slots), nodes in groups.items():
            self._add(Bucket(c, dict(items), slots, nodes))

    def copy(self) -> "FreeState":
        twin = FreeState.__new__(FreeState)
        twin.classes, twin.indexed = self.classes, self.indexed
        twin.buckets, twin.by_class = {}, [{} for _ in self.by_class]
        twin.index = [{r: {} for r in names} for names in self.indexed]
        twin.version = list(self.version)
        for b in self.buckets.values():
            twin._add(Bucket(b.cls, dict(b.free), b.pods_free, list(b.nodes)))
        return twin

    # -- bookkeeping --------------------------------------------------------------------------------------

    def _add(self, b: Bucket) -> None:
        self.buckets[b.key] = b
        self.by_class[b.cls][b.key] = b
        for r, levels in self.index[b.cls].items():
            levels.setdefault(b.free.get(r, 0), {})[b.key] = b

    def _drop(self, b: Bucket) -> None:
        del self.buckets[b.key]
        del self.by_class[b.cls][b.key]
        for r, levels in self.index[b.cls].items():
            level = b.free.get(r, 0)
            del levels[level][b.key]
            if not levels[level]:
                del levels[level]

    def _take(self, b: Bucket, count: int) -> list[int]:
        """Detach the first `count` nodes of a bucket (dropping it when emptied)."""
        if count >= len(b.nodes):
            self._drop(b)
            return b.nodes
        taken = b.nodes[:count]
        del b.nodes[:count]
        return taken

    def _put(self, cls: int, free: dict[str, int], pods_free: int | None, nodes: list[int]) -> None:
        b = Bucket(cls, free, pods_free, nodes)
        have = self.buckets.get(b.key)
        if have is None:
            self._add(b)
        else:
            have.nodes = sorted(have.nodes + nodes)

    def _apply(self, moves: list[tuple[Bucket, int, int]], request: dict[int, Request]) -> None:
        """Place `pods` pods on each of the first `count` nodes of each bucket (moves on one bucket in order)."""
        detached = [(b, self._take(b, count), pods) for b, count, pods in moves]
        for b, nodes, pods in detached:
            req = request[b.cls]
            free = dict(b.free)
            for r, v in req.items():
                free[r] = free.get(r, 0) - v * pods
            self._put(b.cls, free, None if b.pods_free is None else b.pods_free - pods, nodes)
            self.version[b.cls] += 1

    # -- queries --------------------------------------------------------------------------------------------

    def _candidates(self, c: int, req: Request) -> Iterable[Bucket]:
        """Buckets of class c that might hold one pod: all, or those with enough of an indexed resource."""
        index = self.index[c]
        for r in req:
            levels = index.get(r)
            if levels is not None:
                want = req[r]
                return [b for level, found in levels.items() if level >= want for b in found.values()]
        return list(self.by_class[c].values())

    def rooms(self, requests: dict[int, Request], cap: int) -> list[tuple[int, Bucket]]:
        """(room, bucket) for every bucket of the eligible classes (the keys of `requests`) with room >= 1."""
        out = []
        for c, req in requests.items():
            for b in self._candidates(c, req):
                m = fit_count(b.free, b.pods_free, req, cap)
                if m > 0:
                    out.append((m, b))
        return out

    def capacity(self, requests: dict[int, Request], cap: int) -> int:
        """Sum over eligible nodes of min(room, cap), at most cap: exact for identical pods, any order."""
        total = 0
        for m, b in self.rooms(requests, cap):
            total += m * len(b.nodes)
            if total >= cap:
                return cap
        return total

    def failures(self, c: int, req: Request) -> dict[str, int]:
        """NodeResourcesFit reasons over the nodes of class c for one more pod: reason -> nodes."""
        counts: dict[str, int] = {}
        for b in self.by_class[c].values():
            for reason in fit_failures(b.free, b.pods_free, req):
                counts[reason] = counts.get(reason, 0) + len(b.nodes)
        return counts

    # -- placing ---------------------------------------------------------------------------------------------

    def _bucket_of(self, node: int) -> Bucket:
        return next(b for b in self.by_class[self.classes.of[node]].values() if node in b.nodes)

    def free_of(self, node: int) -> tuple[dict[str, int], int | None]:
        """One node's free capacity and pod slots."""
        b = self._bucket_of(node)
        return b.free, b.pods_free

    def place_on(self, node: int, request: Request) -> None:
        """One pod on a given node (a node chosen elsewhere, e.g. by device allocation)."""
        b = self._bucket_of(node)
        self._drop(b)
        rest = [i for i in b.nodes if i != node]
        if rest:
            self._add(Bucket(b.cls, b.free, b.pods_free, rest))
        free = dict(b.free)
        for r, v in request.items():
            free[r] = free.get(r, 0) - v
        self._put(b.cls, free, None if b.pods_free is None else b.pods_free - 1, [node])
        self.version[b.cls] += 1

    def pack(self, requests: dict[int, Request], wanted: int) -> list[tuple[int, int]]:
        """Place up to `wanted` pods tightest-first; returns [(node, pods)] by node and updates the state."""
        levels: dict[int, list[Bucket]] = {}
        for m, b in self.rooms(requests, wanted):
            levels.setdefault(m, []).append(b)
        left, moves = wanted, []
        for m in sorted(levels):
            if not left:
                break
            # The nodes of this level in input order; each takes min(m, left).
            need = -(-left // m)
            firsts = _first_nodes(levels[m], need)
            partial = left - m * (len(firsts) - 1) if len(firsts) == need and left % m else 0
            counts: dict[int, int] = {}
            for _, j in firsts:
                counts[j] = counts.get(j, 0) + 1
            last = firsts[-1][1]
            for j, b in enumerate(levels[m]):
                n = counts.get(j, 0)
                if j == last and partial:
                    if n > 1:
                        moves.append((b, n - 1, m))
                    moves.append((b, 1, partial))
                elif n:
                    moves.append((b, n, m))
            left -= min(left, m * len(firsts))
        placed = _in_order(moves)
        self._apply(moves, requests)
        return placed

    def spread(self, requests: dict[int, Request], wanted: int) -> int:
        """Place up to `wanted` pods one at a time on the node with most room; returns how many were placed."""
        rooms = self.rooms(requests, wanted)
        total = sum(m * len(b.nodes) for m, b in rooms)
        if total <= wanted:
            self._apply([(b, len(b.nodes), m) for m, b in rooms], requests)
            return total
        level, taken = _water_level(rooms, wanted)
        # Units of room >= level are all taken: a node with room m gets m - level + 1. The rest, one each,
        # go to the first nodes (input order) whose room is level - 1 or more.
        extra = wanted - taken
        upper = [b for m, b in rooms if m >= level - 1]
        firsts = _first_nodes(upper, extra) if extra else []
        counts: dict[int, int] = {}
        for _, j in firsts:
            counts[j] = counts.get(j, 0) + 1
        room_of = {id(b): m for m, b in rooms}
        moves = []
        for j, b in enumerate(upper):
            base = max(room_of[id(b)] - level + 1, 0)
            n = counts.get(j, 0)
            if n:
                moves.append((b, n, base + 1))
            if base and n < len(b.nodes):
                moves.append((b, len(b.nodes) - n, base))
        self._apply(moves, requests)
        return wanted


def _first_nodes(buckets: list[Bucket], count: int) -> list[tuple[int, int]]:
    """The first `count` nodes, in input order, over the buckets: [(node, bucket position)]."""
    if len(buckets) == 1:
        return [(i, 0) for i in buckets[0].nodes[:count]]
    merged = sorted((i, j) for j, b in enumerate(buckets) for i in b.nodes[:count])
    return merged[:count]


def _in_order(moves: list[tuple[Bucket, int, int]]) -> list[tuple[int, int]]:
    """[(node, pods)] by node for moves made of bucket prefixes (taken in order per bucket)."""
    out, offset = [], {}
    for b, count, pods in moves:
        start = offset.get(id(b), 0)
        out += [(i, pods) for i in b.nodes[start:start + count]]
        offset[id(b)] = start + count
    out.sort()
    return out


def _water_level(rooms: list[tuple[int, Bucket]], wanted: int) -> tuple[int, int]:
    """The smallest level L >= 1 such that the units of room >= L number at most `wanted`, and that number.

    Units of room >= L: sum over nodes of max(room - L + 1, 0). Between two distinct rooms this is linear
    in L, so each stretch is solved directly.
    """
    per_room: dict[int, int] = {}
    for m, b in rooms:
        per_room[m] = per_room.get(m, 0) + len(b.nodes)
    values = sorted(per_room, reverse=True)
    nodes = units = 0  # nodes with room >= the current value, and the sum of their rooms
    stretches = []
    for j, v in enumerate(values):
        nodes += per_room[v]
        units += per_room[v] * v
        low = values[j + 1] + 1 if j + 1 < len(values) else 1
        stretches.append((low, v, nodes, units))
    for low, high, nodes, units in reversed(stretches):
        # units(L) = units - nodes * (L - 1) <= wanted  <=>  L >= 1 + ceil((units - wanted) / nodes)
        level = max(low, 1 - (-(units - wanted) // nodes))
        if level <= high:
            return level, units - nodes * (level - 1)
    return values[0] + 1, 0
