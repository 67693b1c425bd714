"""Putting objects into the real cluster as a user would, and reading back what the controllers and the
scheduler made of them.

- `ensure_namespaces`: the namespaces, each with its `default` ServiceAccount (made by the controller
  manager; the ServiceAccount admission plugin rejects pods until it exists).
- `create_running_pods`: pods already bound to nodes (a fleet's running pods), created with `spec.nodeName`;
  KWOK marks them Running. Owner references are dropped: their owners do not exist here, and the garbage
  collector would delete them.
- `create_all`: every manifest created as fast as one client can, in order, as `kubectl apply -f` sends
  them; what the API server refuses is returned with its message.
- `gpufleet`, `check_json`, `plan_documents`: the CLI as a user runs it; `helm`: the real helm.
- `settle`: wait until every workload's controller made its pods and the scheduler decided on each of them,
  and nothing moved for a while; `outcome`: per workload, scheduled and pending pods with the scheduler's
  message, in the shape of the recorded oracle runs (tests/scheduling/oracle_compare.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.cluster import ROOT, Api, ClusterError

#: kind -> (API prefix, plural) for the kinds the tests create.
PATHS = {
    "Service": ("/api/v1", "services"), "Secret": ("/api/v1", "secrets"),
    "ConfigMap": ("/api/v1", "configmaps"),
    "Pod": ("/api/v1", "pods"), "Deployment": ("/apis/apps/v1", "deployments"),
    "Job": ("/apis/batch/v1", "jobs"), "ReplicaSet": ("/apis/apps/v1", "replicasets"),
    "StatefulSet": ("/apis/apps/v1", "statefulsets"), "DaemonSet": ("/apis/apps/v1", "daemonsets"),
    "Namespace": ("/api/v1", "namespaces"), "ResourceQuota": ("/api/v1", "resourcequotas"),
    "LimitRange": ("/api/v1", "limitranges"),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses"),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices"),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses"),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims"),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates"),
}
CLUSTER_SCOPED = {"Namespace", "PriorityClass", "ResourceSlice", "DeviceClass", "Node"}


def collection(kind: str, namespace: str | None) -> str:
    prefix, plural = PATHS[kind]
    if kind in CLUSTER_SCOPED or not namespace:
        return f"{prefix}/{plural}"
    return f"{prefix}/namespaces/{namespace}/{plural}"


def workload_key(obj: dict) -> str:
    meta = obj["metadata"]
    return f"{obj['kind']}/{meta.get('namespace', 'default')}/{meta['name']}"


def ensure_namespaces(api: Api, names: set[str], timeout: float = 60) -> None:
    for name in sorted(names):
        status, doc = api.request("POST", "/api/v1/namespaces",
                                  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if status >= 300 and status != 409:
            raise ClusterError(f"namespace {name}: HTTP {status}: {doc.get('message')}")
    deadline = time.monotonic() + timeout
    for name in sorted(names):
        while api.request("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")[0] != 200:
            if time.monotonic() > deadline:
                raise ClusterError(f"namespace {name} got no default ServiceAccount in {timeout:.0f} s")
            time.sleep(0.2)


def create_running_pods(api: Api, pods: list[dict]) -> None:
    for pod in pods:
        meta = {k: v for k, v in pod["metadata"].items()
                if k in ("name", "namespace", "labels", "annotations")}
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod["spec"]}
        api.ok("POST", collection("Pod", meta["namespace"]), body)


def create_all(api: Api, manifests: list[dict]) -> dict[str, str]:
    """Create each manifest; workload key -> the API server's message for each one it refused."""
    refused = {}
    for obj in manifests:
        namespace = obj["metadata"].get("namespace", "default")
        status, doc = api.request("POST", collection(obj["kind"], namespace), obj)
        if status >= 300:
            refused[workload_key(obj)] = doc.get("message", str(doc))
    return refused


def _owner_index(api: Api, namespaces: set[str]) -> dict[tuple[str, str], str]:
    """(namespace, ReplicaSet name) -> its Deployment's name."""
    index = {}
    for rs in api.ok("GET", "/apis/apps/v1/replicasets")["items"]:
        for ref in rs["metadata"].get("ownerReferences") or ():
            if ref.get("kind") == "Deployment" and rs["metadata"]["namespace"] in namespaces:
                index[(rs["metadata"]["namespace"], rs["metadata"]["name"])] = ref["name"]
    return index


def _pods_by_workload(api: Api, workloads: dict[str, dict]) -> dict[str, list[dict]]:
    namespaces = {k.split("/")[1] for k in workloads}
    deployments = _owner_index(api, namespaces)
    found: dict[str, list[dict]] = {k: [] for k in workloads}
    for pod in api.ok("GET", "/api/v1/pods")["items"]:
        meta = pod["metadata"]
        ns, key = meta["namespace"], None
        for ref in meta.get("ownerReferences") or ():
            if ref.get("kind") == "Job":
                key = f"Job/{ns}/{ref['name']}"
            elif ref.get("kind") == "ReplicaSet" and (ns, ref["name"]) in deployments:
                key = f"Deployment/{ns}/{deployments[(ns, ref['name'])]}"
        key = key or f"Pod/{ns}/{meta['name']}"
        if key in found:
            found[key].append(pod)
    return found


