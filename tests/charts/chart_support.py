"""Helpers for the chart tests: the dev stack's files, helm template output, the plan's objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import ROOT
from helm_binary import run_helm

from gpufleet.charts import chart_files, chart_name
from gpufleet.config.loading import load_stack
from gpufleet.planning.engine import run_program
from gpufleet.planning.output import manifest_files

STACK = "dev"
CHART_DIR = ROOT / "charts" / STACK / chart_name(STACK)


def generated_files(stack_dir: Path = ROOT, stack: str = STACK) -> dict[str, str]:
    """What `make charts` writes for the stack (the same call the CLI makes)."""
    return chart_files(load_stack(stack, stack_dir).config, stack, f"charts/{stack}", "https://git.example.com/your-org/gpufleet.git")


def write_chart(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path / next(rel for rel in files if rel.endswith("/Chart.yaml")).split("/")[0]


def helm_template(chart: Path, *args: str) -> list[dict[str, Any]]:
    result = run_helm("template", "gpufleet", str(chart), *args)
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def plan_objects(stack_dir: Path = ROOT, stack: str = STACK) -> list[dict[str, Any]]:
    """The Kubernetes objects `pulumi up` would create, as `gpufleet plan --out` writes them."""
    plan = run_program(load_stack(stack, stack_dir))
    return list(manifest_files(plan).values())
