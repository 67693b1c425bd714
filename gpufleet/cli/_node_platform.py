"""`gpufleet check --nodes`: the node-platform rules (gpufleet.validation.node_platform) on the checked
manifests, as the pack runs them on a plan: each GPU stack release record of `plan --out` (HelmRelease) and
each DaemonSet against the nodes that show GPUs. An error is a `policy` verdict on the release or DaemonSet,
a warning a warning."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpufleet.manifests.workloads import flatten
from gpufleet.scheduling.result import CheckResult, Unschedulable, Warning
from gpufleet.validation.workload_policies import POD_SPEC_PATHS

if TYPE_CHECKING:
    from gpufleet.validation import node_platform as rules

RULE = "node-platform"
#: What the rules read: a release record (HelmRelease) and a DaemonSet. Without either, no rule can find
#: anything, and their modules are not loaded (a check of plain workloads starts sooner).
KINDS = ("HelmRelease", "DaemonSet")


def node_platform_findings(objects: list[Any], nodes: list) -> list[tuple[str, rules.Finding]]:
    """(workload key, finding) of every node-platform rule on these objects and nodes."""
    if not any(o.get("kind") in KINDS for o in flatten(objects)):
        return []
    from gpufleet.scheduler.daemonsets import selects_node
    from gpufleet.validation import gpu_daemonsets as ds_rules
    from gpufleet.validation import node_platform as rules

    gpu = [n for n in nodes if rules.shows_gpu(n)]
    objs = list(flatten(objects))
    releases = [r for r in map(rules.release_of_record, objs) if r is not None]
    daemonsets = {_key(o): _spec(o) for o in objs if o.get("kind") == "DaemonSet"}  # no checked workload
    images = [str(c.get("image")) for spec in daemonsets.values() if isinstance(spec, dict)
              for c in spec.get("containers") or [] if isinstance(c, dict)]
    families = ds_rules.label_families(releases, images)
    out: list[tuple[str, rules.Finding]] = []
    for release in releases:
        key = release.subject.replace("HelmRelease ", "HelmRelease/")
        found = [*rules.release_findings(release, nodes), *rules.host_driver_findings(release, nodes),
                 # where its node pods may go: the pack's stack-matches-nodes judges the same on a plan
                 *ds_rules.daemonset_findings(key, ds_rules.release_placement(release), gpu, selects_node,
                                              families)]
        out += [(key, f) for f in found]
    for key, spec in daemonsets.items():
        out += [(key, f) for f in ds_rules.daemonset_findings(key, spec, gpu, selects_node, families)]
    return out


def _key(obj: dict) -> str:
    meta = m if isinstance(m := obj.get("metadata"), dict) else {}
    return f"DaemonSet/{meta.get('namespace') or 'default'}/{meta.get('name') or '(unnamed)'}"


def _spec(obj: dict) -> Any:
    spec: Any = obj
    for part in POD_SPEC_PATHS["DaemonSet"]:
        spec = spec.get(part) if isinstance(spec, dict) else None
    return spec


def add_node_platform_findings(result: CheckResult, objects: list[Any], nodes: list) -> None:
    found = node_platform_findings(objects, nodes)
    if not found:
        return
    from gpufleet.validation.node_platform import ERROR

    for key, f in found:
        text = f"[{RULE}] {f.message}"
        if f.level == ERROR:
            result.unschedulable.append(Unschedulable(key, "policy", 0, text))
        else:
            result.warnings.append(Warning(key, text))
