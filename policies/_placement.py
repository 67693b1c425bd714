"""Where the GPU stack's own pods run: the node labels each component selects GPU nodes by, as facts of the
pinned charts, and whether the real nodes (with the labels the stack plans) carry them.

Sources:
- gpu-operator: the operator deploys its operands only on nodes it finds GPUs on, by NFD's PCI labels
  (`gpuNodeLabels` in controllers/state_manager.go); with `nfd.enabled` its own NFD writes them
  (`deviceLabelFields: [vendor]`, values.yaml of the v26.7.0 chart).
- nvidia-device-plugin 0.20.0: values.yaml `affinity` (three terms, any one suffices); its NFD subchart labels
  `pci-10de.present` (`deviceLabelFields: [vendor]`).
- dra-driver-nvidia-gpu 0.4.1: values.yaml `kubeletPlugin.affinity` (five terms) and `kubeletPlugin.nodeSelector`;
  the chart installs no NFD.
"""

from __future__ import annotations

from typing import Any

from gpufleet.nvidia.dra_prerequisites import KUBELET_PLUGIN_NODE_LABELS
from policies._common import dig

NFD_VENDOR = "feature.node.kubernetes.io/pci-10de.present"
NFD_3D_CONTROLLER = "feature.node.kubernetes.io/pci-0302_10de.present"
NFD_VGA = "feature.node.kubernetes.io/pci-0300_10de.present"
NFD_TEGRA = "feature.node.kubernetes.io/cpu-model.vendor_id"
GPU_PRESENT = "nvidia.com/gpu.present"

Term = tuple[tuple[str, str], ...]  # one nodeSelectorTerm of single-value `In` expressions
OPERATOR_GPU_NODE_LABELS: tuple[Term, ...] = (((NFD_VENDOR, "true"),), ((NFD_3D_CONTROLLER, "true"),),
                                              ((NFD_VGA, "true"),))
DEVICE_PLUGIN_AFFINITY: tuple[Term, ...] = (((NFD_VENDOR, "true"),), ((NFD_TEGRA, "NVIDIA"),),
                                            ((GPU_PRESENT, "true"),))
#: One term per label, from the facts of the pinned chart (gpufleet.nvidia.dra_prerequisites).
DRA_KUBELET_PLUGIN_AFFINITY: tuple[Term, ...] = tuple((label,) for label in KUBELET_PLUGIN_NODE_LABELS)


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


def as_terms(terms: tuple[Term, ...]) -> list[list[dict]]:
    return [[{"key": k, "operator": "In", "values": [v]} for k, v in term] for term in terms]


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
