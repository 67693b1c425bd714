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

from gpufleet.validation.node_platform import host_driver_evidence
from policies._common import STACK_CONFIG_PROPERTIES
from policies._node_facts import (
    NODE_FACTS_PROPERTIES, CapacityUnavailable, gpu_nodes, load_nodes, names, planned_labels, stack_for_nodes, views,
)


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
    evidence = {n.name: host_driver_evidence(n.node) for n in gpu}
    if not gpu or any(e is None for e in evidence.values()):
        return  # some GPU node needs the operator's driver (or says nothing): driver.enabled is right
    version = cfg.operator.driver.version
    shown = "; ".join(f"{name} ({why})" for name, why in sorted(evidence.items())[:4])
    more = f" and {len(evidence) - 4} more" if len(evidence) > 4 else ""
    report_violation(
        f"Pulumi.{ref.stack}.yaml: gpufleet:operator.driver.enabled is true (driver.version {version}), but every "
        f"GPU node of the stack already runs a host NVIDIA driver: {shown}{more}. The operator runs its driver "
        f"container only where k8s-driver-manager does not find the host driver, so driver {version} runs on none "
        "of these nodes; where detection fails, the driver pod tries to unload modules in use and stays in "
        "Init:CrashLoopBackOff, and the toolkit, device plugin and validator wait behind it. Verify that no "
        f"nvidia-driver-daemonset pod runs on {names(gpu)} (kubectl -n {cfg.operator.namespace} get pods -o wide); "
        "expected gpufleet:operator.driver.enabled: false, so the operator uses the host driver.")


POLICY = StackValidationPolicy(
    name="preinstalled-driver",
    description="The operator's driver container is not enabled for GPU nodes that already run a host driver.",
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(properties={**STACK_CONFIG_PROPERTIES, **NODE_FACTS_PROPERTIES}),
    validate=validate,
)
