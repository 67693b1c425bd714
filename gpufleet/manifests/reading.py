"""Reading manifest files: every object of YAML/JSON files and directories, with where it came from.

Multi-document YAML and kubectl Lists are expanded; each object keeps its file and position, so that
every later message can name them. Nothing here knows about kinds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpufleet.capacity.shape import json_type
from gpufleet.errors import InputError
from gpufleet.gc_pause import collector_paused
from gpufleet.inputs import is_stdin, read_text, template_hint

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def is_list(doc: Any) -> bool:
    """A kubectl List (`kind: List` or `items` without a kind), or the API server's own list of one kind
    (`kind: NamespaceList`, `PodList`, ... with its items): its items are the objects."""
    if not isinstance(doc, dict):
        return False
    kind = doc.get("kind")
    return kind == "List" or ("items" in doc and "kind" not in doc) or (
        isinstance(kind, str) and kind.endswith("List") and len(kind) > 4 and isinstance(doc.get("items"), list))


def with_kind(doc: dict, item: Any) -> Any:
    """An item of `doc` (a list) with the kind and apiVersion of a typed list (`NamespaceList` -> `Namespace`)
    where it has none: the API server leaves them out of a typed list's items, kubectl puts them in."""
    kind = doc.get("kind")
    if not isinstance(item, dict) or "kind" in item or not isinstance(kind, str) or kind == "List":
        return item
    out = {"kind": kind[:-len("List")], **item}
    if "apiVersion" not in item and isinstance(doc.get("apiVersion"), str):
        out = {"apiVersion": doc["apiVersion"], **out}
    return out


def manifest_files(path: Path) -> list[Path]:
    """A file as given (`-`: standard input); a directory searched recursively for *.yaml, *.yml and *.json
    (sorted)."""
    if is_stdin(path):
        return [path]
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file())
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    return [path]


@dataclass(frozen=True)
class Document:
    file: str
    index: int
    """Position of the YAML document in its file (0-based)."""
    obj: dict
    item: int | None = None
    """Position in a kubectl List's items, when the object came from one."""

    @property
    def where(self) -> str:
        return f"document {self.index + 1}" + (f" items[{self.item}]" if self.item is not None else "")

    @property
    def label(self) -> str:
        """Kind/namespace/name, or the document's position when it has no usable kind and name."""
        return describe(self.obj, self.where)


def describe(obj: Any, where: str) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    kind, name, ns = obj.get("kind") if isinstance(obj, dict) else None, meta.get("name"), meta.get("namespace")
    if not isinstance(kind, str) or not kind or not isinstance(name, str) or not name:
        return where if not isinstance(kind, str) or not kind else f"{kind} ({where})"
    return f"{kind}/{ns}/{name}" if isinstance(ns, str) and ns else f"{kind}/{name}"


# libyaml's loader where PyYAML was built with it: the same safe subset, about 20x faster at fleet size.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse(path: Path) -> tuple[list[Any], str | None]:
    try:
        text = read_text(path)
    except UnicodeDecodeError:
        return [], f"{path}: not a text file (not UTF-8)"
    except OSError as e:
        return [], f"{path}: cannot read: {e.strerror or e}"
    try:
        return list(yaml.load_all(text, Loader=_LOADER)), None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        return [], f"{path}: not readable as YAML{where}: {problem}{template_hint(text)}"
    except (ValueError, RecursionError, OverflowError) as e:  # e.g. a date such as 2024-02-30
        return [], f"{path}: not readable as YAML: {e}{template_hint(text)}"


def _objects(file: str, index: int, doc: Any, errors: list[str]) -> Iterable[Document]:
    if doc is None:
        return
    if not isinstance(doc, dict):
        errors.append(f"{file}: document {index + 1}: expected a Kubernetes object (a mapping with apiVersion and "
                      f"kind), got {json_type(doc)}")
        return
    if not is_list(doc):
        yield Document(file, index, doc)
        return
    items = doc.get("items")
    if not isinstance(items, list):
        errors.append(f"{file}: document {index + 1}: items: must be a list, not {json_type(items)}")
        return
    for i, item in enumerate(items):
        item = with_kind(doc, item)
        if isinstance(item, dict) and not is_list(item):
            yield Document(file, index, item, i)
        else:
            errors.append(f"{file}: document {index + 1} items[{i}]: expected a Kubernetes object, "
                          f"got {'a nested List' if isinstance(item, dict) else json_type(item)}")


@collector_paused()
def load_documents(paths: Iterable[Path]) -> tuple[list[Document], list[str]]:
    """Every object of the given files and directories, in order, and one line per unusable input."""
    docs: list[Document] = []
    errors: list[str] = []
    read: set[Path] = set()  # a file given twice (itself and its directory) is read once
    for root in paths:
        try:
            files = manifest_files(Path(root))
        except InputError as e:
            errors.append(str(e))
            continue
        for path in files:
            if not is_stdin(path):
                if path.resolve() in read:
                    continue
                read.add(path.resolve())
            parsed, problem = _parse(path)
            if problem:
                errors.append(problem)
            for index, doc in enumerate(parsed):
                docs += _objects(str(path), index, doc, errors)
    return docs, errors
