"""AKS static MIG: what a pool's `gpuInstanceProfile` (MIG1g ... MIG7g) turns each GPU into.

AKS partitions every GPU of the pool at node creation into the largest number of instances of one
profile (learn.microsoft.com/azure/aks/gpu-multi-instance): on an A100 80GB, MIG1g is 7x 1g.10gb and
MIG3g is 2x 3g.40gb. The profile's name depends on the GPU, so it is looked up in the product's MIG table.
"""

from __future__ import annotations

from gpufleet.nvidia.mig_profiles import TABLES, MigProfile
from gpufleet.nvidia.products import GpuProduct

AKS_MIG_PROFILES = ("MIG1g", "MIG2g", "MIG3g", "MIG4g", "MIG7g")


def aks_mig_profile(product: GpuProduct, gpu_instance_profile: str) -> MigProfile | None:
    """The MIG profile AKS creates for `gpu_instance_profile` on `product`; None where it has none.

    MIG<n>g is the n-compute-slice profile with the fewest memory slices and no media-engine suffix.
    """
    if product.mig_table is None or not gpu_instance_profile.startswith("MIG"):
        return None
    slices = int(gpu_instance_profile[3:-1])
    candidates = [p for p in TABLES[product.mig_table].profiles.values()
                  if p.compute_slices == slices and "+" not in p.name and "-" not in p.name]
    return min(candidates, key=lambda p: p.memory_slices, default=None)
