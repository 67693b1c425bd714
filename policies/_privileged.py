"""The privileged-GPU rules of gpufleet.validation.privileged_gpus on one resource of a plan: which GPU
resources the stack serves only as shares comes from its node pools (every pool shares its GPUs: a
`nvidia.com/gpu` request gets a share wherever it lands; `.shared` names are shares anywhere)."""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from gpufleet.nvidia.sharing import GPU
from gpufleet.validation.privileged_gpus import privileged_gpu_messages
from gpufleet.validation.workload_policies import MANDATORY, Rule
from policies._common import STACK_CONFIG_PROPERTIES, describe, pod_spec, stack_config_for


def _shared_resources(cfg) -> frozenset[str]:
    if cfg is None or cfg.uses_dra() or not cfg.node_pools:
        return frozenset()
    every_pool_shares = all(cfg.sharing_of_pool(p) is not None for p in cfg.node_pools)
    return frozenset({GPU}) if every_pool_shares else frozenset()


def messages(args) -> tuple[list[str], list[str]]:
    """(errors, warnings) of the rules on this resource."""
    spec = pod_spec(args.resource_type, args.props)
    if spec is None:
        return [], []
    what = describe(args.resource_type, args.props, args.name)
    return privileged_gpu_messages(what, spec, _shared_resources(stack_config_for(args)))


def policy(rule: Rule, description: str) -> ResourceValidationPolicy:
    """The pack policy of one of the two rules: the errors (mandatory rule) or the warnings (advisory)."""
    which = 0 if rule.level == MANDATORY else 1

    def validate(args: ResourceValidationArgs, report_violation) -> None:
        for message in messages(args)[which]:
            report_violation(message)

    return ResourceValidationPolicy(name=rule.name, description=description, validate=validate,
                                    enforcement_level=EnforcementLevel(rule.level),
                                    config_schema=PolicyConfigSchema(properties={**STACK_CONFIG_PROPERTIES}))
