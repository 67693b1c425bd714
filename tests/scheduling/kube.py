"""Builders for Kubernetes objects in kubectl JSON shape (tests only)."""

BASE = {"cpu": "16", "memory": "64Gi", "ephemeral-storage": "100Gi", "pods": "110"}


def node(name, gpus=0, *, resource="nvidia.com/gpu", labels=None, taints=None, unschedulable=False, **alloc):
    allocatable = {**BASE, **{k.replace("_", "-"): v for k, v in alloc.items()}}
    if gpus:
        allocatable[resource] = str(gpus)
    spec = {}
    if taints:
        spec["taints"] = [dict(zip(("key", "value", "effect"), t, strict=False)) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec, "status": {"allocatable": allocatable, "capacity": dict(allocatable)}}


def container(limits=None, requests=None, **extra):
    resources = {}
    if limits is not None:
        resources["limits"] = limits
    if requests is not None:
        resources["requests"] = requests
    return {"name": "main", "image": "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04", "resources": resources, **extra}


def gpu_container(n, resource="nvidia.com/gpu"):
    return container(limits={resource: n})


def pod_spec(*containers, **extra):
    return {"containers": list(containers) or [gpu_container(1)], **extra}


def pod(name, spec=None, namespace=None, node_name=None, phase=None, annotations=None):
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if annotations:
        meta["annotations"] = annotations
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": dict(spec or pod_spec())}
    if node_name:
        obj["spec"]["nodeName"] = node_name
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def deployment(name, replicas, spec=None, kind="Deployment", annotations=None, namespace=None):
    template = {"metadata": {"annotations": annotations or {}}, "spec": spec or pod_spec()}
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta,
            "spec": {"replicas": replicas, "template": template}}


def job(name, parallelism, spec=None, completions=None):
    s = {"parallelism": parallelism, "template": {"spec": spec or pod_spec()}}
    if completions is not None:
        s["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": s}
