"""PodTopologySpread: the pod's own topologySpreadConstraints
(pkg/scheduler/framework/plugins/podtopologyspread, v1.34.1: filtering.go).

Filter, for each `DoNotSchedule` constraint in order: a node without the topology label fails ("missing
required label"); else its domain's matching pods + 1 (if the pod matches its own selector) - the least
matching pods over all domains must not exceed maxSkew (the least is 0 while there are fewer domains than
minDomains). Pods are counted in the pod's namespace, on nodes that match the pod's node selector and
required node affinity (nodeAffinityPolicy Honor) and carry every constraint's label; taints are ignored
(nodeTaintsPolicy Ignore). `matchLabelKeys` adds the pod's own values of those labels to the selector.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpufleet.labels import selector_matches
from gpufleet.scheduler.pods_on_nodes import PodsOnNodes

NOT_MATCH = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL = NOT_MATCH + " (missing required label)"


@dataclass(frozen=True)
class Constraint:
    max_skew: int
    key: str
    selector: dict | None
    min_domains: int
    self_match: bool


def constraints(spec: dict, labels: dict[str, str], when: str) -> list[Constraint]:
    out = []
    for c in spec.get("topologySpreadConstraints") or ():
        if not isinstance(c, dict) or c.get("whenUnsatisfiable") != when:
            continue
        selector = c.get("labelSelector")
        keys = [k for k in c.get("matchLabelKeys") or () if k in labels]
        if selector is not None and keys:
            pinned = ({"key": k, "operator": "In", "values": [labels[k]]} for k in keys)
            selector = {**selector, "matchExpressions": [*(selector.get("matchExpressions") or ()), *pinned]}
        out.append(Constraint(int(c.get("maxSkew") or 1), str(c.get("topologyKey") or ""), selector,
                              int(c.get("minDomains") or 1), selector_matches(selector, labels)))
    return out


def counted_nodes(cons: list[Constraint], domains, affinity_ok: np.ndarray) -> np.ndarray:
    """Nodes whose pods count: they match the pod's node affinity and carry every constraint's label."""
    counted = affinity_ok.copy()
    for c in cons:
        counted &= domains(c.key) >= 0
    return counted


def filter_failures(cons: list[Constraint], pods: PodsOnNodes, domains, affinity_ok: np.ndarray,
                    namespace: str) -> list[tuple[str, np.ndarray]]:
    """(reason, nodes failing it) per constraint, in order (a node reports the first it fails)."""
    counted = counted_nodes(cons, domains, affinity_ok)
    out = []
    for c in cons:
        dom = domains(c.key)
        counts = pods.count(c.selector, frozenset((namespace,)))
        size = max(int(dom.max()) + 1 if len(dom) else 0, 1)  # at least one slot: no node may have the label
        per_domain = np.bincount(dom[counted], weights=counts[counted], minlength=size).astype(np.int64)
        present = np.zeros(size, dtype=bool)
        present[dom[counted]] = True
        least = int(per_domain[present].min()) if present.any() else 2**31 - 1
        if int(present.sum()) < c.min_domains:
            least = 0
        missing = dom < 0
        skew = np.where(missing, 0, per_domain[np.maximum(dom, 0)]) + int(c.self_match) - least
        out.append((MISSING_LABEL, missing))
        out.append((NOT_MATCH, ~missing & (skew > c.max_skew)))
    return out


@dataclass(frozen=True)
class SpreadState:
    hard: list[Constraint]
    soft: list[Constraint]
    namespace: str
    affinity_ok: np.ndarray
