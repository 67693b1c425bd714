"""InferenceService: a GPU Deployment behind a Service (LoadBalancer by default)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from components._k8s import child_opts, claim_template, env_secret, from_manifest


@dataclass
class InferenceServiceArgs:
    manifests: list[dict[str, Any]]
    """Env Secret (without values) when some env value is secret, Deployment and optional Service
    (gpufleet.render.workloads.inference_service)."""
    env_secrets: dict[str, pulumi.Input[str]] = field(default_factory=dict)
    """Env var name -> value of the workload's secret env values; made Pulumi secrets here."""
    provider: pulumi.ProviderResource | None = None
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class InferenceService(pulumi.ComponentResource):
    def __init__(self, name: str, args: InferenceServiceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:InferenceService", name, None, opts)
        by_kind = {m["kind"]: m for m in args.manifests}
        o = child_opts(self, args.provider, args.depends_on)
        self.env_secret = env_secret(name, args.manifests, args.env_secrets, o)
        self.claim_template = claim_template(name, args.manifests, o)
        self.deployment = from_manifest(f"{name}-deployment", by_kind["Deployment"], child_opts(
            self, args.provider, [*args.depends_on, *_present(self.env_secret, self.claim_template)]))
        self.service = from_manifest(f"{name}-service", by_kind["Service"], o) if "Service" in by_kind else None
        self.endpoint = (self.service.status.apply(_ingress_address) if self.service is not None
                         else pulumi.Output.from_input(None))
        self.register_outputs({"endpoint": self.endpoint})


def _present(*resources):
    return [r for r in resources if r is not None]


def _ingress_address(status) -> str | None:
    """The LoadBalancer's IP or hostname once the cloud has assigned one."""
    lb = getattr(status, "load_balancer", None) if status is not None else None
    ingress = getattr(lb, "ingress", None) if lb is not None else None
    if not ingress:
        return None
    return ingress[0].ip or ingress[0].hostname
