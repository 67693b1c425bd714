"""NodePoolLabels: select each node's sharing profile and MIG geometry with server-side patches.

A NodePatch manages only the fields it sets (server-side apply), so the node's other labels stay.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s


@dataclass
class NodePoolLabelsArgs:
    labels_by_node: dict[str, dict[str, str]]
    """node name -> labels to set (gpufleet.render.gpu_stack.node_labels for one pool)."""
    provider: pulumi.ProviderResource | None = None
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class NodePoolLabels(pulumi.ComponentResource):
    def __init__(self, name: str, args: NodePoolLabelsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:NodePoolLabels", name, None, opts)
        self.patches = [
            k8s.core.v1.NodePatch(
                f"{name}-{node}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=node, labels=labels),
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=args.depends_on),
            )
            for node, labels in sorted(args.labels_by_node.items())
        ]
        self.register_outputs({"nodes": sorted(args.labels_by_node)})
