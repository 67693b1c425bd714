"""Discovery and RBAC, for real: `gpufleet discover` against the live cluster, run as a ServiceAccount bound
only to deploy/rbac/'s ClusterRole, reads the same capacity model as `discover --nodes --pods` reads from
the kubectl JSON of the same objects; and without any one of the role's resource rules it answers as
docs/discovery.md documents: the 403 line for nodes, pods and DRA objects, a warning for what admission
reads. `gpufleet check` on the live cluster, as the same ServiceAccount, gives the verdicts `check` gives on
the kubectl files of the same objects (nodes, pods, quotas with their usage, LimitRanges, PriorityClasses)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.cluster import ROOT, write_kubeconfig
from tests.e2e.kwok_nodes import create_nodes, nodes_from_file, wait_nodes_ready
from tests.e2e.workloads import check_json, create_running_pods, ensure_namespaces, gpufleet

ROLE_FILE = ROOT / "deploy" / "rbac" / "gpufleet-discovery-clusterrole.yaml"
NODES_FILE = ROOT / "tests" / "fixtures" / "nodes-mixed-cluster.json"
PODS_FILE = ROOT / "tests" / "fixtures" / "pods-mixed-cluster.json"
NAMESPACE = "gpufleet"


def role() -> dict:
    return next(d for d in yaml.safe_load_all(ROLE_FILE.read_text()) if d and d["kind"] == "ClusterRole")


def as_service_account(cluster, name: str, rules: list[dict], tmp_path: Path) -> Path:
    """A kubeconfig for ServiceAccount `gpufleet/<name>`, bound only to a ClusterRole with these rules."""
    api = cluster.api()
    api.ok("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", {"metadata": {"name": name}})
    cluster_role = {**role(), "metadata": {"name": name}, "rules": rules}
    api.ok("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", cluster_role)
    api.ok("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]})
    token = api.ok("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{name}/token",
                   {"spec": {"expirationSeconds": 3600}})["status"]["token"]
    path = tmp_path / f"{name}.kubeconfig"
    write_kubeconfig(path, cluster.server, cluster.pki / "ca.crt", {"token": token})
    return path


@pytest.fixture(scope="module")
def populated(cluster):
    """The mixed-cluster fixture's nodes (as KWOK nodes) and its bound pods."""
    api = cluster.api()
    nodes = nodes_from_file(NODES_FILE)
    create_nodes(api, nodes)
    wait_nodes_ready(api, [n.name for n in nodes])
    pods = [p for p in json.loads(PODS_FILE.read_text())["items"] if p["spec"].get("nodeName")]
    ensure_namespaces(api, {p["metadata"]["namespace"] for p in pods} | {NAMESPACE})
    create_running_pods(api, pods)
    return cluster


def model(path: Path) -> dict:
    doc = json.loads(path.read_text())
    doc.pop("source", None)
    doc["nodes"] = sorted(doc["nodes"], key=lambda n: n["name"])
    doc["pods"] = sorted(doc["pods"], key=lambda p: (p["namespace"], p["name"]))
    return doc


def test_live_discovery_as_the_clusterrole_reads_the_model_of_the_kubectl_files(populated, kubectl, tmp_path):
    kubeconfig = as_service_account(populated, "discovery", role()["rules"], tmp_path)
    live = gpufleet("discover", "--kubeconfig", str(kubeconfig), "--out", str(tmp_path / "live.json"))
    assert live.returncode == 0, live.stderr

    for kind in ("nodes", "pods"):
        got = kubectl("get", kind, *(["-A"] if kind == "pods" else []), "-o", "json")
        assert got.returncode == 0, got.stderr
        (tmp_path / f"{kind}.json").write_text(got.stdout)
    files = gpufleet("discover", "--nodes", str(tmp_path / "nodes.json"),
                     "--pods", str(tmp_path / "pods.json"), "--out", str(tmp_path / "files.json"))
    assert files.returncode == 0, files.stderr

    live_model, file_model = model(tmp_path / "live.json"), model(tmp_path / "files.json")
    assert live_model["nodes"] == file_model["nodes"]
    assert live_model["pods"] == file_model["pods"]


RESOURCE_RULES = [(i, r) for i, r in enumerate(role()["rules"]) if "resources" in r]
#: Lists admission and preemption read: docs/discovery.md says a forbidden one is skipped with a warning, not an
#: error.
ADMISSION_RESOURCES = {"resourcequotas", "limitranges", "priorityclasses", "clusterqueues", "localqueues",
                       "resourceflavors", "poddisruptionbudgets", "namespaces", "services"}
#: Lists only `check --node-groups cluster` reads (Cluster API): discover answers the same without them.
NODE_GROUP_RESOURCES = {"machinesets", "machinedeployments", "machines"}


@pytest.mark.parametrize(("index", "rule"), RESOURCE_RULES,
                         ids=[",".join(r["resources"]) for _, r in RESOURCE_RULES])
