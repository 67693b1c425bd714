"""What the filter plugins read of a pod, the static filters run as the default profile orders them, and
the FailedScheduling text (FitError.Error in pkg/scheduler/framework/types.go, v1.34.1).

NodeUnschedulable, TaintToleration and NodeAffinity depend only on the pod and the node (`static_failure`,
run once per node class); NodePorts and NodeResourcesFit depend on what is already placed (the framework's
`run_filter_plugins`, over the whole fleet at once). Each node reports only its first failing filter. The
plugins themselves are in gpufleet.scheduler.plugins, one folder each.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.capacity.model import Node
from gpufleet.scheduler.framework.runtime import Framework
from gpufleet.scheduler.helpers.nodeaffinity import node_selector_matches, term_matches
from gpufleet.scheduler.plugins import default_plugins
from gpufleet.scheduler.plugins.nodeaffinity import REASON as AFFINITY
from gpufleet.scheduler.plugins.nodeaffinity import NodeAffinity, matches_node_affinity
from gpufleet.scheduler.plugins.noderesources import TOO_MANY_PODS
from gpufleet.scheduler.plugins.nodeunschedulable import REASON as UNSCHEDULABLE
from gpufleet.scheduler.plugins.tainttoleration import TaintToleration, tolerates

__all__ = ["AFFINITY", "TOO_MANY_PODS", "UNSCHEDULABLE", "PodTerms", "failed_scheduling", "has_pod_rules",
           "matches_node_affinity", "node_selector_matches", "pod_terms", "static_failure", "term_matches",
           "tolerates"]

_TAINTS, _AFFINITY = TaintToleration(), NodeAffinity()


@dataclass(frozen=True)
class PodTerms:
    """What the static filters read from a pod spec (their PreFilter states)."""

    tolerations: tuple[dict, ...]
    node_selector: dict[str, str]
    required_terms: tuple[dict, ...] | None
    """nodeSelectorTerms of requiredDuringSchedulingIgnoredDuringExecution (ORed), None when absent."""


def pod_terms(spec: dict, requests: dict[str, int], extended_resource_toleration: bool) -> PodTerms:
    tolerations = _TAINTS.pre_filter(spec, requests, extended_resource_toleration)
    return PodTerms(tolerations, *_AFFINITY.pre_filter(spec))


_built: list = [None, None]  # the profile list the framework was built from, and the framework


def default_framework() -> Framework:
    """The default profile's framework, as the profile stands now (a test may give it another plugin)."""
    profile = default_plugins.PROFILE
    if _built[0] is not profile:
        _built[:] = [profile, Framework(profile)]
    return _built[1]


def static_failure(node: Node, terms: PodTerms) -> str | None:
    """The first failing filter before NodePorts, as its reason string; None when all pass."""
    return default_framework().run_static_filters(node, terms)


def has_pod_rules(spec: dict) -> bool:
    """Whether where the pod may go depends on other pods: topology spread or pod (anti-)affinity."""
    affinity = spec.get("affinity")
    affinity = affinity if isinstance(affinity, dict) else {}
    return bool(spec.get("topologySpreadConstraints") or affinity.get("podAffinity") or affinity.get("podAntiAffinity"))


def failed_scheduling(reasons: list[str] | dict[str, int], total_nodes: int) -> str:
    """The FailedScheduling text: `0/N nodes are available: <count> <reason>, ....` (sort.Strings order).

    `reasons`: one entry per node and reason, or already counted (reason -> nodes).
    """
    if total_nodes == 0:
        return "no nodes available to schedule pods"
    if isinstance(reasons, dict):
        counts = reasons
    else:
        counts = {}
        for r in reasons:
            counts[r] = counts.get(r, 0) + 1
    histogram = sorted(f"{n} {r}" for r, n in counts.items())
    return f"0/{total_nodes} nodes are available: " + ", ".join(histogram) + "."
