"""The parts of Node and Pod objects that the capacity model reads, cut out of each listed page.

A live list page holds whole objects (managedFields, annotations, env, volumes, container statuses); the
capacity model (gpufleet/capacity/kubectl.py: `node_from_object`, `_bound_pod`; gpufleet/capacity/requests.py:
`pod_requests`) reads a few fields of them. Keeping only those fields, page by page, is what keeps a live
read of a large cluster as light as reading kubectl files. A field gpufleet starts to read must be added
here too (tests/discovery/test_live_cluster.py compares the live model with the files' model).

Odd shapes are kept as they are (a `metadata` that is a list stays a list), so the capacity reader reports
them exactly as it reports them in a file.
"""

from __future__ import annotations

from typing import Any

NODE_METADATA = ("name", "labels")
NODE_SPEC = ("taints", "unschedulable")
NODE_STATUS = ("allocatable", "capacity", "nodeInfo", "images")
NODE_INFO = ("containerRuntimeVersion", "kubeletVersion", "osImage", "kernelVersion")
POD_METADATA = ("name", "namespace", "labels", "ownerReferences")
POD_SPEC = ("nodeName", "containers", "initContainers", "overhead", "hostNetwork", "affinity", "priority",
            "priorityClassName")
CONTAINER = ("name", "resources", "restartPolicy", "ports")
POD_STATUS = ("phase", "startTime")
TOP = ("apiVersion", "kind")


def _pick(value: Any, keys: tuple[str, ...]) -> Any:
    return {k: value[k] for k in keys if k in value} if isinstance(value, dict) else value


def _top(obj: dict, parts: dict[str, tuple[str, ...]]) -> dict:
    out = {k: obj[k] for k in TOP if k in obj}
    for part, keys in parts.items():
        if part in obj:
            out[part] = _pick(obj[part], keys)
    return out


def lean_node(obj: Any) -> Any:
    """A Node object with only what the capacity model reads."""
    if not isinstance(obj, dict):
        return obj
    out = _top(obj, {"metadata": NODE_METADATA, "spec": NODE_SPEC, "status": NODE_STATUS})
    status = out.get("status")
    if isinstance(status, dict) and "nodeInfo" in status:
        status["nodeInfo"] = _pick(status["nodeInfo"], NODE_INFO)
    return out


def lean_pod(obj: Any) -> Any:
    """A Pod object with only what the capacity model reads (names, labels, node, requests, phase)."""
    if not isinstance(obj, dict):
        return obj
    out = _top(obj, {"metadata": POD_METADATA, "spec": POD_SPEC, "status": POD_STATUS})
    spec = out.get("spec")
    if isinstance(spec, dict):
        for part in ("containers", "initContainers"):
            if isinstance(spec.get(part), list):
                spec[part] = [_pick(c, CONTAINER) for c in spec[part]]
    return out


def without_managed_fields(obj: Any) -> Any:
    """An object as `kubectl get -o json` shows it: without metadata.managedFields."""
    if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict) and "managedFields" in obj["metadata"]:
        meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
        return {**obj, "metadata": meta}
    return obj
