"""DevicePlugin: the standalone nvidia-device-plugin release with GPU feature discovery (and NFD)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from components._helm import release
from gpufleet.nvidia import versions


@dataclass
class DevicePluginArgs:
    namespace: str
    values: dict[str, Any]
    """Chart values (gpufleet.render.gpu_stack.device_plugin_values)."""
    chart_version: str = versions.DEVICE_PLUGIN_VERSION
    timeout_seconds: int = 600
    provider: pulumi.ProviderResource | None = None
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class DevicePlugin(pulumi.ComponentResource):
    def __init__(self, name: str, args: DevicePluginArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:DevicePlugin", name, None, opts)
        self.release = release(
            f"{name}-release", chart=versions.DEVICE_PLUGIN_CHART, version=args.chart_version,
            repo=versions.DEVICE_PLUGIN_REPO, release_name="nvidia-device-plugin", namespace=args.namespace,
            values=args.values, timeout_seconds=args.timeout_seconds,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=args.depends_on))
        self.register_outputs({"status": self.release.status})
