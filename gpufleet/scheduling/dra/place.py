"""One pod with claims through the scheduler's filters on every node, then placed on the first feasible one.

Static filters and NodeResourcesFit first (each node reports its first failing filter), then the
DynamicResources filter. Its texts: a PreFilter rejection replaces the per-node list; a filter error
aborts the attempt (`running "DynamicResources" filter plugin: ...`); a gated pod has no attempt at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.capacity.model import Node
from gpufleet.scheduling.buckets import FreeState, Request
from gpufleet.scheduling.dra.allocator import FilterError
from gpufleet.scheduling.dra.claims import DraState
from gpufleet.capacity.dra import Device
from gpufleet.scheduling.filters import failed_scheduling, fit_failures


@dataclass
class Attempt:
    node: int | None
    devices: list[Device]
    """The devices the pod uses (its claims', shared ones included)."""
    allocated: list[Device]
    """The devices allocated for this pod (not those of shared claims allocated before)."""
    message: str
    """Why the pod stays Pending (empty when placed)."""


def schedule_one(state: DraState, free: FreeState, nodes: list[Node], classes_of: list[int],
                 static: list[str | None], reqs: dict[int, Request], namespace: str, pod: str,
                 spec: dict) -> Attempt:
    """Try one pod; on success its devices and node are recorded in `state` and `free`."""
    needs = state.needs(namespace, pod, spec)
    if needs.gated:
        return Attempt(None, [], [], needs.gated)
    if needs.prefilter:
        return Attempt(None, [], [], f"0/{len(nodes)} nodes are available: {needs.prefilter}.")
    counts: dict[str, int] = {}
    feasible: list[tuple[int, list]] = []
    for i, node in enumerate(nodes):
        c = classes_of[i]
        reasons = [static[c]] if static[c] is not None else fit_failures(*free.free_of(i), reqs[c])
        if not reasons:
            try:
                found = state.filter(node, needs)
            except FilterError as e:
                return Attempt(None, [], [], f'running "DynamicResources" filter plugin: {e}')
            if not isinstance(found, str):
                feasible.append((i, found))
                continue
            reasons = [found]
        for r in reasons:
            counts[r] = counts.get(r, 0) + 1
    if not feasible:
        return Attempt(None, [], [], failed_scheduling(counts, len(nodes)))
    i, found = feasible[0]
    free.place_on(i, reqs[classes_of[i]])
    used, allocated = state.commit(nodes[i], needs, found)
    return Attempt(i, used, allocated, "")
