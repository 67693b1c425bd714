"""Capacity sources behind small interfaces: NVML on the node, and the Kubernetes API."""

from gpufleet.discovery.kubernetes import ClusterSource, FileCluster, KubeconfigCluster, NullCluster
from gpufleet.discovery.nvml import GpuInventory, NullInventory, NvmlInventory
from gpufleet.discovery.types import GpuDevice, GpuFacts, MigInstance

__all__ = ["ClusterSource", "FileCluster", "KubeconfigCluster", "NullCluster", "GpuInventory", "NullInventory",
           "NvmlInventory", "GpuDevice", "GpuFacts", "MigInstance"]
