"""`gpufleet plan`: show what `pulumi up` would create for a stack, offline.

Only typer is imported here; Pulumi and the planning modules load when the command runs, so
`gpufleet plan --help` and usage errors stay fast.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import typer


def command(
    stack: str = typer.Option("dev", "--stack", "-s",
                              help="Stack name (reads Pulumi.<stack>.yaml), or that file's name or path."),
    out: Path | None = typer.Option(None, "--out", help="Write plan.json and one manifest per resource here "
                                    "(a new or empty directory, or an earlier `plan --out` of gpufleet's)."),
    project_dir: Path = typer.Option(Path("."), "--project-dir", help="Directory holding Pulumi.yaml."),
    diff: Path | None = typer.Option(None, "--diff",
                                     help="Print a Markdown diff against an earlier `plan --out` directory."),
    policy_pack_config: Path | None = typer.Option(
        None, "--policy-pack-config", help="Policy pack config JSON (as pulumi's). Default: "
        "policies/config.<stack>.json if present, else derived from the stack."),
    no_policies: bool = typer.Option(False, "--no-policies", help="Do not run the policy pack."),
    nodes: Path | None = typer.Option(
        None, "--nodes", help="The real nodes (`kubectl get nodes -o json` output, or a capacity.json of `gpufleet "
        "discover`): the pack checks the runtime preset, the host driver, the nodes' OS, runtime and Kubernetes "
        "version, selector labels and pool products against them."),
) -> None:
    """Run the Pulumi program under the mock engine and print a preview; no CLI, cluster or cloud needed.
    Then run the policy pack (policies/) over it as `pulumi preview --policy-pack` would; exit 1 on a
    mandatory violation. Nothing is written unless the plan and the pack pass."""
    from gpufleet.cli._project import protected_dirs, require_project, stack_and_project
    from gpufleet.outdir import check_target

    stack, project_dir = stack_and_project(stack, project_dir)
    require_project(project_dir)
    protected = protected_dirs(project_dir)
    if out is not None:
        check_target(out, protected)  # fail before planning; checked again when writing
    if nodes is not None:
        _check_nodes_file(nodes, no_policies)

    from gpufleet.planning.policies import PolicyStep  # light: no Pulumi yet

    with contextlib.ExitStack() as running:
        # The pack's config is checked first; then the pack starts and imports while this process imports
        # Pulumi and runs the program.
        step = None if no_policies else running.enter_context(
            PolicyStep(project_dir, stack, policy_pack_config, nodes))

        from gpufleet.config.loading import load_stack
        from gpufleet.planning.engine import run_program
        from gpufleet.planning.output import write_plan
        from gpufleet.planning.preview import print_preview

        loaded = load_stack(stack, project_dir)
        for warning in loaded.warnings:
            typer.echo(f"warning: {warning}", err=True)
        plan = run_program(loaded)
        if step is not None:
            step.check_config()  # a policy the pack lacks fails here, before the preview is printed
        if diff is not None:
            from gpufleet.planning.diff import diff_markdown, read_plan_document
            from gpufleet.planning.output import plan_document

            typer.echo(diff_markdown(read_plan_document(diff), plan_document(plan)))
        else:
            print_preview(plan)
        if step is not None:
            step.run(plan)  # exit 1 on a mandatory violation: nothing is written
    if out is not None:
        files = write_plan(plan, out, protected)
        typer.echo(f"Wrote {files[0]} and {len(files) - 1} manifests under {out / 'manifests'}")


def _check_nodes_file(nodes: Path, no_policies: bool) -> None:
    """`--nodes` is read as `gpufleet check` reads it, before anything runs (InputError: exit 2, one line per
    problem); its checks are the pack's, so it needs the pack."""
    from gpufleet.capacity.files import load_capacity
    from gpufleet.errors import InputError

    if no_policies:
        raise InputError("--nodes: the checks against the nodes are policies of the pack; drop --no-policies "
                         "to make them")
    load_capacity(nodes, None)
