"""PodTopologySpread (pkg/scheduler/framework/plugins/podtopologyspread)."""

from gpufleet.scheduler.plugins.podtopologyspread.plugin import (
                                                                   MISSING_LABEL,
                                                                   NOT_MATCH,
                                                                   Constraint,
                                                                   PodTopologySpread,
                                                                   constraints,
                                                                   filter_failures,
                                                                   score,
)

__all__ = ["MISSING_LABEL", "NOT_MATCH", "Constraint", "PodTopologySpread", "constraints", "filter_failures",
           "score"]
