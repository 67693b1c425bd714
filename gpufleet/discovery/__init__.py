"""Capacity sources behind small interfaces: NVML on the node, and the Kubernetes API.

Names load on first use (PEP 562): a check that only needs `types` (the capacity model's GPU facts) does not
import the Kubernetes client's side of discovery.
"""

from __future__ import annotations

from importlib import import_module

_WHERE = {
    "ClusterSource": "kubernetes", "FileCluster": "kubernetes", "KubeconfigCluster": "kubernetes",
    "NullCluster": "kubernetes", "GpuInventory": "nvml", "NullInventory": "nvml", "NvmlInventory": "nvml",
    "GpuDevice": "types", "GpuFacts": "types", "MigInstance": "types",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
