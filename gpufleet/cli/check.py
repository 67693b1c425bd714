"""`gpufleet check`: will these manifests' GPU workloads schedule on these nodes, and do they pass the
policy pack's workload rules? Exit 0 / 1 / 2.

Imports stay light here; the engine loads when the command runs.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpufleet.cli._scale import (
    DEFAULT_EXPANDER,
    DEFAULT_EXPENDABLE_CUTOFF,
    ExpanderOption,
    ExpendableCutoffOption,
    GpuTotalOption,
    MaxNodesTotalOption,
    PriorityConfigOption,
    options_need_groups,
    scale_options,
)
from gpufleet.cli.discover import (
    DEFAULT_CHUNK,
    DEFAULT_TIMEOUT,
    ChunkSizeOption,
    ContextOption,
    KubeconfigOption,
    RequestTimeoutOption,
)
from gpufleet.errors import GpufleetError, InputError, one_line
from gpufleet.gc_pause import collector_paused

if TYPE_CHECKING:
    from gpufleet.scheduling.engine import Spreading
    from gpufleet.scheduling.result import CheckResult


#: Options check, report and headroom share (with discover's live-cluster options).
NodesOption = Annotated[Path | None, typer.Option(
    "--nodes", help="`kubectl get nodes -o json` output, or a capacity.json; - reads standard input "
                    "(default: read the live cluster).")]
PodsOption = Annotated[Path | None, typer.Option(
    "--pods", help="`kubectl get pods -A -o json` output (- reads standard input).")]
ErtOption = Annotated[bool, typer.Option(
    "--extended-resource-toleration", help="The API server runs the ExtendedResourceToleration admission plugin.")]


class PodsMadeBy(StrEnum):
    """`--default-spreading`: how the checked pods are made (gpufleet.scheduling.engine.SPREADING)."""

    DIRECT = "direct"
    CONTROLLERS = "controllers"
    OFF = "off"


SpreadOption = Annotated[PodsMadeBy, typer.Option(
    "--default-spreading", case_sensitive=False,
    help="What the scheduler's system default topology spreading counts: `direct` (default) makes each pod "
         "directly, without its owner, as cluster-capacity does, so only the Services that select a pod spread "
         "it; `controllers` makes them as a cluster's controllers do, so a Deployment's ReplicaSet and a "
         "StatefulSet spread their pods over nodes and zones too; `off` for a profile with "
         "`defaultingType: List` and no constraints.")]
NoSpreadOption = Annotated[bool, typer.Option(
    "--no-default-spreading", help="The same as --default-spreading off.")]


def _verdict(result: CheckResult) -> str:
    if result.fits:
        return "every workload can run"
    refused = {u.workload for u in result.unschedulable if u.reason == "policy"}
    stuck = {u.workload for u in result.unschedulable if u.reason != "policy"}
    parts = [f"{len(stuck)} workload(s) will not run"] if stuck else []
    if refused - stuck:
        more = "more " if stuck else ""
        parts.append(f"{len(refused - stuck)} {more}workload(s) refused by the policy pack")
    return ", ".join(parts)


def _print_human(result: CheckResult) -> None:
    summary = f"{len(result.checked)} workload(s) checked: {_verdict(result)}"
    if result.scale_up is not None:
        for line in result.scale_up.lines():
            print(line)
    for preemption in result.preemptions:
        print(preemption.line())
    if not result.unschedulable and not result.warnings:
        print(summary)  # the common answer needs no table (and no rich: a one-pod check starts in a blink)
        return
    from rich.table import Table
    from rich.text import Text

    from gpufleet.cli._console import console as make_console

    console = make_console()
    if result.unschedulable:
        refused = any(u.reason == "policy" for u in result.unschedulable)
        table = Table(title="Workloads that will not run" + (" or that the policy pack refuses" if refused else ""))
        # Names are never cut: two workloads that differ only at the end must not read the same.
        table.add_column("workload", overflow="fold", min_width=12)
        table.add_column("verdict", no_wrap=True)
        table.add_column("pending", justify="right", no_wrap=True)
        table.add_column("why", overflow="fold", ratio=1)
        for u in result.unschedulable:
            table.add_row(Text(u.workload), u.reason, str(u.pending), Text(u.message))
        console.print(table)  # cells are Text, never markup: names and messages are the user's
        for u in result.unschedulable:
            if u.refused_by:
                console.print(Text(f"{u.workload}: admitted {u.admitted or 0} of {(u.admitted or 0) + u.pending} "
                                   f"pods; the rest refused by {u.refused_by}"), highlight=False)
        for u in result.unschedulable:
            if u.blocked is not None or u.defaulted:
                console.print(Text(u.workload), highlight=False)
            if u.defaulted:  # requests the template does not make: which LimitRange put them there
                from gpufleet.admission.model import defaulted_words

                console.print(Text(f"  defaults: {defaulted_words(u.defaulted)}"), highlight=False, soft_wrap=True)
            if u.blocked is not None:
                _print_blocked(console, u.blocked)
    for w in result.warnings:
        console.print(Text.assemble(("warning", "yellow"), f" {w.workload}: {w.message}"), highlight=False)
        if w.blocked is not None:
            _print_blocked(console, w.blocked)
    sensitive = result.order_sensitive()
    if sensitive:
        holders = [w for w, _ in sensitive]
        named = ", ".join(holders[:3]) + (f" and {len(holders) - 3} more" if len(holders) > 3 else "")
        console.print(Text(f"order: {len(holders)} placed workload(s) ({named}) hold room that a later Job or Pod "
                           "above pends for; applied together, the controllers make those pods sooner and may "
                           "place them instead, leaving these Pending (orderSensitive in --json; docs/capacity.md, "
                           "Order)"), highlight=False, soft_wrap=True)
    console.print(Text(summary), highlight=False)


def _print_blocked(console, blocked) -> None:
    """Who holds the capacity a Pending workload needed, and the fix, indented under it (wrapped at a
    terminal's width, whole lines anywhere else)."""
    import textwrap

    from rich.text import Text

    from gpufleet.cli._console import on_terminal
    from gpufleet.scheduling.blocked import RUNNING

    for label, text in (("why", blocked.summary), ("fix", blocked.fix)):
        line = f"  {label}: {text}"
        if on_terminal():
            line = textwrap.fill(text, width=max(console.width, 40), initial_indent=f"  {label}: ",
                                 subsequent_indent="       ", break_on_hyphens=False, break_long_words=False)
        console.print(Text(line), highlight=False, soft_wrap=True)
    if blocked.by_order:
        earlier = sum(1 for b in blocked.by if b.workload != RUNNING)
        console.print(Text(f"  order: {earlier} earlier workload(s) of these manifests got this capacity "
                           "first; applied together, controllers create pods in bursts and a later Job or Pod may "
                           "get there first (docs/capacity.md, Order)"), highlight=False, soft_wrap=True)


def read_inputs(manifests: list[Path], nodes: Path | None, pods: Path | None, require_workloads: bool = True,
                live=None, no_cluster: str | None = None):
    """(capacity, manifest documents) read strictly, every problem at once; InputError for unusable input.

    The capacity comes from the files (`nodes`, `pods`) or, without `nodes`, from `live` (a ClusterSource of
    a live cluster, read as `discover` reads it; `no_cluster`: what to suggest when there is none). Shared by
    `check` and `report`, so both accept and refuse exactly the same inputs.

    What it reads lives as long as the command: it is read with the cyclic collector paused and then left out of
    later collections (`gc.freeze`), which would otherwise walk all of it (about a second at 10,000 nodes).
    """
    with collector_paused(freeze=True):
        return _read_inputs(manifests, nodes, pods, require_workloads, live, no_cluster)


def _read_inputs(manifests: list[Path], nodes: Path | None, pods: Path | None, require_workloads: bool, live,
                 no_cluster: str | None):
    errors: list[str] = []
    try:
        if nodes is None:
            from gpufleet.cli.discover import NO_CLUSTER_HINT, live_capacity

            cap = live_capacity(live, no_cluster or NO_CLUSTER_HINT)
        else:
            from gpufleet.capacity.files import load_capacity

            cap = load_capacity(nodes, pods)
    except GpufleetError as e:
        cap = None
        errors += str(e).split("\n")  # already one line per problem
    docs = read_documents(manifests, errors, require_workloads)
    return cap, docs


def read_documents(manifests: list[Path], errors: list[str], require_workloads: bool = True,
                   elsewhere: str = ""):
    """The manifests' documents; InputError with `errors` and every problem of the files at once.
    `elsewhere`: where other workloads come from (a stack), so that no workload in the files is no error."""
    from gpufleet.manifests.documents import document_errors, set_errors
    from gpufleet.manifests.reading import load_documents
    from gpufleet.manifests.workloads import workload_of

    docs, problems = load_documents(manifests) if manifests else ([], [])
    errors += problems
    for doc in docs:
        errors += document_errors(doc)
    errors += set_errors(docs)
    if errors:
        raise InputError("\n".join(one_line(e) for e in errors))
    if require_workloads and not elsewhere and not any(workload_of(d.obj) is not None for d in docs):
        raise InputError(f"no workloads in {', '.join(map(str, manifests))}: nothing to check "
                         "(checked kinds: Pod, Deployment, ReplicaSet, StatefulSet, Job, CronJob)")
    return docs


def with_origin(docs, run):
    """Run `run()`; an input error about one workload is prefixed with the file it came from."""
    from gpufleet.manifests.workloads import workload_of

    origin = {}
    for d in docs:
        w = workload_of(d.obj)
        if w is not None:
            origin.setdefault(w.key, d.file)
    try:
        return run()
    except GpufleetError as e:
        key = str(e).split(":", 1)[0]
        raise InputError(f"{origin[key]}: {e}" if key in origin else str(e)) from e


def run_check(manifests: list[Path], nodes: Path | None, pods: Path | None,
              extended_resource_toleration: bool, live=None, scale=None,
              default_spreading: Spreading = "direct") -> CheckResult:
    """Read every input (reporting all problems at once), then check. Raises InputError for unusable input.

    `scale`: (node groups file, ScaleUpOptions) to check with cluster-autoscaler's scale-up; the verdicts of the
    scale-up are then `result.scale_up`."""
    cap, docs = read_inputs(manifests, nodes, pods, live=live)
    groups = None
    if scale is not None:
        from gpufleet.cli._node_groups import read_groups

        groups = read_groups(scale[0], cap.nodes, live) or None  # none in the cluster: checked without scale-up
    return with_origin(docs, lambda: _checked(cap.nodes, cap.pods, cap.objects, docs, extended_resource_toleration,
                                              groups, scale[1] if scale else None, default_spreading,
                                              cap.waiting))


def _checked(nodes: list, pods: list, objects: list, docs: list, extended_resource_toleration: bool, groups,
             options, default_spreading: Spreading = "direct", waiting: dict[str, int] | None = None) -> CheckResult:
    """The check of `objects` and the documents' objects, with scale-up of `groups` when given; then the pack's
    workload rules and the node platform findings on the documents. `waiting`: per controller, its pods not
    bound yet (Capacity.waiting)."""
    from gpufleet.cli._node_platform import add_node_platform_findings
    from gpufleet.scheduling import check_workloads

    everything = objects + [d.obj for d in docs]
    if groups is None:
        result = check_workloads(nodes, pods, everything, extended_resource_toleration=extended_resource_toleration,
                                 default_spreading=default_spreading, waiting=waiting)
    else:
        from gpufleet.scheduling.scaleup import check_with_scale_up

        result, verdicts = check_with_scale_up(nodes, pods, everything, groups, options,
                                               extended_resource_toleration=extended_resource_toleration,
                                               default_spreading=default_spreading)
        result.scale_up = verdicts
    add_policy_findings(result, [d.obj for d in docs], nodes)
    add_node_platform_findings(result, [d.obj for d in docs], nodes)
    return result


def run_stack_check(stack: str, project_dir: Path, manifests: list[Path], extended_resource_toleration: bool,
                    scale, default_spreading: Spreading = "direct") -> CheckResult:
    """`check --stack`: the stack's workloads (and any MANIFEST) on its node pools as planned; the stack's
    autoscaled pools are node groups (gpufleet.autoscaler.stack_groups), with those of `--node-groups`.
    `scale`: (node groups file or None, ScaleUpOptions), as `scale_options(..., stack=True)` gives it."""
    from gpufleet.autoscaler.stack_groups import joined_groups, stack_node_groups
    from gpufleet.cli._node_groups import read_groups
    from gpufleet.cli._project import stack_and_project
    from gpufleet.config.loading import load_stack
    from gpufleet.report.sources import stack_inputs
    from gpufleet.scheduling.scaleup import ScaleUpOptions

    name, project_dir = stack_and_project(stack, project_dir)
    loaded = load_stack(name, project_dir)
    for warning in loaded.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    cfg = loaded.config
    nodes, planned = stack_inputs(cfg)
    docs = read_documents(manifests, [], elsewhere=f"stack {name}")
    if not cfg.workloads and not docs:
        raise InputError(f"stack {name} has no workloads and no MANIFEST was given: nothing to check")
    groups = stack_node_groups(cfg)
    if scale[0] is not None:
        groups = joined_groups(groups, read_groups(scale[0], nodes))
    if not groups and scale[1] != ScaleUpOptions():
        raise options_need_groups(name)
    ert = extended_resource_toleration or cfg.cluster.extended_resource_toleration
    return with_origin(docs, lambda: _checked(nodes, [], planned, docs, ert, groups or None, scale[1],
                                              default_spreading))


def add_policy_findings(result: CheckResult, objects: list, nodes: list) -> None:
    """The policy pack's workload rules (gpufleet.validation.workload_policies) on every checked workload,
    without a stack: a finding of a mandatory rule is an error (`reason: policy`, all its pods), of an
    advisory one a warning. Resource names the nodes advertise are never wrong names. Entries stay in
    input order, after the scheduler's own entry for the same workload."""
    from gpufleet.manifests.workloads import flatten, workload_of
    from gpufleet.scheduling.result import Unschedulable, Warning
    from gpufleet.validation.gpu_requests import DevicePluginFacts
    from gpufleet.validation.mps_clients import node_mps_shares
    from gpufleet.validation.privileged_gpus import shared_resources
    from gpufleet.validation.workload_policies import MANDATORY, WorkloadFacts, workload_findings

    advertised = frozenset(name for n in nodes for name in (*n.allocatable, *n.capacity))
    facts = WorkloadFacts(devices=DevicePluginFacts(advertised=advertised),
                          shared_resources=shared_resources(nodes), mps_shares=node_mps_shares(nodes))
    order: dict[str, int] = {}
    errors, warnings = [], []
    for obj in flatten(objects):
        w = workload_of(obj)
        if w is None:
            continue
        order.setdefault(w.key, len(order))
        for f in workload_findings(obj, facts):
            if f.rule.level == MANDATORY:
                errors.append(Unschedulable(w.key, "policy", w.replicas, f.text))
            else:
                warnings.append(Warning(w.key, f.text))
    # Stable sorts: the engine's entries keep their order; a workload's findings follow its own entry.
    pairs: tuple[tuple[list[Any], list[Any]], ...] = ((result.unschedulable, errors), (result.warnings, warnings))
    for entries, found in pairs:
        if found:
            entries += found
            entries.sort(key=lambda e: order.get(e.workload, len(order)))


def capacity_source(nodes: Path | None, pods: Path | None, kubeconfig: Path | None, context: str | None,
                    request_timeout: str, chunk_size: int):
    """None for the files (--nodes, --pods), else the live cluster the options name (check and report)."""
    if nodes is not None:
        given = [o for o, v in (("--kubeconfig", kubeconfig), ("--context", context)) if v is not None]
        if given:
            raise InputError(f"{' and '.join(given)} and --nodes name two sources (a live cluster and a kubectl file): "
                             "give one of them")
        return None
    if pods is not None:
        raise InputError("--pods goes with --nodes (a live cluster's pods are read from the cluster)")
    from gpufleet.cli.discover import live_cluster

    return live_cluster(kubeconfig, context, request_timeout, chunk_size)


def command(
    manifests: Annotated[list[Path] | None, typer.Argument(
        metavar="MANIFEST", help="YAML files or directories (multi-document); - reads standard input. "
                                 "Optional with --stack.")] = None,
    stack: Annotated[str | None, typer.Option(
        "--stack", "-s", help="Check the stack's workloads (and any MANIFEST) on its node pools as planned, its "
                              "autoscaled pools as node groups (reads Pulumi.<stack>.yaml; a name, or that file's "
                              "name or path).")] = None,
    project_dir: Annotated[Path, typer.Option("--project-dir", help="With --stack: the directory holding "
                                                                    "Pulumi.yaml.")] = Path("."),
    nodes: NodesOption = None,
    pods: PodsOption = None,
    as_json: Annotated[bool,
                       typer.Option("--json",
                                    help="Print one JSON object (the contract in docs/capacity.md).")] = False,
    extended_resource_toleration: ErtOption = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    request_timeout: RequestTimeoutOption = DEFAULT_TIMEOUT,
    chunk_size: ChunkSizeOption = DEFAULT_CHUNK,
    node_groups: Annotated[Path | None, typer.Option(
        "--node-groups", metavar="FILE|cluster",
        help="Node groups the cluster autoscaler may grow (YAML list of name, minSize, maxSize, targetSize, "
             "template, or kubectl's JSON of Cluster API machinedeployments,machinesets,machines; `cluster`: the "
             "live cluster's); verdicts then say what runs after scale-up (docs/autoscaling.md).")] = None,
    expander: ExpanderOption = DEFAULT_EXPANDER,
    max_nodes_total: MaxNodesTotalOption = 0,
    gpu_total: GpuTotalOption = None,
    expendable_cutoff: ExpendableCutoffOption = DEFAULT_EXPENDABLE_CUTOFF,
    priority_config: PriorityConfigOption = None,
    default_spreading: SpreadOption = PodsMadeBy.DIRECT,
    no_default_spreading: NoSpreadOption = False,
) -> None:
    """Check that every GPU workload in MANIFESTS will be accepted, pass the pack's workload rules, and be scheduled.
    Exit 0 fits (now, or after scale-up with --node-groups or a stack's autoscaled pools), 1 not, 2 bad input."""
    try:
        if no_default_spreading and default_spreading is not PodsMadeBy.DIRECT:
            raise InputError("give --default-spreading or --no-default-spreading (the same as "
                             "--default-spreading off), not both")
        spreading: Spreading = "off" if no_default_spreading else default_spreading.value
        scale = scale_options(node_groups, expander, max_nodes_total, gpu_total, expendable_cutoff,
                              stack=stack is not None, priority_config=priority_config)
        if stack is not None:
            given = [o for o, v in (("--nodes", nodes), ("--pods", pods), ("--kubeconfig", kubeconfig),
                                    ("--context", context)) if v is not None]
            if given:
                raise InputError(f"--stack plans the nodes from the stack file; do not also give {', '.join(given)}")
            result = run_stack_check(stack, project_dir, manifests or [], extended_resource_toleration, scale,
                                     spreading)
        else:
            if not manifests:
                raise InputError("give MANIFEST files or directories to check, or --stack NAME to check a stack's "
                                 "workloads")
            live = capacity_source(nodes, pods, kubeconfig, context, request_timeout, chunk_size)
            result = run_check(manifests, nodes, pods, extended_resource_toleration, live, scale,
                               spreading)
    except GpufleetError as e:
        print(str(e) or type(e).__name__, file=sys.stderr)
        raise SystemExit(2) from e
    if as_json:
        import json

        out = result.to_json()
        if result.scale_up is not None:
            out.update(result.scale_up.to_json())
        print(json.dumps(out))
    else:
        _print_human(result)
    raise SystemExit(result.exit_code)

