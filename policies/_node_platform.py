"""The node-platform rules (gpufleet.validation.node_platform) run on a plan: the stack's GPU release, named
by the gpufleet config keys that set its values, against the real nodes (node facts from `plan --nodes`).
Shared by node-platform (its errors) and node-platform-advisories (its warnings)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from gpufleet.scheduler.daemonsets import selects_node
from gpufleet.validation import gpu_daemonsets as ds_rules
from gpufleet.validation import node_platform as rules
from policies._common import (
    POD_SPEC_PATHS,
    RELEASE_TYPE,
    STACK_CONFIG_PROPERTIES,
    describe,
    each_known,
    pod_spec,
)
from policies._node_facts import (
    NODE_FACTS_PROPERTIES,
    CapacityUnavailable,
    load_nodes,
    planned_labels,
    pool_members,
    stack_for_nodes,
    views,
)

#: Chart value -> the gpufleet config key that sets it (the others are named as chart values).
SETTINGS = {
    rules.OPERATOR: {"driver.enabled": "gpufleet:operator.driver.enabled",
                     "toolkit.enabled": "gpufleet:operator.toolkit.enabled",
                     "toolkit.env": "gpufleet:cluster.runtime (configPath / socket)",
                     "chartVersion": "gpufleet:operator.chartVersion"},
    rules.DEVICE_PLUGIN: {"chartVersion": "gpufleet:devicePlugin.chartVersion"},
    rules.DRA_DRIVER: {"chartVersion": "gpufleet:draDriver.chartVersion"},
}


def _setting(chart: str):
    own = SETTINGS.get(chart, {})
    return lambda path: own.get(path) or f"{chart} value {path}"


def findings(args) -> list[tuple[rules.Finding, str | None]]:
    """(finding, urn of the resource it is about) of every node-platform rule on this plan; none without node
    facts or a readable stack."""
    found_stack = stack_for_nodes(args)
    if found_stack is None:
        return []
    config, ref, cfg = found_stack
    try:
        found, _ = load_nodes(config, ref)
    except CapacityUnavailable:
        return []  # stack-matches-nodes reports an unreadable source
    planned = planned_labels(args.resources)
    nodes = views(found, planned)
    pools = {p.name: members for p in cfg.node_pools if (members := pool_members(p, nodes))}
    gpu = [n for ns in pools.values() for n in ns] or [n for n in nodes if rules.shows_gpu(n)]
    out: list[tuple[rules.Finding, str | None]] = []
    releases: list[rules.Release] = []
    planned_keys = {k for labels in planned.values() for k in labels}

    def release(r) -> None:
        chart = str(r.props.get("chart"))
        if chart in rules.GPU_CHARTS:
            values = dict(r.props.get("values") or {})
            rel = rules.Release(chart, str(r.props.get("version") or ""), values,
                                f"Pulumi.{ref.stack}.yaml ({chart} release)", _setting(chart))
            releases.append(rel)
            out.extend((f, r.urn) for f in rules.release_findings(rel, list(nodes), pools))
            families = ds_rules.label_families([rel], (), planned_keys)
            out.extend((f, r.urn) for f in ds_rules.release_taint_findings(rel, gpu, selects_node, families))

    def daemonset(r) -> None:
        if r.resource_type in POD_SPEC_PATHS and r.resource_type.endswith(":DaemonSet"):
            what = describe(r.resource_type, r.props, r.name)
            families = ds_rules.label_families(releases, (), planned_keys)
            spec = pod_spec(r.resource_type, r.props)
            found = ds_rules.daemonset_findings(what, spec, gpu, selects_node, families)
            out.extend((f, r.urn) for f in found)

    each_known([r for r in args.resources if r.resource_type == RELEASE_TYPE], release)
    each_known(args.resources, daemonset)
    return out


def policy(name: str, description: str, level: str) -> StackValidationPolicy:
    """The pack policy that reports the findings of one level (errors: mandatory, warnings: advisory)."""

    def validate(args: StackValidationArgs, report_violation) -> None:
        for finding, urn in findings(args):
            if finding.level == level:
                report_violation(f"{finding.subject}: {finding.message}", urn)

    return StackValidationPolicy(
        name=name, description=description, validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY if level == rules.ERROR else EnforcementLevel.ADVISORY,
        config_schema=PolicyConfigSchema(properties={**STACK_CONFIG_PROPERTIES, **NODE_FACTS_PROPERTIES}))
