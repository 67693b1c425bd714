"""cluster-autoscaler v1.34's scale-up, as gpufleet emulates it (k8s.io/autoscaler cluster-autoscaler-1.34.5):
node groups and their template nodes (`nodegroups`), whether a pending pod fits a template (`simulator`), the
binpacking estimator (`estimator`), the expanders (`expander`) and the scale-up loop (`orchestrator`).

The check driver (gpufleet.scheduling.scaleup) runs the scheduler first, hands this package the pods left
Pending, adds the nodes it decides on, and runs the scheduler again. docs/autoscaling.md says what is emulated
and what is not.
"""
