"""The structured allocator, as k8s.io/dynamic-resource-allocation v0.34.1 `structured/` is: the one interface
the DynamicResources plugin asks about devices. Behind it:
- `allocator`: the search itself (`Allocator.allocate`: every claim of a pod on one node, in order,
  backtracking; `FilterError` for the filter's own errors, `OutOfBudget` past its step budget);
- `pools`: which devices a node reaches (`node_pools`, GatherPools);
- the exact shortcuts, each giving the search's own answer without running it where it can know it:
  `counting` (one claim whose answer is a count), `refuting` (no assignment can exist, or the search runs
  out of steps), `descent` (the first descent fills every request);
- `likeness`: nodes that look alike to the claims, so an answer is worked out once for all of them.

The claim model (`Claim`, its requests and their `alternatives`, `constraints_on` them) and `SELECTED` (what
`Table.selected` says of a device its selectors pass) are for the check's explanations, which ask the same
questions the allocator does.

`decide` runs the shortcuts in that order over many nodes at once; a node none of them can answer is
`UNKNOWN`, and the plugin asks the allocator itself there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpufleet.lazy import names_on_first_use

if TYPE_CHECKING:
    from gpufleet.scheduler.plugins.dynamicresources.structured.allocator import (
        Allocator,
        Alternative,
        Claim,
        FilterError,
        OutOfBudget,
        alternatives,
        constraints_on,
        missing_class,
        requests_of,
    )
    from gpufleet.scheduler.plugins.dynamicresources.structured.counting import SELECTED, Table, countable
    from gpufleet.scheduler.plugins.dynamicresources.structured.likeness import Looks, relevance
    from gpufleet.scheduler.plugins.dynamicresources.structured.pools import Pool, node_pools

__all__ = ["CANNOT_ALLOCATE", "PASSES", "SELECTED", "TIMED_OUT", "UNKNOWN", "Allocator", "Alternative", "Claim",
           "FilterError", "Looks", "OutOfBudget", "Pool", "Table", "alternatives", "constraints_on", "countable",
           "decide", "missing_class", "node_pools", "relevance", "requests_of"]

# Loaded on first use: which devices a node reaches (pools) is asked without CEL, the search loads it.
__getattr__ = names_on_first_use(__name__, {
    **dict.fromkeys(("Allocator", "Alternative", "Claim", "FilterError", "OutOfBudget", "alternatives",
                     "constraints_on", "missing_class", "requests_of"), "allocator"),
    **dict.fromkeys(("SELECTED", "Table", "countable"), "counting"),
    **dict.fromkeys(("Looks", "relevance"), "likeness"),
    **dict.fromkeys(("Pool", "node_pools"), "pools"),
})

#: `decide`'s answers per node: the search succeeds, fails, runs out of steps, or only it can tell.
PASSES, CANNOT_ALLOCATE, TIMED_OUT, UNKNOWN = 0, 1, 2, -2


def decide(state, alts: list | None, claims: list[Claim], positions: np.ndarray) -> np.ndarray:
    """Per node at `positions` (of distinct looks), the allocator's answer where an exact shortcut knows it.

    `state`: the plugin's view of the cluster's devices (its `table()` of (node, device) entries and
    `free()` mask); `alts`: `countable(needs)`, None where counting does not apply."""
    from gpufleet.scheduler.plugins.dynamicresources.structured.counting import counted
    from gpufleet.scheduler.plugins.dynamicresources.structured.descent import passes
    from gpufleet.scheduler.plugins.dynamicresources.structured.refuting import outcomes

    table, free = state.table(), state.free()
    if alts is not None:
        codes = counted(state, table, free, alts, claims, positions)
    else:
        codes = np.full(len(positions), UNKNOWN, dtype=np.int8)
    unsure = codes == UNKNOWN
    if unsure.any():
        fails, slow = outcomes(state, table, free, claims, positions[unsure])
        codes[np.flatnonzero(unsure)[fails]] = CANNOT_ALLOCATE
        codes[np.flatnonzero(unsure)[slow]] = TIMED_OUT
        unsure = codes == UNKNOWN
        if unsure.any():
            codes[np.flatnonzero(unsure)[passes(state, table, free, claims, positions[unsure])]] = PASSES
    return codes
