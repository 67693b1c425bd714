"""Nodes whose devices look alike to a pod's claims, so the filter works out its answer once for all of them.

The DynamicResources filter (the structured allocator, .allocator, and its
shortcuts in .counting and .refuting) reads, of a node: whether any of its pools is invalid or incomplete,
and its devices in order; of a device: whether it is in use, what its class's and requests' CEL selectors
see of it (`cel.reads`: the fields they name, or the whole device when an expression uses `device`
otherwise) and, for `matchAttribute` constraints, which devices of the node share a value. Two nodes equal
in all of that (the look of a node for those claims) get the same answer, with the devices at the same
positions. A look is the node's fixed part (the same for every run: `Table.fixed`) and which of its devices
are in use, worked out with array operations for every node asked about. The filter's error is asked
again on the node itself, so it names the node's own pools and devices.
"""

from __future__ import annotations

import numpy as np

from gpufleet.scheduler.plugins.dynamicresources.cel import reads
from gpufleet.scheduler.plugins.dynamicresources.structured.allocator import Claim, alternatives, requests_of
from gpufleet.scheduler.plugins.dynamicresources.structured.counting import rows

#: Stale nodes looked up one by one; more are grouped first.
_FEW = 32


def relevance(claims: list[Claim], classes: dict[str, dict]) -> tuple:
    """What the allocator reads of a device for these claims: (CEL paths or None for everything,
    constraint attribute names)."""
    paths: set | None = set()
    constrained: set[str] = set()
    for claim in claims:
        for request in requests_of(claim):
            for alt in alternatives(request):
                spec = classes.get(alt.class_name) or {}
                expressions = [(s.get("cel") or {}).get("expression") or "" for s in spec.get("selectors") or ()]
                for expression in [*expressions, *alt.selectors]:
                    found = reads(expression)
                    if found is None or paths is None:
                        paths = None
                    else:
                        paths.update(found)
        for constraint in (claim.spec.get("devices") or {}).get("constraints") or ():
            if constraint.get("matchAttribute"):
                constrained.add(constraint["matchAttribute"])
    return (None if paths is None else tuple(sorted(paths)), tuple(sorted(constrained)))


class Looks:
    """Per node position, an id of its look for one relevance (equal ids, equal looks): its fixed part
    (`Table.fixed`) and its free devices, kept up to date with the nodes whose devices changed (one run's);
    the ids are shared by the runs."""

    def __init__(self, state, fixed: np.ndarray, ids: dict[tuple, int]):
        self.state, self.fixed, self.ids = state, fixed, ids
        self.id = np.zeros(len(state.nodes), dtype=np.int64)
        self.synced = -1  # how much of `state.changed` the ids have seen; -1: none taken yet

    def of(self, positions: np.ndarray) -> np.ndarray:
        changed = self.state.changed
        if self.synced < 0:
            self._take(np.arange(len(self.id)))
        elif len(changed) > self.synced:
            self._take(np.unique(np.array(changed[self.synced:], dtype=np.int64)))
        self.synced = len(changed)
        return self.id[positions]

    def _take(self, stale: np.ndarray) -> None:
        """Work out the looks of these nodes: the fixed part and the free devices as bits (as bytes past
        BITS devices), one id per distinct pair."""
        bits = self.state.free_bits(stale)
        ids = self.ids
        if len(stale) <= _FEW:
            few = zip(self.fixed[stale].tolist(), bits.tolist(), strict=True)
            self.id[stale] = [ids.setdefault(pair, len(ids)) for pair in few]
        else:
            pairs = np.stack((self.fixed[stale], bits), axis=1)
            inverse = rows(pairs)
            first = np.unique(inverse, return_index=True)[1]
            known = np.array([ids.setdefault(pair, len(ids)) for pair in map(tuple, pairs[first].tolist())],
                             dtype=np.int64)
            self.id[stale] = known[inverse]
        table, free = self.state.table(), self.state.free()
        for pos in stale[bits < 0].tolist():  # many devices: which are in use, as bytes
            mine = free[table.start[pos]:table.start[pos] + table.size[pos]]
            self.id[pos] = ids.setdefault((int(self.fixed[pos]), mine.tobytes()), len(ids))
