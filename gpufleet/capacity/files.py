"""The capacity files `gpufleet check` and the policy pack read: `--nodes` and `--pods`.

`--nodes` is `kubectl get nodes -o json` output (Node objects only) or a capacity.json written by
`gpufleet discover`; `--pods` is `kubectl get pods -A -o json` output (Pod objects only). Every problem in
either file is reported at once, one line each, naming the file, the object and the field.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from gpufleet.capacity.dra import CAPACITY_KEYS, labelled_errors, split_dra, with_kind
from gpufleet.capacity.kubectl import read_objects, waiting_pods
from gpufleet.capacity.model import FORMAT, Capacity
from gpufleet.capacity.shape import INT64_MAX, Shape
from gpufleet.discovery.kubernetes import list_items, read_json
from gpufleet.errors import InputError, one_line
from gpufleet.gc_pause import collector_paused

#: Where a capacity check gets its nodes (the policy pack's `capacitySource`) and the config key each needs.
CAPACITY_SOURCES = {"stack": None, "nodesFile": "nodesFile", "kubeconfig": "kubeconfig"}
NODES_WHAT = f"the output of `kubectl get nodes -o json` or a capacity.json ({FORMAT})"
PODS_WHAT = "the output of `kubectl get pods -A -o json`"


@collector_paused()
def load_capacity(nodes: Path, pods: Path | None) -> Capacity:
    """Nodes (and their bound pods) from the files. Raises InputError with one line per problem."""
    errors: list[str] = []
    node_doc = _attempt(errors, read_json, nodes, NODES_WHAT)
    pod_items: list = []
    dra: list[dict] = []
    if pods is not None:
        pod_doc = _attempt(errors, read_json, pods, PODS_WHAT)
        pod_doc, found = _without_dra(pod_doc)
        dra += _checked_dra(found, pods, errors)
        if pod_doc is not None:
            pod_items = _attempt(errors, list_items, pod_doc, pods, "pods") or []
    node_doc, found = _without_dra(node_doc)
    dra += _checked_dra(found, nodes, errors)
    capacity: Capacity | None = None
    node_items: list = []
    if isinstance(node_doc, dict) and "format" in node_doc:
        problems = capacity_file_errors(node_doc)
        errors += [f"{nodes}: {p}" for p in problems]
        if not problems:
            capacity = Capacity.from_json(_filled(node_doc), str(nodes))
            capacity.dra += dra
    elif node_doc is not None:
        node_items = _attempt(errors, list_items, node_doc, nodes, "nodes") or []
    found_nodes, found_pods, problems = read_objects(node_items, pod_items, str(nodes), str(pods))
    errors += problems
    if not errors and not (capacity.nodes if capacity else found_nodes):
        errors.append(f"{nodes}: no nodes: there is nothing to schedule on (expected Node objects)")
    if errors:
        raise InputError("\n".join(one_line(e) for e in errors))
    waiting = waiting_pods(pod_items)
    if capacity is not None:
        capacity.pods += found_pods
        capacity.waiting = dict(Counter(capacity.waiting) + waiting)
        return capacity
    return Capacity("kubernetes", found_nodes, found_pods, dra, waiting=dict(waiting))


def _without_dra(doc: Any) -> tuple[Any, list[dict]]:
    """A kubectl List's DRA objects apart (`kubectl get pods,resourceclaims -A -o json`), and the rest."""
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list) or "format" in doc:
        return doc, []
    rest, dra = split_dra(doc["items"])
    return ({**doc, "items": rest} if rest or not dra else None), dra


def _checked_dra(objects: list[dict], path: Path, errors: list[str]) -> list[dict]:
    for i, obj in enumerate(objects):
        errors += [f"{path}: {e}" for e in labelled_errors(obj, f"items[{i}]")]
    return objects


def _filled(doc: dict) -> dict:
    """Null lists read as empty, as they do in kubectl output."""
    nodes = [{**n, "gpus": ({**n["gpus"], "gpus": n["gpus"].get("gpus") or []} if n.get("gpus") else None)}
             for n in doc.get("nodes") or []]
    return {**doc, "nodes": nodes, "pods": doc.get("pods") or []}


def _attempt(errors: list[str], fn, *args) -> Any:
    try:
        return fn(*args)
    except InputError as e:
        errors += str(e).split("\n")  # already one line per problem
        return None


