"""YAML paths as users read them in error messages: gpufleet:workloads[1].gpu.profile."""

from __future__ import annotations

NAMESPACE = "gpufleet"


def yaml_path(*parts: object) -> str:
    """Render a config path: yaml_path('workloads', 1, 'gpu') -> gpufleet:workloads[1].gpu."""
    out = f"{NAMESPACE}:"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out.endswith(":"):
            out += str(part)
        else:
            out += f".{part}"
    return out
