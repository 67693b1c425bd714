"""Node and Pod objects (kubectl / API JSON shape) into the capacity model."""

from __future__ import annotations

from typing import Iterable

from gpufleet.capacity.model import BoundPod, Capacity, Node, Taint
from gpufleet.capacity.quantity import to_units
from gpufleet.capacity.requests import pod_requests
from gpufleet.discovery.kubernetes import ClusterSource
from gpufleet.errors import GpufleetError, InputError

TERMINAL_PHASES = ("Succeeded", "Failed")


def _quantities(values: dict | None) -> dict[str, int]:
    return {name: to_units(name, v) for name, v in (values or {}).items()}


def node_from_object(obj: dict) -> Node:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    info = status.get("nodeInfo") or {}
    return Node(
        name=meta.get("name", ""), labels=dict(meta.get("labels") or {}),
        taints=tuple(Taint(t.get("key", ""), t.get("value") or "", t.get("effect", "")) for t in spec.get("taints") or ()),
        unschedulable=bool(spec.get("unschedulable", False)),
        allocatable=_quantities(status.get("allocatable")), capacity=_quantities(status.get("capacity")),
        container_runtime=info.get("containerRuntimeVersion", ""), kubelet_version=info.get("kubeletVersion", ""),
    )


def bound_pods(objs: Iterable[dict]) -> list[BoundPod]:
    """Pods bound to a node (spec.nodeName) and not terminal, with their effective requests."""
    out = []
    for obj in objs:
        spec = obj.get("spec") or {}
        node = spec.get("nodeName")
        if not node or (obj.get("status") or {}).get("phase") in TERMINAL_PHASES:
            continue
        meta = obj.get("metadata") or {}
        out.append(BoundPod(meta.get("namespace", "default"), meta.get("name", ""), node, pod_requests(spec)))
    return out


def capacity_from_objects(nodes: list[dict], pods: list[dict], source: str = "kubernetes") -> Capacity:
    try:
        return Capacity(source, [node_from_object(n) for n in nodes], bound_pods(pods))
    except GpufleetError:
        raise
    except (AttributeError, TypeError, ValueError) as e:
        raise InputError(f"unexpected shape in the Kubernetes objects: {e}") from e


def capacity_from_cluster(cluster: ClusterSource, source: str = "kubernetes") -> Capacity:
    """Read nodes and pods from a ClusterSource (live API, files, fake)."""
    return capacity_from_objects(cluster.nodes(), cluster.pods(), source)
