"""The cluster-autoscaler options `check`, `report` and `headroom` share (docs/autoscaling.md), and their
parsing: one definition, so the three commands accept and refuse exactly the same values."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpufleet.errors import InputError

DEFAULT_EXPANDER = "least-waste"
DEFAULT_EXPENDABLE_CUTOFF = -10

ExpanderOption = Annotated[str, typer.Option(
    "--expander", help="With --node-groups: the autoscaler's expander, or a comma-separated chain of them "
                       "(least-waste, most-pods, least-nodes, priority, random).")]
PriorityConfigOption = Annotated[Path | None, typer.Option(
    "--priority-config", metavar="FILE", help="With --expander priority: the cluster-autoscaler-priority-expander "
                                              "ConfigMap (kubectl get configmap -o yaml), or its priorities value.")]
MaxNodesTotalOption = Annotated[int, typer.Option(
    "--max-nodes-total", min=0, help="With --node-groups: the cluster's node cap (0: none).")]
GpuTotalOption = Annotated[list[str] | None, typer.Option(
    "--gpu-total", metavar="[TYPE:]MIN:MAX",
    help="With --node-groups: the cluster's GPU limits, once per GPU type (the cloud provider's GPU label value); "
         "without TYPE: every GPU.")]
ExpendableCutoffOption = Annotated[int, typer.Option(
    "--expendable-pods-priority-cutoff", help="With --node-groups: pods of lower priority are not scaled up for.")]


def options_need_groups(stack: str) -> InputError:
    """The error for the autoscaler's options given on a stack that has no node group."""
    return InputError(f"the autoscaler's options (--expander, --priority-config, --max-nodes-total, --gpu-total, "
                      f"--expendable-pods-priority-cutoff) go with node groups: stack {stack} has no autoscaled "
                      "node pool (nodePools[].autoscaling) and no --node-groups FILE was given")


def scale_options(node_groups: Path | None, expander: str = DEFAULT_EXPANDER, max_nodes_total: int = 0,
                  gpu_total: list[str] | None = None, expendable_cutoff: int = DEFAULT_EXPENDABLE_CUTOFF, *,
                  stack: bool = False, priority_config: Path | None = None):
    """(node groups file, ScaleUpOptions), or None without --node-groups (and without `stack`: a stack's autoscaled
    pools are node groups too, so the file may be None then); InputError for a bad option."""
    given = [name for name, v in (("--expander", expander != DEFAULT_EXPANDER), ("--max-nodes-total", max_nodes_total),
                                  ("--gpu-total", gpu_total), ("--expendable-pods-priority-cutoff",
                                                               expendable_cutoff != DEFAULT_EXPENDABLE_CUTOFF),
                                  ("--priority-config", priority_config)) if v]
    if node_groups is None and not stack:
        if given:
            raise InputError(f"{', '.join(given)} go(es) with --node-groups FILE (the groups the autoscaler grows)")
        return None
    from gpufleet.autoscaler.expander import EXPANDERS, chain_errors
    from gpufleet.scheduling.scaleup import ScaleUpOptions

    errors = chain_errors(expander)
    if errors:
        raise InputError(f"--expander {expander!r}: {'; '.join(errors)}; allowed: {', '.join(EXPANDERS)}, or a "
                         "comma-separated chain of them (e.g. priority,least-waste), random only last")
    priorities = None
    if "priority" in expander.split(","):
        from gpufleet.autoscaler.priorities import EXPORT, read_priorities

        if priority_config is None:
            raise InputError(f"--expander {expander}: the priority expander needs --priority-config FILE (its "
                             f"ConfigMap: `{EXPORT}`)")
        priorities = read_priorities(priority_config)
    elif priority_config is not None:
        raise InputError("--priority-config goes with --expander priority (alone or in a chain)")
    from gpufleet.autoscaler.limits import parse_gpu_limits

    limits, wrong = parse_gpu_limits(list(gpu_total or ()))
    if wrong:
        raise InputError("\n".join(wrong))
    return node_groups, ScaleUpOptions(max_nodes_total, limits, expander, expendable_cutoff, priorities=priorities)
