"""dra-device-class-exists: every device class a claim asks for exists.

A claim naming a DeviceClass nobody creates leaves its pods Pending (`device class <name> does not
exist`). Classes exist when the stack's DRA driver ships them (its chart: gpu.nvidia.com,
mig.nvidia.com, vfio.gpu.nvidia.com with the GPU part; the compute-domain classes with ComputeDomains),
when the stack declares a DeviceClass, or when the policy config lists them as the cluster's own.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from policies._common import config_of
from policies._dra import device_requests, dra_facts


def validate(args: StackValidationArgs, report_violation) -> None:
    facts = dra_facts(args.resources)
    known = facts.classes() | set(config_of(args).get("clusterDeviceClasses") or [])
    for what, urn, spec in facts.claims:
        for request, cls in device_requests(spec):
            if cls not in known:
                report_violation(f"{what} request {request} asks for device class '{cls}', which nothing in the stack "
                                 f"creates. Expected one of: {', '.join(sorted(known)) or '(no DeviceClass at all)'}.",
                                 urn)


POLICY = StackValidationPolicy(
    name="dra-device-class-exists",
    description="Every device class a ResourceClaim or ResourceClaimTemplate asks for exists.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={
        "clusterDeviceClasses": {"type": "array", "items": {"type": "string"},
                                 "description": "DeviceClasses the cluster has already (created outside the stack)."}}),
    validate=validate,
)
