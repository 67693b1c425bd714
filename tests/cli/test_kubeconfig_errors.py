"""A kubeconfig that cannot be used says why in words a user acts on: an unknown --context lists the
contexts there are; a kubeconfig that is not YAML gets the parser's problem and line, on one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.run_inprocess import run

FITS = Path(__file__).resolve().parents[1] / "fixtures" / "manifests" / "fits.yaml"


def kubeconfig(path: Path, *contexts: str) -> Path:
    entries = "".join(f"- name: {c}\n  context: {{cluster: a, user: u}}\n" for c in contexts)
    path.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: a\n"
                    "  cluster: {server: 'https://127.0.0.1:9'}\n"
                    f"contexts:\n{entries}current-context: {contexts[0]}\n"
                    "users:\n- name: u\n  user: {token: t}\n")
    return path


@pytest.mark.parametrize("command", [["discover", "--out", "capacity.json"], ["check", FITS]])
def test_an_unknown_context_lists_the_contexts_there_are(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    kc = kubeconfig(tmp_path / "kc", "alpha", "beta")
    r = run(*command, "--kubeconfig", kc, "--context", "gamma")
    assert r.code == 2
    assert r.err.strip() == f"{kc}: cannot use this kubeconfig: no context 'gamma'; its contexts: alpha, beta"


def test_the_contexts_of_every_kubeconfig_file_in_the_list_are_listed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first, second = kubeconfig(tmp_path / "a", "alpha"), kubeconfig(tmp_path / "b", "beta", "alpha")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(map(str, (first, second))))
    r = run("discover", "--out", "capacity.json", "--context", "gamma")
    assert r.code == 2 and r.err.strip().endswith("no context 'gamma'; its contexts: alpha, beta")


def test_a_kubeconfig_that_is_not_yaml_names_the_problem_and_line_without_escapes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    kc = tmp_path / "kc"
    kc.write_text("apiVersion: v1\nclusters:\n- name: a\n  cluster: {server: x\n  bad: [\n")
    r = run("discover", "--out", "capacity.json", "--kubeconfig", kc)
    assert r.code == 2
    assert r.err.strip() == (f"{kc}: cannot use this kubeconfig: not valid YAML: expected ',' or '}}', but "
                             "got ':' (line 5, column 6)")
