"""`discover --out FILE` and `--stack NAME` as paths: a command never replaces a file it did not write, and a
stack name never leads outside the project."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

NODES = ROOT / "tests" / "fixtures" / "nodes-one-h100x8.json"


def test_discover_refuses_a_file_it_did_not_write_and_leaves_it_as_it_was(cli, tmp_path):
    mine = tmp_path / "capacity.json"
    mine.write_text('{"my": "notes"}\n')
    result = cli("discover", "--nodes", NODES, "--out", mine)
    assert result.code == 2
    assert result.err.strip() == (f"{mine}: already exists and is not a capacity.json gpufleet wrote; choose "
                                  "another name, move it away, or pass --force to replace it")
    assert mine.read_text() == '{"my": "notes"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["capacity.json"]  # no temporary file either


def test_discover_replaces_its_own_capacity_file_and_force_replaces_any(cli, tmp_path):
    out = tmp_path / "capacity.json"
    assert cli("discover", "--nodes", NODES, "--out", out).code == 0
    first = json.loads(out.read_text())
    assert cli("discover", "--nodes", NODES, "--out", out).code == 0  # its own output: replaced, no --force
    assert json.loads(out.read_text()) == first
    other = tmp_path / "other.json"
    other.write_text("[]")
    assert cli("discover", "--nodes", NODES, "--out", other, "--force").code == 0
    assert json.loads(other.read_text())["format"] == first["format"]


def test_discover_refuses_a_directory_as_its_output(cli, tmp_path):
    result = cli("discover", "--nodes", NODES, "--out", tmp_path)
    assert result.code == 2 and result.err.strip().startswith(f"{tmp_path}: is a directory")


@pytest.mark.parametrize("stack", ["../dev", "a/b", "", ".hidden", "dev\nmig"])
def test_stack_name_that_is_not_a_pulumi_name_is_refused_before_any_file_is_read(cli, tmp_path, stack):
    for command in (["plan", "--no-policies"], ["charts", "--out", str(tmp_path / "c")],
                    ["report", "--out", str(tmp_path / "r.html")]):
        result = cli(*command, "--stack", stack, "--project-dir", ROOT)
        assert result.code == 2, (command, result.err)
        assert "a stack name is letters, digits, '-', '_' and '.'" in result.err
    assert list(tmp_path.iterdir()) == []
