"""`gpufleet check` says exactly what is wrong with an unusable input (exit 2), one line per problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.run_inprocess import run

FIXTURES = Path(__file__).parent.parent / "fixtures"
NODES, PODS = FIXTURES / "nodes-mixed-cluster.json", FIXTURES / "pods-mixed-cluster.json"
FITS = FIXTURES / "manifests" / "fits.yaml"
NODE = json.loads((FIXTURES / "nodes-one-h100x8.json").read_text())["items"][0]
POD = json.loads(PODS.read_text())["items"][0]


def write(tmp_path: Path, name: str, content) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def lines(result) -> list[str]:
    assert result.code == 2, result
    assert result.out == ""
    return result.err.strip().splitlines()


@pytest.mark.parametrize("content, says", [
    pytest.param("", "empty file", id="empty"),
    pytest.param("   \n", "empty file", id="blank"),
    pytest.param("{not json", "not JSON (Expecting property name", id="not JSON"),
    pytest.param("apiVersion: v1\nkind: List\nitems: []\n", "YAML, not JSON", id="YAML"),
    pytest.param("42", "a JSON object), got a number", id="scalar"),
    pytest.param("[]", "a JSON object), got a list", id="list"),
    pytest.param({"kind": "List", "items": []}, "no nodes: there is nothing to schedule on", id="no nodes"),
    pytest.param({"kind": "ConfigMap"}, "got kind 'ConfigMap'", id="other kind"),
    pytest.param({"format": "gpufleet.io/capacity/v2", "nodes": []},
                 "format: 'gpufleet.io/capacity/v2' is not a capacity format this gpufleet reads", id="capacity v2"),
])
def test_unusable_nodes_file_is_one_line_naming_it(tmp_path, content, says):
    nodes = write(tmp_path, "nodes.json", content)
    [line] = lines(run("check", "--nodes", nodes, FITS))
    assert line.startswith(f"{nodes}: ") and says in line


def test_pod_in_the_nodes_file_is_an_error_not_a_node_without_capacity(tmp_path):
    nodes = write(tmp_path, "nodes.json", {"kind": "List", "items": [NODE, POD]})
    assert lines(run("check", "--nodes", nodes, FITS)) == [
        f"{nodes}: Pod/trainer-0: kind: expected Node (this file is read as the output of "
        "`kubectl get nodes -o json`), got a Pod"]


def test_pods_file_holding_nodes_names_each_of_them(tmp_path):
    pods = write(tmp_path, "pods.json", {"kind": "List", "items": [POD, NODE, NODE]})
    assert len([x for x in lines(run("check", "--nodes", NODES, "--pods", pods, FITS))
                if x.startswith(f"{pods}: Node/gpu-node-0: kind: expected Pod")]) == 2


def test_duplicate_node_names_are_an_error(tmp_path):
    nodes = write(tmp_path, "nodes.json", {"kind": "List", "items": [NODE, NODE]})
    assert lines(run("check", "--nodes", nodes, FITS)) == [
        f'{nodes}: Node/gpu-node-0: metadata.name: Duplicate value: "gpu-node-0" (items[0] has the same name; '
        "node names are unique)"]


def test_every_problem_in_every_file_is_reported_at_once(tmp_path):
    bad_node = {**NODE, "status": {"allocatable": {"cpu": "lots", "nvidia.com/gpu": [8]}}}
    nodes = write(tmp_path, "nodes.json", {"kind": "List", "items": [bad_node]})
    app = write(tmp_path, "app.yaml", "kind: Pod\nmetadata: {name: p, namespace: ml}\n"
                                      "spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: abc}}}]}\n")
    assert lines(run("check", "--nodes", nodes, app)) == [
        f"{nodes}: Node/gpu-node-0: status.allocatable[cpu]: 'lots' is not a Kubernetes quantity (e.g. 2, 500m, 16Gi)",
        f"{nodes}: Node/gpu-node-0: status.allocatable[nvidia.com/gpu]: must be a quantity (e.g. 2, 500m, 16Gi), "
        "not a list",
        f"{app}: Pod/ml/p: spec.containers[0].resources.limits[nvidia.com/gpu]: 'abc' is not a Kubernetes quantity "
        "(e.g. 2, 500m, 16Gi)",
    ]


def test_replicas_beyond_int32_are_unusable_input(tmp_path):
    app = write(tmp_path, "app.yaml", FITS.read_text().replace("replicas: 1", "replicas: 100000000000000000000"))
    assert lines(run("check", "--nodes", NODES, app)) == [
        f"{app}: Deployment/ml/infer: spec.replicas: 100000000000000000000 is out of range: must be between "
        "-2147483648 and 2147483647, inclusive"]


def test_input_without_workloads_is_nothing_to_check_not_a_pass(tmp_path):
    a = write(tmp_path, "a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    b = write(tmp_path, "b.yaml", "")
    [line] = lines(run("check", "--nodes", NODES, a, b))
    assert line.startswith(f"no workloads in {a}, {b}: nothing to check")


def test_unreadable_yaml_names_file_and_line(tmp_path):
    app = write(tmp_path, "app.yaml", "kind: Pod\nmetadata: [\n")
    [line] = lines(run("check", "--nodes", NODES, app))
    assert line.startswith(f"{app}: not readable as YAML (line 3, column 1)")


def test_a_list_of_mixed_kinds_in_the_nodes_file_names_each_misfit(tmp_path):
    nodes = write(tmp_path, "nodes.json",
                  {"kind": "List", "items": [NODE, {"kind": "Service", "metadata": {"name": "s"}}, 7]})
    assert lines(run("check", "--nodes", nodes, FITS)) == [
        f"{nodes}: Service/s: kind: expected Node (this file is read as the output of `kubectl get nodes -o json`), "
        "got a Service",
        f"{nodes}: items[2]: expected a Node object, got a number",
    ]


def test_capacity_json_with_wrong_types_names_the_fields(tmp_path):
    cap = write(tmp_path, "capacity.json", {"format": "gpufleet.io/capacity/v1", "nodes": [
        {"name": "n", "allocatable": {"nvidia.com/gpu": "8"}}, {"name": "n"}]})
    assert lines(run("check", "--nodes", cap, FITS)) == [
        f"{cap}: nodes[0].allocatable[nvidia.com/gpu]: must be an integer (cpu in millicores, memory in bytes), "
        "not '8'",
        f"{cap}: nodes[1].name: Duplicate value: 'n' (node names are unique)",
    ]


def test_fractional_gpu_pod_is_rejected_with_both_api_server_errors(tmp_path):
    app = write(tmp_path, "app.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: half}\nspec:\n  containers:\n"
                                      "  - {name: c, image: i, resources: {limits: {nvidia.com/gpu: 500m}}}\n")
    r = run("check", "--nodes", NODES, "--json", app)
    assert r.code == 1
    [u] = json.loads(r.out)["unschedulable"]
    assert u["reason"] == "rejected" and u["message"] == (
        'Pod "half" is invalid: [spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": '
        'must be an integer, spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "500m": '
        "must be an integer]")


def test_table_never_cuts_names_so_that_two_rows_read_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # a narrow terminal: the table folds its cells to fit
    monkeypatch.setenv("TERM", "dumb")
    pods = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: my-inference-server-with-a-long-name{i}, namespace: ml}}\n"
        f"spec: {{containers: [{{name: c, image: i, resources: {{limits: {{nvidia.com/gpu: 99}}}}}}]}}\n"
        for i in (2, 3))
    r = run("check", "--nodes", NODES, write(tmp_path, "app.yaml", pods), terminal=True)
    assert r.code == 1
    assert max(len(x) for x in r.out.splitlines()) <= 80
    rows: list[str] = []  # the workload column, a folded name joined again
    for line in r.out.splitlines():
        cells = line.split("\u2502")
        if len(cells) > 3 and cells[2].strip() not in ("", "verdict"):
            rows.append("")
        if len(cells) > 3 and rows:
            rows[-1] += cells[1].strip()
    assert rows == [f"Pod/ml/my-inference-server-with-a-long-name{i}" for i in (2, 3)]


def test_a_name_with_a_line_break_stays_on_its_error_line(tmp_path):
    app = write(tmp_path, "app.yaml", 'kind: Pod\nmetadata: {name: "a\\rb"}\nspec: {containers: 5}\n')
    assert lines(run("check", "--nodes", NODES, app)) == [
        f"{app}: Pod/a\\rb: spec.containers: must be a list, not the number 5"]


def _deployment(name: str, replicas: int, namespace: str | None = None) -> str:
    ns = f", namespace: {namespace}" if namespace else ""
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}{ns}}}\nspec:\n  replicas: {replicas}\n"
            f"  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n"
            "    spec:\n      containers:\n      - name: c\n        image: registry.example/app:1\n"
            "        resources: {limits: {nvidia.com/gpu: 1}}\n")


def test_an_object_given_twice_is_an_error_naming_both_places_not_counted_twice(tmp_path):
    # The cluster would hold one Deployment; counting both would report a Pending that never happens.
    # "default" and no namespace are the same object.
    app = write(tmp_path, "app.yaml", _deployment("infer", 4) + "---\n" + _deployment("infer", 2, "default"))
    [line] = lines(run("check", "--nodes", NODES, app))
    assert line.startswith(f"{app}: Deployment/default/infer (document 2): also in {app} (document 1)")
    assert "one object per kind, namespace and name" in line and "give each object once" in line


def test_the_same_name_in_another_namespace_or_kind_is_another_object(tmp_path):
    app = write(tmp_path, "app.yaml", _deployment("infer", 1, "a") + "---\n" + _deployment("infer", 1, "b") + "---\n"
                + _deployment("infer", 1).replace("kind: Deployment", "kind: ReplicaSet"))
    done = run("check", "--nodes", NODES, app, "--json")
    assert done.code == 0, done.err
    assert set(json.loads(done.out)["checked"]) == {
        "Deployment/a/infer", "Deployment/b/infer", "ReplicaSet/default/infer"}


def test_a_file_given_twice_or_with_its_directory_is_read_once(tmp_path):
    (tmp_path / "apps").mkdir()
    app = write(tmp_path / "apps", "app.yaml", _deployment("infer", 1))
    for args in ([app, app], [tmp_path / "apps", app], [app, tmp_path / "apps" / ".." / "apps" / "app.yaml"]):
        done = run("check", "--nodes", NODES, *args, "--json")
        assert done.code == 0, done.err
        assert json.loads(done.out)["checked"] == ["Deployment/default/infer"]


def test_a_second_default_priority_class_is_refused_as_admission_refuses_it(tmp_path):
    classes = write(tmp_path, "classes.yaml", "".join(
        f"---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {n}}}\nvalue: {v}\n"
        f"globalDefault: {d}\n" for n, v, d in (("low", 10, "true"), ("mid", 20, "false"), ("high", 30, "true"))))
    out = lines(run("check", "--nodes", NODES, classes, FITS))
    assert out == [f"{classes}: PriorityClass/high: globalDefault: PriorityClass low ({classes}, document 1) is "
                   "already marked as default; only one default can exist (the priority admission plugin refuses "
                   "this one)"]


def test_what_check_reads_is_left_out_of_later_garbage_collections():
    # The inputs live as long as the command; a collection that walked them would free nothing (about a second
    # of a 10,000-node check). Read, they are frozen out of the collector's generations.
    import gc

    from gpufleet.cli.check import read_inputs

    cap, docs = read_inputs([FITS], NODES, PODS)
    tracked = {id(o) for o in gc.get_objects()}
    assert docs and cap.nodes
    assert id(docs[0].obj) not in tracked and gc.isenabled()
