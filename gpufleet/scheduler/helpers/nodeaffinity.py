"""Node selectors as k8s.io/component-helpers v0.34 scheduling/corev1/nodeaffinity matches them: a term's
expressions (on labels) and fields (`metadata.name`) ANDed, the terms of a NodeSelector ORed. Shared by the
NodeAffinity plugin and by DRA (ResourceSlice and allocation node selectors)."""

from __future__ import annotations

from gpufleet.capacity.model import Node

__all__ = ["node_selector_matches", "term_matches"]


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
