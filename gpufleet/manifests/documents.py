"""Type checks of the manifests `check` reads, so that a bad field is a clear error and not a crash.

`document_errors` type-checks, in the kinds `check` checks, the fields it reads. Every error line names
the file, the object (Kind/namespace/name, or the document number when it has no name) and the field.
"""

from __future__ import annotations

from typing import Any

from gpufleet.capacity.dra import DRA_KINDS, dra_errors, pod_claim_errors
from gpufleet.capacity.shape import INT32, Shape, pod_spec
from gpufleet.manifests.reading import Document
from gpufleet.manifests.workloads import CHECKED_KINDS, EXPECTED_MEMORY_ANNOTATION, TEMPLATES, expected_mib


def document_errors(doc: Document) -> list[str]:
    """Type errors in the fields `check` reads, for the kinds it checks (other kinds: none)."""
    obj = doc.obj
    kind = obj.get("kind")
    if kind in DRA_KINDS:
        return [f"{doc.file}: {doc.label}: {e}" for e in dra_errors(obj)]
    if not isinstance(kind, str) or kind not in CHECKED_KINDS:
        return []
    shape = Shape()
    meta = shape.mapping(obj.get("metadata"), "metadata")
    shape.string(meta.get("name"), "metadata.name")
    shape.string(meta.get("namespace"), "metadata.namespace")
    _annotations(shape, meta.get("annotations"), "metadata.annotations")
    if kind == "Pod":
        pod_spec(shape, obj.get("spec"), "spec")
        if isinstance(obj.get("spec"), dict):
            shape.errors += pod_claim_errors(obj["spec"], "spec")
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
        if isinstance(template.get("spec"), dict):
            shape.errors += pod_claim_errors(template["spec"], f"{where}.template.spec")
    return [f"{doc.file}: {doc.label}: {e}" for e in shape.errors]


def _annotations(shape: Shape, value: Any, path: str) -> None:
    before = len(shape.errors)
    shape.strings(value, path)
    if len(shape.errors) == before and isinstance(value, dict) and EXPECTED_MEMORY_ANNOTATION in value:
        if expected_mib(value[EXPECTED_MEMORY_ANNOTATION]) is None:
            shape.fail(f"{path}[{EXPECTED_MEMORY_ANNOTATION}]",
                       f"{value[EXPECTED_MEMORY_ANNOTATION]!r} is not a number of MiB (e.g. \"20000\")")
