"""Validate manifests against the Kubernetes JSON schemas of one version, offline and strictly.

Schemas come from kubernetes-validate (the `-strict` set: unknown fields are errors). Unlike its CLI,
a manifest with no schema is a failure, not a warning: that is an unknown kind, a typo in apiVersion,
or an API the target version removed (extensions/v1beta1 Deployment). Only the custom resources
gpufleet itself writes are skipped, by name (KNOWN_CUSTOM_RESOURCES), plus the Helm release records in
`gpufleet plan` output, which describe a release and are no Kubernetes object.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from kubernetes_validate import utils as kv
from packaging.version import InvalidVersion, Version
from referencing import Registry, Resource

from gpufleet.errors import InputError, one_line, yaml_problem
from gpufleet.inputs import is_stdin, read_text, template_hint
from gpufleet.validation.apiserver import object_errors
from gpufleet.validation.fields import show

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
        """One line, whatever the message holds."""
        message = " ".join(self.message.split())
        return one_line(f"{self.file}: {self.obj}: {self.path or '(object)'}: {message}")


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML silently keeps the last of duplicate keys; Flux and Argo CD reject such manifests."""


class _DuplicateKey(yaml.constructor.ConstructorError):
    """A key given twice in one mapping: the file reads, and the manifest has a problem."""

    def __init__(self, problem: str, mark: yaml.Mark):
        super().__init__(None, None, problem, mark)
        self.line = mark.line  # 0-based, as the mark counts


def _mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise _DuplicateKey(f"duplicate key {key!r}", key_node.start_mark)
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


def describe(doc: Any, index: int, item: int | None = None) -> str:
    """Kind/namespace/name of a document, for messages (its position when it has no usable name)."""
    where = f"document {index + 1}" + (f" items[{item}]" if item is not None else "")
    if not isinstance(doc, dict):
        return where
    meta = got if isinstance(got := doc.get("metadata"), dict) else {}
    name, ns, kind = meta.get("name"), meta.get("namespace"), doc.get("kind")
    name = name if isinstance(name, str) and name else f"({where})"
    kind = kind if isinstance(kind, str) and kind else "?"
    return f"{kind}/{ns + '/' if isinstance(ns, str) and ns else ''}{name}"


#: Integer formats the API server decodes into Go int32 / int64: a larger number cannot be decoded.
INT_FORMATS = {"int32": 2**31, "int64": 2**63}
_FORMATS = jsonschema.FormatChecker(formats=())
for _name, _bound in INT_FORMATS.items():
    _FORMATS.checks(_name)(lambda v, b=_bound: not isinstance(v, (int, float)) or isinstance(v, bool)
                           or -b <= v < b)


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "format" and error.validator_value in INT_FORMATS:
        bound = INT_FORMATS[error.validator_value]
        bits = error.validator_value[3:]
        return (f"Invalid value: {show(error.instance)}: must be a {bits}-bit integer, from {-bound} to {bound - 1} "
                "(the API server cannot decode a larger number)")
    return error.message


_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_API_VERSION = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+[a-z0-9]*")


@lru_cache(maxsize=256)
def _validator(version: str, kind: str, api_version: str) -> jsonschema.Draft202012Validator | None:
    """The strict schema validator of one kind (cached: the definitions are large), or None when there is none."""
    if not _KIND.fullmatch(kind) or not _API_VERSION.fullmatch(api_version):
        return None
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    base = f"kubernetes-json-schema/v{version}-local-strict"
    try:
        schema = kv.schema_contents(f"{base}/{kind.lower()}-{api}.json", version)
    except (OSError, ValueError):
        return None
    defs = kv.schema_contents(f"{base}/_definitions.json", version)
    registry = Resource.from_contents(defs) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry, format_checker=_FORMATS)


def validate_document(doc: Any, version: str, file: str, index: int, item: int | None = None) -> list[Problem]:
    """Every schema violation and API-server rule broken by one object (empty when valid or a known custom
    resource). A kubectl `List` is validated item by item."""
    obj = describe(doc, index, item)
    if item is None and isinstance(doc, dict) and doc.get("kind") == "List" and doc.get("apiVersion") == "v1":
        items = doc.get("items")
        if not isinstance(items, list):
            return [Problem(file, obj, "items", f"must be a list of objects, not {type(items).__name__}")]
        return [p for j, it in enumerate(items) for p in validate_document(it, version, file, index, j)]
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
    validator = _validator(version, doc["kind"], doc["apiVersion"])
    if validator is None:
        return [Problem(file, obj, "apiVersion", f"Kubernetes {version.rsplit('.', 1)[0]} has no kind "
                        f"{doc['kind']} in {doc['apiVersion']} (unknown kind, or an API that was removed)")]
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    problems = [Problem(file, obj, _path(e.absolute_path), _message(e)) for e in errors]
    return problems + [Problem(file, obj, e.path, e.body) for e in object_errors(doc)]


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
    """The documents of a (multi-document) YAML or JSON file; a Problem for a key given twice. Raises
    InputError when the file cannot be read or does not parse: there are no objects to check in it."""
    try:
        text = read_text(path)
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: cannot read: not a text file (not UTF-8)") from e
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from e
    try:
        return list(yaml.load_all(text, Loader=_UniqueKeyLoader))
    except _DuplicateKey as e:
        return Problem(str(path), f"line {e.line + 1}", "", f"not valid YAML: {e.problem}")
    except yaml.YAMLError as e:
        hint = template_hint(text)
        raise InputError(f"{path}: cannot read: not valid YAML: {yaml_problem(e)}{hint}") from None
    except (ValueError, TypeError, RecursionError, OverflowError) as e:  # a date such as 2024-02-30, a list as key
        raise InputError(f"{path}: cannot read: not valid YAML: {e}{template_hint(text)}") from None


def expand(paths: list[Path]) -> list[Path]:
    """Files as given; directories searched recursively for *.yaml and *.yml (sorted; so a plan's
    plan.json is left out, while a JSON manifest named explicitly is read: JSON is YAML).
    Raises InputError naming every path that does not exist and every directory without manifests."""
    files: list[Path] = []
    missing: list[str] = []
    for p in paths:
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in YAML_SUFFIXES)
            if not found:
                missing.append(f"{p}: no *.yaml or *.yml files in this directory")
            files += found
        elif p.exists() or is_stdin(p):  # a file, or a pipe such as /dev/stdin or `-`
            files.append(p)
        else:
            missing.append(f"{p}: no such file or directory")
    if missing:
        raise InputError("\n".join(one_line(m) for m in missing))
    return files


def validate_paths(paths: list[Path], kube_version: str) -> list[Problem]:
    """Every problem in every manifest under `paths`. Raises InputError (every unreadable input, one line
    each) when an input cannot be read."""
    version = schema_version(kube_version)
    problems: list[Problem] = []
    unreadable: list[str] = []
    for f in expand(paths):
        try:
            docs = load_file(f)
        except InputError as e:
            unreadable.append(str(e))
            continue
        if isinstance(docs, Problem):
            problems.append(docs)
            continue
        for i, doc in enumerate(docs):
            problems += validate_document(doc, version, str(f), i)
    if unreadable:
        raise InputError("\n".join(one_line(u) for u in unreadable))
    return problems
