"""Admission, for real: LimitRanges, ResourceQuotas and PriorityClasses are created in a namespace, then pods
one after another, as a user would apply them. Which pods the API server refuses, and its words, must be what
`gpufleet check` says on the same objects (docs/admission.md)."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from tests.admission.objects import limit_range, priority_class, quota
from tests.e2e.cluster import ClusterError
from tests.e2e.kwok_nodes import create_nodes, nodes_from_items, wait_nodes_ready
from tests.e2e.workloads import check_json, collection, ensure_namespaces
from tests.scheduling.kube import container, node, pod, pod_spec

GPU = "nvidia.com/gpu"


def gpu_pod(name: str, gpus: int = 0, cpu: str | None = None, cpu_limit: str | None = None, **extra) -> dict:
    limits = {**({GPU: str(gpus)} if gpus else {}), **({"cpu": cpu_limit} if cpu_limit else {})}
    requests = {"cpu": cpu} if cpu else {}
    return pod(name, pod_spec(container(limits=limits or None, requests=requests or None), **extra))


#: case -> (admission objects, pods in the order they are created). Every case has its own namespace.
CASES = {
    "limitrange-max": ([limit_range({"type": "Container", "max": {GPU: "2"}})], [gpu_pod("p", gpus=4)]),
    "limitrange-min-pod": ([limit_range({"type": "Pod", "min": {"cpu": "1"}})], [gpu_pod("p", gpus=1)]),
    "limitrange-ratio": ([limit_range({"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}})],
                         [gpu_pod("p", cpu="250m", cpu_limit="1")]),
    "limitrange-default-gpu": ([limit_range({"type": "Container", "max": {GPU: "1"}})],
                               [gpu_pod("p", cpu="100m")]),
    "quota-crossed": ([quota({"requests.nvidia.com/gpu": "4"})],
                      [gpu_pod("p1", gpus=2), gpu_pod("p2", gpus=2), gpu_pod("p3", gpus=2)]),
    "quota-needs-cpu": ([quota({"requests.cpu": "4"}, name="q")], [gpu_pod("p", gpus=1)]),
    "quota-scoped": ([quota({"requests.nvidia.com/gpu": "1"}, scopes=["NotBestEffort"])],
                     [gpu_pod("a", gpus=1), gpu_pod("b", gpus=1, cpu="1", cpu_limit="1"),
                      gpu_pod("c", gpus=1, cpu="1", cpu_limit="1")]),
    "priority-unknown": ([], [gpu_pod("p", gpus=1, priorityClassName="hihg")]),
    "priority-known": ([priority_class("e2e-high", 1000)],
                       [gpu_pod("p", gpus=1, priorityClassName="e2e-high")]),
}


def _wait_quota_counted(api, namespace: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    for q in api.ok("GET", f"/api/v1/namespaces/{namespace}/resourcequotas")["items"]:
        while "used" not in api.ok("GET", f"/api/v1/namespaces/{namespace}/resourcequotas/"
                                          f"{q['metadata']['name']}").get("status", {}):
            if time.monotonic() > deadline:
                raise ClusterError(f"quota {q['metadata']['name']} was not counted in {timeout:.0f} s")
            time.sleep(0.2)


@pytest.fixture(scope="module")
def gpu_node(cluster) -> dict:
    """One roomy 8-GPU node, so that only admission can refuse a pod."""
    obj = node("gpu-0", 8, cpu="64", memory="512Gi", pods="110")
    api = cluster.api()
    create_nodes(api, nodes_from_items([obj]))
    wait_nodes_ready(api, ["gpu-0"])
    return obj


def apply_policies(api, namespace: str, objects: list[dict]) -> None:
    """The namespace and its LimitRanges, quotas and PriorityClasses; returns once the quotas are counted."""
    ensure_namespaces(api, {namespace})
    for obj in in_namespace(objects, namespace):
        status, doc = api.request("POST", collection(obj["kind"], namespace), obj)
        assert status < 300 or status == 409, doc
    _wait_quota_counted(api, namespace)


def real_verdicts(api, namespace: str, pods: list[dict]) -> dict[str, str | None]:
    """pod name -> the API server's refusal message, or None when it created the pod."""
    verdicts = {}
    for p in in_namespace(pods, namespace):
        status, doc = api.request("POST", collection("Pod", namespace), p)
        verdicts[p["metadata"]["name"]] = None if status < 300 else doc.get("message")
    return verdicts


def in_namespace(objects: list[dict], namespace: str) -> list[dict]:
    docs = json.loads(json.dumps(objects))
    for d in docs:
        if d["kind"] != "PriorityClass":
            d["metadata"]["namespace"] = namespace
    return docs


def check_verdicts(pods: list[dict], *args: str) -> dict[str, str | None]:
    """pod name -> `gpufleet check`'s refusal message, or None when it lets the pod in."""
    result = check_json(*args)
    refused = {u["workload"].rsplit("/", 1)[-1]: u["message"] for u in result.get("unschedulable", [])
               if u["reason"] == "rejected"}
    return {p["metadata"]["name"]: refused.get(p["metadata"]["name"]) for p in pods}


#: Cases where `check` on files alone answers otherwise, by design (docs/admission.md): with no PriorityClass
#: objects given, a named class is taken on trust. On the live cluster it reads the classes and agrees.
TRUSTED_ON_FILES = {"priority-unknown"}


@pytest.mark.parametrize("case", list(CASES))
def test_api_server_and_check_refuse_the_same_pods_in_the_same_words(case, cluster, gpu_node, tmp_path):
    objects, pods = CASES[case]
    api = cluster.api()
    apply_policies(api, case, objects)
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(in_namespace(pods, case)))
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all(in_namespace(objects + pods, case)))
    node_list = {"apiVersion": "v1", "kind": "List", "items": [gpu_node]}
    (tmp_path / "nodes.json").write_text(json.dumps(node_list))
    on_cluster = check_verdicts(pods, "--kubeconfig", str(cluster.kubeconfig), str(tmp_path / "pods.yaml"))
    on_files = check_verdicts(pods, "--nodes", str(tmp_path / "nodes.json"), str(tmp_path / "all.yaml"))

    real = real_verdicts(api, case, pods)
    assert on_cluster == real
    if case not in TRUSTED_ON_FILES:
        assert on_files == real


def test_priority_classes_the_api_server_refuses_are_those_check_refuses(cluster):
    from gpufleet.manifests.documents import priority_class_errors
    from tests.admission.priority_class_cases import CASES

    api = cluster.api()
    disagree = []
    for case, (obj, _) in CASES.items():
        status, doc = api.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", obj)
        refused = status >= 300
        if status < 300:
            api.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{obj['metadata']['name']}")
        if refused != bool(priority_class_errors(obj)):
            disagree.append(f"{case}: API server {status} {doc.get('message', '')[:200]}; check: "
                            f"{priority_class_errors(obj)}")
    assert not disagree, "\n".join(disagree)
