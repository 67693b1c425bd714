"""A pod anti-affinity term's namespaceSelector, for real: the namespace labels decide which running pods it
counts. `gpufleet check` on the live cluster (which lists the namespaces) and on kubectl files with the
namespaces beside the manifests must leave the same pods Pending as the real scheduler; without the namespace
labels the files' answer differs, as docs/capacity.md says."""

from __future__ import annotations

import json

import yaml

from tests.e2e.kwok_nodes import replace_nodes
from tests.e2e.workloads import check_json, create_all, create_running_pods, outcome, settle
from tests.scheduling.kube import container, node, pod, pod_spec

TEAM, ML = "e2e-team-a", "e2e-ml"
NODES = [node(f"nsel-{i}", 1) for i in range(3)]
HOST = "kubernetes.io/hostname"


def _web() -> dict:
    web = pod("web-0", pod_spec(container(requests={"cpu": "1"})), namespace=TEAM, node_name="nsel-0",
              phase="Running")
    web["metadata"]["labels"] = {"app": "web"}
    return web


API = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api", "namespace": ML},
       "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "api"}},
                "template": {"metadata": {"labels": {"app": "api"}}, "spec": pod_spec(
                    container(limits={"nvidia.com/gpu": "1"}), affinity={"podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOST,
                             "namespaceSelector": {"matchLabels": {"team": "a"}}}]}})}}}


def _pending(answer: dict) -> dict[str, int]:
    return {u["workload"]: u["pending"] for u in answer["unschedulable"]}


def test_namespace_labels_decide_what_a_namespace_selector_counts(cluster, tmp_path):
    api = cluster.api()
    replace_nodes(api, NODES)
    for name, labels in ((TEAM, {"team": "a"}), (ML, {})):
        api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": name, "labels": labels}})
    create_running_pods(api, [_web()])
    manifests = tmp_path / "api.yaml"
    manifests.write_text(yaml.safe_dump(API))
    live = check_json("--kubeconfig", str(cluster.kubeconfig), str(manifests))
    assert create_all(api, [API]) == {}
    key = f"Deployment/{ML}/api"
    settle(api, {key: 3})
    real = {k: v["pending"] for k, v in outcome(api, {key: 3}, {}).items() if v["pending"]}
    assert real == {key: 1}  # nsel-0 runs a pod of a namespace labelled team=a

    assert _pending(live) == real
    nodes_file, pods_file = tmp_path / "nodes.json", tmp_path / "pods.json"
    nodes_file.write_text(json.dumps({"kind": "List", "items": NODES}))
    pods_file.write_text(json.dumps({"kind": "List", "items": [_web()]}))
    namespaces = tmp_path / "namespaces.json"
    namespaces.write_text(json.dumps(api.ok("GET", "/api/v1/namespaces")))  # kubectl get namespaces -o json
    with_labels = check_json("--nodes", str(nodes_file), "--pods", str(pods_file), str(namespaces), str(manifests))
    assert _pending(with_labels) == real
    without = check_json("--nodes", str(nodes_file), "--pods", str(pods_file), str(manifests))
    assert _pending(without) == {}  # team=a is not known from the files: the selector matches no namespace
