"""preinstalled-driver: the operator's driver container is not enabled for nodes that already run a host driver.

Checked when node facts are given (`gpufleet plan --nodes FILE`, or `nodesFile` / `kubeconfig`). A node runs
a host driver when it carries `nvidia.com/gpu.deploy.driver=pre-installed` (k8s-driver-manager labels a node
so when it finds the host's driver, and the driver DaemonSet then leaves it: gpu-operator release notes
v1.10.0, assets/state-driver/0500_daemonset.yaml selects `nvidia.com/gpu.deploy.driver: "true"`), GFD's
driver labels without an operator-managed driver (`nvidia.com/gpu.deploy.driver` unset), or driver facts read
by `gpufleet discover --nvml` on the host. Whether the operator detects each host driver is only known on
the cluster, so this policy is advisory: it says what to verify there.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from gpufleet.validation.node_platform import host_driver_message
from policies._common import STACK_CONFIG_PROPERTIES
from policies._node_facts import (
    NODE_FACTS_PROPERTIES,
    CapacityUnavailable,
    gpu_nodes,
    load_nodes,
    planned_labels,
    stack_for_nodes,
    views,
)

_SETTING = "gpufleet:operator.driver.enabled"


def validate(args: StackValidationArgs, report_violation) -> None:
    found_stack = stack_for_nodes(args)
    if found_stack is None:
        return
    config, ref, cfg = found_stack
    if cfg.mode != "operator" or not cfg.operator.driver.enabled:
        return
    try:
        found, _ = load_nodes(config, ref)
    except CapacityUnavailable:
        return  # stack-matches-nodes reports an unreadable source
    gpu = [n for n, _ in gpu_nodes(cfg, views(found, planned_labels(args.resources)))]
    message = host_driver_message(gpu, _SETTING, cfg.operator.driver.version, cfg.operator.namespace)
    if message is not None:
        report_violation(f"Pulumi.{ref.stack}.yaml: {message}")


POLICY = StackValidationPolicy(
    name="preinstalled-driver",
    description="The operator's driver container is not enabled for GPU nodes that already run a host driver.",
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(properties={**STACK_CONFIG_PROPERTIES, **NODE_FACTS_PROPERTIES}),
    validate=validate,
)
