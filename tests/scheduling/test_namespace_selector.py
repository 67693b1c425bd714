"""A pod affinity term's `namespaceSelector` matches namespaces by their labels, as the scheduler's
InterPodAffinity PreFilter merges them (from Namespace objects among the inputs, or a live cluster's; every
namespace carries `kubernetes.io/metadata.name`). Checked against the real control plane in
tests/e2e/test_running_pods_hold.py."""

import pytest

from gpufleet.scheduling import check_workloads
from tests.scheduling.kube import container, deployment, gpu_container, node, pod, pod_spec

HOST = "kubernetes.io/hostname"
NODES = [node(f"n{i}", 1) for i in range(4)]


def namespace(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def web_on_n0() -> dict:
    web = pod("web-0", pod_spec(container(requests={"cpu": "1"})), namespace="team-a", node_name="n0",
              phase="Running")
    web["metadata"]["labels"] = {"app": "web"}
    return web


def avoiding_web(namespace_selector: dict | None, replicas: int = 4, **term) -> dict:
    anti = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOST, **term}
    if namespace_selector is not None:
        anti["namespaceSelector"] = namespace_selector
    d = deployment("api", replicas, pod_spec(gpu_container(1), affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [anti]}}))
    d["metadata"]["namespace"] = "ml"
    return d


def pending(result) -> int:
    return sum(u.pending for u in result.unschedulable)


@pytest.mark.parametrize(("selector", "namespaces", "left_pending"), [
    ({"matchLabels": {"team": "a"}}, [namespace("team-a", team="a")], 1),  # the label matches: n0 is avoided
    ({"matchLabels": {"team": "b"}}, [namespace("team-a", team="a")], 0),  # another team's label: web not counted
    ({"matchLabels": {"team": "a"}}, [], 0),  # labels unknown: only the name label, which does not match
    ({"matchLabels": {"kubernetes.io/metadata.name": "team-a"}}, [], 1),  # every namespace has its name label
    ({"matchExpressions": [{"key": "team", "operator": "Exists"}]}, [namespace("team-a", team="x")], 1),
    ({}, [], 1),  # every namespace
    (None, [], 0),  # the pod's own namespace (ml) only
])
def test_namespace_selector_counts_the_pods_of_the_namespaces_its_labels_match(selector, namespaces, left_pending):
    result = check_workloads(NODES, [web_on_n0()], [*namespaces, avoiding_web(selector)])
    assert pending(result) == left_pending


def test_listed_namespaces_and_the_selector_add_up():
    term = {"namespaces": ["team-a"]}
    result = check_workloads(NODES, [web_on_n0()], [namespace("team-a"), avoiding_web({"matchLabels": {"x": "y"}},
                                                                                      **term)])
    assert pending(result) == 1  # listed, though the selector matches nothing


def test_a_running_pods_term_with_a_namespace_selector_keeps_matching_pods_out():
    guard = web_on_n0()
    guard["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "api"}}, "topologyKey": HOST,
         "namespaceSelector": {"matchLabels": {"tier": "serving"}}}]}}
    d = deployment("api", 4, pod_spec(gpu_container(1)))
    d["metadata"]["namespace"] = "ml"
    d["spec"]["template"]["metadata"] = {"labels": {"app": "api"}}
    d["spec"]["selector"] = {"matchLabels": {"app": "api"}}
    kept_out = check_workloads(NODES, [guard], [namespace("ml", tier="serving"), d])
    assert pending(kept_out) == 1
    other_tier = check_workloads(NODES, [guard], [namespace("ml", tier="batch"), d])
    assert pending(other_tier) == 0


def test_namespaces_as_the_api_server_lists_them_are_read_from_a_file(tmp_path):
    # GET /api/v1/namespaces gives a NamespaceList whose items carry no kind (kubectl adds it; curl does not)
    import json

    from tests.cli.run_inprocess import run

    listed = {"kind": "NamespaceList", "apiVersion": "v1",
              "items": [{"metadata": {"name": "team-a", "labels": {"team": "a"}}}]}
    (tmp_path / "namespaces.json").write_text(json.dumps(listed))
    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "List", "items": NODES}))
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "List", "items": [web_on_n0()]}))
    (tmp_path / "api.yaml").write_text(json.dumps(avoiding_web({"matchLabels": {"team": "a"}})))
    done = run("check", "--json", "--nodes", tmp_path / "nodes.json", "--pods", tmp_path / "pods.json",
               tmp_path / "namespaces.json", tmp_path / "api.yaml")
    assert done.code == 1, done.err
    assert [u["pending"] for u in json.loads(done.out)["unschedulable"]] == [1]
