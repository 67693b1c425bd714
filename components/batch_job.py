"""BatchJob: a GPU Kubernetes Job."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from components._k8s import child_opts, claim_template, env_secret, from_manifest


@dataclass
class BatchJobArgs:
    manifests: list[dict[str, Any]]
    """Env Secret (without values) when some env value is secret, and the Job
    (gpufleet.render.workloads.batch_job)."""
    env_secrets: dict[str, pulumi.Input[str]] = field(default_factory=dict)
    """Env var name -> value of the workload's secret env values; made Pulumi secrets here."""
    provider: pulumi.ProviderResource | None = None
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class BatchJob(pulumi.ComponentResource):
    def __init__(self, name: str, args: BatchJobArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:BatchJob", name, None, opts)
        job = next(m for m in args.manifests if m["kind"] == "Job")
        self.env_secret = env_secret(name, args.manifests, args.env_secrets,
                                     child_opts(self, args.provider, args.depends_on))
        self.claim_template = claim_template(name, args.manifests, child_opts(self, args.provider, args.depends_on))
        deps = [*args.depends_on, *[r for r in (self.env_secret, self.claim_template) if r is not None]]
        self.job = from_manifest(f"{name}-job", job, child_opts(self, args.provider, deps))
        self.register_outputs({"name": self.job.metadata.name})
