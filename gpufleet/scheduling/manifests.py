"""Workloads from Kubernetes manifests: the pod template, how many pods are wanted at once, and where."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from gpufleet.errors import InputError

#: Kind -> API group shown in API server errors (`Deployment.apps "x" is invalid: ...`).
CHECKED_KINDS = {"Pod": "", "Deployment": "apps", "ReplicaSet": "apps", "StatefulSet": "apps", "Job": "batch"}
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
    """Field path of the pod spec in the object (`spec` or `spec.template.spec`)."""
    annotations: dict[str, str] = field(default_factory=dict)

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
        try:
            return int(float(value))
        except (TypeError, ValueError) as e:
            raise InputError(f"{self.key}: annotation {EXPECTED_MEMORY_ANNOTATION}={value!r} is not a number of MiB") from e


def _count(value: Any, default: int, what: str) -> int:
    if value is None:
        return default
    try:
        return int(float(value))
    except (TypeError, ValueError) as e:
        raise InputError(f"{what}: {value!r} is not a number") from e


def workload_of(obj: dict) -> PodWorkload | None:
    """The pods a manifest asks for, or None for kinds that are not checked."""
    kind = obj.get("kind")
    if kind not in CHECKED_KINDS:
        return None
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace") or "default", meta.get("name") or "(unnamed)"
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return PodWorkload(kind, namespace, name, spec, 1, "spec", dict(meta.get("annotations") or {}))
    template = spec.get("template") or {}
    where = f"{kind}/{namespace}/{name}"
    if kind == "Job":
        parallelism = _count(spec.get("parallelism"), 1, f"{where} spec.parallelism")
        completions = spec.get("completions")
        wanted = parallelism if completions is None else min(parallelism, _count(completions, 1, where))
    else:
        wanted = _count(spec.get("replicas"), 1, f"{where} spec.replicas")
    annotations = dict((template.get("metadata") or {}).get("annotations") or {})
    return PodWorkload(kind, namespace, name, template.get("spec") or {}, wanted, "spec.template.spec", annotations)


def _flatten(docs: Iterable[Any]) -> Iterable[dict]:
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List" or (isinstance(doc, dict) and "items" in doc and "kind" not in doc):
            yield from _flatten(doc.get("items") or [])
        elif isinstance(doc, dict):
            yield doc


def workloads_of(manifests: Iterable[Any]) -> list[PodWorkload]:
    """The checked workloads among manifest dicts (Lists are expanded), in input order."""
    return [w for w in (workload_of(o) for o in _flatten(manifests)) if w is not None]


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json") and p.is_file())
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    return [path]


def load_manifests(paths: Iterable[Path]) -> list[dict]:
    """Every document of the given YAML/JSON files and directories (multi-document YAML), in order."""
    out: list[dict] = []
    for root in paths:
        for path in _files(Path(root)):
            try:
                docs = list(yaml.safe_load_all(path.read_text()))
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
                raise InputError(f"{path}: not readable as YAML: {str(e).splitlines()[0]}") from e
            out += [d for d in docs if d is not None]
    return out
