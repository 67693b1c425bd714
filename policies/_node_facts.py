"""The discovered cluster as the node-facts policies see it (stack-matches-nodes, preinstalled-driver).

Nodes come from the policy config's `nodesFile` (`kubectl get nodes -o json` or a capacity.json of
`gpufleet discover`, read by the same reader as `gpufleet check`) or `kubeconfig`; without either the
checks are not made (`gpufleet plan` says so). Labels the stack itself will set (its NodePatches) count as
present. Pool membership is the config's: a pool's listed `nodes`, else the nodes its `nodeSelector` selects;
a pool with neither (a planned `count`) has no members among real nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpufleet.capacity.model import Node
from policies._capacity import CapacityUnavailable, load_capacity
from policies._common import NODE_PATCH_TYPE, dig, each_known

PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"

#: Policy config of every policy that checks the stack against node facts.
NODE_FACTS_PROPERTIES: dict = {
    "nodesFile": {"type": "string", "description": "kubectl get nodes -o json output or a gpufleet capacity.json "
                  "(relative to the project directory); `gpufleet plan --nodes FILE` sets it."},
    "kubeconfig": {"type": "string", "description": "Read the nodes from this cluster."},
    "context": {"type": "string", "description": "kubeconfig context."},
}


@dataclass
class NodeView:
    """One real node: what it carries now, and the labels the stack's NodePatches add."""

    node: Node
    planned: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def labels(self) -> dict[str, str]:
        return {**self.node.labels, **self.planned}

    def __getattr__(self, name: str):  # allocatable, container_runtime, kubelet_version, os_image, gpus, ...
        if name == "node":
            raise AttributeError(name)
        return getattr(self.node, name)


def has_node_source(config: dict) -> bool:
    return bool(config.get("nodesFile") or config.get("kubeconfig"))


def stack_for_nodes(args):
    """(policy config, stack ref, stack config) of a node-facts policy's run, or None when there is nothing to
    check: no node source configured, no resources, or no readable stack."""
    from policies._common import config_of, load_stack_config, stack_ref

    config = config_of(args)
    if not has_node_source(config) or not args.resources:
        return None
    ref = stack_ref(config, args.resources[0].urn)
    cfg = load_stack_config(ref)
    return None if cfg is None else (config, ref, cfg)


def load_nodes(config: dict, ref) -> tuple[list[Node], bool]:
    """The real nodes named by the policy config, and whether their labels are the cluster's (False for a
    capacity.json that `gpufleet discover --nvml` wrote from one machine's GPUs: no Kubernetes labels).
    Raises CapacityUnavailable when they cannot be read."""
    source = {k: config[k] for k in ("nodesFile", "kubeconfig", "context") if config.get(k)}
    capacity = load_capacity(source, None, ref)
    return capacity.nodes, capacity.source != "nvml"


def planned_labels(resources) -> dict[str, dict[str, str]]:
    """node name -> labels the stack's NodePatches set on it."""
    out: dict[str, dict[str, str]] = {}

    def take(r) -> None:
        name = dig(r.props, "metadata", "name")
        if isinstance(name, str):
            labels = dig(r.props, "metadata", "labels") or {}
            out.setdefault(name, {}).update({str(k): str(v) for k, v in labels.items()})

    each_known([r for r in resources if r.resource_type == NODE_PATCH_TYPE], take)  # unknown in preview: skipped
    return out


def views(nodes: list[Node], planned: dict[str, dict[str, str]]) -> list[NodeView]:
    return [NodeView(n, planned.get(n.name, {})) for n in nodes]


def pool_members(pool, nodes: list[NodeView]) -> list[NodeView] | None:
    """The pool's nodes among the real ones; None when the config does not say which nodes are its own."""
    if pool.nodes:
        return [n for n in nodes if n.name in pool.nodes]
    if pool.node_selector:
        return [n for n in nodes if all(n.node.labels.get(k) == v for k, v in pool.node_selector.items())]
    return None


def shows_gpu(node: Node) -> bool:
    """The node says it has NVIDIA GPUs: NVIDIA labels, NFD's PCI vendor labels, nvidia.com resources, NVML facts."""
    return (any(k.startswith("nvidia.com/gpu") for k in node.labels)
            or any(re.fullmatch(r"feature\.node\.kubernetes\.io/pci-(?:\d{4}_)?10de\.present", k) for k in node.labels)
            or any(k.startswith("nvidia.com/") for k in node.allocatable)
            or bool(node.gpus and node.gpus.gpus))


def gpu_nodes(cfg, nodes: list[NodeView]) -> list[tuple[NodeView, object | None]]:
    """(node, its pool) for the nodes the GPU stack must serve: the pools' members, else the nodes that show GPUs."""
    out: dict[str, tuple[NodeView, object | None]] = {}
    for pool in cfg.node_pools:
        for n in pool_members(pool, nodes) or ():
            out.setdefault(n.name, (n, pool))
    if not out:
        out = {n.name: (n, None) for n in nodes if shows_gpu(n.node)}
    return list(out.values())


# ---- GPU products ------------------------------------------------------------------------------------

def observed_product(node: Node) -> str | None:
    """GFD's nvidia.com/gpu.product on the node, else the label GFD would write from NVML's name (spaces
    become dashes, as gpufleet.capacity.nvml writes it)."""
    if node.labels.get(PRODUCT_LABEL):
        return node.labels[PRODUCT_LABEL]
    if node.gpus and node.gpus.gpus:
        return node.gpus.gpus[0].product.strip().replace(" ", "-")
    return None


def base_product(label: str) -> str:
    """The product without the suffixes GFD adds: `-SHARED` (sharing without renameByDefault) and
    `-MIG-<profile>` (MIG strategy single)."""
    return re.sub(r"-MIG-.*$", "", label.removesuffix("-SHARED"))


def product_key(label: str) -> str:
    """One spelling per GPU: GFD's label without its suffixes, vendor prefixes (`NVIDIA-`, `Tesla-`) or case,
    since NVML names some parts with the prefix on newer drivers (`NVIDIA A100-PCIE-40GB`) and without on older."""
    return base_product(label).lower().removeprefix("nvidia-").removeprefix("tesla-")


def planned_product(cfg, pool, base: str) -> str:
    """The nvidia.com/gpu.product GFD writes on a pool member once the stack applies (as
    gpufleet.capacity.stack labels planned nodes)."""
    label = base
    mig = cfg.mig_profiles_of_pool(pool)
    if mig and cfg.device_plugin.mig_strategy == "single":
        label += "-MIG-" + next(iter(mig))
    sharing = cfg.sharing_of_pool(pool)
    if sharing is not None and not sharing.rename_by_default:
        label += "-SHARED"
    return label


def runs_gfd(cfg) -> bool:
    """The stack deploys GPU feature discovery (the operator always does; standalone with devicePlugin.gfd)."""
    return cfg.mode == "operator" or (cfg.mode == "standalone" and not cfg.uses_dra() and cfg.device_plugin.gfd)


def names(nodes, limit: int = 4) -> str:
    listed = sorted(n.name if hasattr(n, "name") else str(n) for n in nodes)
    more = f" and {len(listed) - limit} more" if len(listed) > limit else ""
    return ", ".join(listed[:limit]) + more


__all__ = ["CapacityUnavailable", "NODE_FACTS_PROPERTIES", "NodeView", "PRODUCT_LABEL", "base_product",
           "gpu_nodes", "has_node_source", "load_nodes", "names", "observed_product", "planned_labels",
           "planned_product", "pool_members", "product_key", "runs_gfd", "shows_gpu", "views"]
