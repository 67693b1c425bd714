"""A declared model against the GPU memory of the devices a workload's claims were allocated."""

from __future__ import annotations

import json

from gpufleet.capacity.memory_budget import MemoryProblem
from gpufleet.capacity.model_fit import MODEL_ANNOTATION, container_argv, misfit_message
from gpufleet.errors import InputError
from gpufleet.nvidia.model_budget import dra_budget
from gpufleet.nvidia.model_memory import from_annotation, need_per_gpu
from gpufleet.scheduling.dra.claims import memory_mib
from gpufleet.scheduling.result import CheckResult, Unschedulable


def model_on_devices(w, devices, result: CheckResult) -> bool:
    """Each device a pod was given (its published memory) against the model; True when the model decided
    the memory verdict (a misfit is an error, as on labelled nodes). `devices`: (node, used, allocated)."""
    try:
        doc = json.loads(w.annotations[MODEL_ANNOTATION])
        label, shape, serving, vllm = from_annotation(doc if isinstance(doc, dict) else {})
    except (json.JSONDecodeError, ValueError) as e:
        raise InputError(f"{w.key}: annotation {MODEL_ANNOTATION} is not usable: {e}") from e
    argv = container_argv(w.spec)
    for _, used, _ in devices:
        for device in used:
            mib = memory_mib([device])
            if mib is None:
                continue
            budget = dra_budget(device.label, mib)
            message = misfit_message(w.key, label, shape, serving, budget, None, vllm, argv)
            if message is not None:
                result.unschedulable.append(Unschedulable(w.key, "memory", w.replicas, message))
                result.memory.append(MemoryProblem(w.key, need_per_gpu(shape, serving).mib, budget.usable_mib,
                                                   message, error=True))
                return True
    return True
