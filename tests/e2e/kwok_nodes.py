"""Capacity gpufleet reads, as simulated KWOK nodes of a real cluster.

Any capacity source gpufleet reads gives a list of `gpufleet.capacity.model.Node`: kubectl node files and
capacity.json (`nodes_from_file`), a stack's planned pools (`nodes_from_stack`), generated fleets (their
kubectl items, through `nodes_from_items`). `kwok_node` turns one into a Node object with the same labels,
taints, capacity and allocatable, annotated so KWOK manages it; `create_nodes` creates them and sets their
status through the status subresource, and `wait_nodes_ready` waits until KWOK marked them Ready and the node
lifecycle controller lifted the not-ready taint (until then the scheduler places nothing there).
"""

from __future__ import annotations

import time
from pathlib import Path

from gpufleet.capacity.model import Node
from tests.e2e.cluster import KWOK_ANNOTATION, Api, ClusterError

#: What a planned node whose cpu/memory/pods gpufleet does not know (`Node.unknown`) gets: enough that the
#: real scheduler, like gpufleet, decides only on what is known.
UNKNOWN_DEFAULTS = {"cpu": 256_000, "memory": 2 * 1024**4, "pods": 110, "ephemeral-storage": 1024**4}
NOT_READY_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def nodes_from_file(nodes: Path, pods: Path | None = None) -> list[Node]:
    """`kubectl get nodes -o json` output or a capacity.json, read as `gpufleet check --nodes` reads it."""
    from gpufleet.capacity.files import load_capacity

    return load_capacity(nodes, pods).nodes


def nodes_from_stack(stack: str, project: Path) -> list[Node]:
    """The nodes a stack's pools plan (names, labels, taints, allocatable), as `gpufleet check --stack`."""
    from gpufleet.capacity.stack import stack_capacity
    from gpufleet.config.loading import load_stack

    return stack_capacity(load_stack(stack, project).config).nodes


def nodes_from_items(items: list[dict]) -> list[Node]:
    """Node objects (kubectl JSON items, e.g. a generated fleet's), read as gpufleet reads them."""
    from gpufleet.capacity.kubectl import node_from_object

    return [node_from_object(item) for item in items]


def _quantity(name: str, units: int) -> str:
    return f"{units}m" if name == "cpu" else str(units)


def kwok_node(node: Node) -> dict:
    """The Node object for one capacity-model node, KWOK-managed."""
    defaults = {k: v for k, v in UNKNOWN_DEFAULTS.items() if k not in node.allocatable}
    allocatable = {**defaults, **node.allocatable}
    capacity = {**allocatable, **node.capacity}
    labels = {"kubernetes.io/hostname": node.name, **node.labels}  # the kubelet sets the hostname label
    spec: dict = {}
    if node.taints:
        spec["taints"] = [{"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect}
                          for t in node.taints]
    if node.unschedulable:
        spec["unschedulable"] = True
    status = {"allocatable": {k: _quantity(k, v) for k, v in allocatable.items()},
              "capacity": {k: _quantity(k, v) for k, v in capacity.items()}}
    if node.images:
        status["images"] = [{"names": list(names), "sizeBytes": size} for names, size in node.images]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node.name, "labels": labels, "annotations": dict([KWOK_ANNOTATION])},
            "spec": spec, "status": status}


def create_nodes(api: Api, nodes: list[Node]) -> list[dict]:
    """Create the nodes, then set their status (capacity, allocatable, images) through /status: an update of
    the node itself does not keep status."""
    objs = [kwok_node(n) for n in nodes]
    for obj in objs:
        api.ok("POST", "/api/v1/nodes", obj)
        api.ok("PATCH", f"/api/v1/nodes/{obj['metadata']['name']}/status", {"status": obj["status"]},
               content_type="application/merge-patch+json")
    return objs


def _ready(node: dict) -> bool:
    conditions = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions") or []}
    taints = {t["key"] for t in node.get("spec", {}).get("taints") or []}
    return conditions.get("Ready") == "True" and not taints & set(NOT_READY_TAINTS)


def wait_nodes_ready(api: Api, names: list[str], timeout: float = 120) -> None:
    """Wait until every named node is Ready and untainted by the node lifecycle controller."""
    deadline, waiting = time.monotonic() + timeout, set(names)
    while True:
        items = api.ok("GET", "/api/v1/nodes")["items"]
        waiting = set(names) - {n["metadata"]["name"] for n in items if _ready(n)}
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise ClusterError(f"{len(waiting)} KWOK nodes not Ready after {timeout:.0f} s, "
                               f"e.g. {sorted(waiting)[:3]}")
        time.sleep(0.5)


def delete_kwok_nodes(api: Api) -> None:
    """Delete every KWOK-managed node (the pods bound to them are removed by the pod GC controller)."""
    for node in api.ok("GET", "/api/v1/nodes")["items"]:
        if (node["metadata"].get("annotations") or {}).get(KWOK_ANNOTATION[0]) == KWOK_ANNOTATION[1]:
            api.request("DELETE", f"/api/v1/nodes/{node['metadata']['name']}")


def replace_nodes(api: Api, items: list[dict]) -> None:
    """The cluster's KWOK nodes become exactly `items` (`kubectl get nodes -o json` items), all Ready."""
    delete_kwok_nodes(api)
    nodes = nodes_from_items(items)
    create_nodes(api, nodes)
    wait_nodes_ready(api, [n.name for n in nodes])
