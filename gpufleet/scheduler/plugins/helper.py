"""Helpers the plugins share (pkg/scheduler/framework/plugins/helper): DefaultNormalizeScore, and one
value per node class spread over the nodes."""

from __future__ import annotations

import numpy as np

from gpufleet.scheduler.framework.interface import MAX_NODE_SCORE


def default_normalize_score(scores: np.ndarray, reverse: bool) -> np.ndarray:
    """Scale to 0..100 by the highest score (integer division); `reverse` turns high into low."""
    top = int(scores.max()) if len(scores) else 0
    if top == 0:
        return np.full(len(scores), MAX_NODE_SCORE if reverse else 0, dtype=np.int64)
    scaled = MAX_NODE_SCORE * scores // top
    return MAX_NODE_SCORE - scaled if reverse else scaled


def by_class(values: list[int], class_of: np.ndarray) -> np.ndarray | None:
    """Per node its class's value; None when every class has the same (the score cannot differ)."""
    return np.array(values, dtype=np.int64)[class_of] if len(set(values)) > 1 else None


#: The owners whose selector the system default spreading reads (helper/spread.go DefaultSelector). A
#: Deployment's pods belong to its ReplicaSet, whose selector adds the template's `pod-template-hash`.
SPREAD_OWNERS = ("Deployment", "ReplicaSet", "StatefulSet")


def default_selector(kind: str, owner_selector: dict | None, labels: dict[str, str],
                     services: list[dict[str, str]]) -> tuple[dict | None, bool]:
    """The selector kube-scheduler's system default spreading counts a pod's peers with (DefaultSelector):
    the labels of every Service `selector` (of the pod's namespace) that matches the pod, and the
    requirements of its controller's selector. Returns (selector, own_pods_only); selector None when it
    would be empty (no default spreading). `own_pods_only`: a Deployment's pods, whose ReplicaSet selects by
    a `pod-template-hash` that only the pods the check adds carry."""
    merged: dict[str, str] = {}
    for selector in services:  # a Service with no selector matches nothing (skipped by the caller)
        if all(labels.get(k) == v for k, v in selector.items()):
            merged.update(selector)
    expressions: list = []
    if kind in SPREAD_OWNERS and isinstance(owner_selector, dict):
        given = owner_selector.get("matchLabels")
        merged.update({str(k): str(v) for k, v in (given if isinstance(given, dict) else {}).items()})
        found = owner_selector.get("matchExpressions")
        expressions = [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []
    if not merged and not expressions and kind != "Deployment":
        return None, False
    return {"matchLabels": merged, "matchExpressions": expressions}, kind == "Deployment"
