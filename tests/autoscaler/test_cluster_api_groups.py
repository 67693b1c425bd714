"""Node groups from Cluster API MachineDeployments and MachineSets, as cluster-autoscaler 1.34's clusterapi
provider reads them: from `kubectl get machinedeployments,machinesets,machines -A -o json` given to
`--node-groups`."""

from __future__ import annotations

import json

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.autoscaler.clusterapi import CAPACITY, MAX_SIZE, MIN_SIZE, node_groups_from_cluster_api
from gpufleet.autoscaler.nodegroups import read_node_groups
from gpufleet.capacity.kubectl import node_from_object
from gpufleet.errors import InputError
from tests.autoscaler.fleet import deployment, node, write
from tests.cli.run_inprocess import run
from tests.discovery.apiserver import ApiServer

V1 = "cluster.x-k8s.io/v1beta1"
GPU_CAPACITY = {CAPACITY + "cpu": "32", CAPACITY + "memory": "256Gi", CAPACITY + "gpu-count": "8",
                CAPACITY + "gpu-type": "nvidia.com/gpu"}


def machine_deployment(name: str, replicas: int, low: str | None = "0", high: str | None = "4", ns: str = "ml",
                       cluster: str = "prod", kind: str = "MachineDeployment", **annotations: str) -> dict:
    sizes = {k: v for k, v in ((MIN_SIZE, low), (MAX_SIZE, high)) if v is not None}
    return {"apiVersion": V1, "kind": kind,
            "metadata": {"name": name, "namespace": ns, "annotations": {**sizes, **annotations}},
            "spec": {"clusterName": cluster, "replicas": replicas,
                     "selector": {"matchLabels": {"cluster.x-k8s.io/deployment-name": name}}}}


def machine(name: str, deployment_name: str, node_name: str | None, ns: str = "ml", cluster: str = "prod") -> dict:
    return {"apiVersion": V1, "kind": "Machine",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"cluster.x-k8s.io/deployment-name": deployment_name}},
            "spec": {"clusterName": cluster},
            "status": {"nodeRef": {"kind": "Node", "name": node_name}} if node_name else {}}


def listed(*objects: dict) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})


def check(tmp_path, nodes, objects, workloads, *extra):
    nodes_file, groups_file, app = write(tmp_path, nodes, listed(*objects), workloads)
    return run("check", "--nodes", nodes_file, "--node-groups", groups_file, app, "--json", *extra)


def groups_of(tmp_path, nodes, *objects):
    path = tmp_path / "groups.json"
    path.write_text(listed(*objects))
    return read_node_groups(path, [node_from_object(n) for n in nodes])


def test_annotated_machine_deployments_are_node_groups_with_their_sizes_and_replicas_as_target(tmp_path):
    owned = machine_deployment("gpu-a100-abc12", 2, kind="MachineSet")
    owned["metadata"]["ownerReferences"] = [{"kind": "MachineDeployment", "name": "gpu-a100"}]
    groups = groups_of(tmp_path, [node("n-0"), node("n-1")],
                       machine_deployment("gpu-a100", 3, "1", "5"),
                       machine_deployment("no-max", 2, "0", None), machine_deployment("max-zero", 0, "0", "0"),
                       machine_deployment("no-min", 0, None, "2", **GPU_CAPACITY), owned,
                       machine_deployment("lone-set", 0, "0", "3", kind="MachineSet", **GPU_CAPACITY),
                       machine("m-0", "gpu-a100", "n-0"), machine("m-1", "gpu-a100", "n-1"),
                       machine("m-2", "gpu-a100", None))
    # The provider lists MachineSets first; one a MachineDeployment owns scales with it; no max-size: no group.
    assert [(g.name, g.min_size, g.max_size, g.target_size, g.members) for g in groups] == [
        ("MachineSet/ml/lone-set", 0, 3, 0, []),
        ("MachineDeployment/ml/gpu-a100", 1, 5, 3, ["n-0", "n-1"]),
        ("MachineDeployment/ml/no-min", 0, 2, 0, [])]
    assert groups[1].upcoming == 1  # m-2 has no node yet: on its way


def test_a_group_scaled_from_zero_with_gpu_count_runs_gpu_pods_after_scale_up(tmp_path):
    md = machine_deployment("gpu-a100", 0, **GPU_CAPACITY,
                            **{CAPACITY + "taints": "nvidia.com/gpu=present:NoSchedule",
                               CAPACITY + "labels": "nvidia.com/gpu.product=A100"})
    toleration = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    out = check(tmp_path, [node("cpu-0", gpus=0)], [md],
                [deployment("infer", 10, tolerations=toleration,
                            nodeSelector={"nvidia.com/gpu.product": "A100"})])
    assert out.code == 0, out.err
    doc = json.loads(out.out)
    assert doc["scaleUps"] == [{"nodeGroup": "MachineDeployment/ml/gpu-a100", "from": 0, "to": 2}]
    assert doc["unschedulable"] == []


