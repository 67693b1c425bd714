"""Small fleets, node groups and workloads for the autoscaler tests, written as a user writes them."""

from __future__ import annotations

import json
from pathlib import Path

import yaml


def node(name: str, gpus: int = 4, cpu: str = "16", memory: str = "64Gi", labels: dict | None = None,
         taints: list | None = None) -> dict:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints or []}, "status": {"allocatable": alloc, "capacity": dict(alloc)}}


def template(gpus: int = 8, cpu: str = "32", memory: str = "256Gi", labels: dict | None = None,
             taints: list | None = None) -> dict:
    t = node("x", gpus, cpu, memory, labels, taints)
    del t["metadata"]["name"], t["apiVersion"], t["kind"]
    return t


def deployment(name: str, replicas: int, gpus: int = 1, cpu: str = "2", memory: str = "8Gi", ns: str = "ml",
               **spec) -> dict:
    limits = {"nvidia.com/gpu": gpus} if gpus else {}
    pod = {"containers": [{"name": "c", "image": "img", "resources": {"requests": {"cpu": cpu, "memory": memory},
                                                                     "limits": limits}}], **spec}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod}}}


def write(tmp: Path, nodes: list[dict], groups: list[dict] | str, workloads: list[dict]) -> tuple[Path, Path, Path]:
    paths = tmp / "nodes.json", tmp / "groups.yaml", tmp / "app.yaml"
    paths[0].write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    paths[1].write_text(groups if isinstance(groups, str) else yaml.safe_dump(groups))
    paths[2].write_text(yaml.safe_dump_all(workloads))
    return paths
