"""Builders for the objects admission reads, and the way back from admitted workloads to manifests."""

from __future__ import annotations

from gpufleet.admission import admit
from gpufleet.manifests.workloads import PodWorkload, workloads_of
from tests.scheduling.kube import container, deployment, job, pod, pod_spec

__all__ = ["admitted", "as_manifests", "cluster_queue", "container", "deployment", "in_ns", "job", "limit_range",
           "local_queue", "pod", "pod_spec", "priority_class", "queued", "quota", "resource_flavor"]

KUEUE = "kueue.x-k8s.io/v1beta1"


def in_ns(obj: dict, namespace: str = "ml") -> dict:
    obj["metadata"]["namespace"] = namespace
    return obj


def limit_range(*items: dict, name: str = "limits", namespace: str = "ml") -> dict:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name, "namespace": namespace},
            "spec": {"limits": list(items)}}


def quota(hard: dict, name: str = "gpu-quota", namespace: str = "ml", used: dict | None = None, scopes=None,
          selector=None) -> dict:
    obj = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": namespace},
           "spec": {"hard": hard}}
    if scopes:
        obj["spec"]["scopes"] = scopes
    if selector:
        obj["spec"]["scopeSelector"] = {"matchExpressions": selector}
    if used is not None:
        obj["status"] = {"hard": dict(hard), "used": used}
    return obj


def priority_class(name: str, value: int, default: bool = False) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "globalDefault": default}


def resource_flavor(name: str, labels: dict | None = None, taints=None, tolerations=None) -> dict:
    spec = {}
    if labels:
        spec["nodeLabels"] = labels
    if taints:
        spec["nodeTaints"] = taints
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cluster_queue(name: str, flavors: dict[str, dict], cohort: str | None = None, covered=None,
                  reserved: dict | None = None, borrowing: dict | None = None, lending: dict | None = None,
                  namespace_selector: dict | None = None) -> dict:
    """`flavors`: flavor -> {resource: nominal quota}; borrowing/lending: flavor -> {resource: limit}."""
    resources = covered or sorted({r for quotas in flavors.values() for r in quotas})
    entries = []
    for flavor, quotas in flavors.items():
        rs = []
        for r in resources:
            entry = {"name": r, "nominalQuota": quotas.get(r, 0)}
            if borrowing and r in borrowing.get(flavor, {}):
                entry["borrowingLimit"] = borrowing[flavor][r]
            if lending and r in lending.get(flavor, {}):
                entry["lendingLimit"] = lending[flavor][r]
            rs.append(entry)
        entries.append({"name": flavor, "resources": rs})
    spec = {"namespaceSelector": namespace_selector if namespace_selector is not None else {},
            "resourceGroups": [{"coveredResources": resources, "flavors": entries}]}
    if cohort:
        spec["cohort"] = cohort
    obj = {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}
    if reserved:
        obj["status"] = {"flavorsReservation": [
            {"name": f, "resources": [{"name": r, "total": v} for r, v in rs.items()]} for f, rs in reserved.items()]}
    return obj


def local_queue(name: str, cluster_queue_name: str, namespace: str = "ml") -> dict:
    return {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue_name}}


def queued(obj: dict, queue: str) -> dict:
    obj["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = queue
    return obj


def admitted(*objects: dict):
    objs = list(objects)
    return admit(workloads_of(objs), objs)


def as_manifests(workloads: list[PodWorkload]) -> list[dict]:
    """The admitted workloads as manifests a check reads back (same keys, specs and pod counts)."""
    out = []
    for w in workloads:
        meta = {"name": w.name, "namespace": w.namespace}
        if w.kind == "Pod":
            if w.replicas:
                out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": w.spec})
        elif w.kind in ("Job", "CronJob"):
            out.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
                        "spec": {"parallelism": w.replicas, "template": {"spec": w.spec}}})
        else:
            out.append({"apiVersion": "apps/v1", "kind": w.kind, "metadata": meta,
                        "spec": {"replicas": w.replicas, "template": {"spec": w.spec}}})
    return out
