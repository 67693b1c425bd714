"""model-concurrency: a workload's model starts, and its KV cache holds the maxNumSeqs full-length requests
the workload declares (advisory).

vLLM starts when one request of maxModelLen tokens fits its KV cache; past the concurrency it logs
('Maximum concurrency for L tokens per request: X'), requests queue or are preempted. This policy reports
a workload whose declared maxNumSeqs (or --max-num-seqs) exceeds that concurrency, with the KV tokens and the
fixes (docs/model-memory.md). A model that would not start at all is model-fits-gpu's (mandatory).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from policies._capacity import CAPACITY_PROPERTIES
from policies._common import STACK_CONFIG_PROPERTIES
from policies._model import report_model_verdicts


def validate(args: StackValidationArgs, report_violation) -> None:
    report_model_verdicts(args, report_violation, refusals=False)


POLICY = StackValidationPolicy(
    name="model-concurrency",
    description="Every workload that declares maxNumSeqs gets a KV cache holding that many full-length requests.",
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(properties={
        **STACK_CONFIG_PROPERTIES,
        **CAPACITY_PROPERTIES,
    }),
    validate=validate,
)
