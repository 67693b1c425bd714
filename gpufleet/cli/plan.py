"""`gpufleet plan` (placeholder until the plan engine lands)."""

from gpufleet.errors import GpufleetError


def command() -> None:
    """Not available yet."""
    raise GpufleetError("gpufleet plan is not available yet")
