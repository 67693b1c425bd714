"""Compare two plan documents (`plan.json`) and describe the change as Markdown for a pull request.

Pure: two plan documents in, Markdown out. Resources are matched by URN; for changed resources every
changed input field is listed with its old and new value, in full (never shortened, so two different
values never read the same). Multi-line strings (the YAML inside a ConfigMap) are shown as a line diff.
Ordering is stable (sorted by type, then name, then field path). Secrets are already "[secret]" in plan
documents and stay so.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufleet.errors import InputError

ABSENT = object()


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaf path -> value (`spec.template.spec.containers[0].image`); empty dicts/lists are leaves."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k in sorted(value):
            out.update(flatten(value[k], f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


def field_changes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(path, old, new) for every input leaf that differs; ABSENT where a side lacks the field."""
    a, b = flatten(old), flatten(new)
    return [(p, a.get(p, ABSENT),
             b.get(p, ABSENT)) for p in sorted(a.keys() | b.keys()) if a.get(p, ABSENT) != b.get(p, ABSENT)]


def _longest_backtick_run(text: str) -> int:
    return max((len(m) for m in re.findall(r"`+", text)), default=0)


def code_span(text: str) -> str:
    """One-line `text` as a Markdown code span that shows it exactly, whatever backticks or spaces it holds."""
    ticks = "`" * (_longest_backtick_run(text) + 1)
    edges = text[:1] + text[-1:]
    pad = " " if "`" in edges or (text.strip() and text[:1] == " " and text[-1:] == " ") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def code_cell(text: str) -> str:
    """A code span as a Markdown table cell (GFM reads `\\|` as `|` there, even inside code)."""
    return code_span(text).replace("|", "\\|")


MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]<>|~&#!])")


def markdown_text(text: str) -> str:
    """Plain text that Markdown shows as written: punctuation that could start markup is escaped."""
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", text)


def markdown_cell(text: str) -> str:
    """Plain text as one Markdown table cell: shown as written, each line break a <br>."""
    return "<br>".join(markdown_text(line) for line in text.splitlines())


def _cell(value: Any) -> str:
    if value is ABSENT:
        return "_(absent)_"
    return code_cell(json.dumps(value, sort_keys=True))


def _is_text_diff(old: Any, new: Any) -> bool:
    """Multi-line strings (embedded YAML) read best as a line diff; the other side may be absent."""
    sides = [v for v in (old, new) if v is not ABSENT]
    return all(isinstance(v, str) for v in sides) and any("\n" in v for v in sides)


def line_diff(path: str, old: Any, new: Any) -> list[str]:
    """A fenced ```diff block (unified diff) of two multi-line strings; ABSENT reads as empty."""
    a = "" if old is ABSENT else old
    b = "" if new is ABSENT else new
    body = list(difflib.unified_diff(a.splitlines(), b.splitlines(), f"{path} (old)", f"{path} (new)",
                                     lineterm=""))
    fence = "`" * max(3, max((_longest_backtick_run(line) for line in body), default=0) + 1)
    return [f"{fence}diff", *body, fence]


def _key(r: dict[str, Any]) -> tuple[str, str, str]:
    return (r["type"], r["name"], r["urn"])


def _title(r: dict[str, Any]) -> str:
    kube_name = (r.get("inputs", {}).get("metadata") or {}).get("name") if isinstance(r.get("inputs"), dict) else None
    suffix = f" ({kube_name})" if kube_name and kube_name != r["name"] else ""
    return f"`{r['type']}` **{r['name']}**{suffix}"


def _changed_resource(r: dict[str, Any], changes: list[tuple[str, Any, Any]]) -> list[str]:
    """One list item: a table of the changed scalar fields, then a line diff per multi-line field."""
    scalars = [c for c in changes if not _is_text_diff(c[1], c[2])]
    texts = [c for c in changes if _is_text_diff(c[1], c[2])]
    lines = [f"- {_title(r)}", ""]
    if scalars:
        lines += ["  | field | old | new |", "  |---|---|---|"]
        lines += [f"  | {code_cell(p)} | {_cell(a)} | {_cell(b)} |" for p, a, b in scalars]
        lines.append("")
    for p, a, b in texts:
        lines += [f"  {code_span(p)}:", "", *(f"  {line}" if line else "" for line in line_diff(p, a, b)), ""]
    return lines


@dataclass(frozen=True)
class Comparison:
    """What a change does to a stack: resources added, changed (with their field changes) and removed."""

    added: list[dict[str, Any]]
    changed: list[tuple[dict[str, Any], list[tuple[str, Any, Any]]]]
    removed: list[dict[str, Any]]

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)

    @property
    def counts(self) -> str:
        return f"{len(self.added)} to add, {len(self.changed)} to change, {len(self.removed)} to remove"


def compare(old: dict[str, Any], new: dict[str, Any]) -> Comparison:
    before = {r["urn"]: r for r in old.get("resources", [])}
    after = {r["urn"]: r for r in new.get("resources", [])}
    added = sorted((after[u] for u in after.keys() - before.keys()), key=_key)
    removed = sorted((before[u] for u in before.keys() - after.keys()), key=_key)
    changed = []
    for u in sorted(after.keys() & before.keys(), key=lambda u: _key(after[u])):
        changes = field_changes(before[u].get("inputs") or {}, after[u].get("inputs") or {})
        if changes:
            changed.append((after[u], changes))
    return Comparison(added, changed, removed)


def comparison_markdown(c: Comparison) -> list[str]:
    """"No changes." or the counts, then added, changed and removed resources (Markdown lines)."""
    if c.empty:
        return ["No changes.", ""]
    lines = [f"**{c.counts}**", ""]
    if c.added:
        lines += ["#### Added", "", *(f"- {_title(r)}" for r in c.added), ""]
    if c.changed:
        lines += ["#### Changed", ""]
        for r, changes in c.changed:
            lines += _changed_resource(r, changes)
    if c.removed:
        lines += ["#### Removed", "", *(f"- {_title(r)}" for r in c.removed), ""]
    return lines


def diff_markdown(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Markdown: a heading, a summary line, then added, changed and removed resources."""
    stack = new.get("stack") or old.get("stack") or "?"
    return "\n".join([f"### gpufleet plan: stack `{stack}`", "", *comparison_markdown(compare(old, new))])


def read_plan_document(base_dir: Path) -> dict[str, Any]:
    """The plan.json of an earlier `gpufleet plan --out BASE_DIR`."""
    path = base_dir / "plan.json"
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: cannot read the base plan ({e}); "
                         f"write it with `gpufleet plan --out {base_dir}`") from e
