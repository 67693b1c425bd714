"""`gpufleet plan`: show what `pulumi up` would create for a stack, offline."""

from __future__ import annotations

from pathlib import Path

import typer

from gpufleet.config.loading import load_stack
from gpufleet.planning.engine import run_program
from gpufleet.planning.diff import diff_markdown, read_plan_document
from gpufleet.planning.output import plan_document, write_plan
from gpufleet.planning.preview import print_preview


def command(
    stack: str = typer.Option("dev", "--stack", "-s", help="Stack name: reads Pulumi.<stack>.yaml."),
    out: Path | None = typer.Option(None, "--out", help="Write plan.json and one manifest per resource here."),
    project_dir: Path = typer.Option(Path("."), "--project-dir", help="Directory holding Pulumi.yaml."),
    diff: Path | None = typer.Option(None, "--diff", help="Print a Markdown diff against an earlier `plan --out` directory."),
) -> None:
    """Run the Pulumi program under the mock engine and print a preview; no CLI, cluster or cloud needed."""
    loaded = load_stack(stack, project_dir)
    for warning in loaded.warnings:
        typer.echo(f"warning: {warning}", err=True)
    plan = run_program(loaded)
    if diff is not None:
        typer.echo(diff_markdown(read_plan_document(diff), plan_document(plan)))
    else:
        print_preview(plan)
    if out is not None:
        files = write_plan(plan, out)
        typer.echo(f"Wrote {files[0]} and {len(files) - 1} manifests under {out / 'manifests'}")
