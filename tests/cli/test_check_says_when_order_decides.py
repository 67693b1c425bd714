"""A Pending verdict that rests on manifest order says so: earlier workloads of the same manifests took the room,
and a live cluster's controllers, creating pods in bursts, need not keep that order."""

from __future__ import annotations

import json

import yaml


def gpu_node(name: str, gpus: int) -> dict:
    alloc = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": alloc, "capacity": alloc,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def deployment(name: str, replicas: int, gpus: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
                         {"name": "main", "image": "busybox:1.36",
                          "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}}}


def write(tmp_path, nodes: list[dict], docs: list[dict]):
    (tmp_path / "nodes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    (tmp_path / "app.yaml").write_text(yaml.safe_dump_all(docs))
    return tmp_path / "nodes.json", tmp_path / "app.yaml"


def test_a_workload_pending_behind_an_earlier_one_of_the_manifests_says_order_decided(cli, tmp_path):
    nodes, app = write(tmp_path, [gpu_node("gpu-0", 4)], [deployment("first", 1, 4), deployment("second", 1, 2)])
    r = cli("check", "--nodes", nodes, app)
    assert r.code == 1
    block = r.out.split("Deployment/ml/second\n", 1)[1]
    assert "order: 1 earlier workload(s) of these manifests got this capacity first" in block
    assert "bursts" in block


def test_a_workload_that_fits_nowhere_gets_no_order_line(cli, tmp_path):
    nodes, app = write(tmp_path, [gpu_node("gpu-0", 4)], [deployment("first", 1, 1), deployment("huge", 1, 8)])
    r = cli("check", "--nodes", nodes, app)
    assert r.code == 1 and "Deployment/ml/huge" in r.out
    assert "order:" not in r.out


def job(name: str, parallelism: int, gpus: int) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"parallelism": parallelism, "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox:1.36", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}}}


def test_a_deployment_on_room_a_later_job_pends_for_is_named_order_sensitive(cli, tmp_path):
    # Applied together, the Job's pods exist a controller step before the Deployment's: the live cluster may
    # place the Job and leave the Deployment Pending, the other way round from manifest order.
    nodes, app = write(tmp_path, [gpu_node("gpu-0", 4)], [deployment("serve", 3, 1), job("train", 2, 1)])
    r = cli("check", "--nodes", nodes, app)
    assert r.code == 1
    assert "order: 1 placed workload(s) (Deployment/ml/serve) hold room that a later Job or Pod" in r.out
    answer = json.loads(cli("check", "--json", "--nodes", nodes, app).out)
    assert answer["orderSensitive"] == [{"workload": "Deployment/ml/serve", "roomWantedBy": ["Job/ml/train"]}]


def test_a_job_before_a_deployment_is_not_order_sensitive(cli, tmp_path):
    # the Job's pods come first in manifest order and on a live cluster alike
    nodes, app = write(tmp_path, [gpu_node("gpu-0", 4)], [job("train", 3, 1), deployment("serve", 2, 1)])
    r = cli("check", "--nodes", nodes, app)
    assert r.code == 1 and "Deployment/ml/serve" in r.out
    assert "placed workload(s)" not in r.out
    assert "orderSensitive" not in json.loads(cli("check", "--json", "--nodes", nodes, app).out)
