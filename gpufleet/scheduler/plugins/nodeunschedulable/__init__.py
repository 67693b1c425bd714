"""NodeUnschedulable (pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go)."""

from gpufleet.scheduler.plugins.nodeunschedulable.node_unschedulable import REASON, NodeUnschedulable

__all__ = ["REASON", "NodeUnschedulable"]
