"""`gpufleet check`: will these manifests' GPU workloads schedule on these nodes? Exit 0 / 1 / 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from gpufleet.capacity.kubectl import capacity_from_objects
from gpufleet.capacity.model import FORMAT, Capacity
from gpufleet.discovery.kubernetes import read_list
from gpufleet.errors import GpufleetError, InputError
from gpufleet.scheduling import check_workloads, load_manifests
from gpufleet.scheduling.result import CheckResult


def load_capacity(nodes: Path, pods: Path | None) -> Capacity:
    """`--nodes` is kubectl node JSON or a capacity.json from `gpufleet discover`."""
    try:
        doc = json.loads(nodes.read_text())
    except FileNotFoundError as e:
        raise InputError(f"{nodes}: no such file") from e
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{nodes}: not JSON: {e}") from e
    if isinstance(doc, dict) and doc.get("format") == FORMAT:
        cap = Capacity.from_json(doc, str(nodes))
        if pods is not None:
            cap.pods += capacity_from_objects([], read_list(pods, "pods")).pods
        return cap
    return capacity_from_objects(read_list(nodes, "nodes"), read_list(pods, "pods") if pods else [])


def _print_human(result: CheckResult) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if result.unschedulable:
        table = Table("workload", "verdict", "pending", "why", title="Workloads that will not run")
        for u in result.unschedulable:
            table.add_row(u.workload, u.reason, str(u.pending), u.message)
        console.print(table)
    for w in result.warnings:
        console.print(f"[yellow]warning[/yellow] {w.workload}: {w.message}", highlight=False)
    verdict = "every workload can run" if result.fits else f"{len(result.unschedulable)} workload(s) will not run"
    console.print(f"{len(result.checked)} workload(s) checked: {verdict}", highlight=False)


def command(
    manifests: Annotated[list[Path], typer.Argument(help="YAML files or directories (multi-document).")],
    nodes: Annotated[Path, typer.Option("--nodes", help="`kubectl get nodes -o json` output, or a capacity.json.")],
    pods: Annotated[Optional[Path], typer.Option("--pods", help="`kubectl get pods -A -o json` output.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object (the contract in docs/capacity.md).")] = False,
    extended_resource_toleration: Annotated[bool, typer.Option(
        "--extended-resource-toleration",
        help="The API server runs the ExtendedResourceToleration admission plugin.")] = False,
) -> None:
    """Check that every GPU workload in MANIFESTS will be accepted and scheduled. Exit 0 fits, 1 not, 2 bad input."""
    try:
        cap = load_capacity(nodes, pods)
        result = check_workloads(cap.nodes, cap.pods, load_manifests(manifests),
                                 extended_resource_toleration=extended_resource_toleration)
    except GpufleetError as e:
        print(str(e).splitlines()[0] if str(e) else type(e).__name__, file=sys.stderr)
        raise SystemExit(2) from e
    if as_json:
        print(json.dumps(result.to_json()))
    else:
        _print_human(result)
    raise SystemExit(result.exit_code)
