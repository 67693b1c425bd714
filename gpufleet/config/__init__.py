"""The typed stack config: one pydantic model per YAML section, a loader, and YAML-path errors."""

from gpufleet.config.loading import LoadedStack, load_stack, parse_sections
from gpufleet.config.rules import validate_references
from gpufleet.config.stack import StackConfig

__all__ = ["LoadedStack", "StackConfig", "load_stack", "parse_sections", "validate_references"]
