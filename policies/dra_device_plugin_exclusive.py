"""dra-device-plugin-exclusive: the DRA driver's GPU plugin and the NVIDIA device plugin never serve the
same nodes.

Both would hand out the same GPUs, each unaware of the other's allocations (the DRA driver's chart
refuses its GPU part unless told the device plugin is kept away). Two plugins are kept apart only when
their node selectors cannot both match a node (one key, different values); gpu-operator operands select
every GPU node.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from gpufleet.nvidia import dra
from policies._dra import dra_facts


def _disjoint(a: dict, b: dict) -> bool:
    return any(k in b and str(b[k]) != str(v) for k, v in a.items())


def validate(args: StackValidationArgs, report_violation) -> None:
    facts = dra_facts(args.resources)
    for driver in facts.drivers:
        if not driver.classes & set(dra.GPU_DEVICE_CLASSES):
            continue  # compute domains only: no GPU is handed out
        for plugin in facts.device_plugins:
            if not _disjoint(driver.node_selector, plugin.node_selector):
                report_violation(f"{driver.where} runs the DRA GPU plugin and {plugin.where} runs the device plugin "
                                 "on the same nodes, so both hand out the same GPUs. Expected one of them per node "
                                 "(no device plugin in a DRA stack, or node selectors that keep them apart).",
                                 driver.urn)


POLICY = StackValidationPolicy(
    name="dra-device-plugin-exclusive",
    description="The DRA GPU plugin and the device plugin never run on the same nodes.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={}),
    validate=validate,
)
