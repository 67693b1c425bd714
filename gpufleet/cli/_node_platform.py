"""`gpufleet check --nodes`: the node-platform rules (gpufleet.validation.node_platform) on the checked
manifests, as the pack runs them on a plan: each GPU stack release record of `plan --out` (HelmRelease) and
each DaemonSet against the nodes that show GPUs. An error is a `policy` verdict on the release or DaemonSet,
a warning a warning."""

from __future__ import annotations

from typing import Any

from gpufleet.scheduling.daemonsets import selects_node
from gpufleet.scheduling.manifests import flatten
from gpufleet.scheduling.result import CheckResult, Unschedulable, Warning
from gpufleet.validation import node_platform as rules
from gpufleet.validation.workload_policies import POD_SPEC_PATHS

RULE = "node-platform"


def node_platform_findings(objects: list[Any], nodes: list) -> list[tuple[str, rules.Finding]]:
    """(workload key, finding) of every node-platform rule on these objects and nodes."""
    gpu = [n for n in nodes if rules.shows_gpu(n)]
    out: list[tuple[str, rules.Finding]] = []
    for obj in flatten(objects):
        release = rules.release_of_record(obj)
        if release is not None:
            key = release.subject.replace("HelmRelease ", "HelmRelease/")
            out += [(key, f) for f in rules.release_findings(release, nodes)]
        elif obj.get("kind") == "DaemonSet":  # not a checked workload: it has no replicas to place
            meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            key = f"DaemonSet/{meta.get('namespace') or 'default'}/{meta.get('name') or '(unnamed)'}"
            spec = obj
            for part in POD_SPEC_PATHS["DaemonSet"]:
                spec = spec.get(part) if isinstance(spec, dict) else None
            out += [(key, f) for f in rules.daemonset_findings(key, spec, gpu, selects_node)]
    return out


def add_node_platform_findings(result: CheckResult, objects: list[Any], nodes: list) -> None:
    for key, f in node_platform_findings(objects, nodes):
        text = f"[{RULE}] {f.message}"
        if f.level == rules.ERROR:
            result.unschedulable.append(Unschedulable(key, "policy", 0, text))
        else:
            result.warnings.append(Warning(key, text))
