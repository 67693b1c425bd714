"""One capacity model from three sources: the Kubernetes API (or kubectl JSON), NVML, and the stack config.

Names load on first use (PEP 562), so `gpufleet check` reads quantities and nodes without importing the
stack configuration models (pydantic) that only the stack source needs.
"""

from __future__ import annotations

# Eager: this name is also a submodule's, which an import of the submodule would otherwise leave here.
from gpufleet.capacity.memory_budget import memory_budget as memory_budget
from gpufleet.lazy import names_on_first_use

_WHERE = {
    "bound_pods": "kubectl", "capacity_from_cluster": "kubectl", "capacity_from_objects": "kubectl",
    "node_from_object": "kubectl", "MemoryProblem": "memory_budget", "memory_budget": "memory_budget",
    "node_gpu_memory": "memory_budget", "BoundPod": "model", "Capacity": "model", "Node": "model", "Taint": "model",
    "capacity_from_nvml": "nvml", "pod_requests": "requests", "capacity_from_stack": "stack",
    "planned_resources": "stack", "stack_capacity": "stack",
}

__all__ = sorted(_WHERE)
__getattr__ = names_on_first_use(__name__, _WHERE)
