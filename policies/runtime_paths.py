"""runtime-paths: the container toolkit writes to the containerd that the GPU nodes really run.

The distribution is read from the nodes (`status.nodeInfo.kubeletVersion` says `+k3s` / `+rke2` / `+k0s`;
MicroK8s nodes carry `microk8s.io/*` or `node.kubernetes.io/microk8s-*` labels), taken from a saved
node list or a kubeconfig named in the policy config; without one, the stack's declared
`cluster.runtime.preset` is what the gpu-operator release's `toolkit.env` must match.
"""

from __future__ import annotations

import json
from pathlib import Path

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy

from gpufleet.nvidia.runtime_presets import (
    DEFAULT_CONTAINERD_CONFIG,
    DEFAULT_CONTAINERD_SOCKET,
    PRESETS,
    distribution_of,
)
from policies._common import PACK_DIR, RELEASE_TYPE, STACK_CONFIG_PROPERTIES, config_of, dig, stack_config_for

#: Config paths a distribution may legitimately use beyond its preset (RKE2's own config and templates).
EXTRA_CONFIG_PREFIXES = {"rke2": ("/var/lib/rancher/rke2/",), "containerd": (DEFAULT_CONTAINERD_CONFIG,)}


def distro_of_node(node: dict) -> str | None:
    """k3s, rke2, k0s, microk8s, containerd (vanilla), or None (another runtime) for a Node object or capacity
    entry (gpufleet.nvidia.runtime_presets.distribution_of)."""
    info = dig(node, "status", "nodeInfo") or {}
    kubelet = info.get("kubeletVersion") or node.get("kubeletVersion") or ""
    runtime = info.get("containerRuntimeVersion") or node.get("containerRuntime") or ""
    labels = dig(node, "metadata", "labels") or node.get("labels") or {}
    return distribution_of(kubelet, runtime, labels)


def _is_gpu_node(node: dict) -> bool:
    labels = dig(node, "metadata", "labels") or node.get("labels") or {}
    alloc = dig(node, "status", "allocatable") or node.get("allocatable") or {}
    return labels.get("nvidia.com/gpu.present") == "true" or any(k.startswith("nvidia.com/") for k in alloc)


def discovered_nodes(config: dict) -> list[dict] | None:
    """Nodes from `nodesFile` (kubectl get nodes -o json, or a gpufleet capacity file) or `kubeconfig`."""
    if config.get("nodesFile"):
        path = Path(config["nodesFile"])
        path = path if path.is_absolute() else (PACK_DIR / ".." / path)
        doc = json.loads(path.read_text())
        return doc.get("items") or doc.get("nodes") or []
    if config.get("kubeconfig"):
        from kubernetes import client
        from kubernetes import config as kconfig

        kconfig.load_kube_config(config_file=config["kubeconfig"], context=config.get("context"))
        return [client.ApiClient().sanitize_for_serialization(n) for n in client.CoreV1Api().list_node().items]
    return None


def _discovered_distro(args) -> tuple[str | None, str]:
    config = config_of(args)
    if config.get("distro"):
        return config["distro"], "policy config distro"
    nodes = discovered_nodes(config)
    if nodes:
        gpu_nodes = [n for n in nodes if _is_gpu_node(n)] or nodes
        found = {d for n in gpu_nodes if (d := distro_of_node(n)) is not None}
        if len(found) == 1:
            return found.pop(), "the nodes' nodeInfo"
        if len(found) > 1:
            return ",".join(sorted(found)), "the nodes' nodeInfo"
        return None, ""
    cfg = stack_config_for(args)
    if cfg is not None:
        return cfg.cluster.runtime.preset, "the stack's cluster.runtime.preset"
    return None, ""


def problems(distro: str, env: dict[str, str]) -> list[str]:
    preset = PRESETS[distro]
    out = []
    socket = env.get("CONTAINERD_SOCKET") or env.get("RUNTIME_SOCKET") or DEFAULT_CONTAINERD_SOCKET
    want_socket = preset.socket or DEFAULT_CONTAINERD_SOCKET
    if socket != want_socket:
        out.append(f"CONTAINERD_SOCKET is {socket}, {distro} serves containerd at {want_socket}")
    config = env.get("CONTAINERD_CONFIG") or env.get("RUNTIME_CONFIG") or DEFAULT_CONTAINERD_CONFIG
    if preset.config_path:
        if config != preset.config_path:
            out.append(f"CONTAINERD_CONFIG is {config}, {distro} keeps containerd's config at {preset.config_path}")
    elif config != DEFAULT_CONTAINERD_CONFIG and not config.startswith(EXTRA_CONFIG_PREFIXES.get(distro, ())):
        out.append(f"CONTAINERD_CONFIG is {config}, which is not a {distro} containerd config path")
    source = env.get("RUNTIME_CONFIG_SOURCE") or ""
    if source.startswith("file=") and preset.config_source and source != preset.config_source:
        out.append(f"RUNTIME_CONFIG_SOURCE is {source}, {distro} needs {preset.config_source}")
    return out


def validate(args: ResourceValidationArgs, report_violation) -> None:
    if args.resource_type != RELEASE_TYPE or not str(args.props.get("chart") or "").endswith("gpu-operator"):
        return
    values = args.props.get("values") or {}
    if dig(values, "toolkit", "enabled") is False or dig(values, "cdi", "nriPluginEnabled") is True:
        return
    distro, source = _discovered_distro(args)
    if distro is None:
        return
    name = args.props.get("name") or args.name
    if "," in distro:
        report_violation(f"Release {name}: the GPU nodes run different distributions ({distro}); expected one "
                         "(toolkit.env holds one set of containerd paths).")
        return
    env = {e.get("name"): str(e.get("value")) for e in (dig(values, "toolkit", "env") or []) if e.get("name")}
    for problem in problems(distro, env):
        report_violation(f"Release {name} toolkit.env: {problem} (distribution from {source}); expected the "
                         f"{distro} paths, e.g. cluster.runtime.preset: {distro}.")


POLICY = ResourceValidationPolicy(
    name="runtime-paths",
    description="The gpu-operator toolkit's containerd paths match the distribution the GPU nodes run.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={
        **STACK_CONFIG_PROPERTIES,
        "distro": {"type": "string", "enum": sorted(PRESETS), "description": "The nodes' distribution, "
                   "when it is known without discovery."},
        "nodesFile": {"type": "string", "description": "Saved node list (kubectl get nodes -o json, or a gpufleet "
                      "capacity file), relative to the project directory."},
        "kubeconfig": {"type": "string", "description": "Read the nodes from this cluster."},
        "context": {"type": "string", "description": "kubeconfig context."},
    }),
    validate=validate,
)
