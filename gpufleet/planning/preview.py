"""Print a plan the way `pulumi preview` shows an update: a tree of type and name, then the counts.

Rows are never cut: the table is printed at its natural width even when the terminal is narrower (the
terminal then wraps the long lines), so two resources always read differently and the output does not
depend on the terminal's size.
"""

from __future__ import annotations

from collections import defaultdict

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from gpufleet.planning.engine import STACK_TYPE, Plan

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


def preview_table(plan: Plan) -> Table:
    children: dict[str | None, list] = defaultdict(list)
    for r in plan.resources:
        children[r.parent].append(r)
    table = Table(box=None, show_edge=False, pad_edge=False, title=None)
    table.add_column(" ", no_wrap=True)
    table.add_column("Type", no_wrap=True)
    table.add_column("Name", no_wrap=True)
    table.add_column("Plan", no_wrap=True)

    def walk(parent: str | None, prefix: str) -> None:
        kids = sorted(children.get(parent, []), key=lambda r: (r.type, r.name))
        for i, r in enumerate(kids):
            last = i == len(kids) - 1
            branch = "" if parent is None else ("└─ " if last else "├─ ")
            table.add_row("+", prefix + branch + r.type, r.name, "create")
            walk(r.urn, prefix + ("" if parent is None else ("   " if last else "│  ")))

    roots = [r for r in plan.resources if r.parent is None or r.parent not in {x.urn for x in plan.resources}]
    stack_root = next((r for r in roots if r.type == STACK_TYPE), None)
    if stack_root is not None:
        walk(None, "")
    else:
        for r in roots:
            children[None].append(r)
        walk(None, "")
    return table


def release_deploys(chart: str, values: dict) -> str:
    """What a pinned NVIDIA chart will create with these values, in a few words (objects a reviewer looks for).

    The chart's own objects are not Pulumi resources (a Release is one resource), so the preview names them.
    """
    if chart == "gpu-operator":
        cluster = bool((values.get("gpuCluster") or {}).get("deployCR"))
        policy = (values.get("clusterPolicy") or {}).get("deployCR", True) is not False
        parts = ["a GPUCluster (the DRA driver)" if cluster else "",
                 "a ClusterPolicy" if policy else "no ClusterPolicy"]
        return ", ".join(p for p in parts if p)
    if chart == "nvidia-device-plugin":
        gfd = bool((values.get("gfd") or {}).get("enabled"))
        return (f"the device plugin DaemonSet{' and GPU feature discovery' if gfd else ''}, "
                f"MIG strategy {values.get('migStrategy') or 'none'}")
    if chart == "dra-driver-nvidia-gpu":
        gpus = bool(((values.get("resources") or {}).get("gpus") or {}).get("enabled", True))
        return f"the DRA driver ({'GPUs and ' if gpus else ''}its DeviceClasses), no device plugin"
    return ""


def natural_width(table: Table, console: Console) -> int:
    """The width the table needs to print every cell in full, on one line each."""
    return Measurement.get(console, console.options.update_width(1 << 16), table).maximum


def print_preview(plan: Plan, console: Console | None = None) -> None:
    console = console or Console(highlight=False, soft_wrap=True)
    table = preview_table(plan)
    console.width = max(console.width, natural_width(table, console))  # never shrink (cut) a column
    console.print(f"Previewing update ({plan.stack}):")
    console.print(table)
    created = len([r for r in plan.resources if r.type != STACK_TYPE])
    console.print("Resources:")
    console.print(f"    + {created} to create")
    releases = [r for r in plan.resources if r.type == RELEASE_TYPE]
    if releases:
        console.print("Helm releases:")
    for r in sorted(releases, key=lambda r: r.name):
        chart, values = str(r.inputs.get("chart", "")), r.inputs.get("values")
        deploys = release_deploys(chart, values if isinstance(values, dict) else {})
        console.print(f"    {r.name}: {chart} {r.inputs.get('version', '')} in {r.inputs.get('namespace', '')}"
                      + (f": {deploys}" if deploys else ""))
