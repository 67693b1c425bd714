"""NodeAffinity's score: the summed weights of the pod's preferred node affinity terms a node matches.

A term of weight 0 or with neither expressions nor fields is dropped (NewPreferredSchedulingTerms).
Scores are normalised by the highest one among the scored nodes (DefaultNormalizeScore).
"""

from __future__ import annotations

from gpufleet.capacity.model import Node
from gpufleet.scheduling.filters import term_matches


def preferred_terms(spec: dict) -> list[tuple[int, dict]] | None:
    """(weight, preference) of each usable preferred term; None when the pod has none (the plugin skips)."""
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {} if isinstance(affinity, dict) else {}
    terms = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") if isinstance(node_affinity, dict) else None
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
