"""`gpufleet discover --nodes` and `gpufleet report --nodes` take any input without crashing: damaged kubectl
JSON and manifests give exit 2 with every error line naming its file, never a traceback; what they write is
always complete (a capacity.json that reads back, a whole page)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from hypothesis import given

from tests.cli.run_inprocess import run
from tests.cli.test_check_any_input import MANIFESTS, NODES, PODS, SETTINGS
from tests.mutations import mutated, text_mutated


def _inputs(tmp_path: Path, nodes, pods, manifests: str | None = None) -> dict[str, Path]:
    paths = {"nodes": tmp_path / "nodes.json", "pods": tmp_path / "pods.json"}
    paths["nodes"].write_text(nodes if isinstance(nodes, str) else json.dumps(nodes))
    paths["pods"].write_text(pods if isinstance(pods, str) else json.dumps(pods))
    if manifests is not None:
        paths["app"] = tmp_path / "app.yaml"
        paths["app"].write_text(manifests)
    return paths


def _within_contract(result, paths: dict[str, Path]) -> None:
    assert "Traceback" not in result.err + result.out and "internal error" not in result.err, result
    assert result.code in (0, 2), result
    if result.code == 2:
        lines = result.err.strip().splitlines()
        assert lines, "exit 2 says why"
        for line in lines:
            assert any(str(p) in line for p in paths.values()), f"error line names no file: {line!r}"


def _discover(tmp_path: Path, nodes, pods):
    paths = _inputs(tmp_path, nodes, pods)
    out = tmp_path / "capacity.json"
    out.unlink(missing_ok=True)
    result = run("discover", "--nodes", paths["nodes"], "--pods", paths["pods"], "--out", out)
    _within_contract(result, paths)
    if result.code == 0:
        assert json.loads(out.read_text())["format"] == "gpufleet.io/capacity/v1"
    else:
        assert not out.exists()


@SETTINGS
@given(nodes=mutated(NODES))
def test_damaged_nodes_file_never_crashes_discover(tmp_path, nodes):
    _discover(tmp_path, nodes, PODS)


@SETTINGS
@given(pods=mutated(PODS))
def test_damaged_pods_file_never_crashes_discover(tmp_path, pods):
    _discover(tmp_path, NODES, pods)


@SETTINGS
@given(text=text_mutated(json.dumps(NODES, indent=1)))
def test_cut_or_spliced_nodes_text_never_crashes_discover(tmp_path, text):
    _discover(tmp_path, text, PODS)


def _report(tmp_path: Path, nodes, pods, manifests: str):
    paths = _inputs(tmp_path, nodes, pods, manifests)
    out = tmp_path / "r.html"
    out.unlink(missing_ok=True)
    result = run("report", "--nodes", paths["nodes"], "--pods", paths["pods"], paths["app"], "--out", out)
    _within_contract(result, paths)
    if result.code == 0:
        assert out.read_text().rstrip().endswith("</html>")
    else:
        assert not out.exists()


@SETTINGS
@given(nodes=mutated(NODES))
def test_damaged_nodes_file_never_crashes_report(tmp_path, nodes):
    _report(tmp_path, nodes, PODS, yaml.safe_dump_all(MANIFESTS[0]))


@SETTINGS
@given(docs=mutated(MANIFESTS[1]))
def test_damaged_manifests_never_crash_report(tmp_path, docs):
    _report(tmp_path, NODES, PODS, yaml.safe_dump_all(docs if isinstance(docs, list) else [docs]))
