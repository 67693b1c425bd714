"""Property: whatever a shipped stack file is mutated into (wrong types, huge numbers, unicode, deleted or
duplicated entries, strange names), reading it either succeeds or fails with gpufleet's own error, every
line of which names the file; `gpufleet plan` exits 0 or 2 and never prints a traceback."""

from __future__ import annotations

import copy
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.config.loading import load_stack
from gpufleet.errors import GpufleetError
from tests.conftest import ROOT

STACKS = ["dev", "mig", "k3s", "multi", "aks", "greed", "llm"]
DOCS = {s: yaml.safe_load((ROOT / f"Pulumi.{s}.yaml").read_text()) for s in STACKS}

WEIRD_STRINGS = st.sampled_from([
    "", " ", "../../x", "/etc/passwd", "a" * 300, "Ünïcødé", "名前", "😀", "-a-", "a..b", "A_B", "0", "1e309",
    "null", "yes", "{{ .Values.x }}", "${HOME}", "a/b/c", "a:b", "\t", "line\nbreak", "sha256:abc", "@", "x@y",
    "0.0.0.0/0", "::/0", "10.0.0.1", "nvidia.com/gpu", "Tesla-T4", "latest", "busybox", "HF_TOKEN",
])
VALUES = st.one_of(
    WEIRD_STRINGS,
    st.text(max_size=20),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 2**31, 2**63, 10**30, 65536, 64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(max_value=10) | WEIRD_STRINGS, max_size=3),
    st.dictionaries(WEIRD_STRINGS, st.integers(max_value=10) | WEIRD_STRINGS, max_size=3),
)
MUTATIONS = st.sampled_from(["replace", "delete", "duplicate", "rename"])


def _children(node: Any) -> list:
    if isinstance(node, dict):
        return list(node)
    if isinstance(node, list):
        return list(range(len(node)))
    return []


@st.composite
def mutated_stack(draw) -> tuple[str, dict]:
    stack = draw(st.sampled_from(STACKS))
    doc = copy.deepcopy(DOCS[stack])
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        parent, key = doc, "config"
        while _children(parent[key]) and draw(st.integers(0, 4)) > 0:  # go deeper most of the time
            parent, key = parent[key], draw(st.sampled_from(_children(parent[key])))
        mutation = draw(MUTATIONS)
        if mutation == "replace" or parent is doc:
            parent[key] = draw(VALUES)
        elif mutation == "delete":
            del parent[key]
        elif mutation == "duplicate" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        elif mutation == "rename" and isinstance(parent, dict):
            parent[draw(WEIRD_STRINGS | st.text(max_size=12))] = parent.pop(key)
        else:
            parent[key] = draw(VALUES)
    return stack, doc


def write_stack(project: Path, stack: str, doc: dict) -> None:
    shutil.copy(ROOT / "Pulumi.yaml", project / "Pulumi.yaml")
    (project / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_stack())
def test_loading_a_mutated_stack_succeeds_or_names_the_file_on_every_line(case):
    stack, doc = case
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        write_stack(project, stack, doc)
        try:
            load_stack(stack, project)
        except GpufleetError as e:
            lines = str(e).splitlines()
            assert lines
            assert all(names_the_file(line, stack) for line in lines), lines


TEXTS = {s: (ROOT / f"Pulumi.{s}.yaml").read_bytes() for s in STACKS}


@st.composite
def mutated_text(draw) -> tuple[str, bytes]:
    """The file's bytes with lines repeated (duplicate keys), dropped or swapped, or junk bytes inserted."""
    stack = draw(st.sampled_from(STACKS))
    lines = TEXTS[stack].split(b"\n")
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["repeat", "drop", "swap", "junk"]))
        if action == "repeat":
            lines.insert(i, lines[i])
        elif action == "drop":
            del lines[i]
        elif action == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + draw(st.binary(min_size=1, max_size=4)) + lines[i][at:]
    return stack, b"\n".join(lines)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_text())
def test_reading_a_damaged_stack_file_succeeds_or_names_the_file_on_every_line(case):
    stack, text = case
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        shutil.copy(ROOT / "Pulumi.yaml", project / "Pulumi.yaml")
        (project / f"Pulumi.{stack}.yaml").write_bytes(text)
        try:
            load_stack(stack, project)
        except GpufleetError as e:
            lines = str(e).splitlines()
            assert lines and all(names_the_file(line, stack) for line in lines), lines


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(mutated_stack())
def test_plan_of_a_mutated_stack_exits_0_or_2_without_a_traceback(cli, case):
    stack, doc = case
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        write_stack(project, stack, doc)
        result = cli("plan", "--stack", stack, "--project-dir", project, "--no-policies")
        assert result.code in (0, 2), result.err
        assert "Traceback" not in result.err + result.out
        if result.code == 2:
            errors = [line for line in result.err.splitlines() if line and not line.startswith("warning: ")]
            assert errors and all(names_the_file(line, stack) for line in errors), result.err


def names_the_file(line: str, stack: str) -> bool:
    """The line starts with the stack file's name, and the line of it the problem is on where known."""
    return re.match(rf"Pulumi\.{re.escape(stack)}\.yaml(:\d+)?: ", line) is not None
