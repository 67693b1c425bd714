"""The policy pack config `gpufleet plan` passes to the pack, checked before the pack judges anything.

An unusable config is bad input (exit 2, one line per problem naming the file and the key), never a
policy violation. Two passes: `read_pack_config` before the pack runs (the file, levels, capacity source
and the files it names), `check_against_pack` once the pack has said which policies and config schemas
it has (unknown policy names, values that break a policy's schema).
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from gpufleet.capacity.files import CAPACITY_SOURCES
from gpufleet.errors import InputError

LEVELS = ("advisory", "mandatory", "disabled", "remediate")
#: Config keys (of any policy) that name a file the pack will read; relative to the project directory.
FILE_KEYS = ("nodesFile", "podsFile", "kubeconfig")
#: The pack's policies that check the stack against the real nodes; `plan --nodes FILE` gives them the file.
NODE_FACTS_POLICIES = ("stack-matches-nodes", "preinstalled-driver", "node-platform",
                       "node-platform-advisories")
#: What those policies check.
NODE_CHECKS = ("the runtime preset, the host driver, the nodes' OS, runtime and Kubernetes version, selector "
               "labels and pool products")
NOT_CHECKED_AGAINST_NODES = ("not checked against nodes: pass --nodes FILE (`kubectl get nodes -o json` or a "
                             f"capacity.json of `gpufleet discover`) to check {NODE_CHECKS}")


def not_checked_against_nodes(doc: dict[str, Any], source: str) -> str:
    """The line that says the node checks were not made, and how to make them: where another policy of the
    config already has a node source (a capacity policy's `nodesFile`), the keys to set beside it in that
    file; else `plan --nodes FILE`."""
    for name, entry in doc.items():
        if name in NODE_FACTS_POLICIES or not isinstance(entry, dict):
            continue
        for key in ("nodesFile", "kubeconfig"):
            value = entry.get(key)
            if isinstance(value, str) and value:
                wanted = ", ".join(f"{policy}.{key}" for policy in NODE_FACTS_POLICIES[:-1])
                wanted += f" and {NODE_FACTS_POLICIES[-1]}.{key}"
                return (f"not checked against nodes: {name}.{key} ({value}) in {source} gives nodes to {name} "
                        f"only; set {wanted} there too to check {NODE_CHECKS}")
    return NOT_CHECKED_AGAINST_NODES


class PackConfigError(InputError):
    """The policy pack config cannot be used; every problem is one line."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))


def read_pack_config(path: Path, project_dir: Path) -> dict[str, Any]:
    """Read and check a `--policy-pack-config` file (pulumi's JSON format). Raises PackConfigError."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError as e:
        raise PackConfigError([f"{path}: no such policy pack config file"]) from e
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PackConfigError([f"{path}: not a JSON policy pack config: {e}"]) from e
    if not isinstance(doc, dict):
        raise PackConfigError([f"{path}: expected a JSON object of policy name -> level or config, "
                               f"got {type(doc).__name__}"])
    problems = config_problems(doc, project_dir)
    if problems:
        raise PackConfigError([f"{path}: {p}" for p in problems])
    return doc


def _level_problem(key: str, level: Any) -> str | None:
    if isinstance(level, str) and level in LEVELS:
        return None
    return f"{key}: enforcement level {level!r}; allowed: {', '.join(LEVELS)}"


def config_problems(doc: dict[str, Any], project_dir: Path) -> list[str]:
    """Problems of a pack config that need no pack to see: shapes, levels, capacity source, named files."""
    problems: list[str] = []
    for name, entry in doc.items():
        if name == "all" or isinstance(entry, str):
            if (p := _level_problem(name, entry)) is not None:
                problems.append(p)
            continue
        if not isinstance(entry, dict):
            problems.append(f"{name}: expected a level ({', '.join(LEVELS)}) or an object of settings, "
                            f"got {json.dumps(entry)}")
            continue
        if "enforcementLevel" in entry and (p := _level_problem(f"{name}.enforcementLevel",
                                                                entry["enforcementLevel"])) is not None:
            problems.append(p)
        if "capacitySource" in entry:
            source = entry["capacitySource"]
            if source not in CAPACITY_SOURCES:
                problems.append(f"{name}.capacitySource: unknown source {json.dumps(source)}; allowed: "
                                f"{', '.join(CAPACITY_SOURCES)}")
            elif CAPACITY_SOURCES[source] and not entry.get(CAPACITY_SOURCES[source]):
                problems.append(f"{name}.{CAPACITY_SOURCES[source]}: missing; capacitySource {source} needs it")
        for key in FILE_KEYS:
            if key not in entry:
                continue
            value = entry[key]
            if not isinstance(value, str) or not value:
                problems.append(f"{name}.{key}: expected a file path, got {json.dumps(value)}")
                continue
            path = Path(value).expanduser()
            path = path if path.is_absolute() else project_dir.resolve() / path
            if not path.is_file():
                problems.append(f"{name}.{key}: no such file {path}")
    return problems


def with_nodes_file(doc: dict[str, Any], nodes: Path) -> dict[str, Any]:
    """The pack config with `nodes` as the node source of every node-facts policy (a level given as a string
    stays the policy's level; a kubeconfig source it had gives way to the file)."""
    out = dict(doc)
    for name in NODE_FACTS_POLICIES:
        entry = out.get(name)
        settings = {"enforcementLevel": entry} if isinstance(entry, str) else dict(entry or {})
        settings.pop("kubeconfig", None)
        settings.pop("context", None)
        out[name] = {**settings, "nodesFile": str(nodes)}
    return out


def checked_against_nodes(doc: dict[str, Any]) -> bool:
    """Whether the pack will check the stack against real nodes: stack-matches-nodes has a node source, or is
    disabled (then there is nothing to say)."""
    entry = doc.get(NODE_FACTS_POLICIES[0])
    level = entry if isinstance(entry, str) else entry.get("enforcementLevel") if isinstance(entry, dict) else None
    if (level or doc.get("all")) == "disabled":
        return True
    return isinstance(entry, dict) and bool(entry.get("nodesFile") or entry.get("kubeconfig"))


def check_against_pack(doc: dict[str, Any], source: str, schemas: dict[str, dict[str, Any]]) -> None:
    """Every policy named exists in the pack and its settings fit the policy's config schema.

    `schemas`: policy name -> JSON Schema `properties` of its config (as the pack reports them)."""
    from jsonschema import Draft7Validator

    problems: list[str] = []
    for name, entry in doc.items():
        if name == "all":
            continue
        if name not in schemas:
            near = difflib.get_close_matches(name, list(schemas), n=1)
            hint = f"did you mean {near[0]}? " if near else ""
            problems.append(f"{source}: {name}: no such policy in the pack; {hint}policies: "
                            f"{', '.join(sorted(schemas))}")
            continue
        if not isinstance(entry, dict):
            continue
        settings = {k: v for k, v in entry.items() if k != "enforcementLevel"}
        unknown = sorted(set(settings) - set(schemas[name]))
        for key in unknown:
            problems.append(f"{source}: {name}.{key}: not a setting of {name}; allowed: "
                            f"{', '.join(sorted(schemas[name])) or '(none)'}")
        validator = Draft7Validator({"type": "object", "properties": schemas[name]})
        for error in sorted(validator.iter_errors(settings), key=lambda e: list(e.absolute_path)):
            where = ".".join(str(p) for p in error.absolute_path)
            problems.append(f"{source}: {name}{'.' + where if where else ''}: {error.message}")
    if problems:
        raise PackConfigError(problems)
