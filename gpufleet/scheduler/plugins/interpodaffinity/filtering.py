"""InterPodAffinity: required and preferred pod (anti-)affinity
(pkg/scheduler/framework/plugins/interpodaffinity, v1.34.1: filtering.go; the Score is scoring.py).

Filter, in the plugin's order:
1. every required affinity term needs a pod that matches all of them in the node's domain of the term's
   topology key ("didn't match pod affinity rules"); when no such pod exists anywhere and the pod matches its
   own terms, any node with the keys passes (the first pod of a group that attracts itself);
2. no pod that a required anti-affinity term matches may be in the node's domain ("didn't match pod
   anti-affinity rules");
3. no earlier pod whose required anti-affinity term matches this pod may be in the node's domain ("didn't
   satisfy existing pods anti-affinity rules").

A term's namespaces: its `namespaces`, else the pod's own; `namespaceSelector: {}` means every namespace; any
other `namespaceSelector` adds the namespaces whose labels it matches (`merge_namespace_selectors`, what the
plugin's PreFilter does with the namespace lister), and then the pod's own namespace only when listed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpufleet.labels import selector_matches
from gpufleet.scheduler.pods_on_nodes import PodsOnNodes

AFFINITY = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


@dataclass(frozen=True)
class Term:
    selector: dict | None
    namespaces: frozenset[str] | None
    key: str
    weight: int = 1

    def matches(self, namespace: str, labels: dict[str, str]) -> bool:
        return (self.namespaces is None or namespace in self.namespaces) and selector_matches(self.selector, labels)

    @property
    def match(self) -> tuple:
        return self.selector, self.namespaces


def _everything(selector) -> bool:
    """A label selector with no requirement (`{}`, or empty matchLabels and matchExpressions): every object."""
    return isinstance(selector, dict) and not selector.get("matchLabels") and not selector.get("matchExpressions")


def _term(t: dict, namespace: str, weight: int = 1) -> Term:
    listed = frozenset(str(n) for n in t.get("namespaces") or ())
    selector = t.get("namespaceSelector")
    if _everything(selector):
        namespaces = None
    elif selector is None:
        namespaces = listed or frozenset((namespace,))
    else:  # merged into `namespaces` already (merge_namespace_selectors); no namespace label is known otherwise
        namespaces = listed
    return Term(t.get("labelSelector"), namespaces, str(t.get("topologyKey") or ""), weight)


def merge_namespace_selectors(affinity: dict, namespace_labels: dict[str, dict[str, str]]) -> dict:
    """`affinity` with each term's non-empty `namespaceSelector` resolved: the namespaces whose labels it
    matches join the term's `namespaces` (upstream's PreFilter, mergeAffinityTermNamespacesIfNotEmpty, over
    the namespace lister). `namespace_labels`: every namespace a pod of the check can be in, with its labels
    (the API server gives each `kubernetes.io/metadata.name`)."""

    def merged(term):
        if not isinstance(term, dict):
            return term
        selector = term.get("namespaceSelector")
        if selector is None or _everything(selector):
            return term
        found = [ns for ns, labels in sorted(namespace_labels.items()) if selector_matches(selector, labels)]
        listed = [str(n) for n in term.get("namespaces") or ()]
        return {**term, "namespaces": list(dict.fromkeys([*listed, *found]))}

    out = dict(affinity)
    for kind in ("podAffinity", "podAntiAffinity"):
        block = affinity.get(kind)
        if not isinstance(block, dict):
            continue
        block = dict(block)
        required = block.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(required, list):
            block["requiredDuringSchedulingIgnoredDuringExecution"] = [merged(t) for t in required]
        preferred = block.get("preferredDuringSchedulingIgnoredDuringExecution")
        if isinstance(preferred, list):
            block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {**w, "podAffinityTerm": merged(w.get("podAffinityTerm"))} if isinstance(w, dict) else w
                for w in preferred]
        out[kind] = block
    return out


@dataclass
class Terms:
    affinity: list[Term]
    anti: list[Term]
    preferred: list[Term]
    preferred_anti: list[Term]

    def __bool__(self) -> bool:
        return bool(self.affinity or self.anti or self.preferred or self.preferred_anti)


def terms_of(spec: dict, namespace: str) -> Terms:
    affinity = spec.get("affinity")
    affinity = affinity if isinstance(affinity, dict) else {}
    pod, anti = affinity.get("podAffinity") or {}, affinity.get("podAntiAffinity") or {}

    def required(block):
        return [_term(t, namespace) for t in block.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
                if isinstance(t, dict)]

    def preferred(block):
        return [_term(w.get("podAffinityTerm") or {}, namespace, int(w.get("weight") or 0))
                for w in block.get("preferredDuringSchedulingIgnoredDuringExecution") or () if isinstance(w, dict)]

    return Terms(required(pod), required(anti), preferred(pod), preferred(anti))


def per_domain(dom: np.ndarray, counts: np.ndarray) -> np.ndarray:
    has = dom >= 0
    # at least one slot, so that indexing by max(domain, 0) works when no node has the key
    return np.bincount(dom[has], weights=counts[has], minlength=max(int(dom.max()) + 1 if len(dom) else 0, 1))


def filter_failures(own: Terms, namespace: str, labels: dict[str, str], pods: PodsOnNodes, domains,
                    existing: list[tuple[Term, np.ndarray]]) -> list[tuple[str, np.ndarray]]:
    """(reason, nodes failing it), in the plugin's order. `existing`: earlier pods' required anti-affinity
    terms with, per node, how many such pods are there."""
    n = pods.n
    out = []
    if own.affinity:
        counts = pods.count_all(tuple(t.match for t in own.affinity))
        ok = np.ones(n, dtype=bool)
        keyed = np.ones(n, dtype=bool)
        anywhere = False
        for t in own.affinity:
            dom = domains(t.key)
            per = per_domain(dom, counts)
            anywhere |= bool(per.any())
            keyed &= dom >= 0
            ok &= (dom >= 0) & (per[np.maximum(dom, 0)] > 0)
        if not anywhere and all(t.matches(namespace, labels) for t in own.affinity):
            ok = keyed
        out.append((AFFINITY, ~ok))
    fail = np.zeros(n, dtype=bool)
    for t in own.anti:
        dom = domains(t.key)
        per = per_domain(dom, pods.count(t.selector, t.namespaces))
        fail |= (dom >= 0) & (per[np.maximum(dom, 0)] > 0)
    out.append((ANTI_AFFINITY, fail))
    fail = np.zeros(n, dtype=bool)
    for t, owners in existing:
        if t.matches(namespace, labels):
            dom = domains(t.key)
            per = per_domain(dom, owners)
            fail |= (dom >= 0) & (per[np.maximum(dom, 0)] > 0)
    out.append((EXISTING_ANTI_AFFINITY, fail))
    return out


@dataclass(frozen=True)
class AffinityState:
    terms: Terms
    namespace: str
    labels: dict[str, str]
