"""Node and Pod objects (kubectl / API JSON shape) into the capacity model.

Objects are checked as they are read: a field of the wrong type, text that is no quantity, a node
without a name or two nodes with one name are errors that name the object and the field (all of them,
one line each), never a node silently read as empty.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gpufleet.capacity.model import BoundPod, Capacity, Node, Taint, images_of, pod_affinity_of
from gpufleet.capacity.ports import host_ports
from gpufleet.capacity.quantity import to_units
from gpufleet.capacity.requests import NON_ZERO_DEFAULTS, pod_requests
from gpufleet.capacity.shape import Shape, pod_spec
from gpufleet.errors import GpufleetError, InputError, one_line

if TYPE_CHECKING:  # the Kubernetes client's side loads only where a live cluster is read
    from gpufleet.discovery.kubernetes import ClusterSource

TERMINAL_PHASES = ("Succeeded", "Failed")
_INT64_MAX = 2**63 - 1


def _quantities(values: dict | None) -> dict[str, int]:
    return {name: to_units(name, v) for name, v in (values or {}).items()}


def node_from_object(obj: dict) -> Node:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    info = status.get("nodeInfo") or {}
    return Node(
        name=meta.get("name", ""), labels=dict(meta.get("labels") or {}),
        taints=tuple(Taint(t.get("key", ""), t.get("value") or "",
                           t.get("effect", "")) for t in spec.get("taints") or ()),
        unschedulable=bool(spec.get("unschedulable", False)),
        allocatable=_quantities(status.get("allocatable")), capacity=_quantities(status.get("capacity")),
        container_runtime=info.get("containerRuntimeVersion", ""), kubelet_version=info.get("kubeletVersion", ""),
        os_image=info.get("osImage", ""), kernel_version=info.get("kernelVersion", ""),
        images=images_of(status.get("images")),
    )


def node_errors(obj: object) -> list[str]:
    """Why a Node object cannot be read (`field: problem` lines); empty when it can."""
    shape = Shape()
    if not isinstance(obj, dict):
        return [f"(object): must be an object, not {type(obj).__name__}"]
    meta = shape.mapping(obj.get("metadata"), "metadata")
    name = meta.get("name")
    if name is None or name == "":
        shape.fail("metadata.name", "Required value: a node needs a name")
    else:
        shape.string(name, "metadata.name")
    shape.strings(meta.get("labels"), "metadata.labels")
    spec = shape.mapping(obj.get("spec"), "spec")
    shape.boolean(spec.get("unschedulable"), "spec.unschedulable")
    for path, taint in shape.objects(spec.get("taints"), "spec.taints"):
        for part in ("key", "value", "effect"):
            shape.string(taint.get(part), f"{path}.{part}")
    status = shape.mapping(obj.get("status"), "status")
    shape.quantities(status.get("allocatable"), "status.allocatable")
    shape.quantities(status.get("capacity"), "status.capacity")
    info = shape.mapping(status.get("nodeInfo"), "status.nodeInfo")
    for part in ("containerRuntimeVersion", "kubeletVersion", "osImage", "kernelVersion"):
        shape.string(info.get(part), f"status.nodeInfo.{part}")
    return shape.errors


def _bound_pod(obj: dict) -> BoundPod | None:
    spec = obj.get("spec") or {}
    node = spec.get("nodeName")
    if not node or (obj.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return None
    meta = obj.get("metadata") or {}
    requests = pod_requests(spec)
    labels = meta.get("labels")
    labels = tuple(sorted((k, v) for k, v in labels.items() if isinstance(k, str) and isinstance(v, str))) \
        if isinstance(labels, dict) else ()
    priority = spec.get("priority")
    priority = priority if isinstance(priority, int) and not isinstance(priority, bool) else None
    class_name = spec.get("priorityClassName")
    start = (obj.get("status") or {}).get("startTime")
    namespace = meta.get("namespace", "default")
    return BoundPod(namespace, meta.get("name", ""), node, requests, non_zero(spec, requests),
                    labels, host_ports(spec), pod_affinity_of(spec), priority,
                    class_name if isinstance(class_name, str) else "", owner_key(meta, namespace, dict(labels)),
                    start if isinstance(start, str) else "", spec)


#: Owner kinds whose pods are named by their own workload key.
_OWNERS = ("Job", "StatefulSet", "DaemonSet")


def owner_key(meta: dict, namespace: str, labels: dict[str, str]) -> str:
    """The workload key of a pod's controller: a ReplicaSet `<d>-<hash>` whose pod carries
    `pod-template-hash: <hash>` is Deployment `<d>`'s; a Job's, StatefulSet's or DaemonSet's its own; a
    ReplicaSet of no Deployment its own; empty for a pod without a controller."""
    owners = meta.get("ownerReferences")
    for ref in owners if isinstance(owners, list) else ():
        if not isinstance(ref, dict) or ref.get("controller") is False:
            continue
        kind, name = ref.get("kind"), ref.get("name")
        if not isinstance(kind, str) or not isinstance(name, str) or not name:
            continue
        if kind == "ReplicaSet":
            suffix = labels.get("pod-template-hash", "")
            if suffix and name.endswith(f"-{suffix}"):
                return f"Deployment/{namespace}/{name[:-len(suffix) - 1]}"
            return f"ReplicaSet/{namespace}/{name}"
        if kind in _OWNERS:
            return f"{kind}/{namespace}/{name}"
    return ""


def non_zero(spec: dict, requests: dict[str, int]) -> tuple[int, int]:
    """(cpu, memory) of a pod as scoring counts them (NodeInfo.NonZeroRequested)."""
    for container in (*(spec.get("containers") or ()), *(spec.get("initContainers") or ())):
        resources = (container.get("resources") if isinstance(container, dict) else None) or {}
        given = {*(resources.get("requests") or ()), *(resources.get("limits") or ())}
        if "cpu" not in given or "memory" not in given:
            found = pod_requests(spec, NON_ZERO_DEFAULTS)
            return found.get("cpu", 0), found.get("memory", 0)
    return requests.get("cpu", 0), requests.get("memory", 0)


def bound_pods(objs: Iterable[dict]) -> list[BoundPod]:
    """Pods bound to a node (spec.nodeName) and not terminal, with their effective requests."""
    return [p for p in (_bound_pod(obj) for obj in objs) if p is not None]


def waiting_pods(objs: Iterable[object]) -> Counter[str]:
    """Per controller (workload key), its pods not bound to a node yet and not terminal: Pending pods, which
    the controller's scale counts (a PodDisruptionBudget in percent or with maxUnavailable reads it)."""
    out: Counter[str] = Counter()
    for obj in objs:
        if not isinstance(obj, dict):
            continue
        spec, meta, status = (obj.get(k) for k in ("spec", "metadata", "status"))
        if not isinstance(meta, dict) or (isinstance(spec, dict) and spec.get("nodeName")) \
                or (isinstance(status, dict) and status.get("phase") in TERMINAL_PHASES):
            continue
        namespace, labels = meta.get("namespace"), meta.get("labels")
        key = owner_key(meta, namespace if isinstance(namespace, str) else "default",
                        {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}
                        if isinstance(labels, dict) else {})
        if key:
            out[key] += 1
    return out


