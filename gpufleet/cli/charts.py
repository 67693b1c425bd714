"""`gpufleet charts`: a Helm chart plus Argo CD / Flux manifests from a stack's config, for GitOps teams.

Only typer is imported here; the generators load when the command runs.
"""

from __future__ import annotations

from pathlib import Path

import typer

DEFAULT_GIT_URL = "https://git.example.com/your-org/gpufleet.git"


def _repo_path(out: Path) -> str:
    """Where `out` lies inside its Git repository (not relative to the current directory)."""
    from gpufleet.charts.gitops import repo_relative_path

    return repo_relative_path(out)


def command(
    stack: str = typer.Option("dev", "--stack", "-s",
                              help="Stack name (reads Pulumi.<stack>.yaml), or that file's name or path."),
    out: Path = typer.Option(..., "--out", help="Directory to write the chart, upstream values and GitOps files "
                             "to (a new or empty directory, or an earlier `charts --out` of gpufleet's)."),
    project_dir: Path = typer.Option(Path("."), "--project-dir", help="Directory holding Pulumi.yaml."),
    git_url: str = typer.Option(DEFAULT_GIT_URL, "--git-url",
                                help="Git repository Argo CD / Flux read the chart from."),
    revision: str = typer.Option("main", "--revision", help="Branch Argo CD / Flux follow."),
) -> None:
    """Generate the stack's Helm chart, the NVIDIA chart values and Argo CD / Flux manifests."""
    from gpufleet.cli._project import protected_dirs, require_project, stack_and_project
    from gpufleet.outdir import check_target

    stack, project_dir = stack_and_project(stack, project_dir)
    require_project(project_dir)
    protected = protected_dirs(project_dir)
    check_target(out, protected)

    from gpufleet.charts import chart_files, write_files
    from gpufleet.config.loading import load_stack

    loaded = load_stack(stack, project_dir)
    for warning in loaded.warnings:
        typer.echo(f"warning: {warning}", err=True)
    files = chart_files(loaded.config, stack, _repo_path(out), git_url, revision)
    written = write_files(files, out, f"gpufleet charts --stack {stack}", protected)
    typer.echo(f"Wrote {len(written)} files under {out}")
