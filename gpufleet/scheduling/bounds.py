"""Proving, at any scale, that a set of workloads cannot all be placed: cut bounds over node classes.

The workloads placed so far and the one being checked are grouped into pod kinds (same request, same
eligible node classes). For a set S of node classes, the kinds that can run only inside S must fit inside
S. Per resource r (and pod slots), their pods need sum(pods x request_r); S offers, per node, at most the
largest amount of r that whole pods of those kinds can use together (free_r rounded down to a sum of their
requests: 3 free GPUs hold 2 of 2-GPU pods), and nothing on nodes where none of them fits. Need above offer
is a proof: no placement of those pods exists (it is the max-flow / min-cut bound of the transportation
problem kinds -> node classes, with the cuts S = the checked kind's classes, then that set grown by every
kind that overlaps it, until nothing more overlaps). A kind also never gets more pods than it alone could
ever occupy. Both ignore everything outside S, so they only ever under-claim.
"""

from __future__ import annotations

from functools import lru_cache
from math import gcd
from typing import Hashable

from gpufleet.capacity.quantity import PODS
from gpufleet.scheduling.buckets import FreeState, Request
from gpufleet.scheduling.filters import fit_count

_DP_LIMIT = 4096
_UNBOUNDED = float("inf")


class Kind:
    """Pods with one request on a set of node classes (`requests[c]` is the request as class c checks it)."""

    __slots__ = ("key", "eligible", "requests", "_least")

    def __init__(self, key: Hashable, requests: dict[int, Request]):
        self.key, self.requests, self.eligible = key, requests, frozenset(requests)
        self._least: dict[str, int] = {}

    def per_pod(self, r: str) -> int:
        """The least amount of r one pod uses on any of its classes (1 for pod slots)."""
        found = self._least.get(r)
        if found is None:
            found = self._least[r] = 1 if r == PODS else min(req.get(r, 0) for req in self.requests.values())
        return found


@lru_cache(maxsize=4096)
def usable(free: int, sizes: tuple[int, ...]) -> int:
    """The largest total <= free that a combination of whole items of these sizes reaches."""
    sizes = tuple(s for s in sizes if s <= free)
    if free <= 0 or not sizes:
        return 0
    g = gcd(*sizes)
    top, steps = free // g, [s // g for s in sizes]
    if 1 in steps or top > _DP_LIMIT:
        return top * g
    reach = 1
    for s in steps:
        shift = s
        while shift <= top:
            reach |= reach << shift
            shift *= 2
    reach &= (1 << (top + 1)) - 1
    return (reach.bit_length() - 1) * g


class CutBound:
    def __init__(self, base: FreeState):
        self.base = base
        self.kinds: dict[Hashable, Kind] = {}
        self.demand: dict[Hashable, int] = {}
        self._alone: dict[Hashable, int] = {}
        self._offer: dict[tuple, float] = {}
        self._proofs: dict[tuple, tuple[int, bool]] = {}
        self.version = 0

    def add(self, kind: Kind, pods: int) -> None:
        """Pods of a kind that earlier workloads placed."""
        self.kinds.setdefault(kind.key, kind)
        self.demand[kind.key] = self.demand.get(kind.key, 0) + pods
        self.version += 1

    def proves_pending(self, kind: Kind, wanted: int) -> bool:
        """True when the placed pods and `wanted` more of `kind` provably cannot all be placed at once."""
        found = self._proofs.get((kind.key, wanted))
        if found is not None and found[0] == self.version:
            return found[1]
        proven = self._proves(kind, wanted)
        self._proofs[(kind.key, wanted)] = (self.version, proven)
        return proven

    def _proves(self, kind: Kind, wanted: int) -> bool:
        demand = dict(self.demand)
        demand[kind.key] = demand.get(kind.key, 0) + wanted
        kinds = {**self.kinds, kind.key: self.kinds.get(kind.key, kind)}
        resources = {r for req in kind.requests.values() for r in req} | {PODS}
        cut = kind.eligible
        while True:
            confined = [k for k in kinds.values() if k.eligible <= cut and demand.get(k.key)]
            if self._cut_proves(cut, confined, demand, resources):
                return True
            grown = cut.union(*(k.eligible for k in kinds.values() if k.eligible & cut))
            if grown == cut:
                return False
            cut = grown

    def _cut_proves(self, cut: frozenset, confined: list[Kind], demand: dict, resources: set[str]) -> bool:
        for k in confined:
            if demand[k.key] > self._alone_capacity(k):
                return True
        keys = frozenset(k.key for k in confined)
        for r in sorted(resources):
            need = sum(demand[k.key] * k.per_pod(r) for k in confined)
            if need and need > self._offer_of(cut, r, keys, confined):
                return True
        return False

    def _alone_capacity(self, kind: Kind) -> int:
        found = self._alone.get(kind.key)
        if found is None:
            found = 0
            for c, req in kind.requests.items():
                for b in self.base.by_class[c].values():
                    found += len(b.nodes) * fit_count(b.free, b.pods_free, req, 1 << 62)
            self._alone[kind.key] = found
        return found

    def _offer_of(self, cut: frozenset, r: str, keys: frozenset, confined: list[Kind]) -> float:
        memo = (cut, r, keys)
        found = self._offer.get(memo)
        if found is None:
            found = self._offer[memo] = sum(self._class_offer(c, r, confined) for c in cut)
        return found

    def _class_offer(self, c: int, r: str, confined: list[Kind]) -> float:
        here = [k.requests[c] for k in confined if c in k.eligible]
        if not here:
            return 0
        if r == PODS:
            sizes = (1,)
        elif r in self.base.classes.nodes[c].unknown:
            return _UNBOUNDED
        else:
            sizes = tuple(sorted({req[r] for req in here if req.get(r, 0) > 0}))
            if not sizes:
                return 0
        offer = 0
        for b in self.base.by_class[c].values():
            if not any(fit_count(b.free, b.pods_free, req, 1) for req in here):
                continue
            if r == PODS and b.pods_free is None:
                return _UNBOUNDED
            have = b.pods_free if r == PODS else b.free.get(r, 0)
            offer += len(b.nodes) * usable(have, sizes)
        return offer
