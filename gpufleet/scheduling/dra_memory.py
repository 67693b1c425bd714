"""A declared model against the GPU memory of the devices a workload's claims were allocated."""

from __future__ import annotations

from gpufleet.capacity.memory_budget import MemoryProblem
from gpufleet.capacity.model_fit import MODEL_ANNOTATION, container_argv, dra_device, judge, read_annotation
from gpufleet.nvidia.model_memory.served import with_flags
from gpufleet.scheduler.plugins.dynamicresources.claims import memory_mib
from gpufleet.scheduling.result import CheckResult, Unschedulable, Warning


def model_on_devices(w, devices, result: CheckResult) -> bool:
    """Each device a pod was given (its published memory) against the model; True when the model decided
    the memory verdict (a refusal is an error, as on labelled nodes). `devices`: (node, used, allocated)."""
    served = with_flags(read_annotation(w.key, w.annotations[MODEL_ANNOTATION]), container_argv(w.spec))
    for _, used, _ in devices:
        for device in used:
            mib = memory_mib([device])
            if mib is None:
                continue
            verdict = judge("", served, [dra_device(device.label, mib)])
            if verdict.error is not None:
                result.unschedulable.append(Unschedulable(w.key, "memory", w.replicas, verdict.error))
                result.memory.append(MemoryProblem(w.key, verdict.need_mib, verdict.budget_mib, verdict.error,
                                                   error=True))
                return True
            result.warnings += [Warning(w.key, m, reason="model") for m in verdict.warnings]
            return True
    return True
