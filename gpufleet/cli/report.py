"""`gpufleet report`: the fleet map of a check as one self-contained HTML page (and a Markdown summary).

Exit 0 when the page is written, pending workloads or not (it is a report; `gpufleet check` is the gate);
2 on unusable input or an output path it may not write.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer

from gpufleet.errors import GpufleetError, InputError


def _refuse_out(path: Path, force: bool, flag: str) -> None:
    if path.is_dir():
        raise InputError(f"{flag} {path}: is a directory; give a file name, e.g. {path / 'report.html'}")
    if path.exists() and not force:
        raise InputError(f"{flag} {path}: already exists; pass --force to overwrite it")


def _write_atomically(path: Path, text: str) -> None:
    """Write to a temporary file beside `path`, then rename it over: readers never see half a page."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _build(stack, project_dir, nodes, pods, manifests, ert):
    from gpufleet.report import report_of, stack_report

    if stack is not None:
        if nodes is not None or pods is not None or manifests:
            raise InputError("--stack plans nodes and workloads from the stack file; do not also give --nodes, "
                             "--pods or MANIFEST arguments")
        from gpufleet.config.loading import load_stack

        loaded = load_stack(stack, project_dir)
        for warning in loaded.warnings:
            typer.echo(f"warning: {warning}", err=True)
        return stack_report(stack, loaded.config)
    if nodes is None:
        raise InputError("give --stack NAME, or --nodes FILE [--pods FILE] MANIFEST...")
    from gpufleet.capacity.files import load_capacity
    from gpufleet.scheduling import load_manifests

    cap = load_capacity(nodes, pods)
    for m in manifests:
        if not m.exists():
            raise InputError(f"{m}: no such file or directory")
    return report_of(f"nodes {nodes.name}", cap.nodes, cap.pods, load_manifests(manifests),
                     extended_resource_toleration=ert)


def command(
    manifests: Annotated[Optional[list[Path]], typer.Argument(metavar="MANIFEST",
        help="With --nodes: YAML files or directories of workloads (multi-document).")] = None,
    out: Annotated[Path, typer.Option("--out", help="HTML file to write (refused if it exists, unless --force).")] = ...,
    stack: Annotated[Optional[str], typer.Option("--stack", "-s", help="Stack name: reads Pulumi.<stack>.yaml.")] = None,
    project_dir: Annotated[Path, typer.Option("--project-dir", help="Directory holding Pulumi.yaml.")] = Path("."),
    nodes: Annotated[Optional[Path], typer.Option(
        "--nodes", help="`kubectl get nodes -o json` output, or a capacity.json.")] = None,
    pods: Annotated[Optional[Path], typer.Option("--pods", help="`kubectl get pods -A -o json` output.")] = None,
    summary: Annotated[Optional[Path], typer.Option(
        "--summary", help="Also write a Markdown summary (per pool: GPUs and MIG slices used/free; pending).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --out / --summary if they exist.")] = False,
    extended_resource_toleration: Annotated[bool, typer.Option(
        "--extended-resource-toleration",
        help="The API server runs the ExtendedResourceToleration admission plugin.")] = False,
) -> None:
    """Draw which pod lands on which node, GPU, MIG slice or share, what stays free and what pends. Exit 0 / 2."""
    from gpufleet.report import render_html, summary_markdown

    try:
        _refuse_out(out, force, "--out")
        if summary is not None:
            _refuse_out(summary, force, "--summary")
            if summary.resolve() == out.resolve():
                raise InputError(f"--summary {summary}: is the same file as --out")
        report = _build(stack, project_dir, nodes, pods, manifests or [], extended_resource_toleration)
        page = render_html(report)
        markdown = summary_markdown(report) if summary is not None else None
        _write_atomically(out, page)
        if markdown is not None:
            _write_atomically(summary, markdown)
    except GpufleetError as e:
        print(str(e), file=sys.stderr)
        raise SystemExit(2) from e
    except OSError as e:
        print(f"{e.filename or out}: cannot write: {e.strerror}", file=sys.stderr)
        raise SystemExit(2) from e
    pending = len(report.not_running)
    typer.echo(f"Wrote {out} ({report.nodes} node(s), {len(report.workloads)} workload(s), {pending} not running)")
