"""Notebook: a Jupyter server on a GPU, its token a Pulumi secret stored in a Kubernetes Secret."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from components._k8s import child_opts, claim_template, env_secret, from_manifest, is_env_secret


@dataclass
class NotebookArgs:
    manifests: list[dict[str, Any]]
    """Token Secret (without value), env Secret (without values) when some env value is secret, Deployment,
    Service (gpufleet.render.workloads.notebook)."""
    token: pulumi.Input[str]
    """The notebook token; made a Pulumi secret here whatever it arrives as."""
    env_secrets: dict[str, pulumi.Input[str]] = field(default_factory=dict)
    """Env var name -> value of the workload's secret env values; made Pulumi secrets here."""
    provider: pulumi.ProviderResource | None = None
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class Notebook(pulumi.ComponentResource):
    def __init__(self, name: str, args: NotebookArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:Notebook", name, None, opts)
        by_kind = {m["kind"]: m for m in args.manifests if not is_env_secret(m, args.manifests)}
        o = child_opts(self, args.provider, args.depends_on)
        token = pulumi.Output.secret(args.token)
        self.secret = from_manifest(f"{name}-token", by_kind["Secret"], o, string_data={"token": token})
        self.env_secret = env_secret(name, args.manifests, args.env_secrets, o)
        self.claim_template = claim_template(name, args.manifests, o)
        extra = [r for r in (self.env_secret, self.claim_template) if r is not None]
        self.deployment = from_manifest(f"{name}-deployment", by_kind["Deployment"],
                                        child_opts(self, args.provider, [*args.depends_on, self.secret, *extra]))
        self.service = from_manifest(f"{name}-service", by_kind["Service"], o)
        self.token = token
        self.register_outputs({"token": token})