def test_without_one_rule_discovery_gives_the_documented_answer(populated, index, rule, tmp_path):
    rules = [r for i, r in enumerate(role()["rules"]) if i != index]
    kubeconfig = as_service_account(populated, f"minus-{index}", rules, tmp_path)
    live = gpufleet("discover", "--kubeconfig", str(kubeconfig), "--out", str(tmp_path / "live.json"))
    if set(rule["resources"]) <= NODE_GROUP_RESOURCES:
        assert live.returncode == 0 and "warning" not in live.stderr, live.stderr
        return
    if set(rule["resources"]) <= ADMISSION_RESOURCES:
        assert live.returncode == 0, live.stderr
        assert "may not be listed with these credentials" in live.stderr
        assert "gpufleet-discovery-clusterrole.yaml" in live.stderr
        return
    assert live.returncode == 2, live.stdout + live.stderr
    assert "403 Forbidden" in live.stderr
    assert any(f'cannot list resource "{res}"' in live.stderr for res in rule["resources"]), live.stderr


#: What admission reads, in the live cluster beside the fixture's pods: the quota is 4 GPUs in `ml`, where
#: the bound pods hold 3; `serving` allows 1 GPU per container; one PriorityClass exists.
ADMISSION = [
    {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus", "namespace": "ml"},
     "spec": {"hard": {"requests.nvidia.com/gpu": "4"}}},
    {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "one-gpu", "namespace": "serving"},
     "spec": {"limits": [{"type": "Container", "max": {"nvidia.com/gpu": "1"}}]}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "batch-high"},
     "value": 1000},
]


def gpu_pod_spec(gpus: int, **extra) -> dict:
    container = {"name": "c", "image": "cuda:12", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return {"containers": [container], **extra}


def workloads() -> list[dict]:
    """Workloads whose verdicts hang on the cluster's quota usage, LimitRange, PriorityClasses, capacity."""
    def deployment(ns: str, name: str, replicas: int, spec: dict) -> dict:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}

    return [
        deployment("ml", "fits-quota", 1, gpu_pod_spec(1)),
        deployment("ml", "over-quota", 2, gpu_pod_spec(1)),
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "too-wide", "namespace": "serving"},
         "spec": gpu_pod_spec(2)},
        deployment("serving", "big", 3, gpu_pod_spec(1, priorityClassName="batch-high")),
        deployment("default", "wide", 2, gpu_pod_spec(4)),
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "unknown-priority", "namespace": "default"},
         "spec": gpu_pod_spec(1, priorityClassName="nope")},
    ]


def quota_used(api, timeout: float = 60) -> dict:
    """The quota's status.used, once the quota controller has counted the namespace's pods."""
    deadline = time.monotonic() + timeout
    while True:
        used = (api.ok("GET", "/api/v1/namespaces/ml/resourcequotas/gpus").get("status") or {}).get("used")
        if used:
            return used
        if time.monotonic() > deadline:
            raise AssertionError(f"the quota controller did not count ml's pods in {timeout:.0f} s")
        time.sleep(0.5)


def verdicts(answer: dict) -> dict:
    return {key: sorted(answer.get(key, []), key=lambda v: json.dumps(v, sort_keys=True))
            for key in ("unschedulable", "warnings")}


def test_live_check_as_the_clusterrole_gives_the_verdicts_of_check_on_the_kubectl_files(populated, kubectl,
                                                                                        tmp_path):
    api = populated.api()
    ensure_namespaces(api, {"serving"})
    for obj in ADMISSION:
        created = kubectl("apply", "--server-side", "-f", "-", input=json.dumps(obj))
        assert created.returncode == 0, created.stderr
    assert quota_used(api) == {"requests.nvidia.com/gpu": "3"}
    manifests = tmp_path / "manifests.yaml"
    manifests.write_text(yaml.safe_dump_all(workloads()))

    kubeconfig = as_service_account(populated, "checker", role()["rules"], tmp_path)
    live = check_json("--kubeconfig", str(kubeconfig), str(manifests))

    files = []
    for name, what in (("nodes", ("nodes",)), ("pods", ("pods", "-A")),
                       ("admission", ("resourcequotas,limitranges", "-A")),
                       ("priorities", ("priorityclasses",))):
        got = kubectl("get", *what, "-o", "json")
        assert got.returncode == 0, got.stderr
        (tmp_path / f"{name}.json").write_text(got.stdout)
        files.append(tmp_path / f"{name}.json")
    on_files = check_json("--nodes", str(files[0]), "--pods", str(files[1]), str(manifests), str(files[2]),
                          str(files[3]))

    assert verdicts(live) == verdicts(on_files)
    reasons = {u["workload"]: u["reason"] for u in on_files["unschedulable"]}
    assert reasons == {"Deployment/ml/over-quota": "rejected", "Pod/serving/too-wide": "rejected",
                       "Pod/default/unknown-priority": "rejected", "Deployment/default/wide": "pending"}