def capacity_file_errors(doc: dict) -> list[str]:
    """Problems in a capacity.json document (`object: field: problem` lines); empty when it can be read."""
    if doc.get("format") != FORMAT:
        return [f"format: {doc.get('format')!r} is not a capacity format this gpufleet reads (it reads "
                f"{FORMAT!r}); write the file again with `gpufleet discover`"]
    shape = Shape()
    shape.string(doc.get("source"), "source")
    seen: set[str] = set()
    for path, node in shape.objects(doc.get("nodes"), "nodes"):
        name = node.get("name")
        if not isinstance(name, str) or not name:
            shape.fail(f"{path}.name", f"a node needs a name (a non-empty string), not {name!r}")
        elif name in seen:
            shape.fail(f"{path}.name", f"Duplicate value: {name!r} (node names are unique)")
        else:
            seen.add(name)
        shape.strings(node.get("labels"), f"{path}.labels")
        for tpath, taint in shape.objects(node.get("taints"), f"{path}.taints"):
            _required_string(shape, taint.get("key"), f"{tpath}.key")
            for part in ("value", "effect"):
                shape.string(taint.get(part), f"{tpath}.{part}")
        shape.boolean(node.get("unschedulable"), f"{path}.unschedulable")
        for part in ("allocatable", "capacity"):
            _units(shape, node.get(part), f"{path}.{part}")
        shape.string_list(node.get("unknown"), f"{path}.unknown")
        for part in ("containerRuntime", "kubeletVersion", "osImage", "kernelVersion"):
            shape.string(node.get(part), f"{path}.{part}")
        _gpus(shape, node.get("gpus"), f"{path}.gpus")
    for key, kind in CAPACITY_KEYS.items():
        for path, obj in shape.objects(doc.get(key), key):
            if obj.get("kind", kind) != kind:
                shape.fail(f"{path}.kind", f"{key} holds {kind} objects, not {obj.get('kind')!r}")
            else:
                shape.errors += labelled_errors(with_kind(obj, kind), path, path)
    for path, pod in shape.objects(doc.get("pods"), "pods"):
        for part in ("namespace", "name", "node"):
            _required_string(shape, pod.get(part), f"{path}.{part}")
        if not isinstance(pod.get("requests"), dict):
            shape.fail(f"{path}.requests", f"must be an object, not {pod.get('requests')!r}")
        _units(shape, pod.get("requests"), f"{path}.requests")
    for key, n in shape.mapping(doc.get("waitingPods"), "waitingPods").items():
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= INT64_MAX:
            shape.fail(f"waitingPods[{key}]", f"must be a count of pods (an integer, 0 or more), not {n!r}")
    return shape.errors


def _units(shape: Shape, value: Any, path: str) -> None:
    """capacity.json stores compared integers (cpu in millicores, bytes, units), not quantity text."""
    for name, n in shape.mapping(value, path).items():
        if isinstance(n, bool) or not isinstance(n, int) or abs(n) > INT64_MAX:
            shape.fail(f"{path}[{name}]", f"must be an integer (cpu in millicores, memory in bytes), not {n!r}")


def _required_string(shape: Shape, value: Any, path: str) -> None:
    if not isinstance(value, str):
        shape.fail(path, f"must be a string, not {value!r}")


def _gpus(shape: Shape, value: Any, path: str) -> None:
    facts = shape.mapping(value, path)
    shape.string(facts.get("driverVersion"), f"{path}.driverVersion")
    shape.string(facts.get("cudaVersion"), f"{path}.cudaVersion")
    for gpath, gpu in shape.objects(facts.get("gpus"), f"{path}.gpus"):
        for part in ("index", "memoryMiB"):
            if isinstance(gpu.get(part), bool) or not isinstance(gpu.get(part), int):
                shape.fail(f"{gpath}.{part}", f"must be an integer, not {gpu.get(part)!r}")
        _required_string(shape, gpu.get("product"), f"{gpath}.product")
        shape.string(gpu.get("uuid"), f"{gpath}.uuid")
        shape.boolean(gpu.get("migEnabled"), f"{gpath}.migEnabled")
        for mpath, mig in shape.objects(gpu.get("migInstances"), f"{gpath}.migInstances"):
            _required_string(shape, mig.get("profile"), f"{mpath}.profile")
            if isinstance(mig.get("memoryMiB"), bool) or not isinstance(mig.get("memoryMiB"), int):
                shape.fail(f"{mpath}.memoryMiB", f"must be an integer, not {mig.get('memoryMiB')!r}")