def test_the_template_of_a_group_from_zero_holds_what_the_annotations_give_less_kube_proxy(tmp_path):
    [g] = groups_of(tmp_path, [], machine_deployment("gpu", 0, **GPU_CAPACITY, **{
        CAPACITY + "maxPods": "64", CAPACITY + "ephemeral-disk": "100Gi",
        CAPACITY + "labels": "topology.kubernetes.io/zone=z1"}))
    t = g.template
    assert t.capacity == {"cpu": 32000, "memory": 256 * 2**30, "ephemeral-storage": 100 * 2**30,
                          "nvidia.com/gpu": 8, "pods": 64}
    assert t.allocatable == {**t.capacity, "cpu": 31900, "pods": 63}
    assert t.labels["kubernetes.io/arch"] == "amd64" and t.labels["failure-domain.beta.kubernetes.io/zone"] == "z1"


def test_a_group_from_zero_without_gpu_count_never_runs_gpu_pods_and_names_the_cluster_api_fix(tmp_path):
    cpu_only = {k: v for k, v in GPU_CAPACITY.items() if "gpu" not in k}
    wrong_type = {**GPU_CAPACITY, CAPACITY + "gpu-type": "nvidia-tesla-a100"}
    out = check(tmp_path, [node("cpu-0", gpus=0)],
                [machine_deployment("gpu-a100", 0, **cpu_only), machine_deployment("gpu-h100", 0, **wrong_type)],
                [deployment("infer", 2)])
    assert out.code == 1
    [u] = json.loads(out.out)["unschedulable"]
    assert u["reason"] == "never"
    assert u["groups"]["MachineDeployment/ml/gpu-a100"] == (
        "Insufficient nvidia.com/gpu (its template declares no nvidia.com/gpu, so a node added from zero holds "
        "none: set capacity.cluster-autoscaler.kubernetes.io/gpu-count (GPUs per node) and "
        "capacity.cluster-autoscaler.kubernetes.io/gpu-type: nvidia.com/gpu on MachineDeployment ml/gpu-a100)")
    assert "(gpu-type is 'nvidia-tesla-a100': the autoscaler gives the node gpu-count of a resource by that name)" \
        in u["groups"]["MachineDeployment/ml/gpu-h100"]


def test_a_group_with_no_capacity_annotations_and_no_node_never_grows_and_says_what_to_set(tmp_path):
    out = check(tmp_path, [node("cpu-0", gpus=0)], [machine_deployment("gpu-a100", 0)], [deployment("infer", 2)])
    assert out.code == 1
    doc = json.loads(out.out)
    [u] = doc["unschedulable"]
    assert doc["scaleUps"] == [] and u["reason"] == "never"
    reason = u["groups"]["MachineDeployment/ml/gpu-a100"]
    assert reason.startswith("the autoscaler cannot add a node to it from zero (MachineDeployment ml/gpu-a100 has "
                             "no capacity.cluster-autoscaler.kubernetes.io/cpu and memory annotations")
    assert reason.endswith("set those two on it, and for GPUs capacity.cluster-autoscaler.kubernetes.io/gpu-count "
                           "(GPUs per node) and capacity.cluster-autoscaler.kubernetes.io/gpu-type: nvidia.com/gpu")


def test_a_groups_nodes_are_its_machines_nodes_and_its_template_is_copied_from_the_first(tmp_path):
    a100 = {"nvidia.com/gpu.product": "A100"}
    nodes = [node("a-0", labels=a100), node("a-1", labels=a100), node("b-0", labels={"other": "x"})]
    [g] = groups_of(tmp_path, nodes, machine_deployment("gpu", 4),
                    machine("m-0", "gpu", "a-0"), machine("m-1", "gpu", "a-1"),
                    machine("m-2", "gpu", "b-0", ns="other"), machine("m-3", "gpu", "b-0", cluster="dev"),
                    machine("m-4", "cpu", "b-0"), machine("m-5", "gpu", "gone"))
    assert g.members == ["a-0", "a-1"] and g.target_size == 4 and g.upcoming == 2
    assert g.template.labels["nvidia.com/gpu.product"] == "A100"
    assert g.template.name == "template-node-for-MachineDeployment/ml/gpu"


def test_without_machines_nodes_are_found_by_the_deployment_name_label_else_replicas_exit_2(tmp_path):
    labelled = node("a-0", labels={"cluster.x-k8s.io/deployment-name": "gpu"})
    [g] = groups_of(tmp_path, [labelled, node("b-0")], machine_deployment("gpu", 1))
    assert g.members == ["a-0"]
    nodes_file, groups_file, app = write(tmp_path, [node("b-0")], listed(machine_deployment("gpu", 2)),
                                         [deployment("infer", 1)])
    out = run("check", "--nodes", nodes_file, "--node-groups", groups_file, app)
    assert out.code == 2 and "Traceback" not in out.err
    assert "MachineDeployment ml/gpu: spec.replicas is 2 but no node of the fleet is known to be one of its " \
           "machines: give its Machines too" in out.err


