"""What a report is drawn from: a stack's planned node pools and workloads, or nodes, pods and manifests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gpufleet.capacity.model import BoundPod, Node
from gpufleet.capacity.stack import capacity_from_stack, node_names, planned_dra_objects
from gpufleet.config.stack import StackConfig
from gpufleet.manifests.workloads import flatten
from gpufleet.render.claims import named_claims
from gpufleet.render.workloads import gpu_quotas, workload_objects
from gpufleet.report.devices import dra_gpus
from gpufleet.report.model import FleetReport, build_report
from gpufleet.scheduling import check_workloads, workloads_of

if TYPE_CHECKING:
    from gpufleet.autoscaler.nodegroups import NodeGroup
    from gpufleet.scheduling.engine import Spreading
    from gpufleet.scheduling.scaleup import ScaleUpOptions


def report_of(title: str, nodes: Sequence[Node], running: Sequence[BoundPod], manifests: list[dict],
              pool_of: dict[str, str] | None = None, *, extended_resource_toleration: bool = False,
              scale: tuple[list[NodeGroup], ScaleUpOptions] | None = None,
              default_spreading: Spreading = "direct", waiting: dict[str, int] | None = None) -> FleetReport:
    """Run the `gpufleet check` engine and draw what it placed; with `scale` (node groups and the autoscaler's
    options), as `check --node-groups` runs it, with the nodes the scale-up adds drawn apart.
    `default_spreading` and `waiting`: as check_workloads."""
    from gpufleet.scheduling.headroom import headroom_table

    verdicts = None
    if scale is None:
        result = check_workloads(nodes, running, manifests, extended_resource_toleration=extended_resource_toleration,
                                 default_spreading=default_spreading, waiting=waiting)
    else:
        from gpufleet.scheduling.scaleup import check_with_scale_up

        result, verdicts = check_with_scale_up(list(nodes), list(running), manifests, scale[0], scale[1],
                                               extended_resource_toleration=extended_resource_toleration,
                                               default_spreading=default_spreading)
    report = build_report(title, nodes, running, workloads_of(manifests), result, pool_of,
                          extended_resource_toleration=extended_resource_toleration,
                          dra_gpus=dra_gpus(nodes, manifests), dra_claimed=_claimed(manifests),
                          scale_up=verdicts, groups=scale[0] if scale is not None else ())
    report.headroom = [(shape.label, shape.tolerates, h.instances, *h.instances_range)
                       for shape, h in headroom_table(nodes, running, manifests,
                                                      extended_resource_toleration=extended_resource_toleration,
                                                      default_spreading=default_spreading)]
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


def stack_report(name: str, cfg: StackConfig, more_groups: Callable[[list[Node]], list[NodeGroup]] | None = None,
                 options: ScaleUpOptions | None = None, default_spreading: Spreading = "direct") -> FleetReport:
    """A stack's workloads on its node pools as planned (`stack_inputs`). The stack's autoscaled pools
    (`nodePools[].autoscaling`) are node groups, with `more_groups(planned nodes)` (a `--node-groups` file,
    whose `like:` templates name planned nodes); with any, the report is after their scale-up (`options`).
    `default_spreading`: as check_workloads."""
    from gpufleet.autoscaler.stack_groups import joined_groups, stack_node_groups
    from gpufleet.scheduling.scaleup import ScaleUpOptions

    nodes, manifests = stack_inputs(cfg)
    pool_of = {node: pool.name for pool in cfg.node_pools for node in node_names(pool)}
    groups = stack_node_groups(cfg)
    if more_groups is not None:
        groups = joined_groups(groups, more_groups(nodes))
    return report_of(f"stack {name}", nodes, [], manifests, pool_of,
                     scale=(groups, options or ScaleUpOptions()) if groups else None,
                     default_spreading=default_spreading)
