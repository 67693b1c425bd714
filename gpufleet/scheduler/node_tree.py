"""The order in which kube-scheduler walks the nodes (pkg/scheduler/backend/cache/node_tree.go).

The scheduler cache adds nodes as its informer lists them, sorted by name (the API server's key order),
into one list per zone; zones keep the order in which their first node arrived. The snapshot's node list
then takes one node from each zone in turn, round-robin, until every zone is used up. A node's zone key
is its region and zone label (the deprecated failure-domain.beta labels first), "" when it has neither.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpufleet.capacity.model import Node

_ZONE = ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")
_REGION = ("failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region")


def _label(labels: dict[str, str], keys: tuple[str, str]) -> str:
    return labels[keys[0]] if keys[0] in labels else labels.get(keys[1], "")


def zone_key(node: Node) -> str:
    """component-helpers' GetZoneKey: region and zone joined with a NUL, or "" when both are empty."""
    zone, region = _label(node.labels, _ZONE), _label(node.labels, _REGION)
    if not zone and not region:
        return ""
    return f"{region}:\x00:{zone}"


def tree_order(nodes: Sequence[Node]) -> list[int]:
    """Indices of `nodes` in the scheduler's list order (nodes sharing a name count once, first wins)."""
    zones: dict[str, list[int]] = {}
    seen: set[str] = set()
    for i in sorted(range(len(nodes)), key=lambda i: nodes[i].name):
        if nodes[i].name in seen:
            continue
        seen.add(nodes[i].name)
        zones.setdefault(zone_key(nodes[i]), []).append(i)
    lists = list(zones.values())
    out: list[int] = []
    for depth in range(max((len(z) for z in lists), default=0)):
        out += [z[depth] for z in lists if depth < len(z)]
    return out
