"""Will these workloads schedule? kube-scheduler's filters and the API server's validation, before deploying."""

import os

# The check's arrays use no BLAS: one OpenBLAS thread saves starting a pool of them when numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from gpufleet.gc_pause import collector_paused

with collector_paused(freeze=True):  # numpy and the engine's modules: many objects, no garbage
    from gpufleet.manifests.workloads import PodWorkload, load_manifests, workloads_of
    from gpufleet.scheduling.engine import check_workloads
    from gpufleet.scheduling.result import CheckResult, Unschedulable, Warning

__all__ = ["check_workloads", "CheckResult", "Unschedulable", "Warning", "PodWorkload", "load_manifests",
           "workloads_of"]
