"""Checks of a StackConfig against the platform its GPU nodes run, where the config itself names it: a pool
that selects its nodes by their operating system (NFD's `system-os_release.ID`, GKE's
`gke-os-distribution`), and a toolkit pointed at a containerd config the distribution regenerates. With the
real nodes the same facts are checked against each node (policies node-platform, `plan --nodes`); facts and
sources: gpufleet.nvidia.node_platforms."""

from __future__ import annotations

from gpufleet.config._paths import yaml_path as _p
from gpufleet.config.stack import StackConfig
from gpufleet.errors import ConfigIssue
from gpufleet.nvidia import node_platforms as facts


def check_platform(cfg: StackConfig) -> list[ConfigIssue]:
    """Errors: the toolkit edits a config file the distribution writes afresh at every start."""
    rt = cfg.cluster.runtime
    if cfg.mode != "operator" or not cfg.operator.toolkit.enabled:
        return []
    path = dict((e["name"], e["value"]) for e in rt.toolkit_env()).get("CONTAINERD_CONFIG")
    problem = facts.regenerated_config_problem(path) if path else None
    if problem is None:
        return []
    where = _p("cluster", "runtime", "configPath" if rt.config_path else "preset")
    return [ConfigIssue(where, f"'{path}' (CONTAINERD_CONFIG): {problem}")]


def platform_warnings(cfg: StackConfig) -> list[ConfigIssue]:
    """Warnings: a pool selects nodes of an OS the operator's driver container cannot (or may not) run on."""
    if cfg.mode != "operator" or not cfg.operator.driver.enabled:
        return []
    out = []
    for i, pool in enumerate(cfg.node_pools):
        os_ = facts.os_named(pool.node_selector)
        if os_ is None or os_.driver_container == "supported":
            continue
        verdict = "cannot run there" if os_.driver_container == "impossible" else "is not validated there"
        out.append(ConfigIssue(_p("nodePools", i, "nodeSelector"), (
            f"node pool '{pool.name}' selects {os_.name} nodes, and operator.driver.enabled is true: the "
            f"operator's driver container {verdict} ({os_.why}), so the driver pod would not get ready and "
            "the nodes would advertise no nvidia.com/gpu. Verify with the real nodes (gpufleet plan "
            "--nodes, which reads each node's osImage); fix: operator.driver.enabled: false, using the "
            "driver the OS provides"
            + (f" (under {os_.driver_root})" if os_.driver_root else ""))))
    return out
