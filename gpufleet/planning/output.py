"""What `gpufleet plan --out DIR` writes: plan.json and one manifest per Kubernetes resource.

Secrets become "[secret]" and unknown values "[unknown]"; keys are sorted and numbers normalised, so the
same input gives byte-identical files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN

from gpufleet.outdir import write_tree
from gpufleet.planning.engine import SECRET_SIG, SIG_KEY, Plan, PlannedResource

SECRET = "[secret]"
UNKNOWN_TEXT = "[unknown]"
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


def clean(value: Any) -> Any:
    """Plain JSON data: secrets masked, unknowns marked, integral floats as ints (gRPC sends floats)."""
    if isinstance(value, dict):
        if value.get(SIG_KEY) == SECRET_SIG:
            return _mask(value.get("value"))
        return {k: clean(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Unknown) or value == UNKNOWN:
        return UNKNOWN_TEXT
    return value


def _mask(value: Any) -> Any:
    """A secret keeps its shape (so a Secret's stringData stays a mapping and schema-valid), not its values."""
    if isinstance(value, dict) and value.get(SIG_KEY) != SECRET_SIG:
        return {k: _mask(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_mask(v) for v in value]
    return SECRET


def plan_document(plan: Plan) -> dict[str, Any]:
    return {
        "stack": plan.stack,
        "resources": [
            {"type": r.type, "name": r.name, "urn": r.urn, "parent": r.parent, "inputs": clean(r.inputs)}
            for r in plan.resources
        ],
    }


def is_kubernetes_object(r: PlannedResource) -> bool:
    return r.custom and r.type.startswith("kubernetes:") and r.type != "pulumi:providers:kubernetes" \
        and r.type != RELEASE_TYPE and "apiVersion" in r.inputs


def manifest_of(r: PlannedResource) -> dict[str, Any]:
    """The Kubernetes object a resource's inputs describe (apiVersion, kind, metadata first)."""
    body = clean(r.inputs)
    ordered = {k: body.pop(k) for k in ("apiVersion", "kind", "metadata") if k in body}
    return {**ordered, **body}


def release_of(r: PlannedResource) -> dict[str, Any]:
    i = clean(r.inputs)
    return {"kind": "HelmRelease", "name": i.get("name", r.name), "namespace": i.get("namespace"),
            "chart": i.get("chart"), "version": i.get("version"),
            "repo": (i.get("repositoryOpts") or {}).get("repo"), "values": i.get("values", {})}


def _file_name(kind: str, name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{kind.lower()}-{name}") + ".yaml"


def manifest_files(plan: Plan) -> dict[str, dict[str, Any]]:
    """Relative path -> document, one per Kubernetes resource and per Helm release."""
    files: dict[str, dict[str, Any]] = {}
    for r in plan.resources:
        if r.type == RELEASE_TYPE:
            doc = release_of(r)
            path = f"manifests/{doc['namespace'] or '_cluster'}/{_file_name('release', doc['name'])}"
        elif is_kubernetes_object(r):
            doc = manifest_of(r)
            meta = doc.get("metadata") or {}
            file_name = _file_name(doc["kind"], str(meta.get("name", r.name)))
            path = f"manifests/{meta.get('namespace') or '_cluster'}/{file_name}"
        else:
            continue
        files[path] = doc
    return files


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (embedded configs) as readable `|` blocks."""


def _str_presenter(dumper: yaml.SafeDumper, data: str):
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_BlockDumper.add_representer(str, _str_presenter)


def dump_yaml(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_BlockDumper, sort_keys=False, default_flow_style=False, width=100)


def plan_files(plan: Plan) -> dict[str, str]:
    """Relative path -> text of everything `plan --out` writes: plan.json and the manifests."""
    files = {"plan.json": json.dumps(plan_document(plan), indent=2, sort_keys=False) + "\n"}
    files.update((rel, dump_yaml(doc)) for rel, doc in sorted(manifest_files(plan).items()))
    return files


def write_plan(plan: Plan, out: Path, protected: dict[str, Path] | None = None) -> list[Path]:
    """Write plan.json and the manifests as the content of `out` (see gpufleet.outdir: only a directory that
    is new, empty or gpufleet's own output is replaced); returns the files, plan.json first.

    `protected`: directories `out` must not be or contain (default: the current directory)."""
    files = plan_files(plan)
    protected = {"current directory": Path.cwd()} if protected is None else protected
    write_tree(out, files, f"gpufleet plan --stack {plan.stack}", protected)
    return [out / "plan.json", *(out / rel for rel in sorted(files) if rel != "plan.json")]
