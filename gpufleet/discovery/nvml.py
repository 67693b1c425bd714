"""GPU facts from NVML. The only module that imports pynvml (from nvidia-ml-py), and only when asked.

`GpuInventory` is the interface; `NvmlInventory` reads the local driver, `NullInventory` reports no
GPUs, and `gpufleet.discovery.fakes` builds inventories for tests.
"""

from __future__ import annotations

from typing import Protocol

from gpufleet.discovery.types import GpuDevice, GpuFacts, MigInstance
from gpufleet.errors import DiscoveryUnavailableError


class GpuInventory(Protocol):
    def facts(self) -> GpuFacts:
        """The node's GPUs. Raises DiscoveryUnavailableError when they cannot be read."""
        ...


class NullInventory:
    """A node without GPUs (or where discovery is switched off)."""

    def facts(self) -> GpuFacts:
        return GpuFacts(driver_version="", cuda_version="", gpus=())


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _mib(nbytes: int) -> int:
    return int(nbytes) // (1024 * 1024)


def _profile_of(name: str) -> str:
    """`NVIDIA A100-SXM4-40GB MIG 1g.5gb` -> `1g.5gb`."""
    return name.split(" MIG ", 1)[1].strip() if " MIG " in name else name


class NvmlInventory:
    """The GPUs of this machine, read through NVML."""

    def facts(self) -> GpuFacts:
        try:
            import pynvml
        except ImportError as e:  # pragma: no cover - nvidia-ml-py is a dependency
            raise DiscoveryUnavailableError("NVML is not available: nvidia-ml-py is not installed "
                                            "(pip install nvidia-ml-py)") from e
        try:
            pynvml.nvmlInit()
        except (pynvml.NVMLError, OSError) as e:
            raise DiscoveryUnavailableError(
                f"NVML is not available on this machine ({e}); run `gpufleet discover --nvml` on a GPU node "
                "with the NVIDIA driver, or use --kubeconfig / --nodes") from e
        try:
            return self._read(pynvml)
        except pynvml.NVMLError as e:
            raise DiscoveryUnavailableError(f"NVML failed while reading the GPUs: {e}") from e
        finally:
            try:
                pynvml.nvmlShutdown()
            except pynvml.NVMLError:
                pass

    def _read(self, nv) -> GpuFacts:
        driver = _text(nv.nvmlSystemGetDriverVersion())
        cuda = nv.nvmlSystemGetCudaDriverVersion()
        gpus = []
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            mig_enabled = False
            try:
                current, _pending = nv.nvmlDeviceGetMigMode(h)
                mig_enabled = current == nv.NVML_DEVICE_MIG_ENABLE
            except nv.NVMLError:
                pass  # not MIG-capable
            instances = []
            if mig_enabled:
                for j in range(nv.nvmlDeviceGetMaxMigDeviceCount(h)):
                    try:
                        m = nv.nvmlDeviceGetMigDeviceHandleByIndex(h, j)
                    except nv.NVMLError:
                        continue
                    instances.append(MigInstance(_profile_of(_text(nv.nvmlDeviceGetName(m))),
                                                 _mib(nv.nvmlDeviceGetMemoryInfo(m).total)))
            gpus.append(GpuDevice(i, _text(nv.nvmlDeviceGetUUID(h)), _text(nv.nvmlDeviceGetName(h)),
                                  _mib(nv.nvmlDeviceGetMemoryInfo(h).total), mig_enabled, tuple(instances)))
        return GpuFacts(driver, f"{cuda // 1000}.{(cuda % 1000) // 10}", tuple(gpus))
