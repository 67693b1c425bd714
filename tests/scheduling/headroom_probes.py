"""Probe pods for the headroom fixtures (scripts/record_headroom_oracle.py) and their tests: the shapes GPU
teams ask "how many more?" about."""

from __future__ import annotations

from gpufleet.capacity.requests import pod_requests
from gpufleet.scheduling.engine import _nodes, _pods
from gpufleet.scheduling.headroom import PROBE_NAME, upper_bound

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
IMAGE = "vllm/vllm-openai:v0.11.0"


def _pod(limits: dict, cpu: str, memory: str, *, tolerate: bool = True, selector: dict | None = None) -> dict:
    spec = {"containers": [{"name": "server", "image": IMAGE,
                            "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": limits}}]}
    if tolerate:
        spec["tolerations"] = [GPU_TOLERATION]
    if selector:
        spec["nodeSelector"] = selector
    return {"metadata": {"labels": {"app": "probe"}}, "spec": spec}


PROBES = {
    "gpu1": _pod({"nvidia.com/gpu": 1}, "4", "16Gi"),
    "gpu1-untolerated": _pod({"nvidia.com/gpu": 1}, "4", "16Gi", tolerate=False),
    "gpu4-h100": _pod({"nvidia.com/gpu": 4}, "16", "64Gi",
                      selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
    "gpu8": _pod({"nvidia.com/gpu": 8}, "32", "128Gi"),
    "mig-1g": _pod({"nvidia.com/mig-1g.10gb": 1}, "2", "8Gi"),
    "cpu": _pod({}, "2", "4Gi", tolerate=False),
}


def probe_pod(name: str) -> dict:
    template = PROBES[name]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": "headroom",
                                                            **template["metadata"]}, "spec": template["spec"]}


def probe_deployment(name: str, nodes: list[dict], pods: list[dict]) -> tuple[dict, str]:
    """The probe as the Deployment the real scheduler is given: more replicas than the free resources hold."""
    template = PROBES[name]
    replicas = upper_bound(_nodes(nodes), _pods(pods), pod_requests(template["spec"]))
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": PROBE_NAME, "namespace": "headroom"},
                  "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "probe"}},
                           "template": template}}
    return deployment, f"Deployment/headroom/{PROBE_NAME}"
