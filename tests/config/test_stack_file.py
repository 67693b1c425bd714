"""The stack file itself: duplicate keys, empty files, non-mappings, non-UTF-8 bytes, and values that
would make gpufleet write outside --out. Run as the user runs it: `gpufleet plan` on a project directory."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gpufleet.config.loading import load_stack
from gpufleet.errors import ConfigError, InputError
from tests.conftest import ROOT

SHIPPED = ["dev", "mig", "k3s", "multi", "aks", "greed", "llm"]


@pytest.fixture
def project(tmp_path) -> Path:
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    return tmp_path


def write(project: Path, text: str | bytes, stack: str = "t") -> Path:
    path = project / f"Pulumi.{stack}.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def issues_of(project: Path, stack: str = "t") -> list[str]:
    with pytest.raises(ConfigError) as exc:
        load_stack(stack, project)
    return str(exc.value).splitlines()


@pytest.mark.parametrize("stack", SHIPPED)
def test_every_shipped_stack_loads(stack):
    assert load_stack(stack, ROOT).config is not None


def test_duplicate_key_in_a_workload_names_both_lines_and_the_path(project):
    write(project, """config:
  gpufleet:workloads:
    - kind: job
      name: a
      image: busybox:1.36
      namespace: ml
      namespace: prod
""")
    assert issues_of(project) == [
        "Pulumi.t.yaml:7: gpufleet:workloads[0].namespace: duplicate key 'namespace' (lines 6 and 7); YAML would "
        "silently keep the last one: remove or rename one"]


def test_duplicate_config_key_and_duplicate_env_are_all_reported(project):
    write(project, """config:
  gpufleet:mode: operator
  gpufleet:workloads:
    - kind: job
      name: a
      image: busybox:1.36
      env: {A: "1", A: "2"}
  gpufleet:mode: standalone
""")
    lines = issues_of(project)
    assert "Pulumi.t.yaml:7: gpufleet:workloads[0].env.A: duplicate key 'A' (twice on line 7); YAML would silently " \
           "keep the last one: remove or rename one" in lines
    assert any(line.startswith("Pulumi.t.yaml:8: gpufleet:mode: duplicate key 'gpufleet:mode' (lines 2 and 8)")
               for line in lines)
    assert len(lines) == 2


def test_short_and_namespaced_spelling_of_one_config_key_clash(project):
    write(project, "config:\n  mode: operator\n  gpufleet:mode: standalone\n")
    assert issues_of(project) == [
        "Pulumi.t.yaml:3: gpufleet:mode: given twice, as 'mode' (line 2) and 'gpufleet:mode' (line 3); Pulumi reads "
        "both as gpufleet:mode: keep one"]


def test_duplicate_top_level_key(project):
    write(project, "config: {}\nconfig:\n  gpufleet:mode: operator\n")
    assert issues_of(project) == ["Pulumi.t.yaml:2: config: duplicate key 'config' (lines 1 and 2); YAML would "
                                  "silently keep the last one: remove or rename one"]


def test_equal_keys_in_different_mappings_are_fine(project):
    write(project, """config:
  gpufleet:nodePools:
    - {name: a, nodes: [n0], gpu: {product: Tesla-T4}}
    - {name: b, nodes: [n1], gpu: {product: Tesla-T4}}
""")
    assert [p.name for p in load_stack("t", project).config.node_pools] == ["a", "b"]


@pytest.mark.parametrize("text, message", [
    ("", "the file is empty; allowed: a mapping with a `config:` key"),
    ("# only a comment\n", "the file is empty"),
    ("- config\n", "the file is a YAML list (line 1); allowed: a mapping with a `config:` key"),
    ("just text\n", "the file is a YAML scalar ('just text')"),
    ("config: [a, b]\n", "config: must be a mapping of config keys, got list"),
    ("config:\n  1: x\n", "config: key 1 is not a string"),
])
def test_a_file_that_is_not_a_stack_mapping_is_refused(project, text, message):
    write(project, text)
    (line,) = issues_of(project)
    assert re.match(r"Pulumi\.t\.yaml(:1)?: ", line) and message in line


def test_a_file_that_is_not_utf8_is_refused_with_the_offset(project):
    write(project, "config:\n  gpufleet:mode: op\xe9rator\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"^Pulumi\.t\.yaml: not UTF-8 text \(byte 0xe9 at offset 27\)"):
        load_stack("t", project)


def test_dates_stay_strings_as_pulumi_reads_them(project):
    write(project, "config:\n  gpufleet:cluster:\n    kubernetesVersion: 2024-01-01\n")
    assert load_stack("t", project).config.cluster.kubernetes_version == "2024-01-01"


def test_alias_bombs_are_refused(project):
    bomb = "config:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 7):
        bomb += f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n"
    write(project, bomb)
    (line,) = issues_of(project)
    assert "more than 100000 values once aliases are expanded" in line


def test_plan_refuses_a_namespace_that_is_a_path_and_writes_nothing(project, cli):
    """Before: operator.namespace became a directory of the manifests, so ../../x wrote outside --out."""
    write(project, "config:\n  gpufleet:operator:\n    namespace: ../../escaped\n")
    out = project / "build" / "plan"
    result = cli("plan", "--stack", "t", "--project-dir", project, "--out", out, "--no-policies")
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        "Pulumi.t.yaml:3: gpufleet:operator.namespace: not a valid namespace name: a lowercase RFC 1123 label must "
        "consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric "
        "character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'); "
        "got \"../../escaped\""]
    assert "Traceback" not in result.err
    assert sorted(p.name for p in project.iterdir()) == ["Pulumi.t.yaml", "Pulumi.yaml"]
    assert not (project / "escaped").exists() and not (project.parent / "escaped").exists()


def test_plan_refuses_duplicate_keys_through_the_cli(project, cli):
    write(project, "config:\n  gpufleet:mode: operator\n  gpufleet:mode: standalone\n")
    result = cli("plan", "--stack", "t", "--project-dir", project, "--no-policies")
    assert result.code == 2
    assert "Pulumi.t.yaml:3: gpufleet:mode: duplicate key 'gpufleet:mode' (lines 2 and 3)" in result.err
