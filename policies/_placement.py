"""Where the GPU stack's own pods run: the node labels each component selects GPU nodes by, as facts of the
pinned charts, and whether the real nodes (with the labels the stack plans) carry them.

Sources: gpufleet.nvidia.stack_placement (the facts), shared with `gpufleet check --nodes`.
"""

from __future__ import annotations

from typing import Any

# The chart facts, imported from here by the policies.
from gpufleet.nvidia.stack_placement import (  # noqa: F401
    DEVICE_PLUGIN_AFFINITY,
    DRA_KUBELET_PLUGIN_AFFINITY,
    GPU_PRESENT,
    NFD_3D_CONTROLLER,
    NFD_TEGRA,
    NFD_VENDOR,
    NFD_VGA,
    OPERATOR_GPU_NODE_LABELS,
    Term,
    as_terms,
)
from policies._common import dig


def _terms_of(affinity: Any) -> list[list[dict]] | None:
    """The required nodeSelectorTerms of an affinity value (None when it sets none)."""
    terms = dig(affinity, "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    if not isinstance(terms, (list, tuple)) or not terms:
        return None
    return [list(dig(t, "matchExpressions") or []) for t in terms]


def _matches_expression(labels: dict[str, str], e: dict) -> bool:
    key, op, values = e.get("key"), e.get("operator"), [str(v) for v in e.get("values") or []]
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return True  # Gt / Lt: not decided here


def selects(labels: dict[str, str], node_selector: dict | None, terms: list[list[dict]]) -> bool:
    """A DaemonSet pod with this nodeSelector and these required terms may run on a node with these labels."""
    if any(labels.get(k) != str(v) for k, v in (node_selector or {}).items()):
        return False
    return any(all(_matches_expression(labels, e) for e in term) for term in terms)


def describe_terms(terms: list[list[dict]]) -> str:
    def expr(e: dict) -> str:
        values = e.get("values") or []
        if e.get("operator") == "In" and len(values) == 1:
            return f"{e.get('key')}={values[0]}"
        return f"{e.get('key')} {e.get('operator')} {values}" if values else f"{e.get('key')} {e.get('operator')}"
    return ", ".join(" and ".join(expr(e) for e in term) for term in terms)


def class_qualified_nfd(labels: dict[str, str]) -> list[str]:
    """NFD PCI labels with the device class in the name (NFD's default deviceLabelFields)."""
    return sorted(k for k in labels if k.startswith("feature.node.kubernetes.io/pci-0") and k.endswith("_10de.present"))


def component(cfg, release_values: dict[str, dict]) -> tuple[str, list[list[dict]], dict, bool] | None:
    """(what fails to run, required terms, nodeSelector, whether the stack's own NFD will label the nodes) for
    the part of the GPU stack that must run on every GPU node; None where gpufleet deploys no GPU stack.

    `release_values`: chart name -> the values the stack gives that release."""
    if cfg.mode == "operator":
        return ("the gpu-operator deploys no driver, toolkit, device plugin or DRA driver (it finds GPU nodes by "
                "NFD's PCI labels, and gpufleet:operator.nfd is false)", as_terms(OPERATOR_GPU_NODE_LABELS), {},
                cfg.operator.nfd)
    if cfg.mode != "standalone":
        return None
    if cfg.uses_dra():
        values = release_values.get("dra-driver-nvidia-gpu") or {}
        plugin = dig(values, "kubeletPlugin") or {}
        terms = _terms_of(plugin.get("affinity")) or as_terms(DRA_KUBELET_PLUGIN_AFFINITY)
        return ("the DRA driver's kubelet plugin (dra-driver-nvidia-gpu kubeletPlugin.affinity) does not run", terms,
                dict(plugin.get("nodeSelector") or {}), False)
    values = release_values.get("nvidia-device-plugin") or {}
    terms = _terms_of(values.get("affinity")) or as_terms(DEVICE_PLUGIN_AFFINITY)
    return ("the device plugin (nvidia-device-plugin chart affinity) does not run", terms,
            dict(values.get("nodeSelector") or {}), cfg.device_plugin.nfd)


def nfd_planned(labels: dict[str, str]) -> dict[str, str]:
    """The label the stack's own NFD writes on a node with an NVIDIA PCI device (deviceLabelFields: [vendor])."""
    return {**labels, NFD_VENDOR: "true"}
