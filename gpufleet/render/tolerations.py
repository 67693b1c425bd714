"""Tolerations of the GPU stack's own pods: each chart's defaults plus every taint of the stack's GPU node pools.

A pool tainted `dedicated=gpu:NoSchedule` keeps out every pod that does not tolerate the taint, the GPU
stack's DaemonSets included: the charts tolerate only `nvidia.com/gpu` (and a few control-plane keys), so
without this no driver, toolkit, device plugin, NFD worker or DRA kubelet plugin runs there and the nodes
advertise no GPU. gpufleet knows every pool taint, so it adds them to the tolerations of what it renders.

A chart's list value replaces the default list (Helm does not merge lists), so each rendered list starts
with the chart's own defaults, copied here from the pinned charts' values.yaml (a test compares them).
"""

from __future__ import annotations

from typing import Any

from gpufleet.config.node_pools import Taint
from gpufleet.config.stack import StackConfig
from gpufleet.nvidia import stack_placement as placement
from gpufleet.taints import tolerates_taint

#: Only these effects keep a pod off a node (PreferNoSchedule only lowers the node's score).
FILTERING_EFFECTS = ("NoSchedule", "NoExecute")

_GPU = placement.OPERATOR_DAEMONSET_TOLERATIONS[0]
#: The operator's operand DaemonSets, the device plugin chart's DaemonSets and the DRA kubelet plugin: the
#: charts' defaults, kept with where those pods go (gpufleet.nvidia.stack_placement).
OPERATOR_DAEMONSETS = placement.OPERATOR_DAEMONSET_TOLERATIONS
DEVICE_PLUGIN = placement.DEVICE_PLUGIN_TOLERATIONS
DRA_KUBELET_PLUGIN = placement.DRA_KUBELET_PLUGIN_TOLERATIONS
#: gpu-operator v26.7.0 values.yaml `node-feature-discovery.worker.tolerations` (the NFD subchart's worker).
OPERATOR_NFD_WORKER = (
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    _GPU,
)
#: nvidia-device-plugin 0.20.0 values.yaml `nfd.worker.tolerations` (the NFD subchart's worker).
DEVICE_PLUGIN_NFD_WORKER = (
    {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
)
#: gpufleet's standalone mig-manager (gpufleet.render.mig_manager), as the operator's mig-manager operand.
MIG_MANAGER = (_GPU,)


def tolerates(toleration: dict[str, Any], taint: Taint) -> bool:
    """Whether one toleration tolerates a pool's taint (the API's ToleratesTaint, gpufleet.taints)."""
    return tolerates_taint(toleration, taint.key, taint.value, taint.effect)


def with_pool_taints(defaults: tuple, cfg: StackConfig) -> list[dict[str, Any]] | None:
    """The chart's default tolerations plus one for each pool taint that keeps pods off and that they miss
    (exactly that taint, as workloads aimed at the pool get it); None when they miss none (then the value
    stays unset and the chart's default applies unchanged)."""
    out = [dict(t) for t in defaults]
    for taint in (t for pool in cfg.node_pools for t in pool.taints if t.effect in FILTERING_EFFECTS):
        tol = {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
        if not any(tolerates(d, taint) for d in defaults) and tol not in out:
            out.append(tol)
    return out if len(out) > len(defaults) else None
