"""The scheduling framework as kube-scheduler v1.34 runs it (pkg/scheduler/framework): what a plugin is
(`interface`) and the runtime that calls a profile's plugins at each extension point (`runtime`).

The plugins themselves are in gpufleet.scheduler.plugins, one folder each; the default profile (their
order and weights) is gpufleet.scheduler.plugins.default_plugins.
"""
