import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from tests.discovery.test_discovery import _has_nvml

FIXTURES = Path(__file__).parent.parent / "fixtures"
NODES, PODS = FIXTURES / "nodes-mixed-cluster.json", FIXTURES / "pods-mixed-cluster.json"
runner = CliRunner()


def gpufleet(*args):
    return subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", *args],
                          capture_output=True, text=True)


def test_check_exits_0_with_json_when_everything_fits():
    r = runner.invoke(app, ["check", "--nodes", str(NODES), "--pods", str(PODS), "--json",
                            str(FIXTURES / "manifests" / "fits.yaml")])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["fits"] is True and out["unschedulable"] == [] and out["checked"] == ["Deployment/ml/infer"]


def test_check_exits_1_and_reports_the_101_gpu_pod_in_scheduler_words():
    r = gpufleet("check", "--nodes", str(FIXTURES / "nodes-one-h100x8.json"), "--json",
                 str(FIXTURES / "manifests" / "too-big.yaml"))
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    assert out["fits"] is False
    (u,) = out["unschedulable"]
    assert {k: u[k] for k in ("workload", "reason", "pending", "message")} == {
        "workload": "Pod/default/greedy", "reason": "pending", "pending": 1,
        "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}
    # ... and what to do about it: no node holds 101 GPUs.
    blocked = u["blockedBy"]
    assert blocked["summary"] == ("one pod asks for nvidia.com/gpu 101; the largest node it may use has "
                                  "nvidia.com/gpu 8 allocatable; no node of a known GPU product holds 101 (the "
                                  "most is 20 GPUs)")
    assert blocked["fix"] == ("ask for at most nvidia.com/gpu 8 per pod and split the work over more pods: no node "
                              "to add holds nvidia.com/gpu 101")


def test_running_pods_make_the_directory_of_manifests_not_fit():
    r = runner.invoke(app, ["check", "--nodes", str(NODES), "--json", str(FIXTURES / "manifests")])
    assert r.exit_code == 1
    assert [u["workload"] for u in json.loads(r.stdout)["unschedulable"]] == ["Pod/default/greedy"]


def test_check_exits_2_with_one_line_on_missing_nodes_file():
    r = gpufleet("check", "--nodes", "/nonexistent.json", str(FIXTURES / "manifests" / "fits.yaml"))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().count("\n") == 0 and "no such file" in r.stderr


def test_check_exits_2_on_bad_yaml(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\n  metadata: [\n")
    r = gpufleet("check", "--nodes", str(NODES), str(bad))
    assert r.returncode == 2 and "not readable as YAML" in r.stderr


def test_check_human_output_names_the_workload():
    r = runner.invoke(app, ["check", "--nodes", str(FIXTURES / "nodes-one-h100x8.json"),
                            str(FIXTURES / "manifests" / "too-big.yaml")])
    assert r.exit_code == 1 and "Pod/default/greedy" in r.stdout


def test_discover_from_kubectl_files_writes_capacity_json_usable_by_check(tmp_path):
    out = tmp_path / "capacity.json"
    r = runner.invoke(app, ["discover", "--nodes", str(NODES), "--pods", str(PODS), "--out", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["format"] == "gpufleet.io/capacity/v1" and len(doc["nodes"]) == 4 and len(doc["pods"]) == 1
    r = runner.invoke(app, ["check", "--nodes", str(out), "--json", str(FIXTURES / "manifests" / "fits.yaml")])
    assert r.exit_code == 0, r.output


@pytest.mark.skipif(_has_nvml(), reason="this machine has NVML")
def test_discover_nvml_without_gpu_prints_one_line_and_exits_2(tmp_path):
    r = gpufleet("discover", "--nvml", "--out", str(tmp_path / "c.json"))
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "NVML is not available" in r.stderr
    assert not (tmp_path / "c.json").exists()


def test_discover_needs_exactly_one_source(tmp_path):
    r = gpufleet("discover", "--out", str(tmp_path / "c.json"))
    assert r.returncode == 2 and "choose exactly one source" in r.stderr


def test_discover_reports_every_problem_of_a_nodes_file(tmp_path):
    node = json.loads((FIXTURES / "nodes-one-h100x8.json").read_text())["items"][0]
    pod = json.loads(PODS.read_text())["items"][0]
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"kind": "List", "items": [pod, node, {**node, "kind": "Service"}]}))
    r = gpufleet("discover", "--nodes", str(nodes), "--out", str(tmp_path / "c.json"))
    assert r.returncode == 2 and not (tmp_path / "c.json").exists()
    assert [line.split(": ")[1] for line in r.stderr.splitlines()] == ["Pod/trainer-0", "Service/gpu-node-0"]
