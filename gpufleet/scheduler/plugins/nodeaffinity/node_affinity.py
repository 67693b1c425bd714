"""NodeAffinity (pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go, v1.34.1), with the node
selector matching of k8s.io/component-helpers/scheduling/corev1/nodeaffinity.

Filter: the pod's nodeSelector and its required node affinity (terms ORed, expressions and fields ANDed).
Score: the summed weights of the pod's preferred terms a node matches; a term of weight 0 or with neither
expressions nor fields is dropped (NewPreferredSchedulingTerms). Normalised by the highest score among the
scored nodes (DefaultNormalizeScore).

A node is read through its labels, and its name for `matchFields`; node classes keep only the labels that
some pod of the check selects on (`selected_labels`), so per-node labels such as kubernetes.io/hostname do
not split the fleet into one class per node.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from gpufleet.capacity.model import Node
from gpufleet.scheduler.framework.interface import Plugin, Reads
from gpufleet.scheduler.helpers.nodeaffinity import term_matches
from gpufleet.scheduler.plugins.helper import by_class, default_normalize_score

REASON = "node(s) didn't match Pod's node affinity/selector"
_EVERY_LABEL = None


class NodeAffinity(Plugin):
    name = "NodeAffinity"
    reads = Reads(pod=("nodeSelector", "affinity.nodeAffinity"), node=("name", "labels"))

    def pre_filter(self, spec: dict) -> tuple[dict[str, str], tuple[dict, ...] | None]:
        """(the nodeSelector, the required terms or None when the pod has no required node affinity)."""
        required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution"))
        terms = None if required is None else tuple(required.get("nodeSelectorTerms") or ())
        return {k: str(v) for k, v in (spec.get("nodeSelector") or {}).items()}, terms

    def filter_node(self, node: Node, terms) -> str | None:
        return None if matches_node_affinity(node, terms) else REASON

    def node_context(self, specs: Iterable[Any]) -> tuple[tuple | None, bool]:
        return selected_labels(specs)

    def sign_node(self, node: Any, context: Any = None) -> tuple:
        keys, by_name = context if context is not None else (_EVERY_LABEL, True)
        labels = node.labels
        seen = tuple(sorted(labels.items())) if keys is None else tuple((k, labels.get(k)) for k in keys)
        return node.name if by_name else None, seen

    def pre_score(self, shape) -> np.ndarray | None:
        preferred = preferred_terms(shape.spec)
        classes = shape.classes

        def per_node() -> np.ndarray | None:
            values = [preferred_score(n, preferred) for n in classes.nodes] if preferred else []
            return by_class(values, shape.class_of)

        return classes.shared(("preferred", repr(preferred)), per_node)

    def normalize_score(self, raw: np.ndarray) -> np.ndarray:
        return default_normalize_score(raw, reverse=False)


def selected_labels(specs: Iterable[Any]) -> tuple[tuple | None, bool]:
    """(label keys the pod specs select on, in a fixed order; whether any selects on the node name).

    None for the keys means "every label" (a spec whose selector could not be read is treated as reading
    everything, so grouping never hides a difference the filters would see).
    """
    keys: set = set()
    by_name = False
    for spec in specs:
        if not isinstance(spec, dict):
            continue
        selector = spec.get("nodeSelector")
        if isinstance(selector, dict):
            keys.update(selector)
        elif selector:
            return _EVERY_LABEL, True
        affinity = spec.get("affinity")
        if not affinity:
            continue
        try:
            node_affinity = affinity.get("nodeAffinity") or {}
            required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
            preferred = [p.get("preference") or {} for p in
                         node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()]
            for term in [*(required.get("nodeSelectorTerms") or ()), *preferred]:
                for expr in term.get("matchExpressions") or ():
                    keys.add(expr.get("key", ""))
                if term.get("matchFields"):
                    by_name = True
        except (AttributeError, TypeError):
            return _EVERY_LABEL, True
    return tuple(sorted(keys, key=repr)), by_name


def matches_node_affinity(node: Node, terms) -> bool:
    """The pod's nodeSelector and required node affinity alone (what topology spread honours too)."""
    labels = node.labels
    if any(labels.get(k) != v for k, v in terms.node_selector.items()):
        return False
    return terms.required_terms is None or any(term_matches(t, node) for t in terms.required_terms)


def preferred_terms(spec: dict) -> list[tuple[int, dict]] | None:
    """(weight, preference) of each usable preferred term; None when the pod has none (the plugin skips)."""
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {} if isinstance(affinity, dict) else {}
    terms = (node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
             if isinstance(node_affinity, dict) else None)
    if not terms:
        return None
    out = []
    for term in terms:
        weight = term.get("weight") or 0 if isinstance(term, dict) else 0
        preference = term.get("preference") or {} if isinstance(term, dict) else {}
        if weight and (preference.get("matchExpressions") or preference.get("matchFields")):
            out.append((int(weight), preference))
    return out


def preferred_score(node: Node, terms: list[tuple[int, dict]]) -> int:
    return sum(weight for weight, preference in terms if term_matches(preference, node))
