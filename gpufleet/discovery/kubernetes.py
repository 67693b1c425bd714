"""Nodes and pods from a Kubernetes API.

`ClusterSource` is the interface (objects in kubectl's camelCase JSON shape); `KubeconfigCluster`
(gpufleet/discovery/live.py, the only module that imports the `kubernetes` client) reads a live API server,
`FileCluster` reads `kubectl get ... -o json` output, `NullCluster` has nothing, and
`gpufleet.discovery.fakes.FakeCluster` serves tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

from gpufleet.errors import InputError, one_line, yaml_problem
from gpufleet.inputs import read_text, template_hint

__all__ = ["ClusterSource", "FileCluster", "NullCluster", "list_items",
           "read_dra", "read_json", "read_list"]


def __getattr__(name: str):
    """The live cluster's names load with it, on first use: reading files needs none of them."""
    if name in ("NON_TERMINAL", "KubeconfigCluster"):
        from gpufleet.discovery import live

        return getattr(live, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ClusterSource(Protocol):
    def nodes(self) -> list[dict]: ...

    def pods(self) -> list[dict]: ...

    def dra(self) -> list[dict]:
        """DeviceClasses, ResourceSlices and ResourceClaims (resource.k8s.io/v1), each with its kind."""
        ...


class NullCluster:
    def nodes(self) -> list[dict]:
        return []

    def pods(self) -> list[dict]:
        return []

    def dra(self) -> list[dict]:
        return []


#: What `kubectl get resourceslices,deviceclasses -o json` / `kubectl get resourceclaims -A -o json` hold.
DRA_LISTED = {"deviceclasses": "DeviceClass", "resourceslices": "ResourceSlice", "resourceclaims": "ResourceClaim"}
DRA_WHAT = ("the output of `kubectl get resourceslices,deviceclasses -o json` or "
            "`kubectl get resourceclaims -A -o json`")


def read_dra(path: Path) -> list[dict]:
    """The DRA objects of a file, read as `check` reads manifests: YAML or JSON, one or more documents, each
    a kubectl List or one object; InputError names each item of another kind."""
    docs = read_documents(path, DRA_WHAT)
    found, errors = [], []
    for n, doc in enumerate(docs, 1):
        where = f"{path}: document {n}" if len(docs) > 1 else str(path)
        if isinstance(doc, dict) and doc.get("kind") in DRA_LISTED.values():
            found.append(doc)
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
            got = _type(doc) if not isinstance(doc, dict) else "an object with no items list"
            errors.append(f"{where}: expected {DRA_WHAT} (a List of DeviceClass, ResourceSlice or "
                          f"ResourceClaim objects, or such objects), got {got}")
            continue
        for i, item in enumerate(doc["items"]):
            kind = item.get("kind") if isinstance(item, dict) else None
            if kind in DRA_LISTED.values():
                found.append(item)
            elif isinstance(item, dict):
                errors.append(f"{where}: items[{i}]: kind: expected DeviceClass, ResourceSlice or "
                              f"ResourceClaim (this file is read as {DRA_WHAT}), got {kind!r}")
            else:
                errors.append(f"{where}: items[{i}]: expected a DRA object, got {_type(item)}")
    if errors:
        raise InputError("\n".join(one_line(e) for e in errors))
    return found


#: `kubectl get <resource>` -> the kind of its items.
KINDS = {"nodes": "Node", "pods": "Pod"}


def _type(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def read_documents(path: Path, what: str) -> list:
    """The documents of a YAML or JSON file (multi-document YAML: each; empty documents left out); InputError
    (one line, naming the file) for a missing, empty or unparsable file."""
    import yaml

    text = _input_text(path, what)
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        docs = [d for d in yaml.load_all(text, Loader=loader) if d is not None]
    except yaml.YAMLError as e:
        raise InputError(f"{path}: not readable as YAML or JSON: {yaml_problem(e)}; expected {what}"
                         f"{template_hint(text)}") from e
    except (ValueError, RecursionError, OverflowError) as e:  # e.g. a date such as 2024-02-30
        raise InputError(f"{path}: not readable as YAML or JSON: {e}; expected {what}"
                         f"{template_hint(text)}") from e
    if not docs:
        raise InputError(f"{path}: no documents; expected {what}")
    return docs


def _input_text(path: Path, what: str) -> str:
    """The text of an input file that must hold `what`; InputError (one line) for a missing or empty one."""
    try:
        text = read_text(path)
    except FileNotFoundError as e:
        raise InputError(f"{path}: no such file") from e
    except IsADirectoryError as e:
        raise InputError(f"{path}: is a directory; expected {what}") from e
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not a text file; expected {what}") from e
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from e
    if not text.strip():
        raise InputError(f"{path}: empty file; expected {what}")
    return text


def read_json(path: Path, what: str) -> object:
    """A JSON file's content; InputError (one line, naming the file) for a missing, empty or non-JSON file."""
    text = _input_text(path, what)
    try:
        return json.loads(text)
    except RecursionError as e:
        raise InputError(f"{path}: JSON nested too deeply; expected {what}") from e
    except json.JSONDecodeError as e:
        if _is_yaml_mapping(text):
            raise InputError(f"{path}: YAML, not JSON; expected {what} (use -o json)") from e
        raise InputError(f"{path}: not JSON ({e.msg} at line {e.lineno}, column {e.colno}); expected {what}") from e


def _is_yaml_mapping(text: str) -> bool:
    import yaml

    try:
        return isinstance(yaml.safe_load(text), dict)
    except Exception:  # any parse failure just means "not YAML either"
        return False


def list_items(doc: object, path: Path, resource: str) -> list[dict]:
    """The objects of a `kubectl get <resource> -o json` document, all of its kind; InputError lists each misfit."""
    kind = KINDS[resource]
    what = f"the output of `kubectl get {resource} -o json`"
    if not isinstance(doc, dict):
        raise InputError(f"{path}: expected {what} (a JSON object), got {_type(doc)}")
    if doc.get("kind") == kind:
        return [doc]
    if "items" not in doc:
        found = ("a List with no items" if doc.get("kind") == "List" else f"kind {doc['kind']!r}"
                 if isinstance(doc.get("kind"), str) else "an object with no kind and no items")
        raise InputError(f"{path}: expected {what} (a List of {kind} objects), got {found}")
    items = doc["items"]
    if not isinstance(items, list):
        raise InputError(f"{path}: items: must be a list, not {_type(items)}")
    errors = []
    for i, item in enumerate(items):
        item_kind = item.get("kind") if isinstance(item, dict) else None
        if not isinstance(item, dict):
            errors.append(f"{path}: items[{i}]: expected a {kind} object, got {_type(item)}")
        elif item_kind is not None and item_kind != kind:  # API list responses leave out each item's kind
            meta = m if isinstance(m := item.get("metadata"), dict) else {}
            name = meta.get("name")
            shown = f"{item_kind}/{name}" if isinstance(item_kind, str) and isinstance(name, str) else f"items[{i}]"
            got = f"a {item_kind}" if isinstance(item_kind, str) else f"kind {item_kind!r}"
            errors.append(f"{path}: {shown}: kind: expected {kind} (this file is read as {what}), got {got}")
    if errors:
        raise InputError("\n".join(one_line(e) for e in errors))
    return items


def read_list(path: Path, kind: str) -> list[dict]:
    """The items of a `kubectl get <kind> -o json` file (a List, or a single object), all of that kind."""
    what = f"the output of `kubectl get {kind} -o json`"
    return list_items(read_json(path, what), path, kind)


class FileCluster:
    """Objects saved with `kubectl get nodes -o json` and `kubectl get pods -A -o json`."""

    def __init__(self, nodes_path: Path, pods_path: Path | None = None, dra_paths: tuple[Path, ...] = ()):
        self.nodes_path, self.pods_path, self.dra_paths = nodes_path, pods_path, tuple(dra_paths)

    def nodes(self) -> list[dict]:
        return read_list(self.nodes_path, "nodes")

    def pods(self) -> list[dict]:
        return read_list(self.pods_path, "pods") if self.pods_path else []

    def dra(self) -> list[dict]:
        found, errors = [], []
        for path in self.dra_paths:
            try:
                found += read_dra(path)
            except InputError as e:
                errors.append(str(e))
        if errors:
            raise InputError("\n".join(errors))
        return found

    def origins(self) -> tuple[str, str]:
        """Where nodes and pods come from, for messages."""
        return str(self.nodes_path), str(self.pods_path)
