"""DefaultPreemption (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go)."""

from gpufleet.scheduler.plugins.defaultpreemption.default_preemption import (
    DefaultPreemption,
    PreemptionState,
    Preemptor,
    candidates_to_find,
)

__all__ = ["DefaultPreemption", "PreemptionState", "Preemptor", "candidates_to_find"]
