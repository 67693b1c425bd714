"""dra-sharing-gate: a claim's GPU sharing config asks only for what the DRA driver's feature gates allow.

NVIDIA's driver validates a claim's opaque `GpuConfig` / `MigDeviceConfig` when the kubelet prepares
the devices, after the scheduler placed the pod: a TimeSlicing config without the TimeSlicingSettings
gate, or MPS without MPSSupport, leaves the pod failing to start. Gates are read from the DRA driver
releases of the stack (gpu-operator `draDriver.featureGates`, the driver chart's `featureGates`); with no
driver release in the stack the gates are unknown and nothing is judged.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from gpufleet.nvidia import dra
from policies._common import dig
from policies._dra import dra_facts


def validate(args: StackValidationArgs, report_violation) -> None:
    facts = dra_facts(args.resources)
    if not facts.drivers:
        return
    for what, urn, spec in facts.claims:
        for i, entry in enumerate(dig(spec, "devices", "config") or []):
            opaque = entry.get("opaque") or {}
            if opaque.get("driver") != dra.GPU_DRIVER:
                continue
            strategy = dig(opaque, "parameters", "sharing", "strategy")
            gate = dra.SHARING_GATE.get(strategy) if isinstance(strategy, str) else None
            if gate is None:
                if strategy is not None:
                    report_violation(f"{what} config[{i}] asks for sharing strategy '{strategy}'. Expected one of "
                                     f"{', '.join(dra.SHARING_GATE)}.", urn)
                continue
            off = [d.where for d in facts.drivers if not d.gates.get(gate)]
            if off:
                report_violation(f"{what} config[{i}] asks for {strategy} sharing, but the driver feature gate {gate} "
                                 f"is off in {', '.join(off)}, so its pods fail to start. Expected featureGates."
                                 f"{gate}: true.", urn)


POLICY = StackValidationPolicy(
    name="dra-sharing-gate",
    description="A claim's GPU sharing config needs the DRA driver feature gate that enables it.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={}),
    validate=validate,
)
