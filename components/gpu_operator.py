"""GpuOperator: the NVIDIA GPU operator release (driver, toolkit, device plugin, GFD, MIG manager, DCGM)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from components._helm import release
from gpufleet.nvidia import versions


@dataclass
class GpuOperatorArgs:
    namespace: str
    values: dict[str, Any]
    """Chart values (gpufleet.render.gpu_stack.operator_values)."""
    chart_version: str = versions.GPU_OPERATOR_VERSION
    timeout_seconds: int = 900
    provider: pulumi.ProviderResource | None = None
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class GpuOperator(pulumi.ComponentResource):
    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:GpuOperator", name, None, opts)
        self.release = release(
            f"{name}-release", chart=versions.GPU_OPERATOR_CHART, version=args.chart_version,
            repo=versions.GPU_OPERATOR_REPO, release_name="gpu-operator", namespace=args.namespace,
            values=args.values, timeout_seconds=args.timeout_seconds,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=args.depends_on))
        self.register_outputs({"status": self.release.status})
