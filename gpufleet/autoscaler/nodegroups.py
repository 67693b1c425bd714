"""Node groups as cluster-autoscaler sees them: a name, min and max sizes, a target size, and the template of a
node it would add (a Node object, or an existing node copied as the autoscaler sanitizes one).

`--node-groups FILE` is a YAML list of `{name, minSize, maxSize, targetSize, template}`: `template` is a Node
object (labels, taints, allocatable and capacity), or `like: NODE` to copy a node of the fleet. The nodes of the
fleet a group already has are those labelled `gpufleet.dev/node-group: <name>`, or those carrying the group's
pool label (AKS agentpool, EKS nodegroup, GKE node pool, Karpenter NodePool, Cluster API MachineDeployment)
with the template's value. `targetSize` defaults to the nodes it has; above that, the difference is nodes on
their way (upcoming), as the autoscaler counts them. While a group has a node, the autoscaler builds its
template from that node (its first), not from the group's declared template, as its template provider does
(processors/nodeinfosprovider, mixed). A file of Cluster API objects is read by clusterapi.py instead. The
NodeGroup type, and the sanitizing of templates, are in group.py (re-exported here).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from gpufleet.autoscaler.group import TEMPLATE_LABEL, NodeGroup, copy_of, sanitized
from gpufleet.capacity.kubectl import node_from_object
from gpufleet.capacity.model import Node
from gpufleet.config.spelling import did_you_mean
from gpufleet.errors import InputError, one_line
from gpufleet.inputs import read_text

__all__ = ["GROUP_LABEL", "POOL_LABELS", "TEMPLATE_LABEL", "NodeGroup", "copy_of", "members_of", "read_node_groups",
           "sanitized"]

GROUP_LABEL = "gpufleet.dev/node-group"
#: Node labels that name the pool a node belongs to, per platform.
POOL_LABELS = ("kubernetes.azure.com/agentpool", "agentpool", "eks.amazonaws.com/nodegroup",
               "cloud.google.com/gke-nodepool", "karpenter.sh/nodepool", "cluster.x-k8s.io/deployment-name")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_FIELDS = ("name", "minSize", "maxSize", "targetSize", "template")


def members_of(group: str, template: Node, nodes: list[Node]) -> list[str]:
    """The fleet's nodes that belong to the group (module docstring)."""
    labelled = [n.name for n in nodes if n.labels.get(GROUP_LABEL) == group]
    if labelled:
        return labelled
    for key in POOL_LABELS:
        value = template.labels.get(key)
        if value is not None:
            return [n.name for n in nodes if n.labels.get(key) == value and not n.labels.get(TEMPLATE_LABEL)]
    return []


def _int(value: Any, where: str, errors: list[str], least: int = 0) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(f"{where}: {value!r} is not an integer (a count of nodes, {least} or more)")
        return None
    if value < least:
        errors.append(f"{where}: {value} is below {least}")
        return None
    return value


def _template(raw: Any, where: str, group: str, nodes: dict[str, Node], errors: list[str]) -> Node | None:
    if not isinstance(raw, dict):
        errors.append(f"{where}: expected a Node object or {{like: NODE}}, got {type(raw).__name__}")
        return None
    if "like" in raw:
        extra = sorted(set(raw) - {"like"})
        if extra:
            errors.append(f"{where}: `like` copies a node; it takes no other keys (got {', '.join(map(str, extra))})")
            return None
        name = raw["like"]
        node = nodes.get(name) if isinstance(name, str) else None
        if node is None:
            known = ", ".join(sorted(nodes)[:5]) + (", ..." if len(nodes) > 5 else "")
            errors.append(f"{where}.like: no node {name!r} in the fleet (nodes: {known or 'none'})")
            return None
        return sanitized(node, group)
    obj = copy.deepcopy(raw)
    obj.setdefault("metadata", {}).setdefault("name", f"template-node-for-{group}")
    if not isinstance(obj.get("metadata"), dict) or not isinstance(obj.get("status", {}), dict):
        errors.append(f"{where}: metadata and status must be mappings (a Node object)")
        return None
    try:
        node = node_from_object(obj)
    except (AttributeError, TypeError, ValueError) as e:
        errors.append(f"{where}: not a Node object: {one_line(str(e))}")
        return None
    if not node.allocatable and not node.capacity:
        errors.append(f"{where}: the template has no status.allocatable or status.capacity: a node added from it "
                      "would hold nothing")
        return None
    return sanitized(node, group)


