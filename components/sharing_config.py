"""SharingConfig: the device plugin's named sharing configs (time-slicing / MPS) as one ConfigMap."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from components._k8s import child_opts, from_manifest


@dataclass
class SharingConfigArgs:
    manifest: dict[str, Any]
    """The rendered ConfigMap (gpufleet.render.gpu_stack.sharing_configmap)."""
    provider: pulumi.ProviderResource | None = None
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class SharingConfig(pulumi.ComponentResource):
    """One ConfigMap key per sharing profile; nodes pick one with `nvidia.com/device-plugin.config`."""

    def __init__(self, name: str, args: SharingConfigArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:SharingConfig", name, None, opts)
        self.config_map = from_manifest(f"{name}-configmap", args.manifest,
                                        child_opts(self, args.provider, args.depends_on))
        self.profiles = sorted(args.manifest["data"])
        self.register_outputs({"name": self.config_map.metadata.name, "profiles": self.profiles})
