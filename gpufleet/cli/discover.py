"""`gpufleet discover` (placeholder until its issue lands)."""

from gpufleet.errors import GpufleetError


def command() -> None:
    """Not available yet."""
    raise GpufleetError("gpufleet discover is not available yet")
