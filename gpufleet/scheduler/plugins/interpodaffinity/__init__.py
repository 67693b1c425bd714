"""InterPodAffinity (pkg/scheduler/framework/plugins/interpodaffinity)."""

from gpufleet.scheduler.plugins.interpodaffinity.plugin import (
    AFFINITY,
    ANTI_AFFINITY,
    EXISTING_ANTI_AFFINITY,
    InterPodAffinity,
    Term,
    Terms,
    filter_failures,
    merge_namespace_selectors,
    score,
    terms_of,
)

__all__ = ["AFFINITY", "ANTI_AFFINITY", "EXISTING_ANTI_AFFINITY", "InterPodAffinity", "Term", "Terms",
           "filter_failures", "merge_namespace_selectors", "score", "terms_of"]
