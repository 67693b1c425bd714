"""DynamicResources (pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go, v1.34.1).

Its extension points work on the check's claim state (`claims.DraState`: the cluster's ResourceClaims and
ResourceSlices, the devices in use, the claims allocated so far), one per tie-break run, as the plugin's
listers and its in-flight allocations are one per scheduler:
- PreEnqueue and PreFilter, `pre_filter(state, namespace, name, spec) -> Needs`: the pod's claims. A claim
  that does not exist yet keeps the pod from being tried at all (`needs.gated`); a DeviceClass that does not
  exist makes every node fail (`needs.prefilter`).
- Filter, `filter_claims(state, needs) -> NodeOutcomes`: per node, whether the claims can be allocated there
  (the structured allocator, `structured/`). The cycle asks it last, on the nodes that pass every other
  filter, many at once (gpufleet.scheduler.schedule_one's ExtraFilter).
- PostFilter, `post_filter(state, needs, failures)`: after the pod found no node, an allocated claim that
  was not available on some node and is reserved for nobody is deallocated (`needs.released`). It nominates
  no node, but the claim's change requeues the pod, which is tried again and may allocate the claim anew.
- Reserve (with PreBind's write of the allocation), `reserve(state, node, needs, outcomes, pos)`: the devices
  the allocator picked on the chosen node are in use from then on; a shared claim keeps its allocation.
It scores nothing (v1.34 has no DRA score).

Its answers are cached by the claims' specs (per look of a node's devices, `claims.Verdicts`), never by the
pod shape, so it signs nothing into the pod signature. What it reads of a node (its name and labels, for the
slices' and allocations' node selectors) it reads per node, never per node class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpufleet.scheduler.framework.interface import Plugin, Reads

if TYPE_CHECKING:  # the state loads CEL and the allocator: only a check with claims builds one
    from gpufleet.scheduler.plugins.dynamicresources.claims import DraState, Needs, NodeOutcomes


class DynamicResources(Plugin):
    name = "DynamicResources"
    reads = Reads(pod=("resourceClaims",), per_node=("name", "labels"))

    def sign_pod(self, spec: dict) -> tuple:
        return ()

    def pre_filter(self, state: DraState, namespace: str, name: str, spec: dict) -> Needs:
        return state.needs(namespace, name, spec)

    def filter_claims(self, state: DraState, needs: Needs) -> NodeOutcomes:
        return state.tried(needs)

    def post_filter(self, state: DraState, needs: Needs, failures: dict[str, int]) -> Any:
        from gpufleet.scheduler.plugins.dynamicresources.claims import NOT_ON_NODE, release_unreserved

        if failures.get(NOT_ON_NODE):  # an allocated claim was unavailable on some node
            needs.released = release_unreserved(state, needs)
        return None

    def reserve(self, state: DraState, needs: Needs, outcomes: NodeOutcomes, pos: int):
        """(the devices the pod uses, those newly allocated to it) on the node at `pos`."""
        return state.commit(state.nodes[pos], needs, outcomes.found(pos))
