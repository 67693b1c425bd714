"""The policy step of `gpufleet plan`: run the pack over the plan, print violations, exit 1 on a mandatory one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from gpufleet.planning.pack_config import checked_against_nodes, not_checked_against_nodes, with_nodes_file
from gpufleet.planning.policy_client import (
    PolicyPackProcess,
    PolicyReport,
    analyze_plan,
    check_config_against_pack,
    default_pack_config_path,
    load_pack_config,
    start_pack,
)

if TYPE_CHECKING:
    from gpufleet.planning.engine import Plan

PACK_DIR_NAME = "policies"


def pack_dir_for(project_dir: Path) -> Path:
    """The project's `policies/` pack, else the one installed with gpufleet."""
    local = project_dir / PACK_DIR_NAME
    if (local / "PulumiPolicy.yaml").is_file():
        return local
    # Found, not imported: the planner starts the pack as a process and must not depend on its code.
    import importlib.util

    spec = importlib.util.find_spec(PACK_DIR_NAME)
    if spec is None or not spec.submodule_search_locations:
        from gpufleet.errors import InputError

        raise InputError(f"no policy pack: {local} has no PulumiPolicy.yaml and no `{PACK_DIR_NAME}` package is "
                         "installed; pass --no-policies or run in the gpufleet project directory")
    return Path(next(iter(spec.submodule_search_locations)))


def print_report(report: PolicyReport) -> None:
    if not report.violations:
        typer.echo(f"Policies: {report.pack} ({len(report.policies)} policies): no violations")
        return
    typer.echo(f"Policy violations ({report.pack}):")
    for v in report.violations:
        typer.echo(f"    [{v.level}] {v.policy}  {v.resource}")
        for line in v.message.splitlines():
            typer.echo(f"        {line}")
    typer.echo(f"Policies: {len(report.mandatory)} mandatory, {len(report.violations) - len(report.mandatory)} "
               "other violation(s)")


class PolicyStep:
    """The pack step of one `gpufleet plan`: the config is read and checked, and the pack process started,
    before the program runs (so a bad config costs nothing and the pack starts up meanwhile); `run` then
    analyzes the plan. A context manager: the process always ends."""

    def __init__(self, project_dir: Path, stack: str, config_file: Path | None, nodes_file: Path | None = None):
        self.project_dir = project_dir
        self.pack_dir = pack_dir_for(project_dir)
        path = config_file or default_pack_config_path(self.pack_dir, stack)
        self.config_source = str(path) if path else "policy pack config"
        self.config = load_pack_config(path, project_dir) if path else {}
        if nodes_file is not None:  # `plan --nodes`: the node-facts policies check the stack against these nodes
            self.config = with_nodes_file(self.config, nodes_file.resolve())
        self.process: PolicyPackProcess = start_pack(self.pack_dir, project_dir, stack)

    def __enter__(self) -> PolicyStep:
        return self

    def __exit__(self, *exc) -> None:
        self.process.close()

    def check_config(self) -> None:
        """The config's policy names and settings against the pack's (PackConfigError: exit 2); call it before
        printing the preview, so a bad config prints nothing else."""
        check_config_against_pack(self.process, self.config, self.config_source)

    def run(self, plan: Plan) -> PolicyReport:
        """Analyze the plan, print the report; raises SystemExit(1) on a mandatory violation."""
        report = analyze_plan(plan, self.pack_dir, self.project_dir, self.config, process=self.process,
                              config_source=self.config_source)
        print_report(report)
        if not checked_against_nodes(self.config):
            typer.echo(not_checked_against_nodes(self.config, self.config_source))
        if report.mandatory:
            # SystemExit, not typer.Exit: the CLI runs typer with standalone_mode=False, which turns typer.Exit
            # into a return value that main() does not use (gpufleet check does the same).
            raise SystemExit(1)
        return report


def check_policies(plan: Plan, project_dir: Path, config_file: Path | None) -> PolicyReport:
    """Read the config, run the pack over `plan`, print the report; SystemExit(1) on a mandatory violation."""
    with PolicyStep(project_dir, plan.stack, config_file) as step:
        return step.run(plan)
