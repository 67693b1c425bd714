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


def schedule_one(state: DraState, free: FreeState, nodes: list[Node], static: list[str | None],
                 reqs: dict[int, Request], namespace: str, pod: str, spec: dict) -> Attempt:
    """Try one pod; on success its devices and node are recorded in `state` and `free`.

    NodeResourcesFit is decided per bucket of identical free capacity (gpufleet.scheduling.buckets), the
    DynamicResources filter per node that passes it; the pod goes to the first such node in input order.
    """
    needs = state.needs(namespace, pod, spec)
    if needs.gated:
        return Attempt(None, [], [], needs.gated)
    if needs.prefilter:
        return Attempt(None, [], [], f"0/{len(nodes)} nodes are available: {needs.prefilter}.")
    counts: dict[str, int] = {}

    def count(reason: str, n: int) -> None:
        counts[reason] = counts.get(reason, 0) + n

    feasible: list[tuple[int, list]] = []
    for c, members in enumerate(free.classes.members):
        if static[c] is not None:
            count(static[c], len(members))
            continue
        for bucket in list(free.by_class[c].values()):
            reasons = fit_failures(bucket.free, bucket.pods_free, reqs[c])
            for r in reasons:
                count(r, len(bucket.nodes))
            for i in ([] if reasons else bucket.nodes):
                try:
                    found = state.filter(nodes[i], needs)
                except FilterError as e:
                    return Attempt(None, [], [], f'running "DynamicResources" filter plugin: {e}')
                if isinstance(found, str):
                    count(found, 1)
                else:
                    feasible.append((i, found))
    if not feasible:
        return Attempt(None, [], [], failed_scheduling(counts, len(nodes)))
    i, found = min(feasible, key=lambda f: f[0])
    free.place_on(i, reqs[free.classes.of[i]])
    used, allocated = state.commit(nodes[i], needs, found)
    return Attempt(i, used, allocated, "")
