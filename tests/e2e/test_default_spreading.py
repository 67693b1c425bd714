"""The scheduler's system default topology spreading, for real. A Deployment's pods belong to a ReplicaSet, and
pods a Service selects share its selector: kube-scheduler's default profile then scores their spreading over
hosts and zones (weight 2), which can beat where the resources alone would put them. Here two 1-GPU pods go
to two nodes instead of the emptier one, and a 2-GPU pod created after them finds no node. `gpufleet check
--default-spreading controllers` must say Pending, on the live cluster, on kubectl files and on a capacity file,
as the real control plane does. By default check makes pods directly, as cluster-capacity does: the Service
still spreads the Job's pods, but nothing spreads the Deployment's; with `--default-spreading off` both fit."""

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
    gpufleet,
    outcome,
    settle,
    workload_key,
)
from tests.scheduling.kube import container, node, pod, pod_spec

NS = "e2e-spread"
NODES = [node(f"spread-{i}", 2) for i in range(2)]


def _busy(ns: str) -> dict:
    """A running pod that leaves spread-0 a little fuller, so that resources alone prefer spread-1."""
    return pod("busy-0", pod_spec(container(requests={"cpu": "1", "memory": "1Gi"})), namespace=ns,
               node_name="spread-0", phase="Running")


def _template(app: str, gpus: int) -> dict:
    return {"metadata": {"labels": {"app": app}},
            "spec": pod_spec(container(requests={"cpu": "100m"}, limits={"nvidia.com/gpu": str(gpus)}))}


def _deployment(name: str, replicas: int, gpus: int, ns: str = NS) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": _template(name, gpus)}}


def _job_and_service(name: str, ns: str) -> tuple[dict, dict]:
    """A Job's pods get default spreading only through a Service that selects them (a Job owner gives none)."""
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
           "spec": {"parallelism": 2, "completions": 2,
                    "template": {**_template(name, 1),
                                 "spec": {**_template(name, 1)["spec"], "restartPolicy": "Never"}}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
               "spec": {"clusterIP": "None", "selector": {"app": name}}}
    return job, service


def _pending(answer: dict) -> dict[str, int]:
    return {u["workload"]: u["pending"] for u in answer["unschedulable"]}


JOB, SERVICE = _job_and_service("train", f"{NS}-svc")


@pytest.mark.parametrize(("ns", "first", "service"), [(NS, _deployment("small", 2, 1), None),
                                                      (f"{NS}-svc", JOB, SERVICE)],
                         ids=["deployment", "job-behind-a-service"])
def test_default_spreading_leaves_no_node_for_a_later_two_gpu_pod(cluster, tmp_path, ns, first, service):
    """The Service, when there is one, is already in the cluster: the live check lists it, and the files
    check reads it from `kubectl get services -o json` beside the manifests."""
    api = cluster.api()
    replace_nodes(api, NODES)
    ensure_namespaces(api, {ns})
    create_running_pods(api, [_busy(ns)])
    if service is not None:
        assert create_all(api, [service]) == {}
    big = _deployment("big", 1, 2, ns)
    manifests = tmp_path / "app.yaml"
    manifests.write_text(yaml.safe_dump_all([first, big]))
    owned = ("--default-spreading", "controllers")
    live = check_json("--kubeconfig", str(cluster.kubeconfig), *owned, str(manifests))
    services = tmp_path / "services.json"
    services.write_text(json.dumps(api.ok("GET", f"/api/v1/namespaces/{ns}/services")))

    spread = first
    assert create_all(api, [first]) == {}
    settle(api, {workload_key(spread): 2})  # in manifest order: the check's contract
    assert create_all(api, [big]) == {}
    wanted = {workload_key(spread): 2, workload_key(big): 1}
    settle(api, wanted)
    got = outcome(api, wanted, {})
    assert got[workload_key(spread)]["nodes"] == {"spread-0": 1, "spread-1": 1}  # spread, not packed
    real = {k: v["pending"] for k, v in got.items() if v["pending"]}
    assert real == {workload_key(big): 1}

    assert _pending(live) == real
    nodes_file, pods_file = tmp_path / "nodes.json", tmp_path / "pods.json"
    nodes_file.write_text(json.dumps({"kind": "List", "items": NODES}))
    pods_file.write_text(json.dumps({"kind": "List", "items": [_busy(ns)]}))
    files = ("--nodes", str(nodes_file), "--pods", str(pods_file))
    assert _pending(check_json(*files, *owned, str(services), str(manifests))) == real
    # made directly, as cluster-capacity makes them: only the Service selects them
    direct = check_json(*files, str(services), str(manifests))
    assert _pending(direct) == (real if service is not None else {})
    off = check_json(*files, "--default-spreading", "off", str(services), str(manifests))
    assert _pending(off) == {}  # packed on spread-1
    if service is not None:  # without the Service the Job's pods have no default selector: packed
        assert _pending(check_json(*files, *owned, str(manifests))) == {}
    # a capacity file of the cluster, made before the workloads, holds its Services and namespaces too
    capacity = tmp_path / "capacity.json"
    made = gpufleet("discover", "--kubeconfig", str(cluster.kubeconfig), "--out", str(capacity))
    assert made.returncode == 0, made.stderr
    doc = json.loads(capacity.read_text())
    doc["pods"] = [p for p in doc["pods"] if p.get("name") == "busy-0" and p.get("namespace") == ns]
    assert len(doc["pods"]) == 1 and any(o["kind"] == "Service" and o["metadata"]["namespace"] == ns
                                       for o in doc.get("admission", ())) == bool(service)
    capacity.write_text(json.dumps(doc))
    assert _pending(check_json("--nodes", str(capacity), *owned, str(manifests))) == real
