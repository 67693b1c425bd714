"""TaintToleration's score: intolerable PreferNoSchedule taints, normalised in reverse (fewer is better)."""

from __future__ import annotations

from gpufleet.capacity.model import Node
from gpufleet.scheduling.filters import tolerates


def intolerable_prefer_no_schedule(node: Node, tolerations: tuple[dict, ...]) -> int:
    """countIntolerableTaintsPreferNoSchedule, with the pod's tolerations of effect "" or PreferNoSchedule."""
    usable = [t for t in tolerations if (t.get("effect") or "") in ("", "PreferNoSchedule")]
    return sum(1 for taint in node.taints
               if taint.effect == "PreferNoSchedule" and not any(tolerates(t, taint) for t in usable))