def read_node_groups(path: Path | str, nodes: list[Node]) -> list[NodeGroup]:
    """The node groups of a `--node-groups` file; InputError naming every problem at once."""
    try:
        text = read_text(path)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except (yaml.YAMLError, ValueError, RecursionError, OverflowError) as e:
        raise InputError(f"{path}: not YAML: {one_line(str(e))}") from None
    from gpufleet.autoscaler.clusterapi import MAX_SIZE, cluster_api_items, node_groups_from_cluster_api

    objects = cluster_api_items(docs, str(path))
    if objects is not None:
        found = node_groups_from_cluster_api(objects, nodes, str(path))
        if not found:
            raise InputError(f"{path}: no node groups: none of its MachineDeployments or MachineSets has a "
                             f"{MAX_SIZE} annotation above 0")
        return found
    raw = docs[0] if docs else None
    if raw is None:
        raise InputError(f"{path}: empty: expected a list of node groups ({', '.join(_FIELDS)})")
    if isinstance(raw, dict) and isinstance(raw.get("nodeGroups"), list):
        raw = raw["nodeGroups"]
    if not isinstance(raw, list):
        raise InputError(f"{path}: expected a list of node groups ({', '.join(_FIELDS)}), got {type(raw).__name__}")
    by_name = {n.name: n for n in nodes}
    errors: list[str] = []
    groups: list[NodeGroup] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(raw):
        where = f"{path}: [{i}]"
        if not isinstance(entry, dict):
            errors.append(f"{where}: expected a mapping with {', '.join(_FIELDS)}, got {type(entry).__name__}")
            continue
        unknown = [k for k in entry if k not in _FIELDS]
        for key in unknown:
            meant = did_you_mean(str(key), list(_FIELDS))
            hint = f" (did you mean {meant}?)" if meant else ""
            errors.append(f"{where}.{key}: unknown field{hint}; allowed: {', '.join(_FIELDS)}")
        name = entry.get("name")
        if not isinstance(name, str) or not _NAME.match(name) or len(name) > 63:
            errors.append(f"{where}.name: {name!r} is not a node group name (lowercase letters, digits, '-', '.')")
            continue
        if name in seen:
            errors.append(f"{where}.name: {name!r} is also node group [{seen[name]}]")
            continue
        seen[name] = i
        missing = [k for k in ("maxSize", "template") if k not in entry]
        if missing:
            errors.append(f"{where}: {name}: missing {', '.join(missing)}")
            continue
        low = _int(entry.get("minSize", 0), f"{where}.minSize", errors)
        high = _int(entry["maxSize"], f"{where}.maxSize", errors)
        template = _template(entry["template"], f"{where}.template", name, by_name, errors)
        if low is None or high is None or template is None:
            continue
        if high < low:
            errors.append(f"{where}: {name}: maxSize {high} is below minSize {low}")
            continue
        members = members_of(name, template, nodes)
        target = _int(entry.get("targetSize", len(members)), f"{where}.targetSize", errors)
        if target is None:
            continue
        if target > high:
            errors.append(f"{where}.targetSize: {target} is above maxSize {high}")
            continue
        if members:  # the autoscaler templates a group from one of its nodes, while it has one
            template = sanitized(by_name[members[0]], name)
        groups.append(NodeGroup(name, low, high, template, members, max(target, len(members)), str(path)))
    if errors:
        raise InputError("\n".join(one_line(e) for e in errors))
    if not groups:
        raise InputError(f"{path}: no node groups (expected a list of {', '.join(_FIELDS)})")
    return groups
