"""GPU products gpufleet knows: the GFD product label, memory, compute capability, architecture and MIG table.

`memory_mib` is what NVML reports as total memory (nvidia-smi's figure), which is what a whole-GPU
workload can address. `mig_table` names an entry of `mig_profiles.TABLES` for MIG-capable parts. The
architecture facts (last driver branch, Volta MPS) are in `architectures.py`, keyed by `family`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpufleet.nvidia.architectures import ARCHITECTURES, Architecture

#: SXM parts sit on NVIDIA HGX baseboards: 8 GPUs per board for A100 (HGX A100 8-GPU, DGX A100),
#: H100 / H200 (HGX H100 / H200 8-GPU, DGX H100 / H200) and B200 (HGX B200, DGX B200); one board per node.
HGX_8 = 8
#: V100 SXM2: DGX-2 and HGX-2 join two 8-GPU baseboards through NVSwitch, 16 GPUs in one node.
HGX2_V100 = 16
#: PCIe cards: the largest PCIe GPU servers take 20 single-slot cards (e.g. Supermicro SuperServer
#: 6049GP-TRT with 20 Tesla T4) and fewer double-width ones; a generic ceiling for every PCIe product.
PCIE_SERVER_MAX = 20


@dataclass(frozen=True)
class GpuProduct:
    """One GPU model as Kubernetes sees it."""

    key: str
    #: Value of the GFD label `nvidia.com/gpu.product` (spaces become dashes).
    label: str
    memory_mib: int
    compute_capability: tuple[int, int]
    family: str
    mig_table: str | None = None
    #: PCI device ID (for mig-parted `device-filter`), where known.
    pci_device_id: str | None = None
    #: Most GPUs of this product one node can hold (see the HGX_* / PCIE_* constants for the sources).
    max_gpus_per_node: int = PCIE_SERVER_MAX
    #: Oldest driver that drives this product, where NVIDIA documents one (below it: no GPU found).
    min_driver: str | None = None

    @property
    def mig_capable(self) -> bool:
        return self.mig_table is not None

    @property
    def architecture(self) -> Architecture:
        return ARCHITECTURES[self.family]

    @property
    def mps_supported(self) -> bool:
        """Volta MPS, which the device plugin's MPS sharing (and the DRA driver's) configures."""
        return self.architecture.volta_mps

    @property
    def mps_max_clients(self) -> int:
        """MPS replica cap of the device plugin's control daemon (mps/device.go `maxClients`)."""
        return 48 if self.compute_capability >= (7, 5) else 16


