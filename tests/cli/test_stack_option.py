"""`--stack` takes a stack's name, or its stack file's name or path (as a shell completes it): both read
the same Pulumi.<stack>.yaml; a file outside --project-dir is refused with the options to type instead."""

from __future__ import annotations

from pathlib import Path

from tests.cli.run_inprocess import run

ROOT = Path(__file__).resolve().parents[2]


def test_the_stack_file_name_names_its_stack():
    r = run("plan", "--stack", "Pulumi.dev.yaml", "--project-dir", ROOT, "--no-policies")
    assert r.code == 0, r.err
    assert r.out.startswith("Previewing update (dev):")


def test_a_path_to_the_stack_file_reads_its_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = run("plan", "--stack", ROOT / "Pulumi.dev.yaml", "--no-policies")
    assert r.code == 0, r.err
    assert r.out.startswith("Previewing update (dev):")


def test_a_stack_file_outside_the_project_dir_says_what_to_type(tmp_path):
    r = run("plan", "--stack", ROOT / "Pulumi.dev.yaml", "--project-dir", tmp_path, "--no-policies")
    assert r.code == 2 and r.out == ""
    assert r.err.strip() == (f"--stack {ROOT / 'Pulumi.dev.yaml'} is a stack file outside --project-dir {tmp_path}: "
                             f"give --stack dev --project-dir {ROOT}")
