"""Nodes grouped by what kube-scheduler's static filters read, so each filter runs once per group.

NodeUnschedulable, TaintToleration and NodeAffinity read a node's `unschedulable` flag, its taints, the
labels a pod's nodeSelector / required or preferred node affinity name, and (for `matchFields`) its name. Nodes equal
in all of these that any workload of the check reads (and in which resources are of unknown size) form
one class: a fleet of 10,000 nodes is a few dozen classes, since `kubernetes.io/hostname` and the other
per-node labels are left out unless a workload selects on them.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from gpufleet.capacity.model import Node
from gpufleet.scheduling.filters import PodTerms, static_failure

_EVERY_LABEL = None


def selected_labels(specs: Iterable[Any]) -> tuple[frozenset | None, bool]:
    """(label keys the pod specs select on, whether any selects on the node name).

    None for the keys means "every label" (a spec whose selector could not be read is treated as reading
    everything, so grouping never hides a difference the filters would see).
    """
    keys: set = set()
    by_name = False
    for spec in specs:
        if not isinstance(spec, dict):
            continue
        selector = spec.get("nodeSelector")
        if isinstance(selector, dict):
            keys.update(selector)
        elif selector:
            return _EVERY_LABEL, True
        affinity = spec.get("affinity")
        if not affinity:
            continue
        try:
            node_affinity = affinity.get("nodeAffinity") or {}
            required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
            preferred = [p.get("preference") or {} for p in
                         node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()]
            for term in [*(required.get("nodeSelectorTerms") or ()), *preferred]:
                for expr in term.get("matchExpressions") or ():
                    keys.add(expr.get("key", ""))
                if term.get("matchFields"):
                    by_name = True
        except (AttributeError, TypeError):
            return _EVERY_LABEL, True
    return frozenset(keys), by_name


class NodeClasses:
    """`of[i]`: the class of node i; `members[c]`: its nodes in input order; `nodes[c]`: one of them."""

    def __init__(self, nodes: Sequence[Node], specs: Iterable[Any]):
        keys, by_name = selected_labels(specs)
        ordered = None if keys is None else sorted(keys, key=repr)
        index: dict[tuple, int] = {}
        self.of: list[int] = []
        self.members: list[list[int]] = []
        self.nodes: list[Node] = []
        for i, node in enumerate(nodes):
            labels = node.labels
            seen = tuple(sorted(labels.items())) if ordered is None else tuple((k, labels.get(k)) for k in ordered)
            key = (node.name if by_name else None, seen, node.unschedulable, node.taints, node.unknown)
            c = index.get(key)
            if c is None:
                c = index[key] = len(self.members)
                self.members.append([])
                self.nodes.append(node)
            self.of.append(c)
            self.members[c].append(i)
        self._static: dict[str, list[str | None]] = {}
        self._shared: dict = {}

    def shared(self, key, compute):
        """A value over the fleet that pod shapes with equal inputs (`key`) share, computed once."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]

    def __len__(self) -> int:
        return len(self.members)

    def static(self, signature: str, terms: PodTerms) -> list[str | None]:
        """Per class, the first failing static filter's reason (None when all pass); cached per pod terms."""
        found = self._static.get(signature)
        if found is None:
            found = self._static[signature] = [static_failure(n, terms) for n in self.nodes]
        return found
