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
    "--expander", help="With --node-groups: the autoscaler's expander (least-waste, most-pods, random).")]
MaxNodesTotalOption = Annotated[int, typer.Option(
    "--max-nodes-total", min=0, help="With --node-groups: the cluster's node cap (0: none).")]
GpuTotalOption = Annotated[str | None, typer.Option(
    "--gpu-total", metavar="MIN:MAX", help="With --node-groups: the cluster's GPU limits.")]
ExpendableCutoffOption = Annotated[int, typer.Option(
    "--expendable-pods-priority-cutoff", help="With --node-groups: pods of lower priority are not scaled up for.")]


def options_need_groups(stack: str) -> InputError:
    """The error for the autoscaler's options given on a stack that has no node group."""
    return InputError(f"the autoscaler's options (--expander, --max-nodes-total, --gpu-total, "
                      f"--expendable-pods-priority-cutoff) go with node groups: stack {stack} has no autoscaled "
                      "node pool (nodePools[].autoscaling) and no --node-groups FILE was given")


def scale_options(node_groups: Path | None, expander: str = DEFAULT_EXPANDER, max_nodes_total: int = 0,
                  gpu_total: str | None = None, expendable_cutoff: int = DEFAULT_EXPENDABLE_CUTOFF, *,
                  stack: bool = False):
    """(node groups file, ScaleUpOptions), or None without --node-groups (and without `stack`: a stack's autoscaled
    pools are node groups too, so the file may be None then); InputError for a bad option."""
    given = [name for name, v in (("--expander", expander != DEFAULT_EXPANDER), ("--max-nodes-total", max_nodes_total),
                                  ("--gpu-total", gpu_total), ("--expendable-pods-priority-cutoff",
                                                               expendable_cutoff != DEFAULT_EXPENDABLE_CUTOFF)) if v]
    if node_groups is None and not stack:
        if given:
            raise InputError(f"{', '.join(given)} go(es) with --node-groups FILE (the groups the autoscaler grows)")
        return None
    from gpufleet.autoscaler.expander import EXPANDERS
    from gpufleet.scheduling.scaleup import ScaleUpOptions

    if expander not in EXPANDERS:
        raise InputError(f"--expander {expander!r}: allowed: {', '.join(EXPANDERS)}")
    limits = None
    if gpu_total is not None:
        low, sep, high = gpu_total.partition(":")
        if not sep or not low.isdigit() or not high.isdigit() or int(low) > int(high):
            raise InputError(f"--gpu-total {gpu_total!r}: expected MIN:MAX, two counts of GPUs with MIN <= MAX "
                             "(e.g. 0:64)")
        limits = (int(low), int(high))
    return node_groups, ScaleUpOptions(max_nodes_total, limits, expander, expendable_cutoff)
