"""NodeUnschedulable (pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go, v1.34.1).

Filter: a cordoned node (spec.unschedulable) fails unless the pod tolerates the
node.kubernetes.io/unschedulable:NoSchedule taint. No score.
"""

from __future__ import annotations

from gpufleet.capacity.model import Node, Taint
from gpufleet.scheduling.framework.interface import Plugin, Reads
from gpufleet.scheduling.plugins.tainttoleration import tolerated

REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeUnschedulable(Plugin):
    name = "NodeUnschedulable"
    reads = Reads(pod=("tolerations",), node=("unschedulable",))

    def filter_node(self, node: Node, terms) -> str | None:
        if node.unschedulable and not tolerated(terms.tolerations, UNSCHEDULABLE_TAINT):
            return REASON
        return None