def _decided(pod: dict) -> bool:
    if pod["spec"].get("nodeName"):
        return True
    if (pod.get("status") or {}).get("nominatedNodeName"):
        return False  # it preempted and waits for its victims to go: the scheduler has not placed it yet
    return any(c["type"] == "PodScheduled" and c["status"] == "False"
               for c in pod.get("status", {}).get("conditions") or ())


def settle(api: Api, workloads: dict[str, int], quiet: float = 3, timeout: float = 300) -> float:
    """Wait until each workload (key -> pods it should make) has all its pods, the scheduler decided on every
    pod, and no pod was bound for `quiet` seconds. Returns the seconds it took. A pod the scheduler holds
    back before trying it (DRA: its claim or template does not exist) never gets a decision: after
    3 x `quiet` seconds without change it counts as settled too."""
    start = time.monotonic()
    last, last_change = None, start
    while True:
        pods = _pods_by_workload(api, {k: {} for k in workloads})
        complete = all(len(pods[k]) >= n for k, n in workloads.items())
        decided = all(_decided(p) for ps in pods.values() for p in ps)
        state = sorted((p["metadata"]["name"], p["spec"].get("nodeName")) for ps in pods.values() for p in ps)
        now = time.monotonic()
        if state != last:
            last, last_change = state, now
        if complete and now - last_change >= (quiet if decided else 3 * quiet):
            return now - start
        if now - start > timeout:
            missing = {k: (len(pods[k]), n) for k, n in workloads.items() if len(pods[k]) < n}
            raise ClusterError(f"the cluster did not settle in {timeout:.0f} s: pods made/wanted {missing}")
        time.sleep(0.5)


def outcome(api: Api, workloads: dict[str, int], refused: dict[str, str]) -> dict[str, dict]:
    """workload -> {scheduled, pending, reason, message, nodes}, as the recorded oracle runs have it."""
    pods = _pods_by_workload(api, {k: {} for k in workloads})
    run = {}
    for key, wanted in workloads.items():
        if key in refused:
            run[key] = {"scheduled": 0, "pending": wanted, "reason": "rejected", "message": refused[key],
                        "nodes": {}}
            continue
        bound = [p for p in pods[key] if p["spec"].get("nodeName")]
        waiting = [p for p in pods[key] if not p["spec"].get("nodeName")]
        message = None
        for pod in waiting:
            for c in pod.get("status", {}).get("conditions") or ():
                if c["type"] == "PodScheduled" and c["status"] == "False":
                    message = c.get("message")
        nodes: dict[str, int] = {}
        for p in bound:
            nodes[p["spec"]["nodeName"]] = nodes.get(p["spec"]["nodeName"], 0) + 1
        run[key] = {"scheduled": len(bound), "pending": len(waiting),
                    "reason": "pending" if waiting else None, "message": message, "nodes": nodes}
    return run


def gpufleet(*args: str) -> subprocess.CompletedProcess:
    """Run `gpufleet ARGS` as a user does, from the repository root."""
    return subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", *args], cwd=ROOT,
                          capture_output=True, text=True)


def helm(cluster, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The real helm (from the PyPI kubectl layer) against the cluster, with its own home under tmp_path."""
    from helm_binary import helm_binary

    home = tmp_path / "helm"
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "HELM_CACHE_HOME": str(home / "cache"),
           "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data")}
    return subprocess.run([str(helm_binary()), *args], capture_output=True, text=True, env=env, timeout=300)


def check_json(*args: str) -> dict:
    """`gpufleet check --json ARGS`, which must answer (exit 0 or 1)."""
    done = gpufleet("check", "--json", *args)
    if done.returncode not in (0, 1):
        raise AssertionError(f"gpufleet check exited {done.returncode}: {done.stderr[-3000:]}")
    return json.loads(done.stdout)


def plan_documents(stack: str, out: Path) -> list[dict]:
    """`gpufleet plan --stack STACK --no-policies --out OUT`: every document it wrote (HelmReleases too)."""
    import yaml

    done = gpufleet("plan", "--stack", stack, "--no-policies", "--out", str(out))
    if done.returncode != 0:
        raise AssertionError(f"gpufleet plan --stack {stack} exited {done.returncode}: {done.stderr[-3000:]}")
    docs = []
    for path in sorted((out / "manifests").rglob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def create_with_status(api: Api, obj: dict) -> tuple[int, dict]:
    """Create the object; when it carries a status (a claim allocated earlier), set that through /status."""
    namespace = obj["metadata"].get("namespace")
    status, doc = api.request("POST", collection(obj["kind"], namespace), obj)
    if status < 300 and obj.get("status"):
        path = f"{collection(obj['kind'], namespace)}/{obj['metadata']['name']}/status"
        status, doc = api.request("PATCH", path, {"status": obj["status"]},
                                  content_type="application/merge-patch+json")
    return status, doc
