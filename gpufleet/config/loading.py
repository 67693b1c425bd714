"""Read a stack's config (from Pulumi.<stack>.yaml, or from the running Pulumi program) into a StackConfig.

Every problem is collected and raised together as one ConfigError whose lines name the file, the YAML
path, the bad value and what is allowed.
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gpufleet.config._paths import NAMESPACE, config_error, yaml_path
from gpufleet.config.model import memory_conflicts
from gpufleet.config.rules import fact_warnings, validate_references
from gpufleet.config.spelling import did_you_mean
from gpufleet.config.stack import SECTION_KEYS, StackConfig
from gpufleet.config.stack_warnings import stack_warnings
from gpufleet.config.workloads import WORKLOAD_KINDS
from gpufleet.config.yaml_file import config_key_path, line_of, read_stack_nodes
from gpufleet.errors import ConfigError, ConfigIssue, InputError

SECRET_PLACEHOLDER = "[secret]"
#: One spelling of keys: the YAML names (camelCase, as `gpufleet schema` lists them), never the Python ones.
SPELLING: dict[str, bool] = {"by_alias": True, "by_name": False}
_UNION_TAG = re.compile(r"^(literal\[|list\[|dict\[|str$|int$|bool$|function-|env-literal$|env-secret$)")


@dataclass
class LoadedStack:
    """A validated stack config plus the raw Pulumi config map it came from."""

    name: str
    source: str
    config: StackConfig
    #: Every `<namespace>:<key>` entry of the stack file as Pulumi would hand it to the program (strings).
    pulumi_config: dict[str, str] = field(default_factory=dict)
    #: Keys whose values are Pulumi secrets (`secure:` in the file).
    secret_keys: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def stack_file(project_dir: Path, stack: str) -> Path:
    return project_dir / f"Pulumi.{stack}.yaml"


# Pulumi's stack-name characters; a name is also a file-name part (Pulumi.<stack>.yaml, gpufleet-<stack>/).
STACK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def load_stack(stack: str, project_dir: Path = Path(".")) -> LoadedStack:
    """Load and validate Pulumi.<stack>.yaml. Raises InputError or ConfigError."""
    if not STACK_NAME.fullmatch(stack or ""):
        raise InputError(f"--stack {stack!r}: a stack name is letters, digits, '-', '_' and '.' (as Pulumi "
                         "allows), starting with a letter or digit, e.g. dev")
    path = stack_file(project_dir, stack)
    if not path.is_file():
        known = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in project_dir.glob("Pulumi.*.yaml"))
        raise InputError(f"{path}: no such stack file; stacks here: {', '.join(known) or '(none)'}")
    doc, root = read_stack_nodes(path)
    try:
        return _load_document(stack, path, doc, project_dir)
    except ConfigError as e:  # each problem with the line of the file it is on
        raise config_error(e.source, [i if i.line else ConfigIssue(i.path, i.message, line_of(root, i.path))
                                      for i in e.issues]) from None


def _load_document(stack: str, path: Path, doc: dict[str, Any], project_dir: Path) -> LoadedStack:
    config = doc.get("config")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise config_error(path.name,
                           [ConfigIssue("config", f"must be a mapping of config keys, got {type(config).__name__}")])
    pulumi_config: dict[str, str] = {}
    secret_keys: list[str] = []
    sections: dict[str, Any] = {}
    secrets: set[str] = set()
    bad_keys = [ConfigIssue("config", f"key {json.dumps(key, default=str)} is not a string; allowed: "
                            "<namespace>:<name> strings such as gpufleet:workloads")
                for key in config if not isinstance(key, str)]
    if bad_keys:
        raise config_error(path.name, bad_keys)
    for key, value in config.items():
        full = config_key_path(key)
        is_secret = isinstance(value, dict) and set(value) == {"secure"}
        if is_secret:
            secret_keys.append(full)
            pulumi_config[full] = SECRET_PLACEHOLDER
        else:
            pulumi_config[full] = value if isinstance(value, str) else json.dumps(value, default=str)
        ns, _, short = full.partition(":")
        if ns == NAMESPACE:
            if is_secret:
                secrets.add(short)
            else:
                sections[short] = value
    loaded = LoadedStack(stack, path.name, parse_sections(sections, path.name, secrets, project_dir), pulumi_config,
                         secret_keys)
    loaded.warnings += [f"{path.name}: {m}" for m in memory_conflicts(loaded.config.workloads)]
    loaded.warnings += [i.render(path.name) for i in fact_warnings(loaded.config)]
    loaded.warnings += [i.render(path.name) for i in stack_warnings(loaded.config)]
    for key in loaded.config.secret_config_keys():
        if key not in secrets:
            loaded.warnings.append(
                f"{path.name}: {NAMESPACE}:{key} is not set; `pulumi up` needs it: "
                f"pulumi config set --secret {key} <value> -s {stack}")
    return loaded


def parse_sections(sections: dict[str, Any], source: str, secret_keys: Collection[str] = frozenset(),
                   project_dir: Path | None = None) -> StackConfig:
    """Validate the `gpufleet:` sections (YAML spelling) into a StackConfig, or raise ConfigError.

    Files the config names (a model's config.json) are read relative to `project_dir` (default: the
    working directory, where Pulumi runs the program)."""
    issues: list[ConfigIssue] = []
    known = {k: v for k, v in sections.items() if k in SECTION_KEYS}
    for key, value in sections.items():
        if key not in SECTION_KEYS and key not in secret_keys:
            meant = did_you_mean(key, list(SECTION_KEYS))
            guess = f" (did you mean '{meant}'?)" if meant else ""
            issues.append(ConfigIssue(f"{NAMESPACE}:{key}", f"unknown key{guess}; allowed: "
                                      f"{', '.join(SECTION_KEYS)} (or a secret, set with `pulumi config set "
                                      "--secret`)"))
            if meant and meant not in sections:
                known[meant] = value  # checked as meant: no errors that follow from the typo
    cfg, errors, respelt = _validate_respelt(known, project_dir)
    issues += respelt
    if cfg is None:
        issues += [_issue_from_pydantic(err) for err in errors]
        issues += [i for i in _rules_without_broken_workloads(known, errors, project_dir) if i not in issues]
        raise config_error(source, issues) from None
    issues = [_plain_secret_issue(i.path) if i.path.removeprefix(f"{NAMESPACE}:") in cfg.secret_config_keys()
              else i for i in issues]
    issues += validate_references(cfg)
    if issues:
        raise config_error(source, issues)
    return cfg


#: How many rounds of misspelt keys are read as meant (a misspelt key can hide another inside it).
_RESPELL_ROUNDS = 8


def _model_validate(data: dict[str, Any], project_dir: Path | None) -> StackConfig:
    """StackConfig from the sections in SPELLING (pydantic's by_alias/by_name, spelt out for its signature)."""
    return StackConfig.model_validate(data, context={"project_dir": project_dir},
                                      by_alias=SPELLING["by_alias"], by_name=SPELLING["by_name"])


def _validate_respelt(known: dict[str, Any],
                      project_dir: Path | None) -> tuple[StackConfig | None, list, list[ConfigIssue]]:
    """(config or None, pydantic's errors, the misspelt-key issues): each unknown key with a did-you-mean is
    reported once and then validated under the key it was meant to be, so that a typo brings no errors that
    only follow from it (a required key "missing", a reference to what the misspelt key defines). `known`
    is updated in place to the data as meant."""
    respelt: list[ConfigIssue] = []
    for _ in range(_RESPELL_ROUNDS):
        try:
            cfg = _model_validate(known, project_dir)
            return cfg, [], respelt
        except ValidationError as e:
            errors = e.errors()
        fixed = _respell(known, errors)
        if not fixed:
            return None, errors, respelt
        respelt += fixed
    return None, errors, respelt


def _respell(data: dict[str, Any], errors: list) -> list[ConfigIssue]:
    """Rename in `data` each unknown key that has a did-you-mean (and whose meant key is not there too);
    the issues that report them."""
    fixed = []
    for err in errors:
        if err["type"] != "extra_forbidden":
            continue
        meant = _meant_key(err)
        holder = _reached(data, err["loc"][:-1])
        key = err["loc"][-1]
        if meant and isinstance(holder, dict) and key in holder and meant not in holder:
            renamed = {meant if k == key else k: v for k, v in holder.items()}
            holder.clear()
            holder.update(renamed)
            fixed.append(_issue_from_pydantic(err))
    return fixed


def _reached(data: Any, loc: tuple) -> Any:
    """The value at pydantic's `loc` in `data` (parts that are no key or index, union tags, are skipped)."""
    for part in loc:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
    return data


_WORKLOAD_INDEX = re.compile(r"workloads\[(\d+)\]")


def _rules_without_broken_workloads(known: dict[str, Any], errors: list, project_dir: Path | None) -> list[ConfigIssue]:
    """The cross-section rules over everything that did parse, when only some workloads failed to.

    Without this, one mistyped workload would hide every node-pool, sharing and reference problem until it is
    fixed. Workloads are what nothing else refers to, so leaving the broken ones out cannot invent a problem;
    each issue's workload index is mapped back to the file's. Anything else broken: the rules wait.
    """
    items = known.get("workloads")
    locs: list[tuple[Any, ...]] = [err.get("loc") or () for err in errors]
    if not isinstance(items, list) or not all(len(loc) > 1 and loc[0] == "workloads" and isinstance(loc[1], int)
                                              for loc in locs):
        return []
    broken = {loc[1] for loc in locs}
    kept = [i for i in range(len(items)) if i not in broken]
    try:
        cfg = _model_validate({**known, "workloads": [items[i] for i in kept]}, project_dir)
    except ValidationError:
        return []

    def renumber(text: str) -> str:
        return _WORKLOAD_INDEX.sub(lambda m: f"workloads[{kept[int(m.group(1))]}]"
                                   if int(m.group(1)) < len(kept) else m.group(0), text)

    return [ConfigIssue(renumber(i.path), renumber(i.message)) for i in validate_references(cfg)]


def _plain_secret_issue(path: str) -> ConfigIssue:
    key = path.removeprefix(f"{NAMESPACE}:")
    return ConfigIssue(path, f"a workload reads {key} as a secret, but it is set in plain text; allowed: a secret "
                       f"value: pulumi config set --secret {key} <value>")


def _clean_loc(loc: tuple) -> list:
    out: list = []
    for i, part in enumerate(loc):
        if isinstance(part, str) and (_UNION_TAG.match(part) or part == "[key]"):
            continue
        if (isinstance(part, str) and part in WORKLOAD_KINDS and i >= 2 and loc[0] == "workloads"
                and isinstance(loc[1], int) and i == 2):
            continue
        out.append(part)
    return out


def render_path(parts: list) -> str:
    return yaml_path(*parts)


def _issue_from_pydantic(err: dict) -> ConfigIssue:
    parts = _clean_loc(err["loc"])
    path = render_path(parts)
    kind = err["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(list(err["loc"][:-1]))
        hint = f"; allowed: {', '.join(allowed)}" if allowed else ""
        meant = _meant_key(err)
        guess = f" (did you mean '{meant}'?)" if meant else ""
        return ConfigIssue(path, f"unknown key '{parts[-1]}'{guess}{hint}")
    if kind == "missing":
        return ConfigIssue(path, "required key is missing")
    if kind == "union_tag_invalid" or kind == "union_tag_not_found":
        return ConfigIssue(render_path(parts) + ".kind" if kind == "union_tag_not_found" else path,
                           f"{'missing' if kind == 'union_tag_not_found' else repr(err['input'].get('kind'))} "
                           f"workload kind; allowed: {', '.join(WORKLOAD_KINDS)}")
    value = err.get("input")
    msg = err["msg"].removeprefix("Value error, ")
    if kind == "value_error" and isinstance(value, (dict, list)):
        return ConfigIssue(path, msg)  # a rule across the fields of one entry: the message names them
    shown = json.dumps(value) if isinstance(value, (str, int, float, bool)) or value is None else repr(value)
    return ConfigIssue(path, f"{msg}; got {shown}")


def _meant_key(err: dict) -> str | None:
    """The allowed key an unknown key (pydantic's extra_forbidden error) is a misspelling of, if any."""
    return did_you_mean(str(err["loc"][-1]), _allowed_keys(list(err["loc"][:-1])))


def _allowed_keys(parts: list) -> list[str]:
    """Field names (YAML spelling) of the model reached by following `parts` from the root."""
    from gpufleet.config.workloads import BatchJob, InferenceService, Notebook

    model: Any = StackConfig
    if len(parts) >= 3 and parts[0] == "workloads" and parts[2] in WORKLOAD_KINDS:
        model = {"inference": InferenceService, "notebook": Notebook, "job": BatchJob}[parts[2]]
        parts = parts[3:]
    dict_key_next = False
    for part in [p for p in parts if not (isinstance(p, str) and _UNION_TAG.match(p))]:
        if isinstance(part, int) or model is None:
            continue
        if dict_key_next:  # a key of a dict-valued field (a geometry or profile name), not a field
            dict_key_next = False
            continue
        field_info = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field_info is None:
            return []
        dict_key_next = _holds_dict(field_info.annotation)
        model = _model_in(field_info.annotation, parts)
    if model is None or not hasattr(model, "model_fields"):
        return []
    return [f.alias or n for n, f in model.model_fields.items()]


def _holds_dict(annotation: Any) -> bool:
    return typing.get_origin(annotation) is dict or any(_holds_dict(a) for a in typing.get_args(annotation))


def _model_in(annotation: Any, parts: list) -> Any:
    """The pydantic model inside an annotation (list[X], dict[str, X], X | None, Annotated unions)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg, parts)
        if found is not None:
            return found
    return None
