"""InferenceService: a GPU Deployment behind a Service (LoadBalancer by default)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from components._k8s import child_opts, from_manifest


@dataclass
class InferenceServiceArgs:
    manifests: list[dict[str, Any]]
    """Deployment and optional Service (gpufleet.render.workloads.inference_service)."""
    provider: pulumi.ProviderResource | None = None
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class InferenceService(pulumi.ComponentResource):
    def __init__(self, name: str, args: InferenceServiceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:InferenceService", name, None, opts)
        by_kind = {m["kind"]: m for m in args.manifests}
        o = child_opts(self, args.provider, args.depends_on)
        self.deployment = from_manifest(f"{name}-deployment", by_kind["Deployment"], o)
        self.service = from_manifest(f"{name}-service", by_kind["Service"], o) if "Service" in by_kind else None
        self.endpoint = (self.service.status.apply(_ingress_address) if self.service is not None
                         else pulumi.Output.from_input(None))
        self.register_outputs({"endpoint": self.endpoint})


def _ingress_address(status) -> str | None:
    """The LoadBalancer's IP or hostname once the cloud has assigned one."""
    lb = getattr(status, "load_balancer", None) if status is not None else None
    ingress = getattr(lb, "ingress", None) if lb is not None else None
    if not ingress:
        return None
    return ingress[0].ip or ingress[0].hostname
