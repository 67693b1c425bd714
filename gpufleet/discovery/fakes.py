"""Inventories and clusters for tests and demos: a Tesla T4, an A100-40GB with MIG, an H100 80GB."""

from __future__ import annotations

from gpufleet.discovery.types import GpuDevice, GpuFacts, MigInstance
from gpufleet.nvidia.mig_profiles import TABLES

DRIVER = "580.82.07"
CUDA = "13.0"


def tesla_t4(index: int = 0) -> GpuDevice:
    return GpuDevice(index, f"GPU-t4-{index:04d}", "Tesla T4", 15360)


def h100_80gb(index: int = 0) -> GpuDevice:
    return GpuDevice(index, f"GPU-h100-{index:04d}", "NVIDIA H100 80GB HBM3", 81559)


def a100_40gb_mig(*profiles: str, index: int = 0) -> GpuDevice:
    """An A100-SXM4-40GB with MIG on and the given instances (default: 7x 1g.5gb)."""
    table = TABLES["A100-40GB"]
    chosen = profiles or ("1g.5gb",) * 7
    return GpuDevice(index, f"GPU-a100-{index:04d}", "NVIDIA A100-SXM4-40GB", 40960, True,
                     tuple(MigInstance(p, table.profiles[p].memory_mib) for p in chosen))


class FakeInventory:
    """Returns the GPUs it was built with."""

    def __init__(self, *gpus: GpuDevice, driver_version: str = DRIVER, cuda_version: str = CUDA):
        self._facts = GpuFacts(driver_version, cuda_version, tuple(gpus))

    def facts(self) -> GpuFacts:
        return self._facts


class FakeCluster:
    """A Kubernetes API that answers with the given node, pod and DRA objects (kubectl JSON shape)."""

    def __init__(self, nodes: list[dict], pods: list[dict] | None = None, dra: list[dict] | None = None):
        self._nodes, self._pods, self._dra = nodes, pods or [], dra or []

    def nodes(self) -> list[dict]:
        return list(self._nodes)

    def pods(self) -> list[dict]:
        return list(self._pods)

    def dra(self) -> list[dict]:
        return list(self._dra)
