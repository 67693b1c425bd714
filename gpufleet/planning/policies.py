"""The policy step of `gpufleet plan`: run the pack over the plan, print violations, exit 1 on a mandatory one."""

from __future__ import annotations

from pathlib import Path

import typer

from gpufleet.planning.engine import Plan
from gpufleet.planning.policy_client import PolicyReport, analyze_plan, default_pack_config, load_pack_config

PACK_DIR_NAME = "policies"


def pack_dir_for(project_dir: Path) -> Path:
    """The project's `policies/` pack, else the one installed with gpufleet."""
    local = project_dir / PACK_DIR_NAME
    if (local / "PulumiPolicy.yaml").is_file():
        return local
    import policies

    return Path(policies.__file__).parent


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


def check_policies(plan: Plan, project_dir: Path, config_file: Path | None) -> PolicyReport:
    pack_dir = pack_dir_for(project_dir)
    config = load_pack_config(config_file) if config_file else default_pack_config(pack_dir, plan.stack)
    report = analyze_plan(plan, pack_dir, project_dir, config)
    print_report(report)
    if report.mandatory:
        # SystemExit, not typer.Exit: the CLI runs typer with standalone_mode=False, which turns typer.Exit
        # into a return value that main() does not use (gpufleet check does the same).
        raise SystemExit(1)
    return report
