"""NodeAffinity (pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go)."""

from gpufleet.scheduling.plugins.nodeaffinity.node_affinity import (
    REASON,
    NodeAffinity,
    matches_node_affinity,
    node_selector_matches,
    preferred_score,
    preferred_terms,
    selected_labels,
    term_matches,
)

__all__ = ["REASON", "NodeAffinity", "matches_node_affinity", "node_selector_matches", "preferred_score",
           "preferred_terms", "selected_labels", "term_matches"]
