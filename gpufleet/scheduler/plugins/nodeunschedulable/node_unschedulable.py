"""NodeUnschedulable (pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go, v1.34.1).

Filter: a cordoned node (spec.unschedulable) fails unless the pod tolerates the
node.kubernetes.io/unschedulable:NoSchedule taint. No score.
"""

from __future__ import annotations

from gpufleet.capacity.model import Node, Taint
from gpufleet.scheduler.framework.interface import Plugin, Reads
from gpufleet.taints import tolerates_any

REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeUnschedulable(Plugin):
    name = "NodeUnschedulable"
    reads = Reads(pod=("tolerations",), node=("unschedulable",))

    def filter_node(self, node: Node, terms) -> str | None:
        taint = UNSCHEDULABLE_TAINT
        if node.unschedulable and not tolerates_any(terms.tolerations, taint.key, taint.value, taint.effect):
            return REASON
        return None
