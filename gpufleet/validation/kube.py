"""Validate manifests against the Kubernetes JSON schemas of one version, offline and strictly.

Schemas come from kubernetes-validate (the `-strict` set: unknown fields are errors). Unlike its CLI,
a manifest with no schema is a failure, not a warning: that is an unknown kind, a typo in apiVersion,
or an API the target version removed (extensions/v1beta1 Deployment). Only the custom resources
gpufleet itself writes are skipped, by name (KNOWN_CUSTOM_RESOURCES), plus the Helm release records in
`gpufleet plan` output, which describe a release and are no Kubernetes object.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import jsonschema
import yaml
from kubernetes_validate import utils as kv
from packaging.version import InvalidVersion, Version
from referencing import Registry, Resource

from gpufleet.errors import InputError

#: (API group, kind) of custom resources gpufleet writes (GitOps files) or installs (gpu-operator CRs);
#: no Kubernetes schema exists for them, so they are skipped, and only they.
KNOWN_CUSTOM_RESOURCES = {
    ("argoproj.io", "Application"),
    ("helm.toolkit.fluxcd.io", "HelmRelease"),
    ("source.toolkit.fluxcd.io", "GitRepository"),
    ("source.toolkit.fluxcd.io", "HelmRepository"),
    ("nvidia.com", "ClusterPolicy"),
    ("nvidia.com", "NVIDIADriver"),
}
YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Problem:
    """One problem: which file, which object, which field, and what is wrong."""

    file: str
    obj: str
    path: str
    message: str

    def render(self) -> str:
        return f"{self.file}: {self.obj}: {self.path or '(object)'}: {self.message}"


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML silently keeps the last of duplicate keys; Flux and Argo CD reject such manifests."""


def _mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def schema_version(kube_version: str) -> str:
    """The schema set kubernetes-validate ships for `kube_version`'s minor (e.g. 1.34 -> 1.34.0)."""
    try:
        wanted = Version(kube_version.lstrip("v")).release[:2]
    except InvalidVersion as e:
        raise InputError(f"--kube-version {kube_version!r} is not a version like 1.34") from e
    shipped = sorted(Version(v) for v in kv.all_versions())
    usable = [v for v in shipped if v.release[:2] <= wanted]
    if not usable or wanted > shipped[-1].release[:2]:
        lo, hi = shipped[0].release[:2], shipped[-1].release[:2]
        raise InputError(f"Kubernetes {kube_version} cannot be validated offline; supported: "
                         f"{lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}")
    return str(usable[-1])


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _is_plan_release_record(doc: dict[str, Any]) -> bool:
    return "apiVersion" not in doc and doc.get("kind") == "HelmRelease" and "chart" in doc


def describe(doc: Any, index: int) -> str:
    """Kind/namespace/name of a document, for messages (its position when it has no name)."""
    if not isinstance(doc, dict):
        return f"document {index + 1}"
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    name = meta.get("name", f"(document {index + 1})")
    ns = meta.get("namespace")
    return f"{doc.get('kind', '?')}/{ns + '/' if ns else ''}{name}"


def _schemas(version: str, kind: str, api_version: str) -> tuple[Any, Any] | None:
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    base = f"kubernetes-json-schema/v{version}-local-strict"
    try:
        schema = kv.schema_contents(f"{base}/{kind.lower()}-{api}.json", version)
    except FileNotFoundError:
        return None
    return schema, kv.schema_contents(f"{base}/_definitions.json", version)


def validate_document(doc: Any, version: str, file: str, index: int) -> list[Problem]:
    """Every schema violation of one document (empty when valid or a known custom resource)."""
    obj = describe(doc, index)
    if doc is None:
        return []
    if not isinstance(doc, dict):
        return [Problem(file, obj, "", f"expected a mapping (a Kubernetes object), got {type(doc).__name__}")]
    if _is_plan_release_record(doc):
        return []
    missing = [k for k in ("apiVersion", "kind") if not isinstance(doc.get(k), str)]
    if missing:
        return [Problem(file, obj, k, "required field is missing") for k in missing]
    if (_group(doc["apiVersion"]), doc["kind"]) in KNOWN_CUSTOM_RESOURCES:
        return []
    found = _schemas(version, doc["kind"], doc["apiVersion"])
    if found is None:
        return [Problem(file, obj, "apiVersion", f"Kubernetes {version.rsplit('.', 1)[0]} has no kind "
                        f"{doc['kind']} in {doc['apiVersion']} (unknown kind, or an API that was removed)")]
    schema, defs = found
    registry = Resource.from_contents(defs) @ (Resource.from_contents(schema) @ Registry())
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    return [Problem(file, obj, _path(e.absolute_path), e.message) for e in errors]


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def validate_documents(docs: list[Any], kube_version: str, file: str = "<input>") -> list[Problem]:
    version = schema_version(kube_version)
    problems: list[Problem] = []
    for i, doc in enumerate(docs):
        problems += validate_document(doc, version, file, i)
    return problems


def load_file(path: Path) -> list[Any] | Problem:
    """The documents of a (multi-document) YAML or JSON file; a Problem when it does not parse."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read: {e}") from e
    try:
        return list(yaml.load_all(text, Loader=_UniqueKeyLoader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "(file)"
        return Problem(str(path), where, "", f"not valid YAML: {getattr(e, 'problem', None) or e}")


def expand(paths: list[Path]) -> list[Path]:
    """Files as given; directories searched recursively for *.yaml and *.yml (sorted; so a plan's
    plan.json is left out, while a JSON manifest named explicitly is read: JSON is YAML)."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files += sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in YAML_SUFFIXES)
        elif p.exists():  # a file, or a pipe such as /dev/stdin
            files.append(p)
        else:
            raise InputError(f"{p}: no such file or directory")
    return files


def validate_paths(paths: list[Path], kube_version: str) -> list[Problem]:
    """Every problem in every manifest under `paths`. Raises InputError for unreadable input."""
    version = schema_version(kube_version)
    problems: list[Problem] = []
    for f in expand(paths):
        docs = load_file(f)
        if isinstance(docs, Problem):
            problems.append(docs)
            continue
        for i, doc in enumerate(docs):
            problems += validate_document(doc, version, str(f), i)
    return problems
