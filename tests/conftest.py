"""Shared fixtures: the repo root (the Pulumi project), stack loading and offline planning."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.config.loading import LoadedStack, load_stack, parse_sections
from gpufleet.planning.engine import run_program

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_STACKS = ["dev", "mig", "k3s", "multi"]
UPSTREAM = ROOT.parent / "shared" / "reference" / "upstream"


@pytest.fixture
def project_dir() -> Path:
    return ROOT


def loaded_from(sections: dict, name: str = "test") -> LoadedStack:
    """A LoadedStack built from `gpufleet:` sections (YAML spelling), as if read from Pulumi.<name>.yaml."""
    import json

    cfg = parse_sections(sections, f"Pulumi.{name}.yaml")
    pulumi_config = {f"gpufleet:{k}": (v if isinstance(v, str) else json.dumps(v)) for k, v in sections.items()}
    return LoadedStack(name=name, source=f"Pulumi.{name}.yaml", config=cfg, pulumi_config=pulumi_config)


def plan_sections(sections: dict, preview: bool = True, name: str = "test"):
    return run_program(loaded_from(sections, name), preview=preview)


def plan_shipped(stack: str, preview: bool = True):
    return run_program(load_stack(stack, ROOT), preview=preview)
