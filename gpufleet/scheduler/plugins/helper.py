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
