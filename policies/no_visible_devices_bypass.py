"""no-visible-devices-bypass: GPUs come through the device plugin's accounting, not NVIDIA_VISIBLE_DEVICES.

The container toolkit gives a container the GPUs named in its NVIDIA_VISIBLE_DEVICES env (when the
toolkit accepts the env from unprivileged containers) or in a CDI annotation, whether or not the
scheduler counted a GPU for it. CUDA_VISIBLE_DEVICES only selects among GPUs the container already
sees, so it is not a bypass and is not judged.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy

from policies._common import (
    STACK_CONFIG_PROPERTIES, config_of, containers, describe, pod_spec, pod_template_metadata, stack_config_for,
)

ENV = "NVIDIA_VISIBLE_DEVICES"
NO_GPU_VALUES = {"", "void", "none"}
CDI_ANNOTATION_PREFIX = "cdi.k8s.io/"


def _requests_gpu(container: dict) -> bool:
    res = container.get("resources") or {}
    names = set((res.get("limits") or {})) | set((res.get("requests") or {}))
    return any(n.startswith("nvidia.com/") for n in names)


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
    found = []
    for c in containers(spec):
        for env in c.get("env") or []:
            value = env.get("value")
            if env.get("name") == ENV and (value is None or str(value).strip().lower() not in NO_GPU_VALUES) \
                    and not _requests_gpu(c):
                found.append(f"container '{c.get('name')}' sets {ENV}={value if value is not None else '(from a reference)'}")
    for key, value in (pod_template_metadata(args.resource_type, args.props).get("annotations") or {}).items():
        if key.startswith(CDI_ANNOTATION_PREFIX) and "nvidia.com/gpu" in str(value):
            found.append(f"annotation {key}={value} injects GPUs through CDI")
    if found and not _platform_managed(args):
        for item in found:
            report_violation(f"{what}: {item} without a GPU resource request, bypassing the device plugin's "
                             "accounting; expected a nvidia.com/* resource limit instead (pinning devices is "
                             "allowed only in platform-managed mode).")


POLICY = ResourceValidationPolicy(
    name="no-visible-devices-bypass",
    description="Containers get GPUs by requesting a GPU resource, not through NVIDIA_VISIBLE_DEVICES or CDI annotations, unless the platform manages GPUs.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={
        **STACK_CONFIG_PROPERTIES,
        "platformManaged": {"type": "boolean", "description": "The platform owns GPU assignment (gpufleet mode "
                            "platform-managed); overrides the stack's mode."},
    }),
    validate=validate,
)
