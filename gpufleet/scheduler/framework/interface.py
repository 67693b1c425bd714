"""What a plugin is (pkg/scheduler/framework/interface.go), in gpufleet's array form.

A plugin implements some extension points; the runtime calls only those it has. Every point works on numpy
arrays over node positions (the scheduler's node order), so a cycle costs a few array operations whatever
the fleet's size; what depends only on the pod and one node runs once per node class.

Extension points, in the order a cycle runs them:
- `pre_filter(spec, ...) -> state`: the pod's part the plugin's filter reads (TaintToleration: the
  tolerations; NodeResourcesFit: the requests; NodePorts: the host ports).
- `filter_node(node, terms) -> reason | None`: a filter that reads the pod and the node alone (run once per
  node class; gpufleet.scheduler.classes).
- `filter_nodes(snap, shape, at) -> {reason: mask}`: a filter that reads what is placed on the nodes; `at`
  is the positions (or a slice); `fails_on(snap, shape, i)` is the same for one node.
- `pre_score(shape) -> state | None`: what the score needs from the pod, computed once per pod shape; None
  skips the plugin for that pod (upstream's Skip status).
- `score(snap, state, nodes) -> raw` and `score_one(snap, state, i)`: a score of each node on its own; or
  `raw` (an array over all nodes, from `pre_score`) with `normalize_score(raw_of_window)` for a score that
  is normalised over the scored nodes (NormalizeScore).
- `pre_filter(state, namespace, name, spec)`, `filter_claims(state, needs)` and `reserve(state, needs,
  outcomes, pos)`: a plugin whose Filter reads the cluster's claims and devices (DynamicResources), through
  a state of its own (one per run): its PreFilter, its Filter over many nodes at once (asked last, on the
  nodes that pass the rest) and its Reserve on the chosen node.
- `post_filter(state, pod_state, failures) -> node | None`: PostFilter, after a pod found no node: what the
  plugin does about it (DynamicResources deallocates an idle claim), and the node it nominates, if any.
  The runtime runs them in the profile's order until one nominates a node.
Plugins whose filter and score count other pods (PodTopologySpread, InterPodAffinity) have
`pod_filter(state, snap) -> [(reason, mask)]` and `pod_score(state, snap, window) -> scores | None`, with
`pod_state(spec, namespace, labels, affinity_ok)` as their PreFilter / PreScore.

`reads` is the plugin's signature fragment (upstream's SignPod, extended to nodes): the pod spec fields
and node attributes the plugin reads. Cache keys are built from it (`sign_pod`, `sign_node`; a plugin that
reads only some labels narrows its node fragment with `node_context(specs)`), and
tests/scheduling/test_plugin_reads.py fails when a plugin reads a pod field or a node attribute it does not
declare, or declares one it never reads; a node attribute read through the snapshot's per-node arrays
(allocatable, labels by topology domain, images) counts as read, and is declared as `per_node`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

MAX_NODE_SCORE = 100
"""framework.MaxNodeScore."""


@dataclass(frozen=True)
class Reads:
    """What a plugin reads of a pod and a node."""

    pod: tuple[str, ...] = ()
    """Dotted paths into the pod spec (`affinity.nodeAffinity`); a path covers everything below it."""
    node: tuple[str, ...] = ()
    """Node attributes whose values are the same for every node of a class (they key the node classes)."""
    per_node: tuple[str, ...] = ()
    """Node attributes read through per-position arrays (allocatable, images): never part of a class key."""


def spec_at(spec: Any, path: str) -> Any:
    """The value at a dotted path of a pod spec, a list of values where a step is a list (`containers.image`:
    each container's image); None where a step is missing or not a mapping."""
    return value_at(spec, tuple(path.split(".")))


def value_at(value: Any, steps: tuple[str, ...]) -> Any:
    """`spec_at` with the path already split."""
    for k, step in enumerate(steps):
        if type(value) is not dict:
            if isinstance(value, list):
                return [value_at(item, steps[k:]) for item in value]
            if not isinstance(value, dict):
                return None
        value = value.get(step)
    return value


class Plugin:
    """A scheduler plugin: a name, its reads, and the extension points it implements (module docstring)."""

    name: ClassVar[str] = ""
    reads: ClassVar[Reads] = Reads()

    def sign_pod(self, spec: dict) -> tuple:
        """The plugin's fragment of the pod signature: the values at its declared pod paths."""
        return tuple(repr(spec_at(spec, path)) for path in self.reads.pod)

    def sign_node(self, node: Any, context: Any = None) -> tuple:
        """The plugin's fragment of a node class key; `context`: what the check's pods select on (plugins
        that read only some labels narrow their fragment with it)."""
        return tuple(_hashable(getattr(node, attribute)) for attribute in self.reads.node)


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, set, frozenset)):
        return tuple(_hashable(v) for v in (sorted(value) if isinstance(value, (set, frozenset)) else value))
    return value
