"""`-` as a file argument reads standard input, wherever a manifest, nodes, pods or DRA file is taken
(`helm template ... | gpufleet check -`, `kubectl get nodes -o json | gpufleet check app.yaml --nodes -`)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from tests.cli.run_inprocess import run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NODES = FIXTURES / "nodes-one-h100x8.json"
POD = """apiVersion: v1
kind: Pod
metadata: {name: probe, namespace: default}
spec:
  containers:
  - {name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}
"""


@pytest.fixture
def stdin(monkeypatch):
    def give(text: str) -> None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    return give


def test_check_reads_the_manifests_from_stdin(stdin):
    stdin(POD)
    r = run("check", "-", "--nodes", NODES)
    assert (r.code, r.out.strip()) == (0, "1 workload(s) checked: every workload can run"), r.err


def test_check_reads_the_nodes_from_stdin(stdin, tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    stdin(NODES.read_text())
    r = run("check", tmp_path / "pod.yaml", "--nodes", "-", "--json")
    assert r.code == 0 and json.loads(r.out)["checked"], r.err


def test_a_problem_on_stdin_is_named_as_dash(stdin):
    stdin("kind: Pod\nmetadata: [\n")
    r = run("check", "-", "--nodes", NODES)
    assert r.code == 2 and r.err.startswith("-: not readable as YAML"), r.err


def test_validate_reads_stdin(stdin):
    stdin(POD)
    r = run("validate", "-")
    assert r.code == 0 and r.out.startswith("All manifests are valid"), r.out + r.err


def test_headroom_reads_the_probe_from_stdin(stdin):
    stdin(POD)
    r = run("headroom", "--probe", "-", "--nodes", NODES)
    assert r.code == 0 and r.out.startswith("The cluster can schedule 8 more instance(s)"), r.err


def test_discover_reads_the_nodes_from_stdin(stdin, tmp_path):
    stdin(NODES.read_text())
    r = run("discover", "--nodes", "-", "--out", tmp_path / "capacity.json")
    assert r.code == 0, r.err
    assert len(json.loads((tmp_path / "capacity.json").read_text())["nodes"]) == 1
