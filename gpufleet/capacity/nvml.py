"""The capacity of this node as NVML sees it: what the device plugin would advertise without sharing.

Full GPUs count as `nvidia.com/gpu`; MIG instances as `nvidia.com/mig-<profile>` (the mixed
strategy's names). cpu, memory, ephemeral-storage and pods are not known from NVML: not checked.
"""

from __future__ import annotations

from gpufleet.capacity.model import Capacity, Node
from gpufleet.capacity.quantity import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from gpufleet.discovery.nvml import GpuInventory
from gpufleet.discovery.types import GpuFacts
from gpufleet.nvidia.mig_profiles import resource_name
from gpufleet.nvidia.sharing import GPU


def node_from_facts(hostname: str, facts: GpuFacts) -> Node:
    allocatable: dict[str, int] = {}
    for gpu in facts.gpus:
        if gpu.mig_enabled:
            for inst in gpu.mig_instances:
                name = resource_name(inst.profile)
                allocatable[name] = allocatable.get(name, 0) + 1
        else:
            allocatable[GPU] = allocatable.get(GPU, 0) + 1
    labels = {"kubernetes.io/hostname": hostname}
    if facts.gpus:
        first = facts.gpus[0]
        labels.update({"nvidia.com/gpu.product": first.product.replace(" ", "-"),
                       "nvidia.com/gpu.count": str(len(facts.gpus)),
                       "nvidia.com/gpu.memory": str(first.memory_mib)})
    return Node(name=hostname, labels=labels, allocatable=allocatable, capacity=dict(allocatable),
                unknown=frozenset({CPU, MEMORY, EPHEMERAL_STORAGE, PODS}), gpus=facts)


def capacity_from_nvml(inventory: GpuInventory, hostname: str) -> Capacity:
    return Capacity("nvml", [node_from_facts(hostname, inventory.facts())])
