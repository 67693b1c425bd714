"""What a scheduler plugin really reads of a pod and a node, recorded, against what it declares.

`undeclared_reads(plugin)` runs every extension point the plugin implements on a pod spec and nodes that
record each field read (dotted paths into the spec, index-free: `containers.image`; attribute names of the
node), and returns what was read but not declared in `plugin.reads`. A pod shape's values derived from the
spec (requests, host ports, filter terms) count as reads of the fields they come from.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from gpufleet.capacity.kubectl import node_from_object
from gpufleet.capacity.model import BoundPod
from gpufleet.scheduler.classes import NodeClasses
from gpufleet.scheduler.filters import default_framework, pod_terms
from gpufleet.scheduler.plugins.imagelocality import ImageStates
from gpufleet.scheduler.plugins.nodeports import NodePorts
from gpufleet.scheduler.plugins.noderesources.fit import REQUESTS
from gpufleet.scheduler.pod_constraints import PlacedTerms
from gpufleet.scheduler.pods_on_nodes import PodsOnNodes
from gpufleet.scheduler.snapshot import PodShape, Snapshot

_TERM = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "zone", "namespaces": ["ns"]}
#: A pod that uses every field some plugin reads, and some that none may (schedulerName, volumes, env...).
SPEC = {
    "schedulerName": "default-scheduler", "serviceAccountName": "sa", "priorityClassName": "high",
    "volumes": [{"name": "v", "emptyDir": {}}],
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    {"key": "soft", "operator": "Equal", "value": "x", "effect": "PreferNoSchedule"}],
    "nodeSelector": {"pool": "gpu"},
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
                "matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}],
                "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["none"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": {
                "matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}}]},
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_TERM],
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 3, "podAffinityTerm": _TERM}]},
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_TERM],
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 2, "podAffinityTerm": _TERM}]},
    },
    "topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 2,
         "labelSelector": {"matchLabels": {"app": "a"}}, "matchLabelKeys": ["app"]},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "a"}}}],
    "overhead": {"cpu": "10m"},
    "containers": [{"name": "main", "image": "registry/model:1", "env": [{"name": "A", "value": "1"}],
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1},
                                  "limits": {"nvidia.com/gpu": 1}},
                    "ports": [{"containerPort": 80, "hostPort": 8080}]}],
    "initContainers": [{"name": "side", "image": "registry/side:1", "restartPolicy": "Always",
                        "resources": {"requests": {"cpu": "100m"}},
                        "ports": [{"containerPort": 9000, "hostPort": 9000}]}],
}


#: The DRA objects a claims plugin (DynamicResources) is run with: a class, one slice on node a by name and
#: one on the gpu pool by node selector, a template of one device, and a named claim allocated on node a.
_DRIVER = "gpu.nvidia.com"
DRA = [
    {"kind": "DeviceClass", "metadata": {"name": "gpu"},
     "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{_DRIVER}'"}}]}},
    {"kind": "ResourceSlice", "metadata": {"name": "a"},
     "spec": {"driver": _DRIVER, "nodeName": "a", "pool": {"name": "a", "generation": 1, "resourceSliceCount": 1},
              "devices": [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(2)]}},
    {"kind": "ResourceSlice", "metadata": {"name": "shared"},
     "spec": {"driver": _DRIVER, "pool": {"name": "shared", "generation": 1, "resourceSliceCount": 1},
              "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                  {"key": "pool", "operator": "In", "values": ["gpu"]}]}]},
              "devices": [{"name": "gpu-s", "attributes": {"index": {"int": 9}}}]}},
    {"kind": "ResourceClaimTemplate", "metadata": {"name": "one", "namespace": "ns"},
     "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}}}},
    {"kind": "ResourceClaim", "metadata": {"name": "held", "namespace": "ns"},
     "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}},
     "status": {"allocation": {"devices": {"results": [
         {"request": "g", "driver": _DRIVER, "pool": "shared", "device": "gpu-s"}]},
         "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
             {"key": "metadata.name", "operator": "In", "values": ["a"]}]}]}}}},
]
CLAIMS = [{"name": "mine", "resourceClaimTemplateName": "one"}, {"name": "theirs", "resourceClaimName": "held"}]


def _node(name: str, pool: str, zone: str, taints: list[dict], unschedulable: bool = False) -> dict:
    labels = {"pool": pool, "zone": zone, "kubernetes.io/hostname": name}
    return {"metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints, "unschedulable": unschedulable},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "8"},
                       "images": [{"names": ["registry/model:1"], "sizeBytes": 900 * 2**20}]}}


NODES = [node_from_object(n) for n in (
    _node("a", "gpu", "z1", [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                             {"key": "soft", "value": "y", "effect": "PreferNoSchedule"}]),
    _node("b", "gpu", "z2", [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
    _node("c", "cpu", "z1", [], unschedulable=True),
)]


class _Seen:
    def __init__(self) -> None:
        self.pod: set[str] = set()
        self.node: set[str] = set()


def _wrap(value: Any, path: str, seen: _Seen) -> Any:
    if isinstance(value, dict):
        return _Dict(value, path, seen)
    if isinstance(value, list):
        return [_wrap(v, path, seen) for v in value]
    if isinstance(value, tuple):
        return tuple(_wrap(v, path, seen) for v in value)
    return value


class _Dict(dict):
    """A mapping that records the path of every key read; reading all of it records `<path>.*`."""

    def __init__(self, data: dict, path: str, seen: _Seen):
        super().__init__({k: _wrap(v, f"{path}.{k}" if path else str(k), seen) for k, v in data.items()})
        self._path, self._seen = path, seen

    def _note(self, key: str) -> None:
        self._seen.pod.add(f"{self._path}.{key}" if self._path else key)

    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def __contains__(self, key) -> bool:
        self._note(key)
        return super().__contains__(key)

    def _all(self):
        self._note("*")

    def items(self):
        self._all()
        return super().items()

    def keys(self):
        self._all()
        return super().keys()

    def values(self):
        self._all()
        return super().values()

    def __iter__(self):
        self._all()
        return super().__iter__()

    def __repr__(self) -> str:
        self._all()
        return super().__repr__()

    def __eq__(self, other) -> bool:
        self._all()
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


class _Node:
    """A node that records the attributes read."""

    def __init__(self, node, seen: _Seen):
        object.__setattr__(self, "_node", node)
        object.__setattr__(self, "_seen", seen)

    def __getattr__(self, name: str):
        self._seen.node.add(name)
        return getattr(self._node, name)


#: The snapshot's per-node arrays -> the node attribute each is made of (what a plugin reads through them).
_PER_NODE = {"alloc": ("allocatable",), "score_alloc": ("allocatable", "unknown"), "unknown": ("unknown",),
             "domains": ("labels",)}


class _Snap:
    """A snapshot that records the node attributes read through its per-node arrays."""

    def __init__(self, real, seen: _Seen):
        self.__dict__.update(_real=real, _seen=seen)

    def __getattr__(self, name: str):
        if name in _PER_NODE:
            self._seen.node.update(_PER_NODE[name])
        return getattr(self._real, name)


#: Pod shape attributes derived from the spec -> the spec paths they come from.
_DERIVED = {**{a: REQUESTS for a in ("requests", "nonzero", "cpu", "memory", "best_effort", "fit")},
            "ports": NodePorts.reads.pod}
_TERMS = {"tolerations": ("tolerations",), "node_selector": ("nodeSelector",),
          "required_terms": ("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",)}
#: What a plugin may use of a pod shape without reading the pod: the fleet it is computed over.
_FLEET = {"classes", "class_of", "images"}


class _Derived:
    """A pod shape or filter terms whose attributes count as reads of the spec fields they come from."""

    def __init__(self, real, spec: _Dict, classes, derived: dict[str, tuple[str, ...]], seen: _Seen):
        self.__dict__.update(_real=real, _spec=spec, _classes=classes, _derived=derived, _seen=seen)

    def __getattr__(self, name: str):
        if name == "spec":
            return self._spec
        if name == "classes":
            return self._classes
        if name == "terms":
            return _Derived(self._real.terms, self._spec, None, _TERMS, self._seen)
        if name == "images":  # the fleet's images, per node
            self._seen.node.add("images")
        if name in self._derived:
            self._seen.pod.update(self._derived[name])
        elif name not in _FLEET:
            self._seen.pod.add(f"<pod shape>.{name}")
        return getattr(self._real, name)


class _Classes:
    """Node classes whose nodes record reads, computing every shared value afresh."""

    def __init__(self, nodes: list):
        self.nodes = nodes

    @staticmethod
    def shared(key, compute):
        return compute()


def covered(path: str, declared: tuple[str, ...]) -> bool:
    """A read is declared when a declared path covers it, or it is a step on the way to one."""
    if any(path == d or path.startswith(d + ".") for d in declared):
        return True
    return not path.endswith("*") and any(d.startswith(path + ".") for d in declared)


def recorded_reads(plugin, spec: dict = SPEC, nodes=NODES) -> _Seen:
    """Run every extension point the plugin implements on a recording pod and recording nodes."""
    seen = _Seen()
    framework = default_framework()
    classes = NodeClasses(nodes, [spec], framework)
    class_of = np.array(classes.of, dtype=np.int64)
    terms = pod_terms(spec, {}, True)
    real = PodShape(spec, terms, classes, classes.static(repr(terms), terms), ImageStates(nodes), class_of)
    running = BoundPod("ns", "p", nodes[0].name, {"cpu": 1000}, ports=(("TCP", "0.0.0.0", 8080),))
    snap = Snapshot(nodes, [running])
    snap.pods = PodsOnNodes(snap.n, [(0, "ns", {"app": "a"})])
    snap.placed = PlacedTerms(snap.n)
    snap = _Snap(snap, seen)
    rec_spec = _Dict(spec, "", seen)
    rec_nodes = [_Node(n, seen) for n in nodes]
    shape = _Derived(real, rec_spec, _Classes(rec_nodes), _DERIVED, seen)
    rec_terms = _Derived(terms, rec_spec, None, _TERMS, seen)
    everything = np.arange(snap.n)
    if hasattr(plugin, "pre_filter") and not hasattr(plugin, "filter_claims"):  # a claims plugin: below
        given = {"spec": rec_spec, "requests": real.requests, "extended_resource_toleration": True}
        plugin.pre_filter(**{name: given[name] for name in inspect.signature(plugin.pre_filter).parameters})
    context = plugin.node_context([rec_spec]) if hasattr(plugin, "node_context") else None
    for node in rec_nodes:
        plugin.sign_node(node, context)
        if hasattr(plugin, "filter_node"):
            plugin.filter_node(node, rec_terms)
    if hasattr(plugin, "filter_nodes"):
        plugin.filter_nodes(snap, shape, slice(None))
        plugin.fails_on(snap, shape, 0)
    if hasattr(plugin, "pre_score"):
        state = plugin.pre_score(shape)
        if state is not None and hasattr(plugin, "score"):
            plugin.score(snap, state, everything)
            plugin.score_one(snap, state, 0)
        if state is not None and hasattr(plugin, "normalize_score"):
            plugin.normalize_score(state)
    if hasattr(plugin, "pod_state"):
        state = plugin.pod_state(rec_spec, "ns", {"app": "a"}, np.ones(snap.n, dtype=bool))
        plugin.pod_filter(state, snap)
        plugin.pod_score(state, snap, everything)
    if hasattr(plugin, "filter_claims"):
        _run_claims_plugin(plugin, _Dict({**spec, "resourceClaims": CLAIMS}, "", seen), rec_nodes, everything)
    return seen


def _run_claims_plugin(plugin, spec: _Dict, nodes: list, everything: np.ndarray) -> None:
    """PreFilter and Filter on every node (node a passes, b and c are not where the named claim is), Reserve on
    node a; then, on a fresh state, PostFilter with the reasons the other nodes failed for."""
    from gpufleet.capacity.dra import dra_objects
    from gpufleet.scheduler.plugins.dynamicresources.claims import DraState

    for reserve in (True, False):
        state = DraState(dra_objects(DRA))
        state.attach(nodes)
        needs = plugin.pre_filter(state, "ns", "p", spec)
        outcomes = plugin.filter_claims(state, needs)
        codes = outcomes.codes(everything)
        assert codes.tolist()[0] == 0 and all(c > 0 for c in codes.tolist()[1:]), codes
        if reserve:
            plugin.reserve(state, needs, outcomes, 0)
        else:
            plugin.post_filter(state, needs, {outcomes.reason(int(c)): 1 for c in codes.tolist()[1:]})


def undeclared_reads(plugin, spec: dict = SPEC, nodes=NODES) -> tuple[set[str], set[str]]:
    """(pod spec paths, node attributes) the plugin read without declaring them."""
    seen = recorded_reads(plugin, spec, nodes)
    reads = plugin.reads
    pod = {p for p in seen.pod if not covered(p, reads.pod)}
    node = seen.node - set(reads.node) - set(reads.per_node)
    return pod, node
