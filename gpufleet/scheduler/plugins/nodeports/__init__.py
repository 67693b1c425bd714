"""NodePorts (pkg/scheduler/framework/plugins/nodeports/node_ports.go)."""

from gpufleet.scheduler.plugins.nodeports.node_ports import REASON, NodePorts, UsedPorts

__all__ = ["REASON", "NodePorts", "UsedPorts"]
