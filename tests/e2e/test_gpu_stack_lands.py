"""The GPU stack lands, for real: for every shipped plain-cluster stack, its GPU DaemonSets are put into a
real cluster whose KWOK nodes are the stack's planned nodes plus one CPU node, and the real DaemonSet
controller and scheduler must place a pod on every GPU node and on no other node, with the stack's taints
and tolerations.

- The standalone device plugin release is installed with the real helm from the pinned upstream chart, with
  the values gpufleet planned (its tolerations, nodeSelector and affinity are the chart's templates' output).
- The gpu-operator's operands are made by the operator at run time, which no KWOK cluster runs: each operand
  the release runs becomes a DaemonSet as gpufleet models it (`release_placement`: the operator's GPU node
  affinity and the release's `daemonsets.tolerations`, else the chart's default).
- The GPU nodes carry the labels the stack's own node discovery writes before any of these pods exist:
  Node Feature Discovery's `feature.node.kubernetes.io/pci-10de.present=true` (NVIDIA's PCI vendor id), and
  the operator's `nvidia.com/gpu.present=true`; GFD's `nvidia.com/mps.capable=true` where the pool shares by
  MPS.
  A planned node has only the labels gpufleet plans (GFD's product, count, sharing), which no device plugin
  chart selects on; a real node gets these within seconds of NFD's worker starting there. The CPU node gets
  none of them, as NFD finds no NVIDIA PCI device there.

Then a GPU node tainted by hand with a taint no pool declares: the real controller leaves it without a plugin
pod, and `gpufleet check` on the kubectl files of the same nodes refuses the release for it (node-platform).
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest
import yaml

from gpufleet.capacity.model import Node, Taint
from gpufleet.nvidia.stack_placement import GPU_PRESENT, NFD_VENDOR
from gpufleet.validation.gpu_daemonsets import release_placement
from gpufleet.validation.node_platform import DEVICE_PLUGIN, OPERATOR, release_of_record
from tests.conftest import SHIPPED_STACKS
from tests.e2e.cluster import ROOT, Api, ClusterError
from tests.e2e.conftest import kubectl_runner
from tests.e2e.kwok_nodes import create_nodes, nodes_from_stack, wait_nodes_ready
from tests.e2e.test_rendered_accepted import install_release
from tests.e2e.workloads import check_json, ensure_namespaces, helm, plan_documents

RESULTS = ROOT / "build" / "e2e" / "gpu-stack-lands.json"
MPS_CAPABLE = "nvidia.com/mps.capable"
CPU_NODE = Node("cpu-0", labels={"kubernetes.io/os": "linux"},
                allocatable={"cpu": 8000, "memory": 32 * 1024**3, "pods": 110})
#: The workloads of a plan: left out here, only the GPU stack's own objects matter.
WORKLOAD_KINDS = {"Deployment", "Job", "StatefulSet", "Pod", "HelmRelease"}
#: NFD's worker, which the device plugin chart installs as a subchart, runs on every node it tolerates (it is
#: what finds the GPUs); it selects no GPU node and is not one of the GPU DaemonSets asserted here.
NFD_NAME = "node-feature-discovery"


def discovered(node: Node) -> Node:
    """A planned GPU node as NFD, the operator and (MPS pools) GFD label it before the GPU pods come."""
    labels = {**node.labels, NFD_VENDOR: "true", GPU_PRESENT: "true"}
    if node.labels.get("nvidia.com/gpu.sharing-strategy") == "mps":
        labels[MPS_CAPABLE] = "true"
    return dataclasses.replace(node, labels=labels)


def operand_daemonsets(planned: dict) -> list[dict]:
    """The operator's operand DaemonSets, placed as gpufleet models them: one per operand the release runs."""
    release = release_of_record(planned)
    spec = release_placement(release)
    operands = [name for name, runs in (
        ("nvidia-driver-daemonset", release.runs_driver_container),
        ("nvidia-container-toolkit-daemonset", release.runs_toolkit),
        ("nvidia-device-plugin-daemonset", release.runs_device_plugin),
        ("nvidia-dra-driver-gpu-kubelet-plugin", release.enabled("gpuCluster.deployCR", False)),
        ("nvidia-operator-validator", True)) if runs]
    return [{"apiVersion": "apps/v1", "kind": "DaemonSet",
             "metadata": {"name": name, "namespace": planned["namespace"]},
             "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                 "metadata": {"labels": {"app": name}},
                 "spec": {**spec, "containers": [{"name": "c", "image": f"nvcr.io/nvidia/{name}:e2e"}]}}}}
            for name in operands]


def expected_nodes(ds: dict, gpu: list[Node]) -> set[str]:
    """Every GPU node; for the MPS control daemon, the GPU nodes GFD calls MPS-capable."""
    spec = ds["spec"]["template"]["spec"]
    if MPS_CAPABLE in (spec.get("nodeSelector") or {}):
        return {n.name for n in gpu if n.labels.get(MPS_CAPABLE) == "true"}
    return {n.name for n in gpu}


def placed(api: Api, ds: dict, timeout: float = 90) -> set[str]:
    """The nodes the DaemonSet's pods are bound to, once the controller created all it wants and the scheduler
    bound each of them."""
    ns, name = ds["metadata"]["namespace"], ds["metadata"]["name"]
    deadline = time.monotonic() + timeout
    while True:
        live = api.ok("GET", f"/apis/apps/v1/namespaces/{ns}/daemonsets/{name}")
        status = live.get("status") or {}
        uid = live["metadata"]["uid"]
        pods = [p for p in api.ok("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
                if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or ())]
        nodes = {p["spec"].get("nodeName") for p in pods}
        if (status.get("observedGeneration", 0) >= live["metadata"]["generation"]
                and len(pods) == status.get("desiredNumberScheduled", -1) and None not in nodes):
            return nodes
        if time.monotonic() > deadline:
            raise ClusterError(f"DaemonSet {ns}/{name} did not settle in {timeout:.0f} s: status {status}, "
                               f"pods on {sorted(map(str, nodes))}")
        time.sleep(0.5)


