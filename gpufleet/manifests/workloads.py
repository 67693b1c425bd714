"""Workloads from Kubernetes manifests: the pod template, how many pods are wanted at once, and where."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpufleet.errors import InputError, one_line
from gpufleet.manifests.reading import is_list, load_documents, with_kind

#: Kind -> API group shown in API server errors (`Deployment.apps "x" is invalid: ...`).
CHECKED_KINDS = {"Pod": "", "Deployment": "apps", "ReplicaSet": "apps", "StatefulSet": "apps", "Job": "batch",
                 "CronJob": "batch"}
EXPECTED_MEMORY_ANNOTATION = "gpufleet.io/expected-gpu-memory-mib"


@dataclass
class PodWorkload:
    """A set of identical pods: one Pod, or a controller's pod template times the pods wanted at once."""

    kind: str
    namespace: str
    name: str
    spec: dict[str, Any]
    """The pod spec (camelCase)."""
    replicas: int
    spec_path: str
    """Field path of the pod spec in the object (`spec`, `spec.template.spec`, ...)."""
    annotations: dict[str, str] = field(default_factory=dict)
    counts: tuple[tuple[str, int], ...] = ()
    """The counts the object sets, by field path (`spec.replicas`, `spec.parallelism`, ...)."""
    labels: dict[str, str] = field(default_factory=dict)
    """The pods' labels (what pod affinity and topology spread selectors match)."""
    selector: dict | None = None
    """The controller's `spec.selector` (Deployment, ReplicaSet, StatefulSet): which pods it owns."""

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def object_ref(self) -> str:
        group = CHECKED_KINDS[self.kind]
        return f'{self.kind}.{group} "{self.name}"' if group else f'{self.kind} "{self.name}"'

    @property
    def expected_gpu_memory_mib(self) -> int | None:
        value = self.annotations.get(EXPECTED_MEMORY_ANNOTATION)
        if value is None:
            return None
        mib = expected_mib(value)
        if mib is None:
            raise InputError(f"{self.key}: annotation {EXPECTED_MEMORY_ANNOTATION}={value!r} is not a number of MiB")
        return mib


def expected_mib(value: Any) -> int | None:
    """The expected-GPU-memory annotation as whole MiB, or None when it is not a non-negative number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if math.isfinite(number) and number >= 0 else None


def _count(value: Any, default: int, what: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool):
        raise InputError(f"{what}: {value!r} is not a number")
    try:
        number = float(value)
    except (TypeError, ValueError) as e:
        raise InputError(f"{what}: {value!r} is not a number") from e
    if not math.isfinite(number):
        raise InputError(f"{what}: {value!r} is not a number")
    return int(number)


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


#: Kind -> where its pod template is, and which counts say how many pods run at once.
TEMPLATES = {"Deployment": ("spec", ("replicas",)), "ReplicaSet": ("spec", ("replicas",)),
              "StatefulSet": ("spec", ("replicas",)), "Job": ("spec", ("parallelism", "completions")),
              "CronJob": ("spec.jobTemplate.spec", ("parallelism", "completions"))}


def workload_of(obj: dict) -> PodWorkload | None:
    """The pods a manifest asks for, or None for kinds that are not checked."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in CHECKED_KINDS:
        return None
    meta = _dict(obj.get("metadata"))
    namespace, name = meta.get("namespace") or "default", meta.get("name") or "(unnamed)"
    if kind == "Pod":
        return PodWorkload(kind, str(namespace), str(name), _dict(obj.get("spec")), 1, "spec",
                           dict(_dict(meta.get("annotations"))), labels=_labels(meta))
    where, names = TEMPLATES[kind]
    spec = obj
    for part in where.split("."):
        spec = _dict(spec.get(part))
    template = _dict(spec.get("template"))
    key = f"{kind}/{namespace}/{name}"
    counts = tuple((f"{where}.{n}", _count(spec.get(n), 1, f"{key} {where}.{n}")) for n in names
                   if spec.get(n) is not None)
    given = dict((path.rsplit(".", 1)[1], n) for path, n in counts)
    if kind in ("Job", "CronJob"):
        parallelism = given.get("parallelism", 1)
        wanted = parallelism if "completions" not in given else min(parallelism, given["completions"])
    else:
        wanted = given.get("replicas", 1)
    annotations = dict(_dict(_dict(template.get("metadata")).get("annotations")))
    selector = spec.get("selector") if kind in ("Deployment", "ReplicaSet", "StatefulSet") else None
    return PodWorkload(kind, str(namespace), str(name), _dict(template.get("spec")), wanted,
                       f"{where}.template.spec", annotations, counts, _labels(_dict(template.get("metadata"))),
                       selector if isinstance(selector, dict) else None)


def _labels(meta: dict) -> dict[str, str]:
    return {k: v for k, v in _dict(meta.get("labels")).items() if isinstance(k, str) and isinstance(v, str)}


def flatten(docs: Iterable[Any]) -> Iterable[dict]:
    """Every object of the documents, kubectl Lists expanded."""
    for doc in docs:
        if is_list(doc):
            items = doc.get("items")
            yield from flatten([with_kind(doc, i) for i in items] if isinstance(items, list) else [])
        elif isinstance(doc, dict):
            yield doc


def workloads_of(manifests: Iterable[Any]) -> list[PodWorkload]:
    """The checked workloads among manifest dicts (Lists are expanded), in input order."""
    return [w for w in (workload_of(o) for o in flatten(manifests)) if w is not None]


def load_manifests(paths: Iterable[Path]) -> list[dict]:
    """Every document of the given YAML/JSON files and directories (multi-document YAML), in order.

    Raises InputError listing every file that cannot be read or parsed and every document that is no object.
    """
    docs, errors = load_documents(paths)
    if errors:
        raise InputError("\n".join(one_line(e) for e in errors))
    return [d.obj for d in docs]
