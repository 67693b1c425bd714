"""TaintToleration (pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go, v1.34.1).

Filter: a node with a NoSchedule or NoExecute taint that no toleration of the pod tolerates fails, naming
the first such taint. Score: the node's PreferNoSchedule taints that the pod's tolerations of effect "" or
PreferNoSchedule do not tolerate (countIntolerableTaintsPreferNoSchedule), normalised in reverse (fewer is
better). The pod's tolerations include those the ExtendedResourceToleration admission plugin adds, when the
check enables it (it mutates the pod before the scheduler sees it).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from gpufleet.capacity.model import Node, Taint
from gpufleet.scheduler.framework.interface import Plugin, Reads
from gpufleet.scheduler.plugins.helper import by_class, default_normalize_score
from gpufleet.taints import extended_resource_tolerations, tolerates_taint
from gpufleet.validation.resources import is_extended


def tolerates(toleration: dict, taint: Taint) -> bool:
    """v1.Toleration.ToleratesTaint (gpufleet.taints) for a node's taint."""
    return tolerates_taint(toleration, taint.key, taint.value, taint.effect)


def tolerated(tolerations: Iterable[dict], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


class TaintToleration(Plugin):
    name = "TaintToleration"
    reads = Reads(pod=("tolerations",), node=("taints",))

    def pre_filter(self, spec: dict, requests: dict[str, int], extended_resource_toleration: bool) -> tuple:
        """The pod's tolerations (with ExtendedResourceToleration's, from the requests, when enabled)."""
        tolerations = list(spec.get("tolerations") or ())
        if extended_resource_toleration:
            extended = (r for r in requests if is_extended(r) and requests[r] > 0)
            tolerations += extended_resource_tolerations(extended)
        return tuple(tolerations)

    def filter_node(self, node: Node, terms) -> str | None:
        for taint in node.taints:
            if taint.effect in ("NoSchedule", "NoExecute") and not tolerated(terms.tolerations, taint):
                return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
        return None

    def pre_score(self, shape) -> np.ndarray | None:
        """Per node, its intolerable PreferNoSchedule taints; None when every node has as many."""
        tolerations = shape.terms.tolerations
        classes = shape.classes
        return classes.shared(("taints", repr(tolerations)), lambda: by_class(
            [intolerable_prefer_no_schedule(node, tolerations) for node in classes.nodes], shape.class_of))

    def normalize_score(self, raw: np.ndarray) -> np.ndarray:
        return default_normalize_score(raw, reverse=True)


def intolerable_prefer_no_schedule(node: Node, tolerations: tuple[dict, ...]) -> int:
    """countIntolerableTaintsPreferNoSchedule, with the pod's tolerations of effect "" or PreferNoSchedule."""
    usable = [t for t in tolerations if (t.get("effect") or "") in ("", "PreferNoSchedule")]
    return sum(1 for taint in node.taints
               if taint.effect == "PreferNoSchedule" and not any(tolerates(t, taint) for t in usable))
