"""kube-scheduler's filters in their order, with its exact reason strings (scheduling-rules.md 1.4-1.6).

NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector + required node affinity) depend only
on the pod and the node (`static_failure`); NodeResourcesFit depends on what is already placed
(gpufleet.scheduling.snapshot, over the whole fleet at once). Each node reports only its first failing filter.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.capacity.model import Node, Taint
from gpufleet.scheduling.validation import is_extended
from gpufleet.taints import extended_resource_tolerations, tolerates_taint

UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS = "Too many pods"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


@dataclass(frozen=True)
class PodTerms:
    """What the placement filters read from a pod spec."""

    tolerations: tuple[dict, ...]
    node_selector: dict[str, str]
    required_terms: tuple[dict, ...] | None
    """nodeSelectorTerms of requiredDuringSchedulingIgnoredDuringExecution (ORed), None when absent."""


def pod_terms(spec: dict, requests: dict[str, int], extended_resource_toleration: bool) -> PodTerms:
    tolerations = list(spec.get("tolerations") or ())
    if extended_resource_toleration:
        tolerations += extended_resource_tolerations(r for r in requests if is_extended(r) and requests[r] > 0)
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    terms = None if required is None else tuple(required.get("nodeSelectorTerms") or ())
    return PodTerms(tuple(tolerations), {k: str(v) for k, v in (spec.get("nodeSelector") or {}).items()}, terms)


def tolerates(toleration: dict, taint: Taint) -> bool:
    """v1.Toleration.ToleratesTaint (gpufleet.taints) for a node's taint."""
    return tolerates_taint(toleration, taint.key, taint.value, taint.effect)


def _tolerated(terms: PodTerms, taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in terms.tolerations)


def _requirement(expr: dict, labels: dict[str, str]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), [str(v) for v in expr.get("values") or ()]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def term_matches(term: dict, node: Node) -> bool:
    exprs, fields = term.get("matchExpressions") or (), term.get("matchFields") or ()
    if not exprs and not fields:
        return False  # an empty term matches no objects
    fields_view = {"metadata.name": node.name}
    return all(_requirement(e, node.labels) for e in exprs) and all(_requirement(f, fields_view) for f in fields)


def node_selector_matches(selector: dict, node: Node) -> bool:
    """A core/v1 NodeSelector (terms ORed) against a node, as DRA slices and allocations use it."""
    return any(term_matches(t, node) for t in selector.get("nodeSelectorTerms") or ())


def static_failure(node: Node, terms: PodTerms) -> str | None:
    """The first failing filter before NodeResourcesFit, as its reason string; None when all pass."""
    if node.unschedulable and not _tolerated(terms, UNSCHEDULABLE_TAINT):
        return UNSCHEDULABLE
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not _tolerated(terms, taint):
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    labels = node.labels
    if any(labels.get(k) != v for k, v in terms.node_selector.items()):
        return AFFINITY
    if terms.required_terms is not None and not any(term_matches(t, node) for t in terms.required_terms):
        return AFFINITY
    return None


def has_pod_rules(spec: dict) -> bool:
    """Whether where the pod may go depends on other pods: topology spread or pod (anti-)affinity."""
    affinity = spec.get("affinity") if isinstance(spec.get("affinity"), dict) else {}
    return bool(spec.get("topologySpreadConstraints") or affinity.get("podAffinity") or affinity.get("podAntiAffinity"))


def matches_node_affinity(node: Node, terms: PodTerms) -> bool:
    """The pod's nodeSelector and required node affinity alone (what topology spread honours)."""
    labels = node.labels
    if any(labels.get(k) != v for k, v in terms.node_selector.items()):
        return False
    return terms.required_terms is None or any(term_matches(t, node) for t in terms.required_terms)


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
