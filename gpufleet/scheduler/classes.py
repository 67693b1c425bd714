"""Nodes grouped by what the profile's plugins read of them, so what a pod and one node decide runs once per
group.

A node's class key is every plugin's fragment of it (`Plugin.sign_node`, gathered by the framework):
NodeUnschedulable its `unschedulable` flag, TaintToleration its taints, NodeAffinity the labels some pod of
the check selects on (and its name, when one uses `matchFields`), NodeResourcesFit which resources are of
unknown size. A fleet of 10,000 nodes is a few dozen classes, since `kubernetes.io/hostname` and the other
per-node labels are left out unless a workload selects on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from gpufleet.capacity.model import Node
from gpufleet.scheduler.framework.runtime import Framework


class NodeClasses:
    """`of[i]`: the class of node i; `members[c]`: its nodes in input order; `nodes[c]`: one of them."""

    def __init__(self, nodes: Sequence[Node], specs: Iterable[Any], framework: Framework):
        self.framework = framework
        contexts = framework.node_contexts(specs)
        index: dict[tuple, int] = {}
        self.of: list[int] = []
        self.members: list[list[int]] = []
        self.nodes: list[Node] = []
        for i, node in enumerate(nodes):
            key = framework.sign_node(node, contexts)
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

    def static(self, signature: str, terms) -> list[str | None]:
        """Per class, the first failing static filter's reason (None when all pass); cached per pod terms."""
        found = self._static.get(signature)
        if found is None:
            run = self.framework.run_static_filters
            found = self._static[signature] = [run(n, terms) for n in self.nodes]
        return found
