"""Input gpufleet cannot read is exit 2, one line per input: `validate` as the README states it (a missing
file, a directory without manifests, bytes that are not text, text that is not YAML), and a Helm chart's
template, given where its rendered output belongs, gets told to run `helm template` first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.run_inprocess import run

NODES = Path(__file__).resolve().parents[1] / "fixtures" / "nodes-one-h100x8.json"
TEMPLATE = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "app.fullname" . }}
spec:
  replicas: {{ .Values.replicaCount }}
{{- with .Values.nodeSelector }}
  nodeSelector: {{- toYaml . | nindent 8 }}
{{- end }}
"""
HINT = "it looks like a Helm template (it holds {{ }}): render it first with `helm template RELEASE "


@pytest.mark.parametrize("content, says", [
    pytest.param(None, "no such file or directory", id="missing"),
    pytest.param("a directory", "no *.yaml or *.yml files in this directory", id="empty directory"),
    pytest.param(b"\xff\xfe\x00", "not a text file", id="not text"),
    pytest.param(b"kind: Pod\nmetadata: [\n", "not valid YAML", id="not YAML"),
])
def test_validate_exits_2_for_input_it_cannot_read(tmp_path, content, says):
    path = tmp_path / "in.yaml"
    if content == "a directory":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    r = run("validate", path)
    assert r.code == 2 and r.out == ""
    [line] = r.err.strip().splitlines()
    assert line.startswith(f"{path}: ") and says in line


def test_validate_names_every_unreadable_input_at_once(tmp_path):
    (tmp_path / "a.yaml").write_text("a: [\n")
    (tmp_path / "b.yaml").write_text("b: {\n")
    r = run("validate", tmp_path / "a.yaml", tmp_path / "b.yaml")
    assert r.code == 2 and [line.split(":")[0] for line in r.err.strip().splitlines()] == [
        str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")]


@pytest.mark.parametrize("command", [["validate"], ["check", "--nodes", NODES], ["report", "--nodes", NODES,
                                                                                  "--out", "r.html"]])
def test_a_helm_template_gets_told_to_run_helm_template(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deployment.yaml").write_text(TEMPLATE)
    r = run(command[0], tmp_path / "deployment.yaml", *command[1:])
    assert r.code == 2
    [line] = r.err.strip().splitlines()
    assert line.startswith(f"{tmp_path / 'deployment.yaml'}: ") and HINT in line


def test_a_file_that_does_not_parse_without_braces_gets_no_helm_hint(tmp_path):
    (tmp_path / "app.yaml").write_text("kind: Pod\nmetadata: [\n")
    r = run("check", tmp_path / "app.yaml", "--nodes", NODES)
    assert r.code == 2 and "helm" not in r.err
