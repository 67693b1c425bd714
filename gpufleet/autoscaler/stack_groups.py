"""Node groups a stack declares: each node pool with `autoscaling: {min, max}` (an AKS GPU pool's `autoscale` or
`autoscaling` bounds included, carried by its derived node pool) is a node group of cluster-autoscaler.

The pool exists at the nodes it has now (`count`, the listed `nodes`, or `min`: what planned capacity builds,
gpufleet.capacity.stack) and the group may grow it to `max`. Its template is the pool's planned node, with
the labels, taints and allocatable (GPUs included) that planning gives every node of the pool, so a pool of
min 0 scales from zero. `check --stack` and the policy pack's gpu-capacity-fit use these groups.
"""

from __future__ import annotations

from gpufleet.autoscaler.nodegroups import NodeGroup, sanitized
from gpufleet.capacity.stack import node_names, planned_node
from gpufleet.config.stack import StackConfig
from gpufleet.errors import InputError


def stack_node_groups(cfg: StackConfig) -> list[NodeGroup]:
    """The stack's autoscaled node pools as node groups, in pool order; [] when none autoscales."""
    groups = []
    for pool in cfg.node_pools:
        if pool.autoscaling is None:
            continue
        members = node_names(pool)
        template = sanitized(planned_node(cfg, pool, members[0] if members else f"{pool.name}-0"), pool.name)
        groups.append(NodeGroup(pool.name, pool.autoscaling.min, pool.autoscaling.max, template, members,
                                target_size=len(members), source=f"node pool {pool.name}"))
    return groups


def joined_groups(stack: list[NodeGroup], given: list[NodeGroup]) -> list[NodeGroup]:
    """The stack's node groups and those of a `--node-groups` file together; InputError naming both when a
    name is in both."""
    ours = {g.name: g for g in stack}
    clashes = [f"{g.source}: node group {g.name!r} is also the stack's autoscaled {ours[g.name].source} "
               "(nodePools[].autoscaling); rename the group in the file, or drop it or the pool's autoscaling"
               for g in given if g.name in ours]
    if clashes:
        raise InputError("\n".join(clashes))
    return [*stack, *given]
