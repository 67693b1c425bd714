"""`gpufleet validate`: check Kubernetes manifests against the schemas of the target version, offline."""

from __future__ import annotations

from pathlib import Path

import typer

from gpufleet.config.cluster import ClusterConfig
from gpufleet.validation import validate_paths

DEFAULT_KUBE_VERSION = ClusterConfig().kubernetes_version


def command(
    paths: list[Path] = typer.Argument(..., metavar="PATH", help="Manifest files (multi-document YAML) or "
                                       "directories; - reads standard input."),
    kube_version: str = typer.Option(DEFAULT_KUBE_VERSION, "--kube-version",
                                     help="Kubernetes version to validate against (cluster.kubernetesVersion)."),
) -> None:
    """Validate manifests strictly: the schemas (unknown fields, unknown kinds and removed APIs are errors)
    and the API server's own rules (names, required fields, unique names and ports, quantities, int32 range).

    Exit 0 when every object is valid, 1 with one line per problem (file: object: field: message),
    2 when an input cannot be read (every such input, one line each).
    """
    problems = validate_paths(paths, kube_version)
    for p in problems:
        typer.echo(p.render())
    if problems:
        typer.echo(f"{len(problems)} problem(s) found", err=True)
        raise typer.Exit(code=1)
    typer.echo(f"All manifests are valid for Kubernetes {kube_version}.")
