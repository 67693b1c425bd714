"""DraDriver: NVIDIA's DRA driver for GPUs (dra-driver-nvidia-gpu chart), the standalone DRA stack."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from components._helm import release
from gpufleet.nvidia import versions


@dataclass
class DraDriverArgs:
    namespace: str
    values: dict[str, Any]
    """Chart values (gpufleet.render.gpu_stack.dra_driver_values)."""
    chart_version: str = versions.DRA_DRIVER_VERSION
    timeout_seconds: int = 600
    provider: pulumi.ProviderResource | None = None
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class DraDriver(pulumi.ComponentResource):
    def __init__(self, name: str, args: DraDriverArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:DraDriver", name, None, opts)
        self.release = release(
            f"{name}-release", chart=versions.DRA_DRIVER_CHART, version=args.chart_version,
            repo=versions.DRA_DRIVER_REPO, release_name="dra-driver-nvidia-gpu", namespace=args.namespace,
            values=args.values, timeout_seconds=args.timeout_seconds,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=args.depends_on))
        self.register_outputs({"status": self.release.status})
