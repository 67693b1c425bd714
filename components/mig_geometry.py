"""MigGeometry: named MIG geometries (mig-parted v1) in the ConfigMap mig-manager reads.

In standalone mode there is no operator to run mig-manager, so the component runs one too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from components._k8s import child_opts, from_manifest


@dataclass
class MigGeometryArgs:
    manifest: dict[str, Any]
    """The rendered ConfigMap with key config.yaml (gpufleet.render.gpu_stack.mig_configmap)."""
    mig_manager: list[dict[str, Any]] = field(default_factory=list)
    """Standalone mig-manager objects (gpufleet.render.mig_manager), or empty under the operator."""
    provider: pulumi.ProviderResource | None = None
    depends_on: list[pulumi.Resource] = field(default_factory=list)


def _child_name(name: str, manifest: dict[str, Any]) -> str:
    """One object per kind is named by its kind; mig-manager's own ConfigMap (GPU clients) by its name, since
    `{name}-configmap` is the geometry ConfigMap."""
    kind = manifest["kind"].lower()
    return f"{name}-{manifest['metadata']['name']}" if kind == "configmap" else f"{name}-{kind}"


class MigGeometry(pulumi.ComponentResource):
    def __init__(self, name: str, args: MigGeometryArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:MigGeometry", name, None, opts)
        self.config_map = from_manifest(f"{name}-configmap", args.manifest,
                                        child_opts(self, args.provider, args.depends_on))
        self.mig_manager = [
            from_manifest(_child_name(name, m), m, child_opts(self, args.provider, [self.config_map]))
            for m in args.mig_manager
        ]
        self.register_outputs({"name": self.config_map.metadata.name})
