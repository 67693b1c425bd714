"""The capacity model: nodes as the scheduler sees them, and the pods already bound to them.

Quantities are integers in the units the scheduler compares: `cpu` in millicores, memory and
ephemeral-storage in bytes, `pods` and extended resources (nvidia.com/gpu, ...) in units.
The JSON form (capacity.json) is described in docs/capacity.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpufleet.capacity.dra import CAPACITY_KEYS, with_kind
from gpufleet.errors import InputError

if TYPE_CHECKING:  # loaded where a node carries GPU facts (NVML, a capacity file of one)
    from gpufleet.discovery.types import GpuFacts

FORMAT = "gpufleet.io/capacity/v1"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def to_json(self) -> dict:
        return {"key": self.key, "value": self.value, "effect": self.effect}


@dataclass
class Node:
    """One node: identity, scheduling facts, allocatable and (optionally) what NVML saw on it."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    allocatable: dict[str, int] = field(default_factory=dict)
    capacity: dict[str, int] = field(default_factory=dict)
    unknown: frozenset[str] = frozenset()
    """Resources whose allocatable is not known (planned nodes without cpu/memory): not checked."""
    container_runtime: str = ""
    kubelet_version: str = ""
    os_image: str = ""
    """status.nodeInfo.osImage, e.g. `Talos (v1.8.3)` (the node-platform rules read it)."""
    kernel_version: str = ""
    gpus: GpuFacts | None = None
    images: tuple[tuple[tuple[str, ...], int], ...] = ()
    """status.images: (names, sizeBytes) per image the node holds (ImageLocality scoring reads them)."""

    def to_json(self) -> dict:
        out = {
            "name": self.name, "labels": self.labels, "taints": [t.to_json() for t in self.taints],
            "unschedulable": self.unschedulable, "allocatable": self.allocatable, "capacity": self.capacity,
            "unknown": sorted(self.unknown), "containerRuntime": self.container_runtime,
            "kubeletVersion": self.kubelet_version, "gpus": self.gpus.to_json() if self.gpus else None,
        }
        if self.os_image or self.kernel_version:
            out.update(osImage=self.os_image, kernelVersion=self.kernel_version)
        if self.images:
            out["images"] = [{"names": list(names), "sizeBytes": size} for names, size in self.images]
        return out

    @classmethod
    def from_json(cls, doc: dict) -> Node:
        if doc.get("gpus"):
            from gpufleet.discovery.types import GpuFacts
        return cls(
            name=doc["name"], labels=dict(doc.get("labels") or {}),
            taints=tuple(Taint(t["key"], t.get("value", ""),
                               t.get("effect", "NoSchedule")) for t in doc.get("taints") or []),
            unschedulable=bool(doc.get("unschedulable", False)),
            allocatable={k: int(v) for k, v in (doc.get("allocatable") or {}).items()},
            capacity={k: int(v) for k, v in (doc.get("capacity") or {}).items()},
            unknown=frozenset(doc.get("unknown") or ()), container_runtime=doc.get("containerRuntime", ""),
            kubelet_version=doc.get("kubeletVersion", ""), os_image=doc.get("osImage", ""),
            kernel_version=doc.get("kernelVersion", ""),
            gpus=GpuFacts.from_json(doc["gpus"]) if doc.get("gpus") else None,
            images=images_of(doc.get("images")),
        )


def images_of(items: Any) -> tuple[tuple[tuple[str, ...], int], ...]:
    """A node's status.images as (names, sizeBytes), skipping entries that are not well formed."""
    out = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        names, size = item.get("names"), item.get("sizeBytes", 0)
        if (isinstance(names, list) and all(isinstance(n, str) for n in names) and isinstance(size, int)
                and not isinstance(size, bool) and size >= 0):
            out.append((tuple(names), size))
    return tuple(out)


@dataclass(frozen=True)
class BoundPod:
    """A non-terminal pod bound to a node, with its effective request."""

    namespace: str
    name: str
    node: str
    requests: dict[str, int]
    nonzero: tuple[int, int] | None = None
    """(cpu, memory) as scoring counts them (a container without a request counts 100m / 200Mi); None:
    derived from `requests`."""
    labels: tuple[tuple[str, str], ...] = ()
    """metadata.labels (pod affinity and topology spread selectors of later pods match them)."""
    ports: tuple[tuple[str, str, int], ...] = ()
    """Host ports it holds, (protocol, host IP, port) (gpufleet.capacity.ports): later pods that want one
    cannot use the node."""
    pod_affinity: dict | None = field(default=None, compare=False)
    """Its spec.affinity's podAffinity and podAntiAffinity, when it has either: a running pod's required
    anti-affinity keeps later pods that it matches out of its domain, and its terms count in their scores."""
    priority: int | None = None
    """spec.priority (the API server resolves it from the class); None: resolved by the check from
    `priority_class` and the PriorityClasses it is given (preemption picks lower-priority pods)."""
    priority_class: str = ""
    """spec.priorityClassName."""
    workload: str = ""
    """The workload that owns it (`Deployment/ns/name`, `Job/...`, `StatefulSet/...`); empty: the pod itself."""
    start: str = ""
    """status.startTime (RFC 3339); empty: not started (preemption counts it as started now)."""
    spec: dict | None = field(default=None, compare=False, repr=False)
    """Its spec as read: what its controller makes a new pod from when preemption evicts it."""

    @property
    def key(self) -> str:
        """The workload key preemption reports it under (the pod's own `Pod/ns/name` without an owner)."""
        return self.workload or f"Pod/{self.namespace}/{self.name}"

    def non_zero(self) -> tuple[int, int]:
        if self.nonzero is not None:
            return self.nonzero
        cpu, memory = self.requests.get("cpu", 0), self.requests.get("memory", 0)
        return (cpu if "cpu" in self.requests else 100), (memory if "memory" in self.requests else 200 * 1024 * 1024)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"namespace": self.namespace, "name": self.name, "node": self.node,
                               "requests": self.requests}
        if self.nonzero is not None:
            out["nonZeroRequests"] = {"cpu": self.nonzero[0], "memory": self.nonzero[1]}
        if self.labels:
            out["labels"] = dict(self.labels)
        if self.ports:
            out["hostPorts"] = [{"protocol": p, "hostIP": ip, "hostPort": port} for p, ip, port in self.ports]
        if self.pod_affinity:
            out["affinity"] = self.pod_affinity
        if self.priority is not None:
            out["priority"] = self.priority
        for name, value in (("priorityClassName", self.priority_class), ("workload", self.workload),
                            ("startTime", self.start)):
            if value:
                out[name] = value
        return out


