"""NodeAffinity (pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go); its node selector matching is
gpufleet.scheduler.helpers.nodeaffinity."""

from gpufleet.scheduler.plugins.nodeaffinity.node_affinity import (
    REASON,
    NodeAffinity,
    matches_node_affinity,
    preferred_score,
    preferred_terms,
    selected_labels,
)

__all__ = ["REASON", "NodeAffinity", "matches_node_affinity", "preferred_score", "preferred_terms",
           "selected_labels"]
