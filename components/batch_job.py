"""BatchJob: a GPU Kubernetes Job."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from components._k8s import child_opts, from_manifest


@dataclass
class BatchJobArgs:
    manifests: list[dict[str, Any]]
    """The Job (gpufleet.render.workloads.batch_job)."""
    provider: pulumi.ProviderResource | None = None
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class BatchJob(pulumi.ComponentResource):
    def __init__(self, name: str, args: BatchJobArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:BatchJob", name, None, opts)
        (job,) = args.manifests
        self.job = from_manifest(f"{name}-job", job, child_opts(self, args.provider, args.depends_on))
        self.register_outputs({"name": self.job.metadata.name})