def land(stack: str, new_cluster, tmp_path: Path, hand_taints: dict[str, Taint] | None = None):
    """The stack's GPU DaemonSets in a fresh cluster: (GPU nodes, [(DaemonSet, nodes it landed on)], check's
    answer on the kubectl files of the cluster's nodes and the plan's manifests)."""
    from upstream_files import chart_archive

    docs = plan_documents(stack, tmp_path / "plan")
    releases = [d for d in docs if d.get("kind") == "HelmRelease" and d["chart"] in (OPERATOR, DEVICE_PLUGIN)]
    archives = {r["name"]: chart_archive(r["chart"], r["version"])  # skips, naming the file, when absent
                for r in releases if r["chart"] == DEVICE_PLUGIN}

    cluster = new_cluster()
    api, kubectl = cluster.api(), kubectl_runner(cluster)
    gpu = [discovered(n) for n in nodes_from_stack(stack, ROOT)]
    for name, taint in (hand_taints or {}).items():
        gpu = [dataclasses.replace(n, taints=(*n.taints, taint)) if n.name == name else n for n in gpu]
    create_nodes(api, [*gpu, CPU_NODE])
    wait_nodes_ready(api, [n.name for n in (*gpu, CPU_NODE)])
    ensure_namespaces(api, {r["namespace"] for r in releases})

    # The plan's own objects (namespaces, node labels, gpufleet's mig-manager and its config) as Pulumi
    # applies them; its workloads are left out.
    own = sorted((d for d in docs if d.get("kind") not in WORKLOAD_KINDS),
                 key=lambda o: o["kind"] != "Namespace")
    applied = kubectl("apply", "--server-side", "--force-conflicts", "-f", "-",
                      input=yaml.safe_dump_all(own, sort_keys=False))
    assert applied.returncode == 0, applied.stderr
    daemonsets = [d for d in own if d["kind"] == "DaemonSet"]
    for release in releases:
        if release["chart"] == OPERATOR:
            for ds in operand_daemonsets(release):
                api.ok("POST", f"/apis/apps/v1/namespaces/{release['namespace']}/daemonsets", ds)
                daemonsets.append(ds)
            continue
        values = tmp_path / f"{release['name']}-values.yaml"
        values.write_text(yaml.safe_dump(release.get("values") or {}, sort_keys=False))
        install_release(cluster, tmp_path, release, archives[release["name"]], values)
        manifest = helm(cluster, tmp_path, "get", "manifest", release["name"],
                        "--namespace", release["namespace"])
        daemonsets += [d for d in yaml.safe_load_all(manifest.stdout) if d and d["kind"] == "DaemonSet"
                       and (d["metadata"].get("labels") or {}).get("app.kubernetes.io/name") != NFD_NAME]
    landed = [(ds, placed(api, ds)) for ds in daemonsets]

    nodes = kubectl("get", "nodes", "-o", "json")
    assert nodes.returncode == 0, nodes.stderr
    (tmp_path / "nodes.json").write_text(nodes.stdout)
    answer = check_json("--nodes", str(tmp_path / "nodes.json"), str(tmp_path / "plan" / "manifests"))
    return gpu, landed, answer


def record(stack: str, entry: dict) -> None:
    """Where each stack's GPU DaemonSets landed, into build/e2e/gpu-stack-lands.json (docs/fidelity.md)."""
    doc = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({**doc, stack: entry}, indent=2, sort_keys=True) + "\n")


def stack_refusals(answer: dict) -> list[dict]:
    """check's node-platform refusals of the GPU stack itself (its releases and DaemonSets)."""
    return [u for u in answer["unschedulable"] if u["reason"] == "policy"
            and u["workload"].split("/")[0] in ("HelmRelease", "DaemonSet")]


@pytest.mark.parametrize("stack", SHIPPED_STACKS)  # each runs the operator or the device plugin
def test_every_gpu_daemonset_lands_on_every_gpu_node_and_no_other(stack, new_cluster, tmp_path):
    gpu, landed, answer = land(stack, new_cluster, tmp_path)
    record(stack, {"gpu_nodes": sorted(n.name for n in gpu),
                   "daemonsets": {ds["metadata"]["name"]: sorted(nodes) for ds, nodes in landed}})
    assert landed, f"{stack}: no GPU DaemonSet"
    for ds, nodes in landed:
        assert nodes == expected_nodes(ds, gpu), ds["metadata"]["name"]
        assert CPU_NODE.name not in nodes
    assert stack_refusals(answer) == []


def test_a_gpu_node_tainted_by_hand_gets_no_device_plugin_and_check_refuses_it(new_cluster, tmp_path):
    taint = Taint("dedicated", "ml", "NoSchedule")  # on the K520 node only, declared by no pool of the stack
    gpu, landed, answer = land("multi", new_cluster, tmp_path, {"gpu-node-k520": taint})
    plugin = next(nodes for ds, nodes in landed if ds["metadata"]["name"] == "nvidia-device-plugin")
    assert plugin == {"gpu-node-m60"}
    [refused] = [u for u in stack_refusals(answer)
                 if u["workload"] == "HelmRelease/nvidia-device-plugin/nvidia-device-plugin"]
    assert refused["message"].startswith(
        "[node-platform] does not tolerate the taint dedicated=ml:NoSchedule of GPU node(s) gpu-node-k520")