def test_malformed_annotations_exit_2_naming_the_object_and_the_annotation_all_at_once(tmp_path):
    objects = [machine_deployment("a", 0, "ten", "4"), machine_deployment("b", 0, "3", "2"),
               machine_deployment("c", 0, "0", "-1"), machine_deployment("e", 0, "1", None),
               machine_deployment("d", 0, **{**GPU_CAPACITY, CAPACITY + "cpu": "lots", CAPACITY + "gpu-count": "2.5",
                                             CAPACITY + "taints": "dedicated=gpu:NoSchedul",
                                             CAPACITY + "labels": "pool"})]
    nodes_file, groups_file, app = write(tmp_path, [node("n-0")], listed(*objects), [deployment("infer", 1)])
    out = run("check", "--nodes", nodes_file, "--node-groups", groups_file, app)
    assert out.code == 2 and "Traceback" not in out.err
    at = f"{groups_file}: MachineDeployment ml/"
    assert f"{at}a: metadata.annotations[{MIN_SIZE}]: 'ten' is not a whole number" in out.err
    assert f"{at}b: metadata.annotations[{MAX_SIZE}]: 2 is below the min-size 3" in out.err
    assert f"{at}c: metadata.annotations[{MAX_SIZE}]: -1 is negative" in out.err
    assert f"{at}e: metadata.annotations[{MAX_SIZE}]: missing, which the autoscaler reads as 0, below the " \
           "min-size 1" in out.err
    assert f"{at}d: metadata.annotations[{CAPACITY}cpu]: 'lots' is not a quantity" in out.err
    assert f"{at}d: metadata.annotations[{CAPACITY}gpu-count]: '2.5' is not a whole number" in out.err
    assert f"{at}d: metadata.annotations[{CAPACITY}taints]: 'dedicated=gpu:NoSchedul' is not a taint" in out.err
    assert f"{at}d: metadata.annotations[{CAPACITY}labels]: 'pool' is not key=value" in out.err


def test_a_file_mixing_cluster_api_objects_with_other_kinds_or_node_groups_exits_2(tmp_path):
    nodes = [node("n-0")]
    for mixed, words in (
            (listed(machine_deployment("gpu", 0), node("n-1")), "items[1]: expected a MachineDeployment, MachineSet, "
                                                                "Machine of cluster.x-k8s.io"),
            (yaml.safe_dump([machine_deployment("gpu", 0), {"name": "a", "maxSize": 1, "template": {"like": "n-0"}}]),
             "[1]: expected a MachineDeployment, MachineSet, Machine of cluster.x-k8s.io (this file is read as the "
             "output of `kubectl get machinedeployments,machinesets,machines -A -o json`), got a node group entry"),
            (listed(node("n-1")), "expected a list of node groups or the output of `kubectl get machinedeployments"),
            (listed(), "no node groups: its List has no items"),
            (listed(machine_deployment("gpu", 0, "0", None)), "no node groups: none of its MachineDeployments or "
                                                             "MachineSets has a " + MAX_SIZE)):
        nodes_file, groups_file, app = write(tmp_path, nodes, mixed, [deployment("infer", 1)])
        out = run("check", "--nodes", nodes_file, "--node-groups", groups_file, app)
        assert out.code == 2 and words in out.err and "Traceback" not in out.err, out.err


_annotation = st.one_of(st.sampled_from(["", "0", "1", "-1", "+2", "3", "10", "1e3", "2.5", "9" * 25, " 1", "x",
                                         "32", "500m", "256Gi", "nvidia.com/gpu", "a=b:NoSchedule", "k=v,x",
                                         ",", "a=b=c:NoExecute", "key"]), st.text(max_size=12))
_keys = st.sampled_from([MIN_SIZE, MAX_SIZE] + [CAPACITY + k for k in (
    "cpu", "memory", "ephemeral-disk", "gpu-count", "gpu-type", "maxPods", "labels", "taints")])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.dictionaries(_keys, _annotation, max_size=8),
                          st.one_of(st.integers(-2, 5), st.none(), st.text(max_size=3))), max_size=3))
def test_no_annotation_values_crash_the_reader(objects):
    made = []
    for i, (given_annotations, replicas) in enumerate(objects):
        md = machine_deployment(f"md-{i}", 0, None, None, **given_annotations)
        md["spec"]["replicas"] = replicas
        made.append(md)
    try:
        groups = node_groups_from_cluster_api(made, [node_from_object(node("n-0"))], "groups.json")
    except InputError as e:
        assert str(e) and "Traceback" not in str(e)
    else:
        assert all(0 <= g.min_size <= g.max_size and g.max_size > 0 for g in groups)
        assert all(v >= 0 for g in groups for v in g.template.allocatable.values())


