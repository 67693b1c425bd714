"""no-driver-hostpath: workloads get the NVIDIA driver from the container toolkit, never from hostPath.

Which host paths hold driver files is decided in gpufleet.validation.workload_policies (`gpufleet check`
runs the same rule on manifests).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy

from gpufleet.validation.workload_policies import NO_DRIVER_HOSTPATH, driver_hostpath_messages
from policies._common import config_of, describe, pod_spec


def validate(args: ResourceValidationArgs, report_violation) -> None:
    spec = pod_spec(args.resource_type, args.props)
    if spec is None:
        return
    allowed = tuple(config_of(args).get("allowedPaths") or ())
    what = describe(args.resource_type, args.props, args.name)
    for message in driver_hostpath_messages(what, spec, allowed):
        report_violation(message)


POLICY = ResourceValidationPolicy(
    name=NO_DRIVER_HOSTPATH.name,
    description="Workloads never mount NVIDIA driver libraries or tools from the host with hostPath.",
    enforcement_level=EnforcementLevel(NO_DRIVER_HOSTPATH.level),
    config_schema=PolicyConfigSchema(properties={
        "allowedPaths": {"type": "array", "items": {"type": "string"},
                         "description": "Host paths (and everything below) that may be mounted anyway."},
    }),
    validate=validate,
)
