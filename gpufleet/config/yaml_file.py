"""Read a Pulumi.<stack>.yaml file strictly: UTF-8, one YAML mapping, no key given twice anywhere.

PyYAML silently keeps the last of two equal keys; here every duplicate is an error naming both lines and
the YAML path (`gpufleet:workloads[1].env.HF_TOKEN`). Timestamps stay strings, as Pulumi reads them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from gpufleet.config._paths import NAMESPACE, config_error
from gpufleet.config.spelling import did_you_mean
from gpufleet.errors import ConfigIssue, InputError

#: Past this many nodes (aliases expanded) a file is refused: a stack file is a few hundred.
MAX_EXPANDED_NODES = 100_000
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _Loader(yaml.SafeLoader):
    """SafeLoader without the timestamp resolver (`2024-01-01` stays a string)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def config_key_path(key: str) -> str:
    """A `config:` key as the loader names it: `workloads` and `gpufleet:workloads` are the same key."""
    return key if ":" in key else f"{NAMESPACE}:{key}"


def render_file_path(parts: list[Any]) -> str:
    """['config', 'gpufleet:workloads', 1, 'name'] -> gpufleet:workloads[1].name; outside config, the keys."""
    if len(parts) >= 2 and parts[0] == "config" and isinstance(parts[1], str):
        out, rest = config_key_path(parts[1]), parts[2:]
    else:
        out, rest = "", parts
    for part in rest:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(document)"


def read_stack_nodes(path: Path) -> tuple[dict[str, Any], yaml.MappingNode]:
    """The stack file as plain data and as YAML nodes (which know their lines). Raises InputError
    (unreadable, not UTF-8, not YAML) or ConfigError (empty, not a mapping, duplicate keys)."""
    name = path.name
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(f"{name}: cannot read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise InputError(f"{name}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start}); "
                         "Pulumi reads stack files as UTF-8: save it as UTF-8") from None
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as e:
        raise InputError(f"{name}: not valid YAML: {_one_line(e)}") from None
    if node is None:
        raise config_error(name, [ConfigIssue("(document)", "the file is empty; allowed: a mapping with a `config:` "
                                             "key holding the gpufleet:<key> entries")])
    if not isinstance(node, yaml.MappingNode):
        raise config_error(name, [ConfigIssue("(document)", f"the file is a YAML {_kind(node)} (line "
                                             f"{node.start_mark.line + 1}); allowed: a mapping with a `config:` key")])
    issues = _structure_issues(node)
    if issues:
        raise config_error(name, issues)
    try:
        return _Loader("").construct_document(node), node
    except yaml.YAMLError as e:
        raise InputError(f"{name}: not valid YAML: {_one_line(e)}") from None


def _one_line(e: yaml.YAMLError) -> str:
    return " ".join(str(e).split())


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.SequenceNode):
        return "list"
    return f"scalar ({node.value!r})" if isinstance(node, yaml.ScalarNode) else "node"


