"""The chart's values: what GitOps users may change without gpufleet, as values.yaml and its schema.

One tree of `Value`s gives both values.yaml (with helm-docs `# --` comments) and values.schema.json,
whose property schemas come from the config models' own JSON Schema (same bounds, same descriptions).
The schema is self-contained (no remote `$ref`), uses only draft-07 keywords (Helm 3 and 4 both read
it) and allows `global`, which Helm injects when the chart is a dependency of an umbrella chart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from gpufleet.charts.objects import VALUES_SECTION, workload_key
from gpufleet.config.stack import StackConfig
from gpufleet.config.workloads import InferenceService, _Workload
from gpufleet.render import gpu_stack as r
from gpufleet.render.workloads import notebook_token_secret_name

SCHEMA_DRAFT = "http://json-schema.org/draft-07/schema#"
_DROP = {"title", "default"}


@dataclass
class Value:
    key: str
    description: str
    value: Any = None
    schema: dict[str, Any] = field(default_factory=dict)
    children: list[Value] | None = None


def _field_schema(model: type[BaseModel], name: str) -> dict[str, Any]:
    alias = model.model_fields[name].alias or name
    prop = model.model_json_schema(by_alias=True)["properties"][alias]
    return {k: v for k, v in prop.items() if k not in _DROP}


def _bool(key: str, description: str, value: bool = True) -> Value:
    return Value(key, description, value, {"type": "boolean", "description": description})


def _section(key: str, description: str, children: list[Value]) -> Value:
    return Value(key, description, children=children)


def _workload(cfg: StackConfig, w) -> Value:
    items = [_bool("enabled", "Install this workload."),
             Value("image", "Container image (pinned tag or digest).", w.image, _field_schema(_Workload, "image"))]
    if w.kind == "inference":
        items.append(Value("replicas", "Number of pods.", w.replicas, _field_schema(InferenceService, "replicas")))
    if w.kind == "notebook":
        secret = notebook_token_secret_name(w)
        desc = (f"Notebook token, set only at install time (--set notebooks.{workload_key(cfg, w)}.token=...); "
                f"empty: the chart uses Secret {secret} (key token), which you create.")
        items.append(Value("token", desc, "", {"type": "string", "description": desc}))
    return _section(workload_key(cfg, w), f"{w.kind} {w.name} in namespace {w.namespace}.", items)


def value_tree(cfg: StackConfig) -> list[Value]:
    tree = [Value("global", "Values shared with parent charts (set by Helm for umbrella charts).", {},
                  {"type": "object"}),
            _section("namespaces", "The stack's namespaces.",
                     [_bool("create", "Create them; turn off when they exist already.")])]
    if cfg.mode != "platform-managed":
        if r.sharing_configmap(cfg) is not None:
            tree.append(_section("sharingConfig", "The device plugin's sharing profiles (ConfigMap).",
                                 [_bool("create", "Create the ConfigMap the GPU stack reads.")]))
        if r.mig_configmap(cfg) is not None:
            tree.append(_section("migConfig", "The MIG geometries (mig-parted ConfigMap).",
                                 [_bool("create", "Create the ConfigMap mig-manager reads.")]))
            if cfg.mode == "standalone":
                tree.append(_section("migManager", "The standalone mig-manager (no operator runs one).",
                                     [_bool("create", "Create its RBAC and DaemonSet.")]))
    if cfg.claims:
        tree.append(_section("claims", "The named ResourceClaims that workloads share (gpuAllocation dra).",
                             [_bool("create", "Create them; turn off when they exist already.")]))
    for kind, section in VALUES_SECTION.items():
        ws = [_workload(cfg, w) for w in cfg.workloads if w.kind == kind]
        tree.append(_section(section, f"The stack's {section} workloads, by name.", ws))
    return tree


def values(tree: list[Value]) -> dict[str, Any]:
    return {v.key: values(v.children) if v.children is not None else v.value for v in tree}


def schema_of(tree: list[Value]) -> dict[str, Any]:
    props = {}
    for v in tree:
        if v.children is None:
            props[v.key] = v.schema
        else:
            props[v.key] = {"type": "object", "description": v.description, **schema_of(v.children)}
    return {"properties": props, "additionalProperties": False}


def values_schema(cfg: StackConfig, chart: str) -> dict[str, Any]:
    return {"$schema": SCHEMA_DRAFT, "title": f"Values of the {chart} chart", "type": "object",
            **schema_of(value_tree(cfg))}


@dataclass(frozen=True)
class Line:
    pad: str
    key: str
    value: str | None
    description: str


def values_lines(tree: list[Value], depth: int = 0) -> list[Line]:
    """values.yaml, one line per key (what the values.yaml template writes out)."""
    out = []
    for v in tree:
        pad = "  " * depth
        if v.children is None:
            out.append(Line(pad, v.key, json.dumps(v.value), v.description))
        elif not v.children:
            out.append(Line(pad, v.key, "{}", v.description))
        else:
            out.append(Line(pad, v.key, None, v.description))
            out += values_lines(v.children, depth + 1)
    return out
