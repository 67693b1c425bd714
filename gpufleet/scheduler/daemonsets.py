"""Where a DaemonSet's pods may go: the DaemonSet controller places one on every node whose labels its
nodeSelector and required node affinity match (the scheduler's own terms, gpufleet.scheduler.filters).
Taints are left out here: which taints the GPU stack tolerates is gpu-taint-toleration's concern."""

from __future__ import annotations

from dataclasses import replace

from gpufleet.scheduler.filters import pod_terms, static_failure

_TOLERATE_ALL = ({"operator": "Exists"},)


def selects_node(spec: dict, node) -> bool:
    """A pod of this spec matches the node's labels (nodeSelector and required node affinity)."""
    terms = replace(pod_terms(spec, {}, False), tolerations=_TOLERATE_ALL)
    return static_failure(node, terms) is None
