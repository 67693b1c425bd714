"""Azure GPU VM sizes: which GPU product, how many per VM, and the VM's vCPUs and memory.

Figures from the Azure VM size pages (NCasT4_v3, NC_A100_v4, NDasrA100_v4, NDm_A100_v4, ND_H100_v5,
NCads_H100_v5, ND_H200_v5, NVadsA10_v5). `product` is a key of `gpufleet.nvidia.products.PRODUCTS`, so GPU
memory and the MIG table come from there. Only sizes with whole GPUs are listed (the fractional
NVadsA10_v5 sizes expose vGPU slices, which the device plugin does not see as whole GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.nvidia.products import PRODUCTS, GpuProduct


@dataclass(frozen=True)
class VmSize:
    """One Azure VM size with NVIDIA GPUs."""

    name: str
    product: str
    gpu_count: int
    vcpus: int
    memory_gib: int

    @property
    def gpu(self) -> GpuProduct:
        return PRODUCTS[self.product]

    @property
    def gpu_memory_mib(self) -> int:
        """Memory of one GPU, in MiB (as NVML reports it)."""
        return self.gpu.memory_mib


VM_SIZES: dict[str, VmSize] = {
    v.name: v
    for v in [
        VmSize("Standard_NC4as_T4_v3", "Tesla-T4", 1, 4, 28),
        VmSize("Standard_NC8as_T4_v3", "Tesla-T4", 1, 8, 56),
        VmSize("Standard_NC16as_T4_v3", "Tesla-T4", 1, 16, 110),
        VmSize("Standard_NC64as_T4_v3", "Tesla-T4", 4, 64, 440),
        VmSize("Standard_NV36ads_A10_v5", "NVIDIA-A10", 1, 36, 440),
        VmSize("Standard_NV72ads_A10_v5", "NVIDIA-A10", 2, 72, 880),
        VmSize("Standard_NC24ads_A100_v4", "NVIDIA-A100-80GB-PCIe", 1, 24, 220),
        VmSize("Standard_NC48ads_A100_v4", "NVIDIA-A100-80GB-PCIe", 2, 48, 440),
        VmSize("Standard_NC96ads_A100_v4", "NVIDIA-A100-80GB-PCIe", 4, 96, 880),
        VmSize("Standard_ND96asr_v4", "NVIDIA-A100-SXM4-40GB", 8, 96, 900),
        VmSize("Standard_ND96amsr_A100_v4", "NVIDIA-A100-SXM4-80GB", 8, 96, 1900),
        VmSize("Standard_NC40ads_H100_v5", "NVIDIA-H100-NVL", 1, 40, 320),
        VmSize("Standard_NC80adis_H100_v5", "NVIDIA-H100-NVL", 2, 80, 640),
        VmSize("Standard_ND96isr_H100_v5", "NVIDIA-H100-80GB-HBM3", 8, 96, 1900),
        VmSize("Standard_ND96isr_H200_v5", "NVIDIA-H200", 8, 96, 1850),
    ]
}


def find_vm_size(name: str) -> VmSize | None:
    """Look a size up by name; Azure treats VM size names case-insensitively."""
    wanted = name.strip().lower()
    return next((v for v in VM_SIZES.values() if v.name.lower() == wanted), None)
