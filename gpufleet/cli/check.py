"""`gpufleet check`: will these manifests' GPU workloads schedule on these nodes? Exit 0 / 1 / 2.

Imports stay light here; the engine loads when the command runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from gpufleet.errors import GpufleetError, InputError, one_line

if TYPE_CHECKING:
    from gpufleet.scheduling.result import CheckResult


def _print_human(result: "CheckResult") -> None:
    verdict = "every workload can run" if result.fits else f"{len(result.unschedulable)} workload(s) will not run"
    summary = f"{len(result.checked)} workload(s) checked: {verdict}"
    if not result.unschedulable and not result.warnings:
        print(summary)  # the common answer needs no table (and no rich: a one-pod check starts in a blink)
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    if result.unschedulable:
        table = Table(title="Workloads that will not run")
        # Names are never cut: two workloads that differ only at the end must not read the same.
        table.add_column("workload", overflow="fold", min_width=12)
        table.add_column("verdict", no_wrap=True)
        table.add_column("pending", justify="right", no_wrap=True)
        table.add_column("why", overflow="fold", ratio=1)
        for u in result.unschedulable:
            table.add_row(Text(u.workload), u.reason, str(u.pending), Text(u.message))
        console.print(table)  # cells are Text, never markup: names and messages are the user's
        for u in result.unschedulable:
            if u.blocked is not None:
                console.print(Text(u.workload), highlight=False)
                _print_blocked(console, u.blocked)
    for w in result.warnings:
        console.print(Text.assemble(("warning", "yellow"), f" {w.workload}: {w.message}"), highlight=False)
        if w.blocked is not None:
            _print_blocked(console, w.blocked)
    console.print(Text(summary), highlight=False)


def _print_blocked(console, blocked) -> None:
    """Who holds the capacity a Pending workload needed, and the fix, wrapped and indented under it."""
    import textwrap

    from rich.text import Text

    for label, text in (("why", blocked.summary), ("fix", blocked.fix)):
        wrapped = textwrap.fill(text, width=max(console.width, 40), initial_indent=f"  {label}: ",
                                subsequent_indent="       ", break_on_hyphens=False)
        console.print(Text(wrapped), highlight=False, soft_wrap=True)


def read_inputs(manifests: list[Path], nodes: Path, pods: Path | None, require_workloads: bool = True):
    """(capacity, manifest documents) read strictly, every problem at once; InputError for unusable input.

    Shared by `check` and `report --nodes`, so both accept and refuse exactly the same files.
    """
    from gpufleet.capacity.files import load_capacity
    from gpufleet.scheduling.documents import document_errors
    from gpufleet.scheduling.manifests import workload_of
    from gpufleet.scheduling.reading import load_documents

    errors: list[str] = []
    try:
        cap = load_capacity(nodes, pods)
    except InputError as e:
        cap = None
        errors += str(e).split("\n")  # already one line per problem
    docs, problems = load_documents(manifests)
    errors += problems
    for doc in docs:
        errors += document_errors(doc)
    if errors:
        raise InputError("\n".join(one_line(e) for e in errors))
    if require_workloads and not any(workload_of(d.obj) is not None for d in docs):
        raise InputError(f"no workloads in {', '.join(map(str, manifests))}: nothing to check "
                         "(checked kinds: Pod, Deployment, ReplicaSet, StatefulSet, Job, CronJob)")
    return cap, docs


def with_origin(docs, run):
    """Run `run()`; an input error about one workload is prefixed with the file it came from."""
    from gpufleet.scheduling.manifests import workload_of

    origin = {}
    for d in docs:
        w = workload_of(d.obj)
        if w is not None:
            origin.setdefault(w.key, d.file)
    try:
        return run()
    except GpufleetError as e:
        key = str(e).split(":", 1)[0]
        raise InputError(f"{origin[key]}: {e}" if key in origin else str(e)) from e


def run_check(manifests: list[Path], nodes: Path, pods: Path | None,
              extended_resource_toleration: bool) -> "CheckResult":
    """Read every input (reporting all problems at once), then check. Raises InputError for unusable input."""
    from gpufleet.scheduling import check_workloads

    cap, docs = read_inputs(manifests, nodes, pods)
    return with_origin(docs, lambda: check_workloads(cap.nodes, cap.pods, cap.dra + [d.obj for d in docs],
                                                     extended_resource_toleration=extended_resource_toleration))


def command(
    manifests: Annotated[list[Path], typer.Argument(metavar="MANIFEST", help="YAML files or directories (multi-document).")],
    nodes: Annotated[Path, typer.Option("--nodes", help="`kubectl get nodes -o json` output, or a capacity.json.")],
    pods: Annotated[Optional[Path], typer.Option("--pods", help="`kubectl get pods -A -o json` output.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object (the contract in docs/capacity.md).")] = False,
    extended_resource_toleration: Annotated[bool, typer.Option(
        "--extended-resource-toleration",
        help="The API server runs the ExtendedResourceToleration admission plugin.")] = False,
) -> None:
    """Check that every GPU workload in MANIFESTS will be accepted and scheduled. Exit 0 fits, 1 not, 2 bad input."""
    try:
        result = run_check(manifests, nodes, pods, extended_resource_toleration)
    except GpufleetError as e:
        print(str(e) or type(e).__name__, file=sys.stderr)
        raise SystemExit(2) from e
    if as_json:
        import json

        print(json.dumps(result.to_json()))
    else:
        _print_human(result)
    raise SystemExit(result.exit_code)
