"""A GPU DaemonSet whose node selector no GPU node matches never lands, for real: on a real control plane
with KWOK nodes made from `kubectl get nodes -o json` documents, the DaemonSet controller schedules no pod
(desiredNumberScheduled 0, not even a Pending pod) where `gpufleet check --nodes` refuses the DaemonSet
(node-platform), and one pod per GPU node where the nodes carry the label and check passes it."""

from __future__ import annotations

import time

import pytest
import yaml

from tests.e2e.cluster import ROOT, Api, ClusterError
from tests.e2e.kwok_nodes import create_nodes, delete_kwok_nodes, nodes_from_file, wait_nodes_ready
from tests.e2e.workloads import check_json, ensure_namespaces

NODE_LISTS = ROOT / "policies" / "tests" / "fixtures"
NFD_GPU = "feature.node.kubernetes.io/pci-10de.present"
#: A workload of the manifests beside the DaemonSet (check needs one to check).
TRAINER = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "trainer", "namespace": "mon"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "c", "image": "trainer:1.0", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}


def exporter(name: str) -> dict:
    """A GPU DaemonSet that, like the device plugin chart, finds GPU nodes by NFD's PCI vendor label."""
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": "mon"},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"nodeSelector": {NFD_GPU: "true"}, "containers": [{"name": "c", "image": "exporter:1.0"}]}}}}


def scheduled(api: Api, name: str, timeout: float = 60) -> int:
    """desiredNumberScheduled once the DaemonSet controller has looked at the DaemonSet."""
    deadline = time.monotonic() + timeout
    while True:
        ds = api.ok("GET", f"/apis/apps/v1/namespaces/mon/daemonsets/{name}")
        if (ds.get("status") or {}).get("observedGeneration", 0) >= ds["metadata"]["generation"]:
            return ds["status"].get("desiredNumberScheduled", 0)
        if time.monotonic() > deadline:
            raise ClusterError(f"DaemonSet {name} not observed by the controller in {timeout:.0f} s")
        time.sleep(0.5)


@pytest.mark.parametrize("nodes_file, lands", [("nodes-os-al2023.json", 0), ("nodes-os-ubuntu.json", 1)],
                         ids=["GPU node without the NFD label: never lands", "GPU node with it: lands"])
def test_check_refuses_exactly_the_daemonset_the_controller_never_places(cluster, tmp_path, nodes_file, lands):
    api = cluster.api()
    delete_kwok_nodes(api)
    nodes = nodes_from_file(NODE_LISTS / nodes_file)
    create_nodes(api, nodes)
    wait_nodes_ready(api, [n.name for n in nodes])
    ensure_namespaces(api, {"mon"})
    name = f"gpu-exporter-{lands}"
    ds = exporter(name)
    manifests = tmp_path / "manifests.yaml"
    manifests.write_text(yaml.safe_dump_all([ds, TRAINER]))

    api.ok("POST", "/apis/apps/v1/namespaces/mon/daemonsets", ds)
    assert scheduled(api, name) == lands

    answer = check_json("--nodes", str(NODE_LISTS / nodes_file), str(manifests))
    refused = [u for u in answer["unschedulable"] if u["workload"] == f"DaemonSet/mon/{name}"]
    if lands:
        assert refused == []
    else:
        assert [u["reason"] for u in refused] == ["policy"]
        assert refused[0]["message"].startswith(f"[node-platform] selects {NFD_GPU}=true, which none of the GPU "
                                                "nodes (ip-10-0-3-17.ec2.internal) matches: they lack")
