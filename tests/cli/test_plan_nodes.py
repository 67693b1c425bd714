"""`gpufleet plan --nodes FILE`: the pack checks the stack against the real nodes; without node facts plan
says in one line that those checks were not made."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_CHECKED = ("not checked against nodes: pass --nodes FILE (`kubectl get nodes -o json` or a capacity.json of "
               "`gpufleet discover`) to check the runtime preset, the host driver, the nodes' OS, runtime and "
               "Kubernetes version, selector labels and pool products")


def _plan(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", "plan", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def _nodes(tmp_path: Path, kubelet: str, labels: dict[str, str], name: str = "k3s-gpu-0") -> Path:
    """A `kubectl get nodes -o json` list with one node."""
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [{
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                   "nodeInfo": {"kubeletVersion": kubelet, "containerRuntimeVersion": "containerd://2.0.5-k3s1"}}}]}))
    return path


K3S_A10 = {"feature.node.kubernetes.io/pci-10de.present": "true", "nvidia.com/gpu.product": "NVIDIA-A10"}


def test_plan_without_nodes_says_the_node_checks_were_not_made():
    result = _plan("--stack", "dev")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == NOT_CHECKED
    assert result.stdout.count("not checked against nodes") == 1


def test_k3s_stack_on_its_k3s_node_passes_and_says_nothing_is_unchecked(tmp_path):
    result = _plan("--stack", "k3s", "--nodes", str(_nodes(tmp_path, "v1.33.3+k3s1", K3S_A10)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no violations" in result.stdout and "not checked against nodes" not in result.stdout


def test_containerd_preset_on_a_k3s_node_is_refused_with_the_preset_to_set(tmp_path):
    nodes = _nodes(tmp_path, "v1.33.3+k3s1", {**K3S_A10, "nvidia.com/gpu.product": "Tesla-T4"}, name="ase-node-0")
    result = _plan("--stack", "dev", "--nodes", str(nodes))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "[mandatory] stack-matches-nodes  (stack)" in result.stdout
    assert ("Pulumi.dev.yaml: gpufleet:cluster.runtime.preset is containerd, but node(s) ase-node-0 run k3s "
            "(kubeletVersion v1.33.3+k3s1)") in result.stdout
    assert "Expected cluster.runtime.preset: k3s." in result.stdout


def test_a_pool_whose_node_reports_another_gpu_is_refused(tmp_path):
    nodes = _nodes(tmp_path, "v1.33.3+k3s1", {**K3S_A10, "nvidia.com/gpu.product": "NVIDIA-L4"})
    result = _plan("--stack", "k3s", "--nodes", str(nodes))
    assert result.returncode == 1, result.stdout + result.stderr
    assert ("gpufleet:nodePools[0] (gpu) declares gpu.product NVIDIA-A10, but its node(s) k3s-gpu-0 carry "
            "nvidia.com/gpu.product=NVIDIA-L4") in result.stdout


def test_an_unreadable_nodes_file_is_bad_input_before_anything_runs(tmp_path):
    bad = tmp_path / "nodes.json"
    bad.write_text('{"apiVersion": "v1", "kind": "List", "items": [{"metadata": {}}]}')
    result = _plan("--stack", "dev", "--nodes", str(bad))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(f"{bad}: ") and "Traceback" not in result.stderr
    assert "Previewing" not in result.stdout


def test_nodes_without_the_pack_is_a_usage_mistake(tmp_path):
    result = _plan("--stack", "dev", "--no-policies", "--nodes", str(_nodes(tmp_path, "v1.34.1", {})))
    assert result.returncode == 2
    assert result.stderr.strip() == ("--nodes: the checks against the nodes are policies of the pack; drop "
                                     "--no-policies to make them")


def test_a_node_source_in_the_pack_config_counts_as_node_facts(tmp_path):
    config = tmp_path / "pack.json"
    config.write_text(json.dumps({"stack-matches-nodes": {"nodesFile": str(_nodes(tmp_path, "v1.33.3+k3s1", K3S_A10))},
                                  "preinstalled-driver": "advisory"}))
    result = _plan("--stack", "k3s", "--policy-pack-config", str(config))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "not checked against nodes" not in result.stdout


def test_a_capacity_policys_nodes_file_is_named_instead_of_plan_nodes(tmp_path):
    nodes = _nodes(tmp_path, "v1.33.3+k3s1", K3S_A10)
    config = tmp_path / "pack.json"
    config.write_text(json.dumps({"gpu-capacity-fit": {"capacitySource": "nodesFile", "nodesFile": str(nodes)}}))
    result = _plan("--stack", "k3s", "--policy-pack-config", str(config))
    last = result.stdout.splitlines()[-1]
    assert "--nodes" not in last
    assert last == (f"not checked against nodes: gpu-capacity-fit.nodesFile ({nodes}) in {config} gives nodes to "
                    "gpu-capacity-fit only; set stack-matches-nodes.nodesFile, preinstalled-driver.nodesFile, "
                    "node-platform.nodesFile and node-platform-advisories.nodesFile there too to check the runtime "
                    "preset, the host driver, the nodes' OS, runtime and Kubernetes version, selector labels and "
                    "pool products")


def test_an_operator_stack_that_installs_the_driver_on_talos_nodes_is_refused_by_plan(tmp_path):
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [{
        "metadata": {"name": "talos-gpu-0", "labels": {"feature.node.kubernetes.io/pci-10de.present": "true"}},
        "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "1"},
                   "nodeInfo": {"kubeletVersion": "v1.33.5", "containerRuntimeVersion": "containerd://2.0.0",
                                "osImage": "Talos (v1.8.3)", "kernelVersion": "6.6.60-talos"}}}]}))
    result = _plan("--stack", "k3s", "--nodes", str(nodes))  # operator.driver.enabled: true
    assert result.returncode == 1, result.stdout + result.stderr
    assert "[mandatory] node-platform" in result.stdout
    assert "gpufleet:operator.driver.enabled is true, but node(s) talos-gpu-0 run Talos Linux" in result.stdout
