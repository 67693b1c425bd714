"""A node group as cluster-autoscaler sees it, and the template of a node it adds: the types every source of
node groups shares (a `--node-groups` file, Cluster API objects, a stack's node pools)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufleet.capacity.model import Node

#: Taints the autoscaler drops from a template: its own, the node-condition taints, and startup/status taints
#: (utils/taints SanitizeTaints).
_DROPPED_TAINTS = frozenset({
    "ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler",
    "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/network-unavailable", "node.kubernetes.io/pid-pressure",
    "node.cloudprovider.kubernetes.io/uninitialized", "node.cloudprovider.kubernetes.io/shutdown",
    "cloud.google.com/impending-node-termination", "NodeWithImpairedVolumes",
})
_DROPPED_PREFIXES = ("ignore-taint.cluster-autoscaler.kubernetes.io/",
                     "startup-taint.cluster-autoscaler.kubernetes.io/",
                     "status-taint.cluster-autoscaler.kubernetes.io/")
TEMPLATE_LABEL = "cluster-autoscaler.kubernetes.io/template-node"


@dataclass
class NodeGroup:
    name: str
    min_size: int
    max_size: int
    template: Node
    """The sanitized template: what a node added to the group looks like (before DaemonSet pods)."""
    members: list[str] = field(default_factory=list)
    """The fleet's nodes that belong to the group."""
    target_size: int = 0
    source: str = ""
    """Where the group came from (a file, or a stack's node pool), for messages."""
    gpu_fix: str = ""
    """What to set so that a node added from zero holds GPUs, where the source knows (else every source's fix)."""
    cannot_scale: str = ""
    """Why the autoscaler never adds a node to the group, and the fix; empty when it may."""

    @property
    def upcoming(self) -> int:
        return max(self.target_size - len(self.members), 0)


def sanitized(node: Node, group: str) -> Node:
    """A node of the group as the autoscaler templates it: its own name and hostname label, the template
    label, no transient or autoscaler taints, not cordoned."""
    name = f"template-node-for-{group}"
    labels = {**node.labels, "kubernetes.io/hostname": name, TEMPLATE_LABEL: "true"}
    taints = tuple(t for t in node.taints
                   if t.key not in _DROPPED_TAINTS and not t.key.startswith(_DROPPED_PREFIXES))
    return Node(name=name, labels=labels, taints=taints, unschedulable=False, allocatable=dict(node.allocatable),
                capacity=dict(node.capacity), unknown=node.unknown, images=())


def copy_of(template: Node, name: str) -> Node:
    """A fresh node made from a template (what an added node is, in the simulation)."""
    return Node(name=name, labels={**template.labels, "kubernetes.io/hostname": name}, taints=template.taints,
                allocatable=dict(template.allocatable), capacity=dict(template.capacity), unknown=template.unknown)
