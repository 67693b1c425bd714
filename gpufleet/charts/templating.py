"""jinja2 on Helm's Go-template text, and manifests turned into Helm templates.

Helm templates are full of `{{ }}`; jinja2 here uses other delimiters so the two never meet:
`<% %>` blocks, `<<= =>>` variables, `<# #>` comments, and StrictUndefined so a misspelt variable is
an error instead of an empty string.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import jinja2

from gpufleet.charts.objects import ChartObject
from gpufleet.planning.output import dump_yaml
from gpufleet.render.labels import standard_labels


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gpufleet.charts", "templates"),
        block_start_string="<%", block_end_string="%>",
        variable_start_string="<<=", variable_end_string="=>>",
        comment_start_string="<#", comment_end_string="#>",
        undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["json"] = lambda v: json.dumps(v)  # a JSON scalar is a YAML scalar, quoted as needed
    return env


def escape_go_template(text: str) -> str:
    """Literal `{{` / `}}` in a manifest (a shell script, a config) must reach the cluster as typed."""
    return (text.replace("{{", "\x00").replace("}}", "\x01")
            .replace("\x00", '{{ "{{" }}').replace("\x01", '{{ "}}" }}'))


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        doc = doc[part]
    doc[path[-1]] = value


def _labels_include(chart: str, labels: dict[str, str]) -> str | None:
    """The labels helper call that yields `labels` (with Helm's managed-by), if they are the standard set."""
    name, component = labels.get("app.kubernetes.io/name"), labels.get("app.kubernetes.io/component")
    if name is None or component is None or labels != standard_labels(name, component, labels.get(
            "app.kubernetes.io/managed-by", "")):
        return None
    return f'include "{chart}.labels" (dict "name" {json.dumps(name)} "component" {json.dumps(component)} "context" $)'


def _label_paths(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    paths: list[tuple[Any, ...]] = [("metadata", "labels")]
    if "template" in doc.get("spec", {}):
        paths.append(("spec", "template", "metadata", "labels"))
    return paths


def template_body(chart: str, obj: ChartObject) -> str:
    """The manifest as Helm template text: static YAML with the substituted values as Go expressions."""
    doc = copy.deepcopy(obj.manifest)
    tokens: dict[str, str] = {}
    blocks: dict[str, str] = {}
    for i, (path, expr) in enumerate(sorted(obj.substitutions.items(), key=str)):
        token = f"HELMSUBST{i}X"
        tokens[token] = expr
        _set(doc, path, token)
    for j, path in enumerate(_label_paths(doc)):
        labels = doc
        for part in path:
            labels = labels.get(part) or {}
        include = _labels_include(chart, labels) if labels else None
        if include is not None:
            token = f"HELMLABELS{j}X"
            blocks[token] = include
            _set(doc, path, token)
    text = escape_go_template(dump_yaml(doc))
    for token, expr in tokens.items():
        text = text.replace(token, expr)

    def block(m: re.Match) -> str:
        indent = len(m.group(1)) + 2
        return f"{m.group(1)}{m.group(2)}:\n{m.group(1)}  {{{{- {blocks[m.group(3)]} | nindent {indent} }}}}"

    text = re.sub(r"^( *)([A-Za-z]+): (HELMLABELS\dX)$", block, text, flags=re.M)
    return text.rstrip("\n")
