"""`gpufleet plan`: every shipped stack plans offline, writes plan.json and manifests, deterministically."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpufleet.planning.output import write_plan
from tests.conftest import ROOT, SHIPPED_STACKS, plan_shipped

GPUFLEET = [sys.executable, "-m", "gpufleet.cli"]


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "gpufleet"), *args], cwd=cwd, capture_output=True,
                          text=True)


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_shipped_stack_plans_a_gpu_stack_root_with_children(stack):
    plan = plan_shipped(stack)
    (root,) = plan.by_type("gpufleet:index:GpuStack")
    assert root.name == stack
    children = [r for r in plan.resources if r.parent == root.urn]
    assert len(children) >= 3


def test_dev_plan_contains_operator_sharing_labels_and_the_three_services():
    plan = plan_shipped("dev")
    release = plan.get("kubernetes:helm.sh/v3:Release", "dev-gpu-operator-release").inputs
    assert (release["chart"], release["version"]) == ("gpu-operator", "v26.7.0")
    assert release["values"]["driver"]["enabled"] is False
    assert release["values"]["devicePlugin"]["config"] == {"create": False, "name": "gpufleet-device-plugin-config",
                                                           "default": "t4-mps"}
    patch = plan.get("kubernetes:core/v1:NodePatch", "dev-edge-labels-ase-node-0").inputs
    assert patch["metadata"] == {"name": "ase-node-0", "labels": {"nvidia.com/device-plugin.config": "t4-mps"}}
    services = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in plan.by_type("kubernetes:core/v1:Service")}
    assert set(services) == {"my-infer2", "my-infer3", "tf-notebook"}
    assert all(s["type"] == "LoadBalancer" and s["loadBalancerSourceRanges"] == ["10.128.0.0/16"]
               for s in services.values())
    ports = sorted(p["port"] for s in services.values() for p in s["ports"])
    assert ports == [5001, 8883, 8888]


def test_dev_workloads_share_the_one_t4_through_the_device_plugin():
    plan = plan_shipped("dev")
    for d in plan.by_type("kubernetes:apps/v1:Deployment"):
        pod = d.inputs["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert container["resources"]["limits"] == {"nvidia.com/gpu": "1"}
        assert pod["nodeSelector"] == {"kubernetes.io/hostname": "ase-node-0"}
        assert "NVIDIA_VISIBLE_DEVICES" not in {e["name"] for e in container.get("env", [])}


def test_mig_plan_runs_standalone_plugin_with_single_strategy_and_mig_manager():
    plan = plan_shipped("mig")
    release = plan.get("kubernetes:helm.sh/v3:Release", "mig-device-plugin-release").inputs
    assert release["chart"] == "nvidia-device-plugin" and release["version"] == "0.20.0"
    assert release["values"]["migStrategy"] == "single" and release["values"]["gfd"] == {"enabled": True}
    cm = plan.get("kubernetes:core/v1:ConfigMap", "mig-mig-configmap").inputs
    mig = yaml.safe_load(cm["data"]["config.yaml"])
    assert mig["mig-configs"]["all-1g.5gb"] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}]
    assert plan.get("kubernetes:core/v1:NodePatch", "mig-a100-labels-a100-node-0").inputs["metadata"]["labels"] == {
        "nvidia.com/mig.config": "all-1g.5gb", "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "true", "nvidia.com/gpu.deploy.mig-manager": "true"}
    jobs = plan.by_type("kubernetes:batch/v1:Job")
    assert len(jobs) == 2
    for job in jobs:
        selector = job.inputs["spec"]["template"]["spec"]["nodeSelector"]
        assert selector == {"nvidia.com/gpu.product": "A100-PCIE-40GB-MIG-1g.5gb"}
    assert plan.by_type("kubernetes:apps/v1:DaemonSet")[0].inputs["metadata"]["name"] == "nvidia-mig-manager"


def test_k3s_plan_sets_k3s_containerd_paths_and_tolerates_the_gpu_taint():
    plan = plan_shipped("k3s")
    env = plan.get("kubernetes:helm.sh/v3:Release", "k3s-gpu-operator-release").inputs["values"]["toolkit"]["env"]
    assert {"name": "CONTAINERD_CONFIG", "value": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"} in env
    assert {"name": "CONTAINERD_SOCKET", "value": "/run/k3s/containerd/containerd.sock"} in env
    job = plan.get("kubernetes:batch/v1:Job", "k3s-ml-mnist-job").inputs
    assert {"key": "sku", "operator": "Equal", "value": "gpu",
            "effect": "NoSchedule"} in job["spec"]["template"]["spec"]["tolerations"]
    dq = plan.get("kubernetes:apps/v1:Deployment", "k3s-ml-device-query-deployment").inputs
    assert dq["spec"]["template"]["spec"]["tolerations"] == [{"key": "sku", "operator": "Equal", "value": "gpu",
                                                              "effect": "NoSchedule"}]
    assert not [s for s in plan.by_type("kubernetes:core/v1:Service") if "device-query" in s.name]


def test_multi_plan_gives_each_team_one_exclusive_gpu_on_its_node():
    plan = plan_shipped("multi")
    jobs = {j.inputs["metadata"]["namespace"]: j.inputs["spec"]["template"]["spec"]
            for j in plan.by_type("kubernetes:batch/v1:Job")}
    assert set(jobs) == {"gpu1", "gpu2"}
    assert jobs["gpu1"]["nodeSelector"] == {"kubernetes.io/hostname": "gpu-node-m60"}
    assert jobs["gpu2"]["nodeSelector"] == {"kubernetes.io/hostname": "gpu-node-k520"}
    assert all(s["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"} for s in jobs.values())


def test_plan_out_writes_plan_json_and_one_manifest_per_kubernetes_resource(tmp_path):
    plan = plan_shipped("dev")
    files = write_plan(plan, tmp_path / "out")
    doc = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert doc["stack"] == "dev"
    assert {"type", "name", "parent", "inputs"} <= set(doc["resources"][0])
    k8s_objects = [r for r in doc["resources"] if r["type"].startswith("kubernetes:") and "apiVersion" in r["inputs"]]
    manifests = [f for f in files if f.suffix == ".yaml"]
    assert len(manifests) == len(k8s_objects) + 1  # + the Helm release
    release = yaml.safe_load((tmp_path / "out/manifests/gpu-operator/release-gpu-operator.yaml").read_text())
    assert set(release) >= {"chart", "version", "repo", "values"} and release["repo"] == "https://helm.ngc.nvidia.com/nvidia"


def test_plan_output_masks_secrets(tmp_path):
    write_plan(plan_shipped("dev"), tmp_path / "out")
    secret = yaml.safe_load((tmp_path / "out/manifests/myasetest1/secret-tf-notebook-token.yaml").read_text())
    assert secret["stringData"] == {"token": "[secret]"}
    token_value = "[secret]"
    assert token_value in (tmp_path / "out" / "plan.json").read_text()


def test_same_input_gives_byte_identical_output(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_plan(plan_shipped("dev"), a)
    write_plan(plan_shipped("dev"), b)
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files_a == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files_a)


def test_cli_plan_prints_preview_and_writes_out_dir(tmp_path):
    result = run_cli("plan", "--stack", "dev", "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    assert "Previewing update (dev):" in result.stdout and "gpufleet:index:GpuOperator" in result.stdout
    assert "to create" in result.stdout
    assert (tmp_path / "p" / "plan.json").is_file()


def test_cli_plan_on_broken_config_exits_2_naming_every_path_without_traceback(tmp_path):
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path)
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    stack["config"]["gpufleet:mode"] = "operatr"
    stack["config"]["gpufleet:workloads"][1]["gpu"]["count"] = 0.5
    (tmp_path / "Pulumi.broken.yaml").write_text(yaml.safe_dump(stack))
    result = run_cli("plan", "--stack", "broken", "--project-dir", str(tmp_path), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "Pulumi.broken.yaml:13: gpufleet:mode:" in result.stderr
    assert "Pulumi.broken.yaml:52: gpufleet:workloads[1].gpu.count:" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "out").exists()  # nothing written half-way


def test_cli_plan_on_missing_stack_names_the_stacks_there():
    result = run_cli("plan", "--stack", "nope")
    assert result.returncode == 2
    assert "Pulumi.nope.yaml: no such stack file; stacks here:" in result.stderr and "dev" in result.stderr


@pytest.mark.parametrize("stack", [*SHIPPED_STACKS, "aks"])
def test_shipped_stack_passes_the_policy_pack(stack):
    """Every bundled stack fits its own capacity and passes every policy (greed is the one that must not)."""
    result = run_cli("plan", "--stack", stack)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "no violations" in result.stdout
