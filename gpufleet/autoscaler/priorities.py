"""The priority expander's configuration (expander/priority, cluster-autoscaler-1.34.5): the ConfigMap
`cluster-autoscaler-priority-expander` whose `priorities` key holds a YAML mapping of integer priorities to
lists of regular expressions over node group names.

The expander keeps the options whose group matches the highest priority any option matches (a regular
expression matches anywhere in the name, as Go's regexp does unanchored); where no option matches any, it keeps
them all. The expressions are RE2, the syntax of Go's regexp, checked with Google's RE2 library: an
expression RE2 refuses makes the autoscaler ignore the whole configuration, so gpufleet refuses it (exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpufleet.errors import InputError, one_line
from gpufleet.inputs import read_text

CONFIGMAP = "cluster-autoscaler-priority-expander"
KEY = "priorities"
EXPORT = f"kubectl get configmap -n kube-system {CONFIGMAP} -o yaml"


@dataclass(frozen=True)
class Priorities:
    rules: tuple[tuple[int, tuple[Any, ...]], ...]
    """(priority, its compiled expressions)."""

    def priority_of(self, group: str) -> int | None:
        """The highest priority whose expressions match the group's name; None when none does."""
        found = [prio for prio, patterns in self.rules if any(p.search(group) is not None for p in patterns)]
        return max(found) if found else None

    def best(self, options: list) -> list:
        """The options of the highest priority matched (each option's `group`), or all when none matches."""
        scored = [(self.priority_of(o.group), o) for o in options]
        matched = [prio for prio, _ in scored if prio is not None]
        if not matched:
            return list(options)
        top = max(matched)
        return [o for prio, o in scored if prio == top]


def read_priorities(path: Path | str) -> Priorities:
    """The priorities of a `--priority-config` file: the ConfigMap as `kubectl get ... -o yaml` prints it, or the
    value of its `priorities` key; InputError naming every problem at once."""
    try:
        text = read_text(path)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        doc = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError, OverflowError) as e:
        raise InputError(f"{path}: not YAML: {one_line(str(e))}") from None
    where = f"{path}"
    if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
        name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
        if name != CONFIGMAP:
            raise InputError(f"{path}: ConfigMap {name!r}: the autoscaler reads only the ConfigMap named {CONFIGMAP} "
                             f"(export it with `{EXPORT}`)")
        value = (doc.get("data") or {}).get(KEY) if isinstance(doc.get("data"), dict) else None
        if not isinstance(value, str):
            raise InputError(f"{path}: data.{KEY}: missing; the ConfigMap must hold the priorities under that key")
        where = f"{path}: data.{KEY}"
        try:
            doc = yaml.safe_load(value)
        except (yaml.YAMLError, ValueError, RecursionError, OverflowError) as e:
            raise InputError(f"{where}: not YAML: {one_line(str(e))}") from None
    if doc is None or doc == {}:
        raise InputError(f"{where}: empty: expected a mapping of integer priorities to lists of regular "
                         "expressions over node group names (e.g. 50: [\"h100.*\"])")
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected a mapping of integer priorities to lists of regular expressions, "
                         f"got {type(doc).__name__}")
    return _compiled(doc, where)


def _compiled(doc: dict, where: str) -> Priorities:
    import re2

    options = re2.Options()
    options.log_errors = False
    errors: list[str] = []
    rules: list[tuple[int, tuple[Any, ...]]] = []
    for prio, patterns in doc.items():
        if isinstance(prio, bool) or not isinstance(prio, int):
            errors.append(f"{where}: {prio!r}: a priority is an integer")
            continue
        if not isinstance(patterns, list):
            errors.append(f"{where}.{prio}: expected a list of regular expressions, got {type(patterns).__name__}")
            continue
        compiled = []
        for i, pattern in enumerate(patterns):
            if not isinstance(pattern, str):
                errors.append(f"{where}.{prio}[{i}]: {pattern!r} is not a string (a regular expression)")
                continue
            try:
                compiled.append(re2.compile(pattern, options))
            except re2.error as e:
                words = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else str(e)
                errors.append(f"{where}.{prio}[{i}]: {pattern!r} is not a regular expression the autoscaler "
                              f"accepts (RE2, Go's syntax): {words}")
        rules.append((prio, tuple(compiled)))
    if errors:
        raise InputError("\n".join(errors))
    return Priorities(tuple(rules))
