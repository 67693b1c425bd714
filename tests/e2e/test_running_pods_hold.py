"""What pods already running hold beyond their requests, for real: a running pod's required pod
anti-affinity and its host ports, and the host ports `hostNetwork: true` makes. Running pods are bound to
KWOK nodes, then every workload is created at once; the real controllers and scheduler decide. `gpufleet check`
on kubectl files of the same objects, and on the live cluster, must leave the same pods Pending."""

from __future__ import annotations

import json

import yaml

from tests.e2e.kwok_nodes import replace_nodes
from tests.e2e.workloads import check_json, create_all, create_running_pods, ensure_namespaces, outcome, settle
from tests.scheduling.kube import container, node, pod, pod_spec

NS = "e2e-held"
ZONE = "topology.kubernetes.io/zone"
NODES = [node("held-a", 4, labels={ZONE: "z1"}), node("held-b", 4, labels={ZONE: "z1"}),
         node("held-c", 4, labels={ZONE: "z2"})]


def _running(name: str, on: str, labels: dict, **spec) -> dict:
    obj = pod(name, pod_spec(container(requests={"cpu": "1"}, **spec.pop("container", {})), **spec),
              namespace=NS, node_name=on, phase="Running")
    obj["metadata"]["labels"] = labels
    return obj


RUNNING = [
    # keeps every app=noisy pod out of zone z1
    _running("guard", "held-a", {"app": "guard"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "noisy"}}, "topologyKey": ZONE}]}}),
    # holds host port 9100 on held-c
    _running("agent", "held-c", {"app": "agent"},
             container={"ports": [{"containerPort": 9100, "hostPort": 9100}]}),
]


def _workload(kind: str, name: str, count: int, spec: dict) -> dict:
    template = {"metadata": {"labels": {"app": name}}, "spec": spec}
    if kind == "Job":
        template["spec"] = {**spec, "restartPolicy": "Never"}
        body = {"parallelism": count, "completions": count, "template": template}
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS}, "spec": body}
    body = {"replicas": count, "selector": {"matchLabels": {"app": name}}, "template": template}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS}, "spec": body}


WORKLOADS = [
    # room only in z2 (held-c, 4 GPUs): one of five pods pends
    _workload("Deployment", "noisy", 5, pod_spec(container(limits={"nvidia.com/gpu": "1"}))),
    # 9100 is free on held-a and held-b only: one of three pends
    _workload("Deployment", "exporter", 3, pod_spec(container(
        requests={"cpu": "100m"}, ports=[{"containerPort": 9100, "hostPort": 9100}]))),
    # hostNetwork makes 29500 a host port: one pod per node, one of four pends
    _workload("Job", "train", 4, pod_spec(container(requests={"cpu": "100m"}, ports=[{"containerPort": 29500}]),
                                          hostNetwork=True)),
]
EXPECTED = {f"Deployment/{NS}/noisy": 1, f"Deployment/{NS}/exporter": 1, f"Job/{NS}/train": 1}


def _pending(answer: dict) -> dict[str, int]:
    return {u["workload"]: u["pending"] for u in answer["unschedulable"]}


def test_running_pods_anti_affinity_and_host_ports_leave_the_same_pods_pending(cluster, tmp_path):
    api = cluster.api()
    replace_nodes(api, NODES)
    ensure_namespaces(api, {NS})
    create_running_pods(api, RUNNING)
    nodes_file, pods_file, manifests = tmp_path / "nodes.json", tmp_path / "pods.json", tmp_path / "w.yaml"
    manifests.write_text(yaml.safe_dump_all(WORKLOADS))
    live = check_json("--kubeconfig", str(cluster.kubeconfig), str(manifests))  # reads the running pods' terms
    refused = create_all(api, WORKLOADS)
    assert refused == {}
    wanted = {f"{w['kind']}/{NS}/{w['metadata']['name']}": 5 if w["metadata"]["name"] == "noisy" else
              (3 if w["metadata"]["name"] == "exporter" else 4) for w in WORKLOADS}
    settle(api, wanted)
    real = {k: v["pending"] for k, v in outcome(api, wanted, refused).items() if v["pending"]}
    assert real == EXPECTED

    nodes_file.write_text(json.dumps({"kind": "List", "items": NODES}))
    pods_file.write_text(json.dumps({"kind": "List", "items": RUNNING}))
    assert _pending(live) == real
    files = check_json("--nodes", str(nodes_file), "--pods", str(pods_file), str(manifests))
    assert _pending(files) == real
    messages = {u["workload"]: u["message"] for u in files["unschedulable"]}
    assert "existing pods anti-affinity" in messages[f"Deployment/{NS}/noisy"]
    assert "free ports" in messages[f"Deployment/{NS}/exporter"]
    assert "free ports" in messages[f"Job/{NS}/train"]
