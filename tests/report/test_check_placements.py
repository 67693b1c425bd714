"""The check engine's record of where it put each workload's pods (what the fleet report draws)."""

from __future__ import annotations

from gpufleet.capacity.model import Node
from gpufleet.scheduling import check_workloads


def _node(name: str, gpus: int) -> Node:
    return Node(name=name, labels={"kubernetes.io/hostname": name}, taints=(),
                allocatable={"pods": 110, "nvidia.com/gpu": gpus}, capacity={"pods": 110, "nvidia.com/gpu": gpus},
                unknown=frozenset({"cpu", "memory", "ephemeral-storage"}))


def _deployment(name: str, replicas: int, gpus: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}}}


def test_placements_name_workload_node_and_pods_packed_onto_the_fullest_nodes_first():
    nodes = [_node("big", 8), _node("small", 2)]
    result = check_workloads(nodes, [], [_deployment("a", 3, 1), _deployment("b", 2, 4), _deployment("c", 1, 9)])
    assert result.placements == [("Deployment/ml/a", "big", 1), ("Deployment/ml/a", "small", 2),
                                 ("Deployment/ml/b", "big", 1)]
    assert [u.workload for u in result.unschedulable] == ["Deployment/ml/b", "Deployment/ml/c"]
    assert "placements" not in result.to_json()
