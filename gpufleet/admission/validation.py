"""The API server's verdict on a workload before it is scheduled: its field errors, after defaulting.

The rules themselves live in `gpufleet.validation.resources` (shared with `gpufleet validate`).
"""

from __future__ import annotations

from gpufleet.manifests.workloads import PodWorkload
from gpufleet.validation.fields import FieldError, invalid
from gpufleet.validation.placement import placement_errors
from gpufleet.validation.resources import (
    aggregate,
    is_extended,
    is_native,
    overcommit_allowed,
    spec_errors,
    with_defaulted_requests,
)

__all__ = ["aggregate", "is_extended", "is_native", "overcommit_allowed", "rejection", "workload_errors"]


def workload_errors(workload: PodWorkload) -> list[FieldError]:
    """The API server's field errors for a workload, after its defaulting."""
    errors = [invalid(path, value, "must be greater than or equal to 0")
              for path, value in workload.counts if value < 0]
    spec = with_defaulted_requests(workload.spec) if workload.kind == "Pod" else workload.spec
    return errors + spec_errors(spec, workload.spec_path) + placement_errors(spec, workload.spec_path)


def rejection(workload: PodWorkload) -> str | None:
    """The API server's error for this object, or None when it would be accepted."""
    errors = workload_errors(workload)
    if not errors:
        return None
    return f"{workload.object_ref} is invalid: {aggregate(errors)}"
