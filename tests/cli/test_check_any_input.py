"""`gpufleet check` takes any input without crashing: damaged kubectl JSON and manifests give exit 2 and one
line per problem naming the file, never a traceback and never exit 1 (which means "will not schedule")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.run_inprocess import run
from tests.mutations import mutated, text_mutated

FIXTURES = Path(__file__).parent.parent / "fixtures"
NODES = json.loads((FIXTURES / "nodes-mixed-cluster.json").read_text())
ONE_NODE = json.loads((FIXTURES / "nodes-one-h100x8.json").read_text())
PODS = json.loads((FIXTURES / "pods-mixed-cluster.json").read_text())
MANIFESTS = [list(yaml.safe_load_all((FIXTURES / "manifests" / name).read_text()))
             for name in ("fits.yaml", "too-big.yaml")]
CAPACITY = {"format": "gpufleet.io/capacity/v1", "source": "kubectl", "nodes": [
    {"name": "gpu-0", "labels": {"pool": "train"},
     "taints": [{"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"}],
     "unschedulable": False, "allocatable": {"cpu": 16000, "nvidia.com/gpu": 8, "pods": 110}, "capacity": {},
     "unknown": ["memory"], "containerRuntime": "", "kubeletVersion": "",
     "gpus": {"driverVersion": "570", "cudaVersion": "12.8", "gpus": [
         {"index": 0, "uuid": "GPU-0", "product": "NVIDIA H100", "memoryMiB": 81559, "migEnabled": True,
          "migInstances": [{"profile": "1g.10gb", "memoryMiB": 9856}]}]}}],
    "pods": [{"namespace": "ml", "name": "p", "node": "gpu-0", "requests": {"nvidia.com/gpu": 1}}],
    "waitingPods": {"Deployment/ml/serve": 2}}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                             HealthCheck.too_slow])


def check(tmp_path: Path, nodes, pods, manifests_text: str, *extra: str):
    paths = {"nodes": tmp_path / "nodes.json", "pods": tmp_path / "pods.json", "app": tmp_path / "app.yaml"}
    paths["nodes"].write_text(nodes if isinstance(nodes, str) else json.dumps(nodes))
    paths["pods"].write_text(pods if isinstance(pods, str) else json.dumps(pods))
    paths["app"].write_text(manifests_text)
    result = run("check", "--nodes", paths["nodes"], "--pods", paths["pods"], *extra, paths["app"])
    return result, paths


def assert_within_contract(result, paths, as_json: bool = True) -> None:
    assert "Traceback" not in result.err + result.out
    assert result.code in (0, 1, 2), result
    if result.code == 2:
        lines = result.err.strip().splitlines()
        assert lines, "exit 2 says why"
        named = [str(p) for p in paths.values()]
        for line in lines:
            assert any(n in line for n in named), f"error line names no file: {line!r}"
    elif as_json:
        out = json.loads(result.out)
        assert out["fits"] is (result.code == 0)
    else:
        assert "workload(s) checked" in result.out


@SETTINGS
@given(nodes=mutated(NODES))
def test_damaged_nodes_file_never_crashes_check(tmp_path, nodes):
    assert_within_contract(*check(tmp_path, nodes, PODS, yaml.safe_dump_all(MANIFESTS[0]), "--json"))


@SETTINGS
@given(capacity=mutated(CAPACITY))
def test_damaged_capacity_json_never_crashes_check(tmp_path, capacity):
    assert_within_contract(*check(tmp_path, capacity, PODS, yaml.safe_dump_all(MANIFESTS[0]), "--json"))


@SETTINGS
@given(pods=mutated(PODS))
def test_damaged_pods_file_never_crashes_check(tmp_path, pods):
    assert_within_contract(*check(tmp_path, NODES, pods, yaml.safe_dump_all(MANIFESTS[0]), "--json"))


@SETTINGS
@given(docs=st.sampled_from(MANIFESTS).flatmap(mutated), flags=st.sampled_from([
    ("--json",), (), ("--extended-resource-toleration",), ("--json", "--extended-resource-toleration")]))
def test_damaged_manifests_never_crash_check(tmp_path, docs, flags):
    text = yaml.safe_dump_all(docs if isinstance(docs, list) else [docs])
    assert_within_contract(*check(tmp_path, ONE_NODE, PODS, text, *flags), as_json="--json" in flags)


@SETTINGS
@given(data=st.data())
def test_cut_or_spliced_files_never_crash_check(tmp_path, data):
    which = data.draw(st.sampled_from(["nodes", "pods", "app"]))
    texts = {"nodes": json.dumps(NODES, indent=1), "pods": json.dumps(PODS, indent=1),
             "app": yaml.safe_dump_all(MANIFESTS[1])}
    texts[which] = data.draw(text_mutated(texts[which]))
    assert_within_contract(*check(tmp_path, texts["nodes"], texts["pods"], texts["app"], "--json"))


def test_traceback_never_reaches_stderr_of_the_real_process(tmp_path):
    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "List", "items": [{"kind": "Node", "metadata": 5}]}))
    (tmp_path / "app.yaml").write_text("kind: Pod\nmetadata: {name: p}\nspec: {containers: {a: 1}}\n")
    r = subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", "check", "--nodes",
                        str(tmp_path / "nodes.json"), str(tmp_path / "app.yaml")], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.splitlines() == [
        f"{tmp_path / 'nodes.json'}: items[0]: metadata: must be an object, not the number 5",
        f"{tmp_path / 'nodes.json'}: items[0]: metadata.name: Required value: a node needs a name",
        f"{tmp_path / 'app.yaml'}: Pod/p: spec.containers: must be a list, not an object",
    ]