def pod_errors(obj: object) -> list[str]:
    """Why a Pod object cannot be read (`field: problem` lines); empty when it can."""
    if not isinstance(obj, dict):
        return [f"(object): must be an object, not {type(obj).__name__}"]
    shape = Shape()
    meta = shape.mapping(obj.get("metadata"), "metadata")
    shape.string(meta.get("name"), "metadata.name")
    shape.string(meta.get("namespace"), "metadata.namespace")
    shape.string(shape.mapping(obj.get("status"), "status").get("phase"), "status.phase")
    pod_spec(shape, obj.get("spec"), "spec")
    return shape.errors


def _label(kind: str, obj: object, index: int) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    if isinstance(name, str) and name:
        return f"{kind}/{ns}/{name}" if isinstance(ns, str) and ns else f"{kind}/{name}"
    return f"items[{index}]"


def _read_pod(obj: object) -> BoundPod | None:
    """The fast path: a well-formed pod costs no more than reading it; anything odd raises."""
    if not isinstance(obj, dict):
        raise TypeError("not an object")
    pod = _bound_pod(obj)
    if pod is not None:
        if not isinstance(pod.node, str) or not isinstance(pod.name, str) or not isinstance(pod.namespace, str):
            raise TypeError("names must be strings")
        if any(abs(v) > _INT64_MAX for v in pod.requests.values()):
            raise ValueError("a quantity is too large")
    return pod


def read_objects(nodes: list, pods: list, nodes_origin: str,
                 pods_origin: str) -> tuple[list[Node], list[BoundPod], list[str]]:
    """Nodes and bound pods, and one `origin: object: field: problem` line per problem found."""
    errors: list[str] = []
    node_list: list[Node] = []
    seen: dict[str, int] = {}
    for i, obj in enumerate(nodes):
        problems = node_errors(obj)
        label = _label("Node", obj, i)
        if problems:
            errors += [f"{nodes_origin}: {label}: {p}" for p in problems]
            continue
        node = node_from_object(obj)
        if node.name in seen:
            errors.append(f"{nodes_origin}: {label}: metadata.name: Duplicate value: \"{node.name}\" "
                          f"(items[{seen[node.name]}] has the same name; node names are unique)")
            continue
        seen[node.name] = i
        node_list.append(node)
    pod_list: list[BoundPod] = []
    for i, obj in enumerate(pods):
        try:
            pod = _read_pod(obj)
        except (GpufleetError, AttributeError, TypeError, ValueError, ArithmeticError) as e:
            problems = pod_errors(obj) or [f"(object): cannot be read: {e}"]
            errors += [f"{pods_origin}: {_label('Pod', obj, i)}: {p}" for p in problems]
            continue
        if pod is not None:
            pod_list.append(pod)
    return node_list, pod_list, errors


def capacity_from_objects(nodes: list[dict], pods: list[dict], source: str = "kubernetes", *,
                          nodes_origin: str = "nodes", pods_origin: str = "pods") -> Capacity:
    """The capacity model of Node and Pod objects. Raises InputError listing every unreadable object."""
    node_list, pod_list, errors = read_objects(nodes, pods, nodes_origin, pods_origin)
    if errors:
        raise InputError("\n".join(one_line(e) for e in errors))
    return Capacity(source, node_list, pod_list, waiting=dict(waiting_pods(pods)))


def capacity_from_cluster(cluster: ClusterSource, source: str = "kubernetes") -> Capacity:
    """Read nodes and pods from a ClusterSource (live API, files, fake)."""
    origins = getattr(cluster, "origins", lambda: ("nodes", "pods"))()
    return capacity_from_objects(cluster.nodes(), cluster.pods(), source, nodes_origin=origins[0],
                                 pods_origin=origins[1])
