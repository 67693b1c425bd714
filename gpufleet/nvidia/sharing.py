"""Device plugin sharing and resource naming rules (NVIDIA/k8s-device-plugin v0.20.0: README "Shared Access to
GPUs", internal/rm/rm.go `AddDefaultResourcesToConfig`)."""

from __future__ import annotations

from typing import Literal

GPU = "nvidia.com/gpu"
SHARED_SUFFIX = ".shared"

MigStrategy = Literal["none", "single", "mixed"]


def shared_name(resource: str, rename_by_default: bool) -> str:
    """The name a replicated resource is advertised under (`<name>.shared` with renameByDefault)."""
    return resource + SHARED_SUFFIX if rename_by_default else resource


def workload_resource(mig_strategy: str, mig_profile: str | None, shared: bool, rename_by_default: bool) -> str:
    """The extended resource a container must request for the GPU it wants."""
    if mig_profile is not None and mig_strategy == "mixed":
        from gpufleet.nvidia.mig_profiles import resource_name as mig_resource_name  # the tables load with it

        base = mig_resource_name(mig_profile)
    else:
        base = GPU
    return shared_name(base, rename_by_default) if shared else base


def default_fail_requests_greater_than_one(strategy: str) -> bool:
    """The plugin's default: true for MPS (since v0.15), false for time-slicing."""
    return strategy == "mps"


#: GPU memory a CUDA context takes before the process allocates anything: a few hundred MiB with the CUDA
#: runtime and its math libraries loaded, more with cuDNN and NCCL (unconfirmed: NVIDIA documents no
#: figure; it varies with the GPU, the driver, lazy module loading and the libraries). An MPS client whose
#: pinned share is below this fails its first allocations with CUDA out of memory.
CUDA_CONTEXT_FLOOR_MIB = 500

#: Room a GPU workload needs beside its CUDA context before it does useful work: a small model's weights,
#: activations and the framework's allocator pool (unconfirmed: an order of magnitude, not a measurement).
MPS_WORKLOAD_ROOM_MIB = 1024


def mps_share_mib(memory_mib: int, replicas: int) -> int:
    """The pinned device memory limit the device plugin's MPS daemon sets per client: total / replicas
    (k8s-device-plugin v0.20.0 cmd/mps-control-daemon/mps/daemon.go, set_default_device_pinned_mem_limit)."""
    return memory_mib // replicas


# Time-slicing: the plugin makes `replicas` references to each GPU and hands them out without regard to
# which GPU they belong to, with no memory or fault isolation between the containers sharing a GPU
# (k8s-device-plugin README, "With CUDA Time-Slicing"). So a container asking for two may get two
# references to one GPU, and the containers time-sliced onto one GPU draw on the same memory.
