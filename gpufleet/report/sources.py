"""What a report is drawn from: a stack's planned node pools and workloads, or nodes, pods and manifests."""

from __future__ import annotations

from collections.abc import Sequence

from gpufleet.capacity.model import BoundPod, Node
from gpufleet.capacity.stack import capacity_from_stack, node_names, planned_dra_objects
from gpufleet.config.stack import StackConfig
from gpufleet.manifests.workloads import flatten
from gpufleet.render.claims import named_claims
from gpufleet.render.workloads import gpu_quotas, workload_objects
from gpufleet.report.devices import dra_gpus
from gpufleet.report.model import FleetReport, build_report
from gpufleet.scheduling import check_workloads, workloads_of


def report_of(title: str, nodes: Sequence[Node], running: Sequence[BoundPod], manifests: list[dict],
              pool_of: dict[str, str] | None = None, *, extended_resource_toleration: bool = False) -> FleetReport:
    """Run the `gpufleet check` engine and draw what it placed."""
    from gpufleet.scheduling.headroom import headroom_table

    result = check_workloads(nodes, running, manifests, extended_resource_toleration=extended_resource_toleration)
    report = build_report(title, nodes, running, workloads_of(manifests), result, pool_of,
                          extended_resource_toleration=extended_resource_toleration,
                          dra_gpus=dra_gpus(nodes, manifests), dra_claimed=_claimed(manifests))
    report.headroom = [(shape.label, shape.tolerates, h.instances, *h.instances_range)
                       for shape, h in headroom_table(nodes, running, manifests,
                                                      extended_resource_toleration=extended_resource_toleration)]
    return report


def _claimed(manifests: list[dict]) -> frozenset[str]:
    """Device labels (driver/pool/name) that existing ResourceClaims have allocated."""
    return frozenset(f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}" for o in flatten(manifests)
                     if o.get("kind") == "ResourceClaim"
                     for r in ((((o.get("status") or {}).get("allocation") or {}).get("devices") or {})
                               .get("results") or ()))


def stack_inputs(cfg: StackConfig) -> tuple[list[Node], list[dict]]:
    """A stack's node pools as planned, and what the check places on them: its workloads as the Kubernetes
    objects it deploys. With DRA, what the driver will publish (DeviceClasses, planned ResourceSlices) and the
    stack's shared claims go in too: the check allocates the claims on them, as the policy pack's capacity
    check does."""
    manifests = [*gpu_quotas(cfg), *planned_dra_objects(cfg), *named_claims(cfg),
                 *(obj for w in cfg.workloads for obj in workload_objects(cfg, w))]
    return capacity_from_stack(cfg), manifests


def stack_report(name: str, cfg: StackConfig) -> FleetReport:
    """A stack's workloads on its node pools as planned (`stack_inputs`)."""
    nodes, manifests = stack_inputs(cfg)
    pool_of = {node: pool.name for pool in cfg.node_pools for node in node_names(pool)}
    return report_of(f"stack {name}", nodes, [], manifests, pool_of)