def _key(constructor: _Loader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        try:
            return constructor.construct_object(node)
        except yaml.YAMLError:
            return (node.tag, node.value)
    return None  # complex keys: not compared


def _structure_issues(root: yaml.MappingNode) -> list[ConfigIssue]:
    constructor = _Loader("")
    issues: list[ConfigIssue] = []
    sizes: dict[int, int] = {}

    def size(node: yaml.Node, on_path: frozenset[int]) -> int:
        """Nodes under `node` with aliases expanded; a cycle counts as too many."""
        if id(node) in on_path:
            return MAX_EXPANDED_NODES + 1
        if id(node) not in sizes:
            inner = on_path | {id(node)}
            children = ([v for pair in node.value for v in pair] if isinstance(node, yaml.MappingNode)
                        else node.value if isinstance(node, yaml.SequenceNode) else [])
            total = 1
            for child in children:
                total += size(child, inner)
                if total > MAX_EXPANDED_NODES:
                    break
            sizes[id(node)] = total
        return sizes[id(node)]

    if size(root, frozenset()) > MAX_EXPANDED_NODES:
        return [ConfigIssue("(document)", f"more than {MAX_EXPANDED_NODES} values once aliases are expanded "
                            "(or an alias refers to itself); allowed: a plain stack file")]

    seen_nodes: set[int] = set()

    def walk(node: yaml.Node, parts: list[Any]) -> None:
        if id(node) in seen_nodes:
            return
        seen_nodes.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for i, child in enumerate(node.value):
                walk(child, [*parts, i])
        elif isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for knode, vnode in node.value:
                key = _key(constructor, knode)
                line = knode.start_mark.line + 1
                try:
                    earlier = first_line.get(key) if key is not None else None
                except TypeError:
                    earlier = None
                if earlier is not None:
                    where = f"twice on line {line}" if earlier == line else f"lines {earlier} and {line}"
                    issues.append(ConfigIssue(render_file_path([*parts, key]),
                                              f"duplicate key {key!r} ({where}); YAML would silently keep the "
                                              "last one: remove or rename one", line))
                elif key is not None:
                    try:
                        first_line[key] = line
                    except TypeError:
                        pass
                walk(vnode, [*parts, key if isinstance(key, (str, int)) else str(key)])
            if parts == ["config"]:
                issues.extend(_same_config_key_issues(node))

    walk(root, [])
    return issues


def _same_config_key_issues(config: yaml.MappingNode) -> list[ConfigIssue]:
    """`workloads` and `gpufleet:workloads` under `config:` name the same Pulumi config key."""
    issues = []
    spelled: dict[str, tuple[str, int]] = {}
    for knode, _ in config.value:
        if not isinstance(knode, yaml.ScalarNode) or knode.tag != "tag:yaml.org,2002:str":
            continue
        full = config_key_path(knode.value)
        line = knode.start_mark.line + 1
        if full in spelled and spelled[full][0] != knode.value:
            other, other_line = spelled[full]
            issues.append(ConfigIssue(full, f"given twice, as '{other}' (line {other_line}) and '{knode.value}' "
                                      f"(line {line}); Pulumi reads both as {full}: keep one", line))
        spelled.setdefault(full, (knode.value, line))
    return issues


def line_of(root: yaml.MappingNode, path: str) -> int | None:
    """The line of the stack file that a config path (`gpufleet:nodePools[0].gpu.count`) names: its key's, or
    the nearest enclosing one's when the key is absent (a required key missing). A key the path spells as
    meant finds its misspelling in the file (nodePools finds `nodepools:`). None outside `config:`."""
    key, config = next(((k, v) for k, v in root.value
                        if isinstance(k, yaml.ScalarNode) and k.value == "config"), (None, None))
    if path == "config" and key is not None:
        return key.start_mark.line + 1
    if not isinstance(config, yaml.MappingNode):
        return None
    node: yaml.Node = config
    rest, line = path, None
    while rest:
        if isinstance(node, yaml.SequenceNode) and rest.startswith("["):
            index, _, after = rest[1:].partition("]")
            if not index.isdigit() or int(index) >= len(node.value):
                break
            node, rest = node.value[int(index)], after
            line = node.start_mark.line + 1
        elif isinstance(node, yaml.MappingNode) and (node is config or rest.startswith(".")):
            if node is config:
                found = _entry(node, rest, config_key_path, rest.partition(":")[0] + ":")
            else:
                found = _entry(node, rest, lambda key: f".{key}", ".")
            if found is None:
                break
            knode, node, rest = found
            line = knode.start_mark.line + 1
        else:
            break
    return line


def _entry(node: yaml.MappingNode, rest: str, spelled, lead: str) -> tuple[yaml.Node, yaml.Node, str] | None:
    """The entry of `node` that `rest` starts with, each key written as `spelled(key)` (the longest: keys may
    hold dots), else the one whose key is a misspelling of the path's next key (after `lead`, `.` or the
    namespace); (key node, value node, what is left of `rest`)."""
    keys = [(k, v, spelled(k.value)) for k, v in node.value
            if isinstance(k, yaml.ScalarNode) and isinstance(k.value, str)]
    exact = [(k, v, w) for k, v, w in keys
             if rest.startswith(w) and rest[len(w):len(w) + 1] in ("", ".", "[")]
    if exact:
        k, v, written = max(exact, key=lambda e: len(e[2]))
        return k, v, rest[len(written):]
    name = re.split(r"[.\[]", rest[len(lead):], maxsplit=1)[0]
    for k, v, written in keys:
        if written.startswith(lead) and did_you_mean(written[len(lead):], [name]) == name:
            return k, v, rest[len(lead) + len(name):]
    return None
