"""no-visible-devices-bypass: GPUs come through the device plugin's accounting, not NVIDIA_VISIBLE_DEVICES.

The container toolkit gives a container the GPUs named in its NVIDIA_VISIBLE_DEVICES env (when the
toolkit accepts the env from unprivileged containers) or in a CDI annotation, whether or not the
scheduler counted a GPU for it. CUDA_VISIBLE_DEVICES only selects among GPUs the container already
sees, so it is not a bypass and is not judged.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy

from gpufleet.validation.workload_policies import (
    NO_VISIBLE_DEVICES_BYPASS,
    visible_devices_bypasses,
    visible_devices_message,
)
from policies._common import (
    STACK_CONFIG_PROPERTIES,
    config_of,
    describe,
    pod_spec,
    pod_template_metadata,
    stack_config_for,
)


def _platform_managed(args) -> bool:
    flag = config_of(args).get("platformManaged")
    if flag is not None:
        return bool(flag)
    cfg = stack_config_for(args)
    return cfg is not None and cfg.mode == "platform-managed"


def validate(args: ResourceValidationArgs, report_violation) -> None:
    spec = pod_spec(args.resource_type, args.props)
    if spec is None:
        return
    what = describe(args.resource_type, args.props, args.name)
    annotations = pod_template_metadata(args.resource_type, args.props).get("annotations")
    found = visible_devices_bypasses(spec, annotations)
    if found and not _platform_managed(args):
        for item in found:
            report_violation(visible_devices_message(what, item))


POLICY = ResourceValidationPolicy(
    name=NO_VISIBLE_DEVICES_BYPASS.name,
    description="Containers get GPUs by requesting a GPU resource, not through NVIDIA_VISIBLE_DEVICES or CDI "
                "annotations, unless the platform manages GPUs.",
    enforcement_level=EnforcementLevel(NO_VISIBLE_DEVICES_BYPASS.level),
    config_schema=PolicyConfigSchema(properties={
        **STACK_CONFIG_PROPERTIES,
        "platformManaged": {"type": "boolean", "description": "The platform owns GPU assignment (gpufleet mode "
                            "platform-managed); overrides the stack's mode."},
    }),
    validate=validate,
)
