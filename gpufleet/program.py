"""The Pulumi program behind `__main__.py`: read the stack's `gpufleet:` config and declare a GpuStack.

The same function runs under the real engine (`pulumi up`) and under gpufleet's offline mock engine
(`gpufleet plan`), so what plan shows is what up creates.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from gpufleet.config.aks import AksConfig
from gpufleet.config.loading import NAMESPACE, parse_sections
from gpufleet.config.stack import StackConfig
from gpufleet.errors import ConfigError


def read_config() -> StackConfig:
    """The stack's `gpufleet:` config, validated; a bad config stops the program with every problem listed."""
    sections: dict[str, Any] = {}
    secrets: set[str] = set()
    for key, raw in sorted(runtime_config.CONFIG.get().items()):
        ns, _, short = key.partition(":")
        if ns != NAMESPACE:
            continue
        if runtime_config.is_config_secret(key):
            secrets.add(short)
            continue
        sections[short] = _decode(raw)
    try:
        return parse_sections(sections, f"Pulumi.{pulumi.get_stack()}.yaml", secrets)
    except ConfigError as e:
        raise pulumi.RunError(str(e)) from None


def _decode(raw: Any) -> Any:
    if isinstance(raw, str) and raw[:1] in ("{", "["):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def build(cfg: StackConfig, name: str | None = None):
    """Declare the stack's resources and its outputs; returns the root component."""
    from components.gpu_stack import GpuStack, GpuStackArgs

    config = pulumi.Config(NAMESPACE)
    name = name or pulumi.get_stack()
    provider = _aks_provider(cfg, cfg.cluster.aks, name) if cfg.cluster.aks is not None else None
    stack = GpuStack(name, GpuStackArgs(cfg, secret=config.require_secret, provider=provider))
    pulumi.export("endpoints", stack.endpoints)
    return stack


def _aks_provider(cfg: StackConfig, aks: AksConfig, name: str):
    """Create the AKS cluster and its GPU pools; return the Kubernetes provider fed by its kubeconfig."""
    from components.aks_cluster import AksCluster, AksClusterArgs
    from gpufleet.render.aks import gpu_agent_pools, system_agent_pool

    cluster = AksCluster(f"{name}-aks", AksClusterArgs(aks, aks.cluster_name or f"{name}-aks",
                                                       system_agent_pool(aks), gpu_agent_pools(cfg)))
    pulumi.export("aksClusterName", cluster.cluster.name)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    return cluster.provider


def run() -> None:
    build(read_config())
