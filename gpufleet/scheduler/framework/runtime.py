"""The framework runtime (pkg/scheduler/framework/runtime/framework.go, v1.34.1): a profile's plugins called
at each extension point, in the profile's order, their scores normalised and weighted.

`Framework(profile)` sorts the profile's plugins by the extension points they implement (see
gpufleet.scheduler.framework.interface) once; a pod shape then asks it for
- the static filters (RunFilterPlugins on what the pod and the node alone decide, once per node class);
- the filters over placed pods (RunFilterPlugins on NodePorts, NodeResourcesFit: `run_filter_plugins`);
- the filters and scores that count other pods (`run_pod_filters`, `run_pod_scores`);
- the plugins whose Filter reads the cluster's claims and devices (`claims_plugins`: DynamicResources, asked
  last, on the nodes that pass the rest) and, when a pod found no node, the PostFilter plugins
  (`run_post_filter_plugins`);
- its scores (PreScore once per shape: `pre_score`; Score and NormalizeScore: `base_scores` for the scores a
  node gets on its own, kept between cycles, `window_scores` for those normalised over the scored nodes).
A node reports its first failing filter, except that one plugin reports every reason it fails for (as
NodeResourcesFit names each resource it lacks).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, TypeGuard

import numpy as np

from gpufleet.scheduler.framework.interface import Plugin, value_at

# The extension points below are found on a plugin by the method it defines (`hasattr`); these types say what
# the runtime then calls.


class NodeFilter(Protocol):
    """Filters over placed pods (`filter_nodes` over many nodes, `fails_on` for one)."""

    def filter_nodes(self, snap: Any, shape: Any, at: Any) -> dict[str, np.ndarray]: ...

    def fails_on(self, snap: Any, shape: Any, i: int) -> bool: ...


class PreScore(Protocol):
    def pre_score(self, shape: Any) -> Any: ...


class NodeScore(PreScore, Protocol):
    """Scores a node gets on its own."""

    def score(self, snap: Any, state: Any, nodes: np.ndarray) -> np.ndarray: ...

    def score_one(self, snap: Any, state: Any, i: int) -> int: ...


class NormalizedScore(PreScore, Protocol):
    """Raw scores normalised over the scored nodes."""

    def normalize_score(self, raw: np.ndarray) -> np.ndarray: ...


class ClaimsPlugin(Protocol):
    """A plugin whose Filter reads the cluster's claims and devices (DynamicResources): its state is one per
    run, given at each point; its PreFilter gives the pod's part, its Filter answers many nodes at once (the
    cycle's ExtraFilter) and Reserve records the node chosen."""

    name: str

    def pre_filter(self, state: Any, namespace: str, name: str, spec: dict) -> Any: ...

    def filter_claims(self, state: Any, needs: Any) -> Any: ...

    def reserve(self, state: Any, needs: Any, outcomes: Any, pos: int) -> Any: ...


class PostFilter(Protocol):
    """What a plugin does when a pod found no node: returns the node it nominates, or None."""

    name: str

    def post_filter(self, state: Any, pod_state: Any, failures: dict[str, int]) -> int | None: ...


def _filters_claims(plugin: Plugin) -> TypeGuard[ClaimsPlugin]:
    return hasattr(plugin, "filter_claims")


def _post_filters(plugin: Plugin) -> TypeGuard[PostFilter]:
    return hasattr(plugin, "post_filter")


def _filters_nodes(plugin: Plugin) -> TypeGuard[NodeFilter]:
    return hasattr(plugin, "filter_nodes")


def _pre_scores(plugin: Plugin) -> TypeGuard[PreScore]:
    return hasattr(plugin, "pre_score")


def _normalizes(plugin: PreScore) -> TypeGuard[NormalizedScore]:
    return hasattr(plugin, "normalize_score")


def _scores_alone(plugin: PreScore) -> TypeGuard[NodeScore]:
    """A scorer that does not normalise scores each node on its own (`score`, `score_one`)."""
    return not hasattr(plugin, "normalize_score")


class Scores:
    """One pod shape's score plugins after PreScore: (weight, plugin, state) of those that run."""

    __slots__ = ("own", "normalized")

    def __init__(self, own: list[tuple[int, NodeScore, Any]],
                 normalized: list[tuple[int, NormalizedScore, np.ndarray]]):
        self.own = own
        """Scores of each node on its own (Score)."""
        self.normalized = normalized
        """Raw scores over all nodes, normalised over the scored nodes (NormalizeScore)."""


