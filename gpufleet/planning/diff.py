"""Compare two plan documents (`plan.json`) and describe the change as Markdown for a pull request.

Pure: two plan documents in, Markdown out. Resources are matched by URN; for changed resources every
changed input field is listed with its old and new value. Ordering is stable (sorted by type, then
name, then field path). Secrets are already "[secret]" in plan documents and stay so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpufleet.errors import InputError

MAX_VALUE = 120
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
    return [(p, a.get(p, ABSENT), b.get(p, ABSENT)) for p in sorted(a.keys() | b.keys()) if a.get(p, ABSENT) != b.get(p, ABSENT)]


def _cell(value: Any) -> str:
    if value is ABSENT:
        return "_(absent)_"
    text = json.dumps(value, sort_keys=True)
    if len(text) > MAX_VALUE:
        text = text[: MAX_VALUE - 1] + "…"
    return "`" + text.replace("|", "\\|").replace("`", "'").replace("\n", "\\n") + "`"


def _key(r: dict[str, Any]) -> tuple[str, str, str]:
    return (r["type"], r["name"], r["urn"])


def _title(r: dict[str, Any]) -> str:
    kube_name = (r.get("inputs", {}).get("metadata") or {}).get("name") if isinstance(r.get("inputs"), dict) else None
    suffix = f" ({kube_name})" if kube_name and kube_name != r["name"] else ""
    return f"`{r['type']}` **{r['name']}**{suffix}"


def diff_markdown(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Markdown: a summary line, then added, changed and removed resources."""
    before = {r["urn"]: r for r in old.get("resources", [])}
    after = {r["urn"]: r for r in new.get("resources", [])}
    added = sorted((after[u] for u in after.keys() - before.keys()), key=_key)
    removed = sorted((before[u] for u in before.keys() - after.keys()), key=_key)
    changed = []
    for u in sorted(after.keys() & before.keys(), key=lambda u: _key(after[u])):
        changes = field_changes(before[u].get("inputs") or {}, after[u].get("inputs") or {})
        if changes:
            changed.append((after[u], changes))
    stack = new.get("stack") or old.get("stack") or "?"
    lines = [f"### gpufleet plan: stack `{stack}`", ""]
    if not (added or changed or removed):
        return "\n".join(lines + ["No changes.", ""])
    lines += [f"**{len(added)} to add, {len(changed)} to change, {len(removed)} to remove**", ""]
    if added:
        lines += ["#### Added", "", *(f"- {_title(r)}" for r in added), ""]
    if changed:
        lines += ["#### Changed", ""]
        for r, changes in changed:
            lines += [f"- {_title(r)}", "", "  | field | old | new |", "  |---|---|---|"]
            lines += [f"  | `{p}` | {_cell(a)} | {_cell(b)} |" for p, a, b in changes]
            lines.append("")
    if removed:
        lines += ["#### Removed", "", *(f"- {_title(r)}" for r in removed), ""]
    return "\n".join(lines)


def read_plan_document(base_dir: Path) -> dict[str, Any]:
    """The plan.json of an earlier `gpufleet plan --out BASE_DIR`."""
    path = base_dir / "plan.json"
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: cannot read the base plan ({e}); write it with `gpufleet plan --out {base_dir}`") from e
