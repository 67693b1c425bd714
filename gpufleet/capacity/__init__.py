"""One capacity model from three sources: the Kubernetes API (or kubectl JSON), NVML, and the stack config."""

from gpufleet.capacity.kubectl import bound_pods, capacity_from_cluster, capacity_from_objects, node_from_object
from gpufleet.capacity.memory_budget import MemoryProblem, memory_budget, node_gpu_memory
from gpufleet.capacity.model import BoundPod, Capacity, Node, Taint
from gpufleet.capacity.nvml import capacity_from_nvml
from gpufleet.capacity.requests import pod_requests
from gpufleet.capacity.stack import capacity_from_stack, planned_resources, stack_capacity

__all__ = ["BoundPod", "Capacity", "Node", "Taint", "MemoryProblem", "bound_pods", "capacity_from_cluster",
           "capacity_from_objects", "capacity_from_nvml", "capacity_from_stack", "memory_budget", "node_from_object",
           "node_gpu_memory", "planned_resources", "pod_requests", "stack_capacity"]