@dataclass
class Capacity:
    """Everything a check needs: the nodes and the pods that already use them."""

    source: str
    nodes: list[Node]
    pods: list[BoundPod] = field(default_factory=list)
    dra: list[dict] = field(default_factory=list)
    """DRA objects (DeviceClass, ResourceSlice, ResourceClaim of resource.k8s.io/v1) as the API has them."""
    admission: list[dict] = field(default_factory=list)
    """What admission reads before the scheduler (ADMISSION_KINDS: quotas, limit ranges, priority classes,
    Kueue queues and flavors), as the API has them."""
    waiting: dict[str, int] = field(default_factory=dict)
    """Per controller (workload key), its pods not bound to a node yet: a budget without status counts them in
    the controller's scale (gpufleet.capacity.kubectl.waiting_pods)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"format": FORMAT, "source": self.source, "nodes": [n.to_json() for n in self.nodes],
                               "pods": [p.to_json() for p in self.pods]}
        for key, kind in CAPACITY_KEYS.items():
            found = [o for o in self.dra if o.get("kind") == kind]
            if found:
                out[key] = found
        if self.admission:
            out["admission"] = self.admission
        if self.waiting:
            out["waitingPods"] = dict(sorted(self.waiting.items()))
        return out

    @property
    def objects(self) -> list[dict]:
        """What a check reads beside the manifests: the DRA and admission objects."""
        return [*self.dra, *self.admission]

    @classmethod
    def from_json(cls, doc: dict, origin: str = "capacity.json") -> Capacity:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise InputError(f"{origin}: not a capacity file (expected \"format\": \"{FORMAT}\")")
        try:
            return cls(doc.get("source", ""), [Node.from_json(n) for n in doc.get("nodes", [])],
                       [BoundPod(p["namespace"], p["name"], p["node"], {k: int(v) for k, v in p["requests"].items()},
                                 _non_zero(p.get("nonZeroRequests")),
                                 tuple(sorted((str(k), str(v)) for k, v in (p.get("labels") or {}).items())),
                                 tuple((str(h["protocol"]), str(h["hostIP"]), int(h["hostPort"]))
                                       for h in p.get("hostPorts") or ()),
                                 pod_affinity_of(p), _int_or_none(p.get("priority")),
                                 str(p.get("priorityClassName") or ""), str(p.get("workload") or ""),
                                 str(p.get("startTime") or ""))
                        for p in doc.get("pods", [])],
                       [with_kind(o, kind) for key, kind in CAPACITY_KEYS.items() for o in doc.get(key) or ()],
                       _admission(doc.get("admission"), origin),
                       {str(k): int(v) for k, v in (doc.get("waitingPods") or {}).items()})
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            raise InputError(f"{origin}: malformed capacity file: {e}") from e


def pod_affinity_of(spec: Any) -> dict | None:
    """The podAffinity and podAntiAffinity of a pod spec's affinity (None when it has neither)."""
    affinity = spec.get("affinity") if isinstance(spec, dict) else None
    if not isinstance(affinity, dict):
        return None
    kept = {k: affinity[k] for k in ("podAffinity", "podAntiAffinity") if isinstance(affinity.get(k), dict)}
    return kept or None


#: Kinds admission reads (gpufleet.admission): core quotas and limit ranges, priority classes, Kueue; and the
#: PodDisruptionBudgets preemption weighs.
#: What a live discovery records under `admission`: what admission reads, the budgets preemption weighs, the
#: namespaces whose labels namespaceSelectors match, and the Services the default spreading reads.
ADMISSION_KINDS = ("ResourceQuota", "LimitRange", "PriorityClass", "ClusterQueue", "LocalQueue", "ResourceFlavor",
                   "PodDisruptionBudget", "Namespace", "Service")


def _admission(items: Any, origin: str) -> list[dict]:
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(o, dict) and o.get("kind") in ADMISSION_KINDS
                                              for o in items):
        raise InputError(f"{origin}: admission: expected a list of {', '.join(ADMISSION_KINDS)} objects")
    return items


def _int_or_none(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"priority: expected an integer, got {value!r}")
    return value


def _non_zero(doc: Any) -> tuple[int, int] | None:
    if doc is None:
        return None
    return int(doc["cpu"]), int(doc["memory"])
