"""Device plugin sharing and resource naming rules (scheduling-rules.md section 2, nvidia-stack.md 4.5)."""

from __future__ import annotations

from typing import Literal

from gpufleet.nvidia.mig_profiles import resource_name as mig_resource_name

GPU = "nvidia.com/gpu"
SHARED_SUFFIX = ".shared"

MigStrategy = Literal["none", "single", "mixed"]


def shared_name(resource: str, rename_by_default: bool) -> str:
    """The name a replicated resource is advertised under (`<name>.shared` with renameByDefault)."""
    return resource + SHARED_SUFFIX if rename_by_default else resource


def workload_resource(mig_strategy: str, mig_profile: str | None, shared: bool, rename_by_default: bool) -> str:
    """The extended resource a container must request for the GPU it wants."""
    if mig_profile is not None and mig_strategy == "mixed":
        base = mig_resource_name(mig_profile)
    else:
        base = GPU
    return shared_name(base, rename_by_default) if shared else base


def default_fail_requests_greater_than_one(strategy: str) -> bool:
    """The plugin's default: true for MPS (since v0.15), false for time-slicing."""
    return strategy == "mps"
