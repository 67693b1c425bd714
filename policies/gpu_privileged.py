"""gpu-privileged: a GPU container that runs privileged or mounts the host's /dev sees every GPU of the node,
not only its own (advisory: whether it touches the others is the workload's). On shared GPUs the same is
no-privileged-shared-gpu's error. Decided in gpufleet.validation.privileged_gpus, as `gpufleet check` does.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy

from gpufleet.validation.workload_policies import GPU_PRIVILEGED
from policies._common import STACK_CONFIG_PROPERTIES
from policies._privileged import messages


def validate(args: ResourceValidationArgs, report_violation) -> None:
    for message in messages(args)[1]:
        report_violation(message)


POLICY = ResourceValidationPolicy(
    name=GPU_PRIVILEGED.name,
    description="A GPU container that runs privileged or mounts the host's /dev sees every GPU of the node.",
    enforcement_level=EnforcementLevel(GPU_PRIVILEGED.level),
    config_schema=PolicyConfigSchema(properties={**STACK_CONFIG_PROPERTIES}),
    validate=validate,
)
