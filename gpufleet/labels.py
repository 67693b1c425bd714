"""Label selectors as the API machinery matches them (k8s.io/apimachinery v0.34 pkg/apis/meta/v1,
LabelSelectorAsSelector): one implementation for the scheduler's pod (anti-)affinity and topology spread and
for Kueue's namespaceSelector."""

from __future__ import annotations


def selector_matches(selector: dict | None, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector: None matches nothing, {} everything; matchLabels and matchExpressions ANDed."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != str(v):
            return False
    for e in selector.get("matchExpressions") or ():
        key, op, values = e.get("key"), e.get("operator"), [str(v) for v in e.get("values") or ()]
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True
