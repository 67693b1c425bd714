"""Capacity sources behind small interfaces: NVML on the node, and the Kubernetes API.

Names load on first use (PEP 562): a check that only needs `types` (the capacity model's GPU facts) does not
import the Kubernetes client's side of discovery.
"""

from __future__ import annotations

from gpufleet.lazy import names_on_first_use

_WHERE = {
    "ClusterSource": "kubernetes", "FileCluster": "kubernetes", "KubeconfigCluster": "live",
    "NullCluster": "kubernetes", "GpuInventory": "nvml", "NullInventory": "nvml", "NvmlInventory": "nvml",
    "GpuDevice": "types", "GpuFacts": "types", "MigInstance": "types",
}

__all__ = sorted(_WHERE)
__getattr__ = names_on_first_use(__name__, _WHERE)
