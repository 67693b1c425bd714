"""NodeResourcesFit and NodeResourcesBalancedAllocation (pkg/scheduler/framework/plugins/noderesources)."""

from gpufleet.scheduler.plugins.noderesources.balanced_allocation import (
                                                                          BalancedAllocation,
                                                                          balanced_allocation,
                                                                          balanced_allocation_one,
)
from gpufleet.scheduler.plugins.noderesources.fit import TOO_MANY_PODS, Fit
from gpufleet.scheduler.plugins.noderesources.least_allocated import least_allocated, least_allocated_one

__all__ = ["TOO_MANY_PODS", "BalancedAllocation", "Fit", "balanced_allocation", "balanced_allocation_one",
           "least_allocated", "least_allocated_one"]
