"""`gpufleet charts --out` points Argo CD and Flux at the chart's path from the Git repository root, wherever
the command runs from (Argo CD's `source.path` and Flux's chart path are repository-relative)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml
from conftest import ROOT


def repo_with_dev_stack(tmp_path: Path) -> Path:
    repo = tmp_path / "infra"
    (repo / "gpu").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for name in ("Pulumi.yaml", "Pulumi.dev.yaml"):
        shutil.copy(ROOT / name, repo / "gpu" / name)
    return repo


def chart_paths(out: Path) -> tuple[str, str]:
    apps = [d for d in yaml.safe_load_all((out / "argocd" / "applications.yaml").read_text()) if d]
    releases = [d for d in yaml.safe_load_all((out / "flux" / "releases.yaml").read_text()) if d]
    return apps[0]["spec"]["source"]["path"], releases[0]["spec"]["chart"]["spec"]["chart"]


def test_paths_are_from_the_repository_root_when_run_from_a_subdirectory(cli, tmp_path):
    repo = repo_with_dev_stack(tmp_path)
    result = cli("charts", "--stack", "dev", "--project-dir", ".", "--out", "../deploy/charts/dev", cwd=repo / "gpu")
    assert result.code == 0, result.err
    argo, flux = chart_paths(repo / "deploy" / "charts" / "dev")
    assert argo == "deploy/charts/dev/gpufleet-dev"
    assert flux == "./deploy/charts/dev/gpufleet-dev"


def test_paths_are_from_the_repository_root_when_out_is_outside_the_current_directory(cli, tmp_path):
    repo = repo_with_dev_stack(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = repo / "clusters" / "edge"
    result = cli("charts", "--stack", "dev", "--project-dir", str(repo / "gpu"), "--out", str(out), cwd=elsewhere)
    assert result.code == 0, result.err
    assert chart_paths(out) == ("clusters/edge/gpufleet-dev", "./clusters/edge/gpufleet-dev")
