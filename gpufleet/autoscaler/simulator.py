"""Whether a pending pod fits a node the autoscaler would add, as its predicate checker asks the scheduler's
Filter plugins about a template node (simulator/predicatechecker, with the scheduler framework of v1.34).

A `FreshNode` is a copy of a group's template holding the pods the simulation put there: the DaemonSet pods a
new node runs first, then pending pods. The filters asked, in the default profile's order: NodeUnschedulable,
TaintToleration and NodeAffinity (the scheduler's own, gpufleet.scheduler.filters), NodePorts, NodeResourcesFit,
and InterPodAffinity's required anti-affinity between pods on the same new node (`kubernetes.io/hostname`).
Not asked: topology spread, pod affinity to pods elsewhere, DRA claims (docs/autoscaling.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufleet.capacity.model import Node
from gpufleet.capacity.quantity import PODS
from gpufleet.labels import selector_matches
from gpufleet.scheduler.filters import PodTerms, pod_terms, static_failure
from gpufleet.scheduler.plugins.nodeports import REASON as PORTS_REASON
from gpufleet.scheduler.plugins.nodeports import NodePorts, UsedPorts
from gpufleet.scheduler.plugins.noderesources import TOO_MANY_PODS, Fit

HOSTNAME = "kubernetes.io/hostname"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
_FIT, _PORTS = Fit(), NodePorts()
#: What the DaemonSet controller adds to every DaemonSet pod
#: (pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations).
DAEMONSET_TOLERATIONS = tuple(
    {"key": key, "operator": "Exists", "effect": effect} for key, effect in (
        ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule")))


@dataclass(frozen=True)
class PendingPod:
    """What the simulation reads of a pod: its requests, filter terms, host ports, labels and the
    hostname anti-affinity selectors it keeps."""

    requests: dict[str, int]
    terms: PodTerms
    ports: tuple
    labels: dict[str, str]
    anti: tuple[tuple[dict | None, frozenset[str]], ...]
    namespace: str


def pending_pod(spec: dict, namespace: str, labels: dict[str, str], extended_resource_toleration: bool = False,
                daemonset: bool = False) -> PendingPod:
    requests, _ = _FIT.pre_filter(spec)
    terms = pod_terms(spec, requests, extended_resource_toleration)
    if daemonset:
        terms = PodTerms(terms.tolerations + DAEMONSET_TOLERATIONS, terms.node_selector, terms.required_terms)
    anti: list[tuple[dict | None, frozenset[str]]] = []
    affinity = spec.get("affinity") if isinstance(spec.get("affinity"), dict) else {}
    required = ((affinity or {}).get("podAntiAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    for term in required or ():
        if isinstance(term, dict) and term.get("topologyKey") == HOSTNAME:
            names = term.get("namespaces")
            selector = term.get("labelSelector")
            anti.append((selector if isinstance(selector, dict) else None,
                         frozenset(map(str, names)) if isinstance(names, list) and names else frozenset({namespace})))
    return PendingPod(requests, terms, tuple(_PORTS.pre_filter(spec) or ()), dict(labels), tuple(anti), namespace)


@dataclass
class FreshNode:
    """A node of the simulation and the pods put on it. Nodes copied from one template share `static` (what
    the filters that read only the pod and the node say, per pod), so it is asked once per template."""

    node: Node
    static: dict[int, str | None] = field(default_factory=dict)
    requested: dict[str, int] = field(default_factory=dict)
    pods: int = 0
    ports: UsedPorts = field(default_factory=lambda: UsedPorts(1))
    held: list[PendingPod] = field(default_factory=list)
    """The distinct pods on it (for anti-affinity)."""
    full: set[int] = field(default_factory=set)
    """Pods (by id) that no longer fit: a node only gains pods, so it stays so."""
    held_ids: set[int] = field(default_factory=set)
    repelling: bool = False
    """Whether a pod on it has anti-affinity terms (else only a new pod's own terms can repel)."""

    def static_failure(self, pod: PendingPod) -> str | None:
        """The first failing filter that reads only the pod and the node (shared by copies of a template)."""
        return self._static(pod)

    def _static(self, pod: PendingPod) -> str | None:
        key = id(pod)
        if key not in self.static:
            self.static[key] = static_failure(self.node, pod.terms)
        return self.static[key]

    def failure(self, pod: PendingPod) -> list[str]:
        """The reasons the pod does not fit here (the first failing filter's, as the scheduler reports a
        node); [] when it fits."""
        reason = self._static(pod)
        if reason is not None:
            return [reason]
        if pod.ports and self.ports.taken_on(pod.ports, 0):
            return [PORTS_REASON]
        short = []
        alloc = self.node.allocatable
        if self.pods + 1 > alloc.get(PODS, 0) and PODS not in self.node.unknown:
            short.append(TOO_MANY_PODS)
        for r, v in pod.requests.items():
            if v > 0 and r != PODS and r not in self.node.unknown and alloc.get(r, 0) - self.requested.get(r, 0) < v:
                short.append(f"Insufficient {r}")
        if short:
            return short
        if (pod.anti or self.repelling) and any(_repels(pod, other) or _repels(other, pod) for other in self.held):
            return [ANTI_AFFINITY_REASON]
        return []

    def room(self, pod: PendingPod) -> int:
        """How many more copies of the pod fit here, one after another (0 where `failure` is not empty)."""
        if id(pod) in self.full:
            return 0
        n = self._room(pod)
        if not n:
            self.full.add(id(pod))
        return n

    def _room(self, pod: PendingPod) -> int:
        if self._static(pod) is not None:
            return 0
        alloc = self.node.allocatable
        n = alloc.get(PODS, 0) - self.pods if PODS not in self.node.unknown else 1 << 30
        for r, v in pod.requests.items():
            if v > 0 and r != PODS and r not in self.node.unknown:
                n = min(n, (alloc.get(r, 0) - self.requested.get(r, 0)) // v)
        if n <= 0:
            return 0
        if pod.ports:  # its own ports clash with a copy's
            n = 0 if self.ports.taken_on(pod.ports, 0) else 1
        if (pod.anti or self.repelling) and any(_repels(pod, other) or _repels(other, pod) for other in self.held):
            return 0
        if _repels(pod, pod):
            n = min(n, 1)
        return n

    def add(self, pod: PendingPod, copies: int = 1) -> None:
        for r, v in pod.requests.items():
            self.requested[r] = self.requested.get(r, 0) + v * copies
        self.pods += copies
        if pod.ports:
            for _ in range(copies):
                self.ports.add(0, pod.ports)
        if id(pod) not in self.held_ids:
            self.held_ids.add(id(pod))
            self.held.append(pod)
            self.repelling = self.repelling or bool(pod.anti)


class Rooms:
    """How many copies of a pod each of many simulated nodes takes, asked of arrays of what they have free: the
    same answer as `FreshNode.room` node by node, which pods with host ports or anti-affinity (and nodes
    holding such pods) still get. `add` keeps the arrays and the nodes in step."""

    def __init__(self, nodes: list[FreshNode], pods: list[PendingPod]):
        import numpy as np

        self.nodes = nodes
        self.names = sorted({r for p in pods for r, v in p.requests.items() if v > 0 and r != PODS})
        self.free = np.array([[_free(n, r) for r in self.names] + [_free(n, PODS)] for n in nodes],
                             dtype=np.int64).reshape(len(nodes), len(self.names) + 1)
        self.repelling = np.array([n.repelling for n in nodes], dtype=bool)

    def need(self, pod: PendingPod):
        import numpy as np

        return np.array([pod.requests.get(r, 0) for r in self.names] + [1], dtype=np.int64)

    def rooms(self, pod: PendingPod, order):
        """Copies of the pod each node of `order` (indexes, the template's filters passed) takes."""
        import numpy as np

        if pod.ports or pod.anti:
            return np.array([self.nodes[j].room(pod) for j in order.tolist()], dtype=np.int64)
        need = self.need(pod)
        asked = need > 0
        out = (self.free[order][:, asked] // need[asked]).min(axis=1).clip(min=0)
        for at in np.flatnonzero(self.repelling[order] & (out > 0)).tolist():
            out[at] = self.nodes[int(order[at])].room(pod)
        return out

    def add(self, j: int, pod: PendingPod, copies: int) -> None:
        self.nodes[j].add(pod, copies)
        self.free[j] -= self.need(pod) * copies
        self.repelling[j] |= bool(pod.anti)


#: Free room of a resource a node does not report (allocatable unknown): not checked, so never short.
_UNCHECKED = 1 << 50


def _free(node: FreshNode, resource: str) -> int:
    if resource in node.node.unknown:
        return _UNCHECKED
    if resource == PODS:
        return node.node.allocatable.get(PODS, 0) - node.pods
    return node.node.allocatable.get(resource, 0) - node.requested.get(resource, 0)


def round_robin(rooms: list[int], pods: int) -> tuple[list[int], int | None]:
    """Equal pods handed out one a node per round, in this order, while nodes have room, as the simulator's
    predicate runner walks nodes (each search starts at the node after the one the last pod went to):
    (pods per node, the position of the node the last pod went to, None when none went anywhere)."""
    import numpy as np

    room = np.asarray(rooms, dtype=np.int64).reshape(-1)
    if pods >= int(room.sum()):
        top = int(room.max(initial=0))
        at = np.flatnonzero(room == top) if top else np.zeros(0, dtype=np.int64)
        return room.tolist(), (int(at[-1]) if len(at) else None)
    low, high = 0, int(room.max())  # the most full rounds: sum(min(room, rounds)) <= pods
    while low < high:
        mid = (low + high + 1) // 2
        if int(np.minimum(room, mid).sum()) <= pods:
            low = mid
        else:
            high = mid - 1
    take = np.minimum(room, low)
    rest = pods - int(take.sum())
    last = None
    if low:
        full = np.flatnonzero((room >= low) & (room > 0))
        last = int(full[-1]) if len(full) else None
    if rest:
        more = np.flatnonzero(room > low)[:rest]  # one more each, in walk order, for the last part round
        take[more] += 1
        last = int(more[-1])
    return take.tolist(), last


def _repels(pod: PendingPod, other: PendingPod) -> bool:
    return any(other.namespace in names and selector_matches(selector, other.labels) for selector, names in pod.anti)
