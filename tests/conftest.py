"""Shared fixtures: the repo root (the Pulumi project), stack loading, offline planning, and running the
CLI as a user does (exit codes included)."""

from __future__ import annotations

import gc
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from gpufleet.config.loading import LoadedStack, load_stack, parse_sections
from gpufleet.planning.engine import run_program

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_STACKS = ["dev", "mig", "k3s", "multi", "dra"]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/helm_binary.py

# Hypothesis: the same examples on every run unless asked otherwise, so a failure CI finds reproduces anywhere
# (`ci`, the default: derandomized, no example database written into the clone). `HYPOTHESIS_PROFILE=explore`
# hunts locally: random examples, with the database keeping what failed.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def project_dir() -> Path:
    return ROOT


def loaded_from(sections: dict, name: str = "test") -> LoadedStack:
    """A LoadedStack built from `gpufleet:` sections (YAML spelling), as if read from Pulumi.<name>.yaml."""
    cfg = parse_sections(sections, f"Pulumi.{name}.yaml")
    pulumi_config = {f"gpufleet:{k}": (v if isinstance(v, str) else json.dumps(v)) for k, v in sections.items()}
    return LoadedStack(name=name, source=f"Pulumi.{name}.yaml", config=cfg, pulumi_config=pulumi_config)


def config_errors(sections: dict) -> list[str]:
    """`path: message` of every issue parsing these `gpufleet:` sections reports (they must not parse)."""
    from gpufleet.errors import ConfigError

    with pytest.raises(ConfigError) as exc:
        parse_sections(sections, "Pulumi.t.yaml")
    return [f"{i.path}: {i.message}" for i in exc.value.issues]


def plan_sections(sections: dict, preview: bool = True, name: str = "test"):
    return run_program(loaded_from(sections, name), preview=preview)


def plan_shipped(stack: str, preview: bool = True):
    return run_program(load_stack(stack, ROOT), preview=preview)


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run `gpufleet ARGS...` through its console entry point; returns exit code, stdout, stderr."""
    from gpufleet.cli import main

    def run(*args: str, cwd: Path | None = None) -> CliResult:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "argv", ["gpufleet", *map(str, args)])
        code = 0
        try:
            main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def pytest_terminal_summary(terminalreporter):
    """Name every test skipped for a missing upstream file (NVIDIA's charts are never in the repository), so
    a run without them says which coverage it did not have and how to get it."""
    import upstream_files

    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if isinstance(r.longrepr, tuple) and upstream_files.SKIP_PREFIX in str(r.longrepr[2])]
    if not skipped:
        return
    terminalreporter.section("upstream files")
    terminalreporter.write_line(
        f"{len(skipped)} test(s) skipped: NVIDIA's upstream charts were not found; set {upstream_files.ENV} to "
        f"a folder with charts/*.tgz and the values files, or run `{upstream_files.MAKE_TARGET}`:")
    for report in skipped:
        terminalreporter.write_line(f"  {report.nodeid}")


@pytest.fixture(autouse=True)
def _collector_unfrozen():
    """A command run in this process freezes what it read out of the cyclic collector (`gc.freeze`), as a one-shot
    process may; the test process lives on, so after each test the collector gets everything back."""
    yield
    gc.unfreeze()
