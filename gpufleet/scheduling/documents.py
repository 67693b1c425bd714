"""Manifest documents with where they came from, and the checks that make them safe to schedule.

`load_documents` reads files and directories (multi-document YAML or JSON, kubectl Lists expanded) and
keeps each object's file and position; `document_errors` type-checks the fields `check` reads in the
kinds it checks. Every error line names the file, the object (Kind/namespace/name, or the document
number when it has no name) and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import yaml

from gpufleet.errors import InputError
from gpufleet.scheduling.manifests import CHECKED_KINDS, EXPECTED_MEMORY_ANNOTATION, TEMPLATES, expected_mib, \
    is_list, manifest_files
from gpufleet.capacity.shape import INT32, Shape, json_type, pod_spec


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


def _parse(path: Path) -> tuple[list[Any], str | None]:
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        return [], f"{path}: not a text file (not UTF-8)"
    except OSError as e:
        return [], f"{path}: cannot read: {e.strerror or e}"
    try:
        return list(yaml.safe_load_all(text)), None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        return [], f"{path}: not readable as YAML{where}: {problem}"
    except (ValueError, RecursionError, OverflowError) as e:  # e.g. a date such as 2024-02-30
        return [], f"{path}: not readable as YAML: {e}"


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
        if isinstance(item, dict) and not is_list(item):
            yield Document(file, index, item, i)
        else:
            errors.append(f"{file}: document {index + 1} items[{i}]: expected a Kubernetes object, "
                          f"got {'a nested List' if isinstance(item, dict) else json_type(item)}")


def load_documents(paths: Iterable[Path]) -> tuple[list[Document], list[str]]:
    """Every object of the given files and directories, in order, and one line per unusable input."""
    docs: list[Document] = []
    errors: list[str] = []
    for root in paths:
        try:
            files = manifest_files(Path(root))
        except InputError as e:
            errors.append(str(e))
            continue
        for path in files:
            parsed, problem = _parse(path)
            if problem:
                errors.append(problem)
            for index, doc in enumerate(parsed):
                docs += _objects(str(path), index, doc, errors)
    return docs, errors


def document_errors(doc: Document) -> list[str]:
    """Type errors in the fields `check` reads, for the kinds it checks (other kinds: none)."""
    obj = doc.obj
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in CHECKED_KINDS:
        return []
    shape = Shape()
    meta = shape.mapping(obj.get("metadata"), "metadata")
    shape.string(meta.get("name"), "metadata.name")
    shape.string(meta.get("namespace"), "metadata.namespace")
    _annotations(shape, meta.get("annotations"), "metadata.annotations")
    if kind == "Pod":
        pod_spec(shape, obj.get("spec"), "spec")
    else:
        where, counts = TEMPLATES[kind]
        spec, path = obj, ""
        for part in where.split("."):
            path = f"{path}.{part}" if path else part
            spec = shape.mapping(spec.get(part), path)
        for name in counts:
            shape.integer(spec.get(name), f"{where}.{name}", INT32)
        template = shape.mapping(spec.get("template"), f"{where}.template")
        tmeta = shape.mapping(template.get("metadata"), f"{where}.template.metadata")
        _annotations(shape, tmeta.get("annotations"), f"{where}.template.metadata.annotations")
        pod_spec(shape, template.get("spec"), f"{where}.template.spec")
    return [f"{doc.file}: {doc.label}: {e}" for e in shape.errors]


def _annotations(shape: Shape, value: Any, path: str) -> None:
    before = len(shape.errors)
    shape.strings(value, path)
    if len(shape.errors) == before and isinstance(value, dict) and EXPECTED_MEMORY_ANNOTATION in value:
        if expected_mib(value[EXPECTED_MEMORY_ANNOTATION]) is None:
            shape.fail(f"{path}[{EXPECTED_MEMORY_ANNOTATION}]",
                       f"{value[EXPECTED_MEMORY_ANNOTATION]!r} is not a number of MiB (e.g. \"20000\")")