class Framework:
    def __init__(self, profile: Sequence[tuple[Plugin, int | None]]):
        self.plugins = [plugin for plugin, _ in profile]
        self.weights = {plugin.name: weight for plugin, weight in profile}
        self.static_filters = [p for p in self.plugins if hasattr(p, "filter_node")]
        self.node_filters = [p for p in self.plugins if _filters_nodes(p)]
        self.pod_plugins = [p for p in self.plugins if hasattr(p, "pod_state")]
        self.claims_plugins = [p for p in self.plugins if _filters_claims(p)]
        self.post_filters = [p for p in self.plugins if _post_filters(p)]
        self.scorers = [(weight, p) for p, weight in profile if weight and _pre_scores(p)]
        self.pod_scorers = [(weight, p) for p, weight in profile if weight and hasattr(p, "pod_score")]
        self._node_signers = [(i, p) for i, p in enumerate(self.plugins)
                              if p.reads.node or type(p).sign_node is not Plugin.sign_node]
        self._own_signers = [p for p in self.plugins if type(p).sign_pod is not Plugin.sign_pod]
        paths = [path for p in self.plugins if type(p).sign_pod is Plugin.sign_pod for path in p.reads.pod]
        self._declared = [tuple(path.split(".")) for path in dict.fromkeys(paths)]

    # signatures

    def sign_pod(self, spec: dict) -> tuple:
        """The pod's signature: every plugin's fragment (pods with equal signatures share a pod shape). The
        plugins that sign by their declared paths are read once per path, however many declare it."""
        declared = repr(tuple(value_at(spec, steps) for steps in self._declared))
        return (declared, *(p.sign_pod(spec) for p in self._own_signers))

    def node_contexts(self, specs: Iterable[Any]) -> list[Any]:
        """Per plugin, what the check's pods make it read of nodes (NodeAffinity: the selected labels)."""
        specs = list(specs)
        return [p.node_context(specs) if hasattr(p, "node_context") else None for p in self.plugins]

    def sign_node(self, node: Any, contexts: list[Any]) -> tuple:
        """The node's class key: every plugin's fragment (nodes with equal keys are one class; a plugin that
        reads nothing of a node class adds nothing)."""
        return tuple(p.sign_node(node, contexts[i]) for i, p in self._node_signers)

    # filters

    def run_static_filters(self, node: Any, terms: Any) -> str | None:
        """The first failing filter that reads only the pod and the node, as its reason; None if all pass."""
        for plugin in self.static_filters:
            reason = plugin.filter_node(node, terms)
            if reason is not None:
                return reason
        return None

    def run_filter_plugins(self, snap, shape, at) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(nodes of `at` that pass every filter, per reason the nodes failing it). A node failing one plugin
        never reaches the later ones; `shape.eligible` already holds the static filters' answer."""
        feasible = shape.eligible[at].copy()
        short: dict[str, np.ndarray] = {}
        earlier: list[np.ndarray] = []  # what the plugins before this one failed nodes for
        for plugin in self.node_filters:
            found = plugin.filter_nodes(snap, shape, at)
            if not found:
                continue
            if earlier:
                failed = np.logical_or.reduce(earlier) if len(earlier) > 1 else earlier[0]
                found = {reason: mask & ~failed for reason, mask in found.items()}
            for mask in found.values():
                feasible &= ~mask
            short.update(found)
            earlier += found.values()
        return feasible, short

    def fits_one(self, snap, shape, i: int) -> bool:
        """`run_filter_plugins` for one node."""
        if not shape.eligible[i]:
            return False
        for plugin in self.node_filters:
            if plugin.fails_on(snap, shape, i):
                return False
        return True

    def pod_states(self, spec: dict, namespace: str, labels: dict[str, str], affinity_ok: np.ndarray) -> list:
        """PreFilter of the plugins that count other pods: (plugin, state) each."""
        return [(p, p.pod_state(spec, namespace, labels, affinity_ok)) for p in self.pod_plugins]

    @staticmethod
    def run_pod_filters(states: list, snap) -> list[tuple[str, np.ndarray]]:
        return [found for plugin, state in states for found in plugin.pod_filter(state, snap)]

    def run_post_filter_plugins(self, states: dict[str, Any], pod_states: dict[str, Any],
                                failures: dict[str, int]) -> int | None:
        """RunPostFilterPlugins: after a pod found no node, each PostFilter plugin in the profile's order (the
        run's `states` and the pod's `pod_states` by plugin name; `failures`: nodes per reason) until one
        nominates a node; None when none does."""
        for plugin in self.post_filters:
            nominated = plugin.post_filter(states.get(plugin.name), pod_states.get(plugin.name), failures)
            if nominated is not None:
                return nominated
        return None

    # scores

    def pre_score(self, shape) -> Scores:
        own: list[tuple[int, NodeScore, Any]] = []
        normalized: list[tuple[int, NormalizedScore, np.ndarray]] = []
        for weight, plugin in self.scorers:
            state = plugin.pre_score(shape)
            if state is None:
                continue
            if _normalizes(plugin):
                normalized.append((weight, plugin, state))
            elif _scores_alone(plugin):
                own.append((weight, plugin, state))
        return Scores(own, normalized)

    @staticmethod
    def base_scores(snap, scores: Scores, nodes: np.ndarray) -> np.ndarray:
        """The weighted sum of the scores each node gets on its own."""
        total = None
        for weight, plugin, state in scores.own:
            value = weight * plugin.score(snap, state, nodes)
            if total is None:
                total = value
            else:
                total += value
        return np.zeros(len(nodes), dtype=np.int64) if total is None else total

    @staticmethod
    def base_score_one(snap, scores: Scores, i: int) -> int:
        total = 0
        for weight, plugin, state in scores.own:
            total += weight * plugin.score_one(snap, state, i)
        return total

    @staticmethod
    def window_scores(scores: Scores, window: np.ndarray, base: np.ndarray) -> np.ndarray:
        """`base` plus the normalised scores over the scored nodes (`window`), weighted."""
        for weight, plugin, raw in scores.normalized:
            base = base + weight * plugin.normalize_score(raw[window])
        return base

    def run_pod_scores(self, states: list, snap, window: np.ndarray) -> np.ndarray | None:
        total = None
        by_plugin = dict((id(p), s) for p, s in states)
        for weight, plugin in self.pod_scorers:
            found = plugin.pod_score(by_plugin[id(plugin)], snap, window)
            if found is not None:
                total = weight * found if total is None else total + weight * found
        return total
