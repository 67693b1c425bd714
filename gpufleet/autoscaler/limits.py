"""The autoscaler's GPU limits (`--gpu-total [TYPE:]MIN:MAX`, cluster-autoscaler's flag, given once per type):
the cluster's GPUs, counted on every node and on each node group at its target size by its template, stay
within MAX.

cluster-autoscaler counts a node's GPUs against the limit of its GPU type, the value of its cloud provider's
GPU label (the provider's GPULabel(): AKS, GKE, EKS and Cluster API are below); a node without that label
counts against no typed limit. `MIN:MAX` without a type is gpufleet's short form: every GPU, whatever its type.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.capacity.model import Node

GPU = "nvidia.com/gpu"
#: The GPU labels of cluster-autoscaler 1.34's cloud providers (cloudprovider/*/..._cloud_provider.go GPULabel).
GPU_TYPE_LABELS = ("kubernetes.azure.com/accelerator", "cloud.google.com/gke-accelerator",
                   "k8s.amazonaws.com/accelerator", "cluster-api/accelerator")


@dataclass(frozen=True)
class GpuLimit:
    low: int
    high: int
    type: str | None = None
    """The GPU type it limits (a value of the provider's GPU label); None: every GPU."""

    def gpus(self, node: Node) -> int:
        """The node's GPUs this limit counts."""
        count = node.capacity.get(GPU, node.allocatable.get(GPU, 0))
        if self.type is None or not count:
            return count
        return count if any(node.labels.get(key) == self.type for key in GPU_TYPE_LABELS) else 0

    @property
    def flag(self) -> str:
        return f"--gpu-total {self.type + ':' if self.type else ''}{self.low}:{self.high}"


def parse_gpu_limits(values: list[str]) -> tuple[tuple[GpuLimit, ...], list[str]]:
    """The limits of `--gpu-total` values, and what is wrong with them."""
    limits: list[GpuLimit] = []
    errors: list[str] = []
    seen: set[str | None] = set()
    for value in values:
        parts = value.split(":")
        kind = parts[0] if len(parts) == 3 else None
        counts = parts[-2:]
        if len(parts) not in (2, 3) or (len(parts) == 3 and not kind) or not all(c.isdigit() for c in counts) \
                or int(counts[0]) > int(counts[1]):
            errors.append(f"--gpu-total {value!r}: expected [TYPE:]MIN:MAX, two counts of GPUs with MIN <= MAX, "
                          "after the GPU type as the cloud provider's GPU label gives it (e.g. "
                          "nvidia-tesla-t4:0:64; without TYPE: every GPU, e.g. 0:64)")
            continue
        if kind in seen:
            errors.append(f"--gpu-total {value!r}: {'every GPU' if kind is None else repr(kind)} is limited twice")
            continue
        seen.add(kind)
        limits.append(GpuLimit(int(counts[0]), int(counts[1]), kind))
    return tuple(limits), errors
