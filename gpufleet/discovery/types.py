"""What NVML tells about the GPUs of one node (plain data; no pynvml here)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class MigInstance:
    """One MIG device carved from a GPU."""

    profile: str
    """GPU-instance profile, e.g. 1g.5gb."""
    memory_mib: int


@dataclass(frozen=True)
class GpuDevice:
    """One physical GPU."""

    index: int
    uuid: str
    product: str
    """Product name as NVML reports it, e.g. "Tesla T4", "NVIDIA A100-SXM4-40GB"."""
    memory_mib: int
    mig_enabled: bool = False
    mig_instances: tuple[MigInstance, ...] = ()


@dataclass(frozen=True)
class GpuFacts:
    """The GPUs of one node, and the driver that runs them."""

    driver_version: str
    cuda_version: str
    """Highest CUDA version the driver supports, e.g. "12.4"."""
    gpus: tuple[GpuDevice, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        return {
            "driverVersion": self.driver_version,
            "cudaVersion": self.cuda_version,
            "gpus": [
                {"index": g.index, "uuid": g.uuid, "product": g.product, "memoryMiB": g.memory_mib,
                 "migEnabled": g.mig_enabled,
                 "migInstances": [{"profile": m.profile, "memoryMiB": m.memory_mib} for m in g.mig_instances]}
                for g in self.gpus
            ],
        }

    @classmethod
    def from_json(cls, doc: dict) -> GpuFacts:
        return cls(
            driver_version=doc.get("driverVersion", ""),
            cuda_version=doc.get("cudaVersion", ""),
            gpus=tuple(
                GpuDevice(g["index"], g.get("uuid", ""), g["product"], g["memoryMiB"], g.get("migEnabled", False),
                          tuple(MigInstance(m["profile"], m["memoryMiB"]) for m in g.get("migInstances", [])))
                for g in doc.get("gpus", [])
            ),
        )
