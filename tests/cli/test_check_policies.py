"""`gpufleet check` runs the policy pack's workload rules (no-visible-devices-bypass, no-driver-hostpath, the
resource names of gpu-request-shape) on the manifests it checks, in the pack's own words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from policies import no_driver_hostpath, no_visible_devices_bypass
from policies.tests.conftest import run_policy
from tests.cli.run_inprocess import run

FIXTURES = Path(__file__).parent.parent / "fixtures"
NODES = FIXTURES / "nodes-mixed-cluster.json"  # t4-0 (4 GPUs), h100-0 (2), a100-0 (MIG, tainted), cordoned-0
BYPASS_MESSAGE = (
    "Deployment ml/pinned: container 'cuda' sets NVIDIA_VISIBLE_DEVICES=all without a GPU resource request, "
    "bypassing the device plugin's accounting; expected a nvidia.com/* resource limit instead (pinning devices "
    "is allowed only in platform-managed mode).")


def deployment(name: str = "pinned", replicas: int = 2, env=None, limits=None, volumes=None) -> dict:
    container = {"name": "cuda", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04"}
    if env is not None:
        container["env"] = env
    if limits is not None:
        container["resources"] = {"limits": limits}
    spec = {"containers": [container], **({"volumes": volumes} if volumes is not None else {})}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


PINNED = deployment(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])


def check(tmp_path: Path, docs: list[dict], *flags: str, nodes: Path = NODES):
    app = tmp_path / "app.yaml"
    app.write_text(yaml.safe_dump_all(docs))
    return run("check", "--nodes", nodes, *flags, app)


def check_json(tmp_path: Path, docs: list[dict], **kw) -> tuple[int, dict]:
    result = check(tmp_path, docs, "--json", **kw)
    return result.code, json.loads(result.out)


def test_visible_devices_without_a_request_fails_check_with_the_policy_message(tmp_path):
    code, out = check_json(tmp_path, [PINNED])
    assert code == 1 and out["fits"] is False
    assert out["unschedulable"] == [{"workload": "Deployment/ml/pinned", "reason": "policy", "pending": 2,
                                     "message": f"[no-visible-devices-bypass] {BYPASS_MESSAGE}"}]


def test_visible_devices_finding_reads_in_the_text_output(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # one table row per entry, unwrapped
    result = check(tmp_path, [PINNED])
    assert result.code == 1
    [row] = [line for line in result.out.splitlines() if "Deployment/ml/pinned" in line]
    assert [cell.strip() for cell in row.strip("│ ").split("│")] == [
        "Deployment/ml/pinned", "policy", "2", f"[no-visible-devices-bypass] {BYPASS_MESSAGE}"]
    assert "the policy pack refuses" in result.out
    assert result.out.splitlines()[-1] == "1 workload(s) checked: 1 workload(s) refused by the policy pack"


def test_the_pack_refuses_the_same_deployment_in_the_same_words(tmp_path):
    resource = {"type": "kubernetes:apps/v1:Deployment", "name": "pinned", "props": PINNED}
    assert [m for m, _ in run_policy(no_visible_devices_bypass.POLICY, [resource])] == [BYPASS_MESSAGE]
    assert run_policy(no_visible_devices_bypass.POLICY, [resource], {"platformManaged": True}) == []


@pytest.mark.parametrize("env, limits", [
    pytest.param([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}], {"nvidia.com/gpu": 1}, id="with a request"),
    pytest.param([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}], None, id="void"),
    pytest.param([{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}], None, id="CUDA_VISIBLE_DEVICES"),
])
def test_env_that_bypasses_nothing_passes_check(tmp_path, env, limits):
    code, out = check_json(tmp_path, [deployment(env=env, limits=limits, replicas=1)])
    assert (code, out["unschedulable"], out["warnings"]) == (0, [], [])


def test_driver_hostpath_fails_check_but_the_mps_directory_does_not(tmp_path):
    mounts = [{"name": "drv", "hostPath": {"path": "/usr/lib/x86_64-linux-gnu/libcuda.so.1"}},
              {"name": "mps", "hostPath": {"path": "/run/nvidia/mps"}}]
    code, out = check_json(tmp_path, [deployment(limits={"nvidia.com/gpu": 1}, replicas=1, volumes=mounts)])
    assert code == 1
    [entry] = out["unschedulable"]
    resource = {"type": "kubernetes:apps/v1:Deployment", "name": "pinned",
                "props": deployment(limits={"nvidia.com/gpu": 1}, replicas=1, volumes=mounts)}
    [(message, _)] = run_policy(no_driver_hostpath.POLICY, [resource])
    assert entry == {"workload": "Deployment/ml/pinned", "reason": "policy", "pending": 1,
                     "message": f"[no-driver-hostpath] {message}"}
    assert "/usr/lib/x86_64-linux-gnu/libcuda.so.1" in message and "/run/nvidia/mps" not in message


def test_a_gpu_resource_name_no_node_advertises_gets_the_fix_after_the_schedulers_verdict(tmp_path):
    code, out = check_json(tmp_path, [deployment(name="a100", limits={"nvidia.com/a100": 1}, replicas=1)])
    assert code == 1
    assert [(u["reason"], u["message"].split(" ", 1)[0]) for u in out["unschedulable"]] == [
        ("pending", "0/4"), ("policy", "[gpu-request-shape]")]
    assert "'nvidia.com/a100' is not a resource the NVIDIA device plugin advertises; expected nvidia.com/gpu" \
        in out["unschedulable"][1]["message"]


def test_a_resource_name_the_nodes_advertise_is_never_a_wrong_name(tmp_path):
    nodes = json.loads(NODES.read_text())
    nodes["items"][0]["status"]["allocatable"]["nvidia.com/a100"] = "1"
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(nodes))
    code, out = check_json(tmp_path, [deployment(name="a100", limits={"nvidia.com/a100": 1}, replicas=1)], nodes=path)
    assert (code, out["unschedulable"]) == (0, [])


def test_a_fractional_gpu_is_reported_once_in_the_api_servers_words(tmp_path):
    code, out = check_json(tmp_path, [deployment(limits={"nvidia.com/gpu": "500m"}, replicas=1)])
    assert code == 1
    assert [u["reason"] for u in out["unschedulable"]] == ["rejected"]


def test_policy_entries_follow_their_workload_in_input_order(tmp_path):
    docs = [deployment(name="first", env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "0"}], replicas=1),
            deployment(name="huge", limits={"nvidia.com/gpu": 64}, replicas=1),
            deployment(name="last", env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
                       limits={"nvidia.com/gpu": 64}, replicas=1)]
    docs[2]["spec"]["template"]["spec"]["containers"].append(
        {"name": "side", "image": "x:1", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]})
    code, out = check_json(tmp_path, docs)
    assert code == 1
    assert [(u["workload"], u["reason"]) for u in out["unschedulable"]] == [
        ("Deployment/ml/first", "policy"), ("Deployment/ml/huge", "pending"),
        ("Deployment/ml/last", "pending"), ("Deployment/ml/last", "policy")]
    assert "container 'side' sets NVIDIA_VISIBLE_DEVICES=all" in out["unschedulable"][3]["message"]
    summary = " ".join(check(tmp_path, docs).out.split())  # the console wraps it
    assert summary.endswith("3 workload(s) checked: 2 workload(s) will not run, 1 more workload(s) refused by "
                            "the policy pack")


@pytest.mark.parametrize("manifest", ["fits.yaml", "too-big.yaml"])
def test_the_suites_manifests_give_the_schedulers_answer_and_nothing_more(tmp_path, manifest):
    from gpufleet.capacity.files import load_capacity
    from gpufleet.scheduling import check_workloads, load_manifests

    path = FIXTURES / "manifests" / manifest
    pods = FIXTURES / "pods-mixed-cluster.json"
    cap = load_capacity(NODES, pods)
    expected = check_workloads(cap.nodes, cap.pods, cap.dra + load_manifests([path])).to_json()
    result = run("check", "--nodes", NODES, "--pods", pods, "--json", path)
    assert json.loads(result.out) == expected
    assert result.code == (0 if expected["fits"] else 1)
