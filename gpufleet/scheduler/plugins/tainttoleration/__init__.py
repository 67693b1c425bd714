"""TaintToleration (pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go)."""

from gpufleet.scheduler.plugins.tainttoleration.taint_toleration import TaintToleration, tolerated, tolerates

__all__ = ["TaintToleration", "tolerated", "tolerates"]
