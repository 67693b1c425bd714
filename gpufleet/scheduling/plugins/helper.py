"""helper.DefaultNormalizeScore (pkg/scheduler/framework/plugins/helper/normalize_score.go)."""

from __future__ import annotations

import numpy as np

from gpufleet.scheduling.plugins import MAX_NODE_SCORE


def default_normalize_score(scores: np.ndarray, reverse: bool) -> np.ndarray:
    """Scale to 0..100 by the highest score (integer division); `reverse` turns high into low."""
    top = int(scores.max()) if len(scores) else 0
    if top == 0:
        return np.full(len(scores), MAX_NODE_SCORE if reverse else 0, dtype=np.int64)
    scaled = MAX_NODE_SCORE * scores // top
    return MAX_NODE_SCORE - scaled if reverse else scaled
