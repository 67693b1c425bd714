"""`gpufleet check --nodes` runs the node-platform rules on the release records of `plan --out` and on the
DaemonSets it checks, in the pack's words: the nodes are real `kubectl get nodes -o json` documents."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.cli.run_inprocess import run

NODE_LISTS = Path(__file__).resolve().parents[2] / "policies" / "tests" / "fixtures"


def operator_release(**values) -> dict:
    """The record `plan --out` writes for the gpu-operator release."""
    return {"kind": "HelmRelease", "name": "gpu-operator", "namespace": "gpu-operator", "chart": "gpu-operator",
            "version": "v26.7.0", "repo": "https://helm.ngc.nvidia.com/nvidia", "values": values}


def gpu_daemonset(node_selector: dict) -> dict:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "gpu-exporter", "namespace": "mon"},
            "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"nodeSelector": node_selector, "containers": [{"name": "c", "image": "exporter:1.0"}]}}}}


#: A workload of the plan beside the release (a plan's manifests always hold some).
TRAINER = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "trainer", "namespace": "ml"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "c", "image": "trainer:1.0", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}


def check(tmp_path: Path, docs: list[dict], nodes: str | Path):
    app = tmp_path / "plan.yaml"
    app.write_text(yaml.safe_dump_all([*docs, TRAINER]))
    result = run("check", "--json", "--nodes", NODE_LISTS / nodes, app)  # an absolute path stays as it is
    return result.code, json.loads(result.out)


def test_driver_container_on_talos_nodes_is_refused_naming_node_and_os(tmp_path):
    code, out = check(tmp_path, [operator_release(driver={"enabled": True})], "nodes-os-talos.json")
    assert code == 1
    [refused] = out["unschedulable"]
    assert refused["workload"] == "HelmRelease/gpu-operator/gpu-operator" and refused["reason"] == "policy"
    assert refused["message"].startswith("[node-platform] gpu-operator value driver.enabled is true, but node(s) "
                                         "talos-gpu-0 run Talos Linux (osImage 'Talos (v1.8.3)')")


def test_the_same_release_on_ubuntu_nodes_passes(tmp_path):
    code, out = check(tmp_path, [operator_release(driver={"enabled": True})], "nodes-os-ubuntu.json")
    assert code == 0, out
    assert out["unschedulable"] == [] and out["warnings"] == []


def test_a_driver_container_on_amazon_linux_2023_is_a_warning(tmp_path):
    code, out = check(tmp_path, [operator_release(driver={"enabled": True})], "nodes-os-al2023.json")
    assert code == 0
    assert any("run Amazon Linux 2023 (osImage 'Amazon Linux 2023.6.20241212')" in w["message"]
               for w in out["warnings"])


def test_a_gpu_daemonset_that_selects_a_label_no_gpu_node_has_never_lands(tmp_path):
    ds = gpu_daemonset({"feature.node.kubernetes.io/pci-10de.present": "true"})
    code, out = check(tmp_path, [ds], "nodes-os-al2023.json")
    assert code == 1
    [refused] = [u for u in out["unschedulable"] if u["reason"] == "policy"]
    assert refused["workload"] == "DaemonSet/mon/gpu-exporter"
    assert "none of the GPU nodes (ip-10-0-3-17.ec2.internal) matches: they lack" in refused["message"]
    assert "feature.node.kubernetes.io/pci-10de.present (written by Node Feature Discovery" in refused["message"]


def test_the_daemonset_lands_where_the_gpu_nodes_carry_its_label(tmp_path):
    ds = gpu_daemonset({"feature.node.kubernetes.io/pci-10de.present": "true"})
    code, out = check(tmp_path, [ds], "nodes-os-ubuntu.json")
    assert code == 0, out
    assert [u for u in out["unschedulable"] if u["reason"] == "policy"] == []


def test_a_daemonset_on_labels_the_checked_stack_writes_is_not_refused_before_they_exist(tmp_path):
    ds = gpu_daemonset({"feature.node.kubernetes.io/pci-10de.present": "true"})
    code, out = check(tmp_path, [ds, operator_release(driver={"enabled": False})], "nodes-os-al2023.json")
    assert [u for u in out["unschedulable"] if u["workload"] == "DaemonSet/mon/gpu-exporter"] == []


def test_the_same_daemonset_is_refused_when_that_stack_runs_no_nfd(tmp_path):
    ds = gpu_daemonset({"feature.node.kubernetes.io/pci-10de.present": "true"})
    code, out = check(tmp_path, [ds, operator_release(driver={"enabled": False}, nfd={"enabled": False})],
                      "nodes-os-al2023.json")
    assert code == 1
    assert [u["reason"] for u in out["unschedulable"] if u["workload"] == "DaemonSet/mon/gpu-exporter"] == ["policy"]


def test_the_driver_container_where_every_gpu_node_runs_a_host_driver_is_a_warning(tmp_path):
    code, out = check(tmp_path, [operator_release(driver={"enabled": True, "version": "595.91.07"})],
                      "nodes-dgx-all-host-driver.json")  # (the trainer stays Pending: no GPU advertised yet)
    assert not [u for u in out["unschedulable"] if u["workload"].startswith("HelmRelease/")]
    [warning] = [w for w in out["warnings"] if w["workload"] == "HelmRelease/gpu-operator/gpu-operator"]
    assert warning["message"].startswith("[node-platform] gpu-operator value driver.enabled is true (driver.version "
                                         "595.91.07), but every GPU node of the stack already runs a host NVIDIA "
                                         "driver: dgx-0 (label nvidia.com/gpu.deploy.driver=pre-installed)")


def plugin_release(**values) -> dict:
    return {"kind": "HelmRelease", "name": "nvidia-device-plugin", "namespace": "nvidia-device-plugin",
            "chart": "nvidia-device-plugin", "version": "0.20.0", "repo": "https://nvidia.github.io/k8s-device-plugin",
            "values": values}


def karpenter_gpu_node(tmp_path: Path) -> Path:
    """An EKS node Karpenter launched for GPUs, before any GPU software labelled it."""
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [{
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "ip-10-0-3-17.ec2.internal", "labels": {
            "kubernetes.io/hostname": "ip-10-0-3-17.ec2.internal", "node.kubernetes.io/instance-type": "g5.xlarge",
            "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia", "karpenter.k8s.aws/instance-gpu-count": "1"}},
        "status": {"allocatable": {"cpu": "3920m", "memory": "14918928Ki", "pods": "58"},
                   "nodeInfo": {"kubeletVersion": "v1.33.5-eks-113cf36", "containerRuntimeVersion": "containerd://1.7.27",
                                "osImage": "Amazon Linux 2023.7.20250512",
                                "kernelVersion": "6.1.134-152.225.amzn2023.x86_64"}}}]}))
    return path


def test_a_plugin_release_without_nfd_or_gfd_on_nodes_without_their_labels_is_refused_naming_them(tmp_path):
    code, out = check(tmp_path, [plugin_release(nfd={"enabled": False}, gfd={"enabled": False})],
                      karpenter_gpu_node(tmp_path))
    [refused] = [u for u in out["unschedulable"] if u["workload"] == PLUGIN]
    assert "none of the GPU nodes (ip-10-0-3-17.ec2.internal) matches" in refused["message"]
    assert "they lack feature.node.kubernetes.io/cpu-model.vendor_id" in refused["message"]
    assert "feature.node.kubernetes.io/pci-10de.present (written by Node Feature Discovery" in refused["message"]


def test_the_same_plugin_release_with_gfd_and_its_nfd_passes(tmp_path):
    code, out = check(tmp_path, [plugin_release(gfd={"enabled": True})], karpenter_gpu_node(tmp_path))
    assert [u for u in out["unschedulable"] if u["workload"].startswith("HelmRelease/")] == []


def tainted_gpu_node(tmp_path: Path, taint: dict) -> Path:
    """nodes-os-ubuntu.json with its GPU node tainted by hand (a taint no pool of the stack declares)."""
    doc = json.loads((NODE_LISTS / "nodes-os-ubuntu.json").read_text())
    for node in doc["items"]:
        if node["metadata"]["name"] == "gpu-a":
            node["spec"]["taints"] = [taint]
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(doc))
    return path


DEDICATED = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
PLUGIN = "HelmRelease/nvidia-device-plugin/nvidia-device-plugin"


def test_a_plugin_release_that_misses_a_gpu_node_taint_is_refused_naming_taint_and_node(tmp_path):
    nodes = tainted_gpu_node(tmp_path, DEDICATED)
    code, out = check(tmp_path, [plugin_release(gfd={"enabled": True})], nodes)
    assert code == 1
    [refused] = [u for u in out["unschedulable"] if u["workload"] == PLUGIN]
    assert refused["reason"] == "policy"
    assert refused["message"].startswith(
        "[node-platform] does not tolerate the taint dedicated=ml:NoSchedule of GPU node(s) gpu-a, which its "
        "selector matches: the DaemonSet controller creates no pod on them")


def test_the_same_release_tolerating_the_taint_passes(tmp_path):
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                   {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]
    code, out = check(tmp_path, [plugin_release(gfd={"enabled": True}, tolerations=tolerations)],
                      tainted_gpu_node(tmp_path, DEDICATED))
    assert [u for u in out["unschedulable"] if u["workload"] == PLUGIN] == []


def test_an_operator_release_misses_the_taint_through_its_operands_tolerations(tmp_path):
    code, out = check(tmp_path, [operator_release(driver={"enabled": False})],
                      tainted_gpu_node(tmp_path, {**DEDICATED, "effect": "NoExecute"}))
    [refused] = [u for u in out["unschedulable"] if u["workload"] == "HelmRelease/gpu-operator/gpu-operator"]
    assert "does not tolerate the taint dedicated=ml:NoExecute of GPU node(s) gpu-a" in refused["message"]


def test_a_gpu_daemonset_must_tolerate_even_the_gpu_taint_of_the_nodes_it_selects(tmp_path):
    ds = gpu_daemonset({"feature.node.kubernetes.io/pci-10de.present": "true"})
    gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    code, out = check(tmp_path, [ds], tainted_gpu_node(tmp_path, gpu_taint))
    [refused] = [u for u in out["unschedulable"] if u["workload"] == "DaemonSet/mon/gpu-exporter"]
    assert "the taint nvidia.com/gpu=present:NoSchedule of GPU node(s) gpu-a" in refused["message"]


def test_taints_the_daemonset_controller_tolerates_itself_are_not_findings(tmp_path):
    cordoned = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    ds = gpu_daemonset({"feature.node.kubernetes.io/pci-10de.present": "true"})
    code, out = check(tmp_path, [ds], tainted_gpu_node(tmp_path, cordoned))
    assert [u for u in out["unschedulable"] if u["reason"] == "policy"] == []


def test_network_unavailable_is_tolerated_by_the_controller_only_for_a_pod_on_the_host_network(tmp_path):
    taint = {"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}
    ds = gpu_daemonset({"feature.node.kubernetes.io/pci-10de.present": "true"})
    code, out = check(tmp_path, [ds], tainted_gpu_node(tmp_path, taint))
    refused = [u["workload"] for u in out["unschedulable"] if u["reason"] == "policy"]
    assert refused == ["DaemonSet/mon/gpu-exporter"]
    ds["spec"]["template"]["spec"]["hostNetwork"] = True
    code, out = check(tmp_path, [ds], tainted_gpu_node(tmp_path, taint))
    assert [u for u in out["unschedulable"] if u["reason"] == "policy"] == []