PRODUCTS: dict[str, GpuProduct] = {
    p.key: p
    for p in [
        GpuProduct("Tesla-T4", "Tesla-T4", 15360, (7, 5), "turing"),
        GpuProduct("Tesla-M60", "Tesla-M60", 8192, (5, 2), "maxwell"),
        GpuProduct("GRID-K520", "GRID-K520", 4096, (3, 0), "kepler"),
        GpuProduct("Tesla-V100-SXM2-16GB", "Tesla-V100-SXM2-16GB", 16384, (7, 0), "volta", max_gpus_per_node=HGX2_V100),
        # The 32 GB V100 (DGX-1V / DGX-2): nvidia-smi on R5xx drivers shows 32768 MiB (32510 on older ones).
        GpuProduct("Tesla-V100-SXM2-32GB", "Tesla-V100-SXM2-32GB", 32768, (7, 0), "volta", max_gpus_per_node=HGX2_V100),
        GpuProduct("NVIDIA-A10", "NVIDIA-A10", 23028, (8, 6), "ampere"),
        GpuProduct("A100-PCIE-40GB", "A100-PCIE-40GB", 40960, (8, 0), "ampere", "A100-40GB", "0x20F1"),
        GpuProduct("NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB", 40960, (8, 0), "ampere", "A100-40GB", "0x20B0",
                   HGX_8),
        GpuProduct("NVIDIA-A100-80GB-PCIe", "NVIDIA-A100-80GB-PCIe", 81920, (8, 0), "ampere", "80GB", "0x20B5"),
        GpuProduct("NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB", 81920, (8, 0), "ampere", "80GB", "0x20B2", HGX_8),
        GpuProduct("NVIDIA-A30", "NVIDIA-A30", 24576, (8, 0), "ampere", "A30", "0x20B7"),
        GpuProduct("NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-80GB-HBM3", 81559, (9, 0), "hopper", "80GB", "0x2330", HGX_8),
        GpuProduct("NVIDIA-H100-PCIe", "NVIDIA-H100-PCIe", 81559, (9, 0), "hopper", "80GB", "0x2331"),
        GpuProduct("NVIDIA-H100-NVL", "NVIDIA-H100-NVL", 95830, (9, 0), "hopper", "H100-NVL", "0x2321"),
        GpuProduct("NVIDIA-H200", "NVIDIA-H200", 143771, (9, 0), "hopper", "H200", "0x2335", HGX_8),
        # gpu-operator platform-support.rst (v26.7.0): "HGX B200 requires a driver container version of
        # 570.133.20 or later".
        GpuProduct("NVIDIA-B200", "NVIDIA-B200", 183359, (10, 0), "blackwell", "B200", "0x2901", HGX_8,
                   min_driver="570.133.20"),
        GpuProduct("NVIDIA-L4", "NVIDIA-L4", 23034, (8, 9), "ada-lovelace"),
        GpuProduct("NVIDIA-L40S", "NVIDIA-L40S", 46068, (8, 9), "ada-lovelace"),
        # Pascal (NVML names "Tesla P100-PCIE-16GB", "Tesla P4"; memory as nvidia-smi reports it).
        # Workstation and consumer cards model servers run on (nvidia-smi totals; no MIG).
        GpuProduct("NVIDIA-A10G", "NVIDIA-A10G", 23028, (8, 6), "ampere"),
        GpuProduct("NVIDIA-RTX-A6000", "NVIDIA-RTX-A6000", 49140, (8, 6), "ampere"),
        GpuProduct("NVIDIA-L40", "NVIDIA-L40", 46068, (8, 9), "ada-lovelace"),
        GpuProduct("NVIDIA-RTX-6000-Ada-Generation", "NVIDIA-RTX-6000-Ada-Generation", 49140, (8, 9), "ada-lovelace"),
        GpuProduct("NVIDIA-GeForce-RTX-3090", "NVIDIA-GeForce-RTX-3090", 24576, (8, 6), "ampere"),
        GpuProduct("NVIDIA-GeForce-RTX-4090", "NVIDIA-GeForce-RTX-4090", 24564, (8, 9), "ada-lovelace"),
        GpuProduct("NVIDIA-GeForce-RTX-5090", "NVIDIA-GeForce-RTX-5090", 32607, (12, 0), "blackwell"),
        GpuProduct("Tesla-P100-PCIE-16GB", "Tesla-P100-PCIE-16GB", 16280, (6, 0), "pascal"),
        GpuProduct("Tesla-P4", "Tesla-P4", 7611, (6, 1), "pascal"),
    ]
}


def find_product(name: str) -> GpuProduct | None:
    """Look a product up by key or by GFD label (as NVML names it, with spaces or dashes)."""
    wanted = name.strip().replace(" ", "-")
    for product in PRODUCTS.values():
        if wanted in (product.key, product.label):
            return product
    return None


def _words(name: str) -> list[str]:
    """A product name's words: split at dashes, spaces and underscores, case ignored."""
    return [w for w in re.split(r"[-\s_]+", name.lower()) if w]


def match_products(text: str) -> list[GpuProduct]:
    """Products a user's shorthand names: the exact key or label, else every product whose name holds each
    of the text's words as a whole word (case, dashes and spaces ignored): '4090', 'H100 PCIe' and 'A100 80GB'
    match, 'H20' does not match the H200. More than one product means the name is ambiguous."""
    exact = find_product(text)
    if exact is not None:
        return [exact]
    wanted = set(_words(text))
    if not wanted:
        return []
    return [p for p in PRODUCTS.values() if wanted <= set(_words(p.key))]
