"""What a report is drawn from: a stack's planned node pools and workloads, or nodes, pods and manifests."""

from __future__ import annotations

from typing import Sequence

from gpufleet.capacity.model import BoundPod, Node
from gpufleet.capacity.stack import capacity_from_stack, node_names, planned_dra_objects
from gpufleet.config.stack import StackConfig
from gpufleet.render.claims import named_claims
from gpufleet.render.workloads import gpu_quotas, workload_objects
from gpufleet.report.model import FleetReport, build_report
from gpufleet.scheduling import check_workloads, workloads_of


def report_of(title: str, nodes: Sequence[Node], running: Sequence[BoundPod], manifests: list[dict],
              pool_of: dict[str, str] | None = None, *, extended_resource_toleration: bool = False) -> FleetReport:
    """Run the `gpufleet check` engine and draw what it placed."""
    from gpufleet.scheduling.headroom import headroom_table

    result = check_workloads(nodes, running, manifests, extended_resource_toleration=extended_resource_toleration)
    report = build_report(title, nodes, running, workloads_of(manifests), result, pool_of,
                          extended_resource_toleration=extended_resource_toleration)
    report.headroom = [(shape.label, shape.tolerates, h.instances, *h.instances_range)
                       for shape, h in headroom_table(nodes, running, manifests,
                                                      extended_resource_toleration=extended_resource_toleration)]
    return report


def stack_report(name: str, cfg: StackConfig) -> FleetReport:
    """A stack's workloads (as the Kubernetes objects it deploys) on its node pools as planned."""
    # With DRA, what the driver will publish (DeviceClasses, planned ResourceSlices) and the stack's shared
    # claims go in too: the check allocates the claims on them, as the policy pack's capacity check does.
    manifests = [*gpu_quotas(cfg), *planned_dra_objects(cfg), *named_claims(cfg),
                 *(obj for w in cfg.workloads for obj in workload_objects(cfg, w))]
    pool_of = {node: pool.name for pool in cfg.node_pools for node in node_names(pool)}
    return report_of(f"stack {name}", capacity_from_stack(cfg), [], manifests, pool_of)
