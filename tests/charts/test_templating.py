"""jinja2 generates Helm's Go-template text without touching it, and fails loudly on a missing variable."""

from __future__ import annotations

import shutil

import jinja2
import pytest
from chart_support import generated_files
from conftest import ROOT

from gpufleet.charts.templating import environment, escape_go_template


def test_go_template_delimiters_survive_jinja_rendering():
    helpers = environment().get_template("_helpers.tpl.j2").render(chart="demo")
    assert '{{- define "demo.labels" -}}' in helpers
    assert '{{ include "demo.selectorLabels" . }}' in helpers
    assert "{{ .context.Release.Service }}" in helpers
    assert "<<=" not in helpers and "<%" not in helpers


def test_jinja_delimiters_do_not_collide_with_helm_or_shell_text():
    env = environment()
    text = '{{ .Values.x }} ${#ARR[@]} [[ -f /x ]] {{- /* c */ -}} <<= name =>>'
    assert env.from_string(text).render(name="ok") == '{{ .Values.x }} ${#ARR[@]} [[ -f /x ]] {{- /* c */ -}} ok'


def test_undefined_template_variable_is_an_error():
    with pytest.raises(jinja2.UndefinedError):
        environment().get_template("_helpers.tpl.j2").render()


def test_literal_braces_in_manifests_are_escaped_for_helm():
    assert escape_go_template("a {{ b }} c") == 'a {{ "{{" }} b {{ "}}" }} c'


def test_no_generated_file_contains_a_notebook_token(tmp_path):
    """The token is a Pulumi secret; GitOps files reference a Secret the user creates instead."""
    secret = "v1:S3cr3tCipherTextNeverInCharts"
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    stack = (ROOT / "Pulumi.dev.yaml").read_text() + f"  gpufleet:notebookToken:\n    secure: {secret}\n"
    (tmp_path / "Pulumi.dev.yaml").write_text(stack)
    files = generated_files(tmp_path, "dev")
    leaks = [rel for rel, text in files.items() if secret in text or "S3cr3t" in text]
    assert leaks == []
    assert 'token: ""' in files["gpufleet-dev/values.yaml"]
