"""Preemption beside pod (anti-)affinity, for real: a low-priority training pod holds the only GPU node and keeps
`web` off it with a required anti-affinity term. A high-priority `infer` evicts it; its term leaves with it,
so `web` then runs there. `gpufleet check` must name the same victim and say that everything runs, on the live
cluster and on kubectl files; without `infer`, `web` stays Pending in both."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.e2e.kwok_nodes import replace_nodes
from tests.e2e.workloads import (
    check_json,
    create_all,
    create_running_pods,
    ensure_namespaces,
    outcome,
    settle,
    workload_key,
)
from tests.scheduling.kube import container, node, pod, pod_spec

NS = "e2e-prule"
NODES = [node("prule-gpu", 8)]
LOW = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "e2e-prule-low"},
       "value": 100}
HIGH = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "e2e-prule-high"},
        "value": 1000}


def _train() -> dict:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    train = pod("train-0", pod_spec(container(limits={"nvidia.com/gpu": "8"}), affinity=anti,
                                    priorityClassName=LOW["metadata"]["name"]),
                namespace=NS, node_name="prule-gpu", phase="Running")
    train["metadata"]["labels"] = {"app": "train"}
    return train


def _deployment(name: str, spec: dict) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


INFER = _deployment("infer", pod_spec(container(limits={"nvidia.com/gpu": "8"}),
                                      priorityClassName=HIGH["metadata"]["name"]))
WEB = _deployment("web", pod_spec(container(requests={"cpu": "100m"})))


def _pending(answer: dict) -> dict[str, int]:
    return {u["workload"]: u["pending"] for u in answer["unschedulable"]}


def test_a_victims_anti_affinity_leaves_with_it(cluster, tmp_path):
    api = cluster.api()
    replace_nodes(api, NODES)
    ensure_namespaces(api, {NS})
    assert create_all(api, [LOW, HIGH]) == {}
    train = _train()
    running = api.ok("GET", f"/api/v1/namespaces/{NS}/pods")["items"]
    assert not running
    create_running_pods(api, [train])
    manifests = tmp_path / "app.yaml"
    manifests.write_text(yaml.safe_dump_all([LOW, HIGH, INFER, WEB]))
    only_web = tmp_path / "web.yaml"
    only_web.write_text(yaml.safe_dump_all([LOW, HIGH, WEB]))
    live = check_json("--kubeconfig", str(cluster.kubeconfig), str(manifests))
    live_web = check_json("--kubeconfig", str(cluster.kubeconfig), str(only_web))
    exported = api.ok("GET", f"/api/v1/namespaces/{NS}/pods")  # as `kubectl get pods -o json` has them

    assert create_all(api, [INFER]) == {}
    settle(api, {workload_key(INFER): 1})
    assert create_all(api, [WEB]) == {}
    wanted = {workload_key(INFER): 1, workload_key(WEB): 1}
    settle(api, wanted)
    got = outcome(api, wanted, {})
    assert {k: v["pending"] for k, v in got.items()} == {workload_key(INFER): 0, workload_key(WEB): 0}
    assert not [p for p in api.ok("GET", f"/api/v1/namespaces/{NS}/pods")["items"]
                if p["metadata"]["name"] == "train-0"]  # evicted

    nodes_file, pods_file = tmp_path / "nodes.json", tmp_path / "pods.json"
    nodes_file.write_text(json.dumps({"kind": "List", "items": NODES}))
    pods_file.write_text(json.dumps(exported))
    files = check_json("--nodes", str(nodes_file), "--pods", str(pods_file), str(manifests))
    for answer in (live, files):
        assert _pending(answer) == {}
        [p] = answer["preemptions"]
        assert p["workload"] == workload_key(INFER)
        assert [(v["workload"], v["pods"], v["node"]) for v in p["victims"]] == [(f"Pod/{NS}/train-0", 1, "prule-gpu")]
    web_files = check_json("--nodes", str(nodes_file), "--pods", str(pods_file), str(only_web))
    for answer in (live_web, web_files):  # train stays: web cannot share its node
        assert _pending(answer) == {workload_key(WEB): 1}


NS2 = "e2e-prule2"
FULL = [node("prule2-1", 8), node("prule2-2", 8)]


def _four_train_pods() -> list[dict]:
    """Two 4-GPU low-priority pods on each node: both nodes full."""
    out = []
    for n in ("prule2-1", "prule2-2"):
        for k in "ab":
            p = pod(f"train-{n[-1]}{k}", pod_spec(container(limits={"nvidia.com/gpu": "4"}),
                                                  priorityClassName=LOW["metadata"]["name"]),
                    namespace=NS2, node_name=n, phase="Running")
            p["metadata"]["labels"] = {"app": "train"}
            out.append(p)
    return out


ANTI_TRAIN = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "train"}}, "topologyKey": "kubernetes.io/hostname"}]}}
SPREAD = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"app": "infer"}}}]


def _infer(replicas: int, gpus: int, **rules) -> dict:
    spec = pod_spec(container(limits={"nvidia.com/gpu": str(gpus)}), priorityClassName=HIGH["metadata"]["name"],
                    **rules)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "infer", "namespace": NS2},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "infer"}},
                     "template": {"metadata": {"labels": {"app": "infer"}}, "spec": spec}}}


@pytest.mark.parametrize(("infer", "evicted"), [
    # needs 2 GPUs, but its anti-affinity wants no train pod on its node: both pods of one node go
    (_infer(1, 2, affinity=ANTI_TRAIN), [2]),
    # two 4-GPU pods at most 1 apart by host: one eviction on each node
    (_infer(2, 4, topologySpreadConstraints=SPREAD), [1, 1]),
], ids=["own-anti-affinity", "own-hard-spread"])
def test_a_preemptor_with_pod_rules_evicts_what_its_rules_need(cluster, tmp_path, infer, evicted):
    api = cluster.api()
    replace_nodes(api, FULL)
    ensure_namespaces(api, {NS2})
    create_all(api, [LOW, HIGH])  # may exist from the test above
    for p in api.ok("GET", f"/api/v1/namespaces/{NS2}/pods")["items"]:  # the other case's pods
        api.request("DELETE", f"/api/v1/namespaces/{NS2}/pods/{p['metadata']['name']}?gracePeriodSeconds=0")
    for d in api.ok("GET", f"/apis/apps/v1/namespaces/{NS2}/deployments")["items"]:
        api.request("DELETE", f"/apis/apps/v1/namespaces/{NS2}/deployments/{d['metadata']['name']}")
    settle_gone(api, NS2)
    train = _four_train_pods()
    create_running_pods(api, train)
    exported = api.ok("GET", f"/api/v1/namespaces/{NS2}/pods")
    manifests = tmp_path / "app.yaml"
    manifests.write_text(yaml.safe_dump_all([LOW, HIGH, infer]))
    nodes_file, pods_file = tmp_path / "nodes.json", tmp_path / "pods.json"
    nodes_file.write_text(json.dumps({"kind": "List", "items": FULL}))
    pods_file.write_text(json.dumps(exported))
    answer = check_json("--nodes", str(nodes_file), "--pods", str(pods_file), str(manifests))

    assert create_all(api, [infer]) == {}
    key = workload_key(infer)
    settle(api, {key: infer["spec"]["replicas"]})
    got = outcome(api, {key: infer["spec"]["replicas"]}, {})
    now = api.ok("GET", f"/api/v1/namespaces/{NS2}/pods")["items"]
    left = {p["metadata"]["name"] for p in now
            if p["metadata"]["name"].startswith("train-") and not p["metadata"].get("deletionTimestamp")}
    gone = [p for p in train if p["metadata"]["name"] not in left]
    real = sorted(sum(1 for p in gone if p["spec"]["nodeName"] == n) for n in ("prule2-1", "prule2-2")
                  if any(p["spec"]["nodeName"] == n for p in gone))
    assert got[key]["pending"] == 0 and real == evicted

    assert _pending(answer) == {}
    [p] = answer["preemptions"]
    mine: dict[str, int] = {}
    for v in p["victims"]:
        mine[v["node"]] = mine.get(v["node"], 0) + v["pods"]
    assert sorted(mine.values()) == evicted


def settle_gone(api, namespace: str, timeout: float = 60) -> None:
    """Wait until the namespace holds no pod."""
    import time

    end = time.monotonic() + timeout
    while api.ok("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]:
        if time.monotonic() > end:
            raise AssertionError(f"pods of {namespace} were not deleted in {timeout:.0f} s")
        time.sleep(0.5)