def test_headroom_grows_a_cluster_api_group_from_zero_but_not_one_the_autoscaler_cannot_template(tmp_path):
    nodes_file, groups_file, probe = write(
        tmp_path, [node("cpu-0", gpus=0)],
        listed(machine_deployment("gpu", 0, "0", "2", **GPU_CAPACITY), machine_deployment("bare", 0, "0", "9")),
        [deployment("p", 1)])
    out = run("headroom", "--probe", probe, "--nodes", nodes_file, "--node-groups", groups_file, "--json")
    assert out.code == 0, out.err
    scaled = json.loads(out.out)["withScaleUp"]
    assert scaled["nodesAdded"] == {"MachineDeployment/ml/gpu": 2} and scaled["instances"] == 16


def _served(objects: list[dict], version: str = "v1beta2") -> dict[str, list[dict]]:
    lists: dict[str, list[dict]] = {f"/apis/cluster.x-k8s.io/{version}/{r}": [] for r in (
        "machinesets", "machinedeployments", "machines")}
    for o in objects:
        lists[f"/apis/cluster.x-k8s.io/{version}/{o['kind'].lower()}s"].append(o)
    return lists


def test_node_groups_cluster_reads_the_live_clusters_machine_deployments_and_machines(tmp_path):
    objects = [machine_deployment("gpu", 0, "0", "3", **GPU_CAPACITY), machine_deployment("cpu", 1, "1", "1"),
               machine("m-0", "cpu", "cpu-0")]
    app = tmp_path / "app.yaml"
    app.write_text(yaml.safe_dump(deployment("infer", 12)))
    with ApiServer(nodes=[node("cpu-0", gpus=0)], extra=_served(objects),
                   api_groups={"cluster.x-k8s.io": ("v1beta2", "v1beta1")}) as api:
        out = run("check", "--kubeconfig", api.kubeconfig(tmp_path / "kc"), "--node-groups", "cluster", app, "--json")
        paths = {r.path for r in api.requests}
    assert out.code == 0, out.err
    assert json.loads(out.out)["scaleUps"] == [{"nodeGroup": "MachineDeployment/ml/gpu", "from": 0, "to": 2}]
    assert {"/apis/cluster.x-k8s.io", "/apis/cluster.x-k8s.io/v1beta2/machines"} <= paths  # the preferred version


def test_node_groups_cluster_on_a_cluster_without_cluster_api_or_rights_checks_without_scale_up(tmp_path):
    app = tmp_path / "app.yaml"
    app.write_text(yaml.safe_dump(deployment("infer", 1, gpus=0)))
    for server in ({}, {"api_groups": {"cluster.x-k8s.io": ("v1beta1",)}, "extra": _served([], "v1beta1"),
                        "forbidden": frozenset({"machinedeployments", "machinesets", "machines"})}):
        with ApiServer(nodes=[node("cpu-0", gpus=0)], **server) as api:
            out = run("check", "--kubeconfig", api.kubeconfig(tmp_path / "kc"), "--node-groups", "cluster", app)
        assert out.code == 0 and "Traceback" not in out.err, out.err
        assert "has no Cluster API node groups" in out.err
    assert "machinesets, machinedeployments, machines (cluster.x-k8s.io/v1beta1) may not be listed" in out.err


def test_node_groups_cluster_needs_a_live_cluster(tmp_path):
    nodes_file, _, app = write(tmp_path, [node("n-0")], "[]", [deployment("infer", 1)])
    out = run("check", "--nodes", nodes_file, "--node-groups", "cluster", app)
    assert out.code == 2 and "--node-groups cluster reads the live cluster's Cluster API node groups" in out.err


_shape = st.recursive(st.one_of(st.none(), st.integers(-1, 3), st.text(max_size=4)),
                      lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(
                          ["matchLabels", "matchExpressions", "key", "operator", "values", "name", "nodeRef",
                           "labels", "kind"]), inner, max_size=3)), max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(_shape, _shape, _shape, _shape)
def test_no_shape_of_selector_metadata_or_machine_status_crashes_the_reader(selector, metadata, status, spec):
    md = machine_deployment("gpu", 1)
    md["spec"]["selector"] = selector
    m = machine("m-0", "gpu", "n-0")
    m["status"], m["metadata"]["labels"] = status, metadata
    odd = {"apiVersion": V1, "kind": "MachineSet", "metadata": metadata, "spec": spec}
    try:
        node_groups_from_cluster_api([md, m, odd], [node_from_object(node("n-0"))], "groups.json")
    except InputError as e:
        assert str(e) and "Traceback" not in str(e)
