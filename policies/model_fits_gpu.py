"""model-fits-gpu: the serving engine starts each workload's model on the GPU memory it gets (whole GPU, MIG
instance, MPS slice, time-sliced GPU, DRA device).

The engine's arithmetic (vLLM V1; docs/model-memory.md) decides: weights, peak activation, runtime and CUDA
graphs out of `--gpu-memory-utilization` x the CUDA-visible total, and a KV cache that must hold one request
of maxModelLen tokens. With the stack as the capacity source it is checked against each workload's node pool
(gpufleet.capacity.memory_budget); with discovered nodes, against the GPU memory labels of every node the pod
may land on (the `gpufleet.io/model-memory` annotation, as `gpufleet check` does). The violation quotes the
engine's refusal and gives fixes it accepts. Fewer full-length requests than maxNumSeqs is model-concurrency's.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from policies._capacity import CAPACITY_PROPERTIES
from policies._common import STACK_CONFIG_PROPERTIES
from policies._model import KIND, report_model_verdicts

__all__ = ["KIND", "POLICY"]


def validate(args: StackValidationArgs, report_violation) -> None:
    report_model_verdicts(args, report_violation, refusals=True)


POLICY = StackValidationPolicy(
    name="model-fits-gpu",
    description="Every workload that declares a model gets enough GPU memory for the engine to start it.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={
        **STACK_CONFIG_PROPERTIES,
        **CAPACITY_PROPERTIES,
    }),
    validate=validate,
)
