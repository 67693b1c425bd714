import json
from pathlib import Path

import pytest

from gpufleet.capacity import Capacity, capacity_from_cluster, capacity_from_objects, pod_requests
from gpufleet.capacity.quantity import canonical, to_units
from gpufleet.discovery.kubernetes import FileCluster
from gpufleet.errors import InputError

FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_kubectl_nodes_become_nodes_with_allocatable_in_scheduler_units():
    cap = capacity_from_cluster(FileCluster(FIXTURES / "nodes-mixed-cluster.json",
                                            FIXTURES / "pods-mixed-cluster.json"))
    t4 = cap.nodes[0]
    assert t4.allocatable["cpu"] == 16000 and t4.allocatable["memory"] == 64 * 1024**3
    assert t4.allocatable["nvidia.com/gpu"] == 4
    assert t4.container_runtime == "containerd://1.7.27" and t4.kubelet_version == "v1.33.2"
    assert cap.nodes[1].taints[0].key == "nvidia.com/gpu" and cap.nodes[3].unschedulable


def test_only_bound_non_terminal_pods_are_kept():
    cap = capacity_from_cluster(FileCluster(FIXTURES / "nodes-mixed-cluster.json",
                                            FIXTURES / "pods-mixed-cluster.json"))
    assert [(p.name, p.node, p.requests) for p in cap.pods] == [("trainer-0", "h100-0",
                                                                 {"nvidia.com/gpu": 1, "cpu": 1000})]


def test_capacity_json_round_trips():
    cap = capacity_from_cluster(FileCluster(FIXTURES / "nodes-mixed-cluster.json",
                                            FIXTURES / "pods-mixed-cluster.json"))
    again = Capacity.from_json(json.loads(json.dumps(cap.to_json())))
    assert again.to_json() == cap.to_json()


def test_file_that_is_not_a_list_is_an_input_error(tmp_path):
    bad = tmp_path / "nodes.json"
    bad.write_text('{"kind": "ConfigMap"}')
    with pytest.raises(InputError, match="kubectl get nodes -o json"):
        FileCluster(bad).nodes()


@pytest.mark.parametrize("value, units", [("500m", 500), (2.0, 2000), (1, 1000), ("1.5", 1500)])
def test_cpu_quantities_become_millicores(value, units):
    assert to_units("cpu", value) == units


def test_bad_quantity_is_an_input_error():
    with pytest.raises(InputError, match="not a Kubernetes quantity"):
        to_units("memory", "lots")


@pytest.mark.parametrize("value, text", [(0.5, "500m"), ("2.0", "2"), (1000, "1k"), ("16Gi", "16Gi")])
def test_canonical_quantity_text_matches_quantity_string(value, text):
    assert canonical(value) == text


def test_limits_only_default_the_request():
    resources = {"limits": {"nvidia.com/gpu": 1, "cpu": "2"}, "requests": {"cpu": "1"}}
    assert pod_requests({"containers": [{"resources": resources}]}) == {"nvidia.com/gpu": 1, "cpu": 1000}


def test_init_container_after_sidecar_adds_the_sidecar():
    spec = {"containers": [{"resources": {"requests": {"cpu": "1"}}}],
            "initContainers": [{"restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                               {"resources": {"requests": {"cpu": "3"}}}]}
    assert pod_requests(spec)["cpu"] == 4000  # max(1+1 app+sidecar, 3+1 init+sidecar)


def _node(**spec):
    return {"kind": "Node", "metadata": {"name": "n"}, "spec": spec,
            "status": {"allocatable": {"cpu": "4", "nvidia.com/gpu": "1"}}}


def test_unschedulable_as_text_is_an_error_not_a_cordoned_node():
    with pytest.raises(InputError) as e:
        capacity_from_objects([_node(unschedulable="false")], [], nodes_origin="nodes.json")
    assert str(e.value) == "nodes.json: Node/n: spec.unschedulable: must be true or false, not the string 'false'"


def test_pod_with_unreadable_resources_is_named_with_its_field():
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
           "spec": {"nodeName": "n", "containers": [{"resources": {"requests": {"cpu": True}}}]}}
    with pytest.raises(InputError) as e:
        capacity_from_objects([_node()], [pod], pods_origin="pods.json")
    assert str(e.value) == ("pods.json: Pod/ml/p: spec.containers[0].resources.requests[cpu]: must be a quantity "
                            "(e.g. 2, 500m, 16Gi), not a boolean")


def test_unbound_and_finished_pods_are_not_read_beyond_their_kind():
    done = {"kind": "Pod", "metadata": {"name": "done"}, "status": {"phase": "Succeeded"},
            "spec": {"nodeName": "n", "containers": [{"resources": {"requests": {"cpu": "lots"}}}]}}
    assert capacity_from_objects([_node()], [done]).pods == []


def test_file_cluster_names_the_file_in_every_problem(tmp_path):
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"kind": "List", "items": [_node(), _node()]}))
    with pytest.raises(InputError, match=f"^{nodes}: Node/n: metadata.name: Duplicate value"):
        capacity_from_cluster(FileCluster(nodes))
