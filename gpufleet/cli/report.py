"""`gpufleet report`: the fleet map of a check as one self-contained HTML page (and a Markdown summary).

Exit 0 when the page is written, pending workloads or not (it is a report; `gpufleet check` is the gate);
2 on unusable input or an output path it may not write.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli import _scale
from gpufleet.cli.check import ErtOption, NodesOption, PodsMadeBy, PodsOption, SpreadOption
from gpufleet.cli.discover import (
    DEFAULT_CHUNK,
    DEFAULT_TIMEOUT,
    ChunkSizeOption,
    ContextOption,
    KubeconfigOption,
    RequestTimeoutOption,
)
from gpufleet.errors import GpufleetError, InputError

PAGE_MARK = '<meta name="generator" content="gpufleet report">'
SUMMARY_MARK = "<!-- gpufleet report summary -->"


def _page_is_ours(text: str) -> bool:
    return PAGE_MARK in text[:2048]


def _summary_is_ours(text: str) -> bool:
    return text.startswith(SUMMARY_MARK)


def _build(stack, project_dir, nodes, pods, manifests, ert, live_options=(None, None, DEFAULT_TIMEOUT, DEFAULT_CHUNK),
           scale=None, spreading="direct"):
    """The report of a stack or of nodes and manifests; `scale`: (`--node-groups` source or None,
    ScaleUpOptions), as `scale_options(..., stack=...)` gives it, or None; `spreading`: `--default-spreading`."""
    from gpufleet.cli._node_groups import read_groups
    from gpufleet.report import report_of, stack_report

    kubeconfig, context = live_options[:2]
    if stack is not None:
        if nodes is not None or pods is not None or manifests or kubeconfig is not None or context is not None:
            raise InputError("--stack plans nodes and workloads from the stack file; do not also give --nodes, "
                             "--pods, --kubeconfig, --context or MANIFEST arguments")
        from gpufleet.cli._project import stack_and_project
        from gpufleet.config.loading import load_stack

        stack, project_dir = stack_and_project(stack, project_dir)
        loaded = load_stack(stack, project_dir)
        for warning in loaded.warnings:
            typer.echo(f"warning: {warning}", err=True)
        source, options = scale if scale is not None else (None, None)
        report = stack_report(stack, loaded.config, None if source is None else lambda planned: read_groups(
            source, planned), options, default_spreading=spreading)
        from gpufleet.scheduling.scaleup import ScaleUpOptions

        if report.scale_up is None and options not in (None, ScaleUpOptions()):
            raise _scale.options_need_groups(stack)
        return report
    from gpufleet.cli.check import capacity_source, read_inputs, with_origin

    # exactly what `check` accepts and refuses; no MANIFEST is a map of what already runs
    live = capacity_source(nodes, pods, *live_options)
    cap, docs = read_inputs(manifests, nodes, pods, require_workloads=False, live=live,
                            no_cluster="give --stack NAME, --kubeconfig FILE, or kubectl files with --nodes FILE "
                                       "[--pods FILE]")
    objects = cap.objects + [d.obj for d in docs]  # DRA objects from capacity.json or --pods go with the manifests
    title = f"nodes {nodes.name}" if nodes is not None else f"cluster {getattr(live, 'server', '') or 'live'}"
    groups = None
    if scale is not None:  # none in the live cluster: a report without scale-up, as `check` says
        found = read_groups(scale[0], cap.nodes, live)
        groups = (found, scale[1]) if found else None
    return with_origin(docs, lambda: report_of(title, cap.nodes, cap.pods, objects,
                                               extended_resource_toleration=ert, scale=groups,
                                               default_spreading=spreading, waiting=cap.waiting))


def command(
    manifests: Annotated[list[Path] | None, typer.Argument(metavar="MANIFEST",
        help="With --nodes: YAML files or directories of workloads (multi-document; - reads standard "
             "input).")] = None,
    # keyword-only from here, so that --out can be required (no default) after the optional MANIFEST
    *,
    out: Annotated[Path,
                   typer.Option("--out", help="HTML file to write (refused if it exists, unless --force).")],
    stack: Annotated[str | None, typer.Option(
        "--stack", "-s", help="Stack name (reads Pulumi.<stack>.yaml), or that file's name or path.")] = None,
    project_dir: Annotated[Path, typer.Option("--project-dir", help="Directory holding Pulumi.yaml.")] = Path("."),
    nodes: NodesOption = None,
    pods: PodsOption = None,
    summary: Annotated[Path | None, typer.Option(
        "--summary", help="Also write a Markdown summary (per pool: GPUs and MIG slices used/free; pending).")] = None,
    force: Annotated[bool,
                     typer.Option("--force",
                                  help="Replace --out / --summary even when gpufleet did not write them.")] = False,
    extended_resource_toleration: ErtOption = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    request_timeout: RequestTimeoutOption = DEFAULT_TIMEOUT,
    chunk_size: ChunkSizeOption = DEFAULT_CHUNK,
    node_groups: Annotated[Path | None, typer.Option(
        "--node-groups", metavar="FILE|cluster",
        help="Node groups the cluster autoscaler may grow (as `check --node-groups`): verdicts after scale-up, "
             "and the nodes it adds drawn apart, per group, with their pods (docs/autoscaling.md).")] = None,
    expander: _scale.ExpanderOption = _scale.DEFAULT_EXPANDER,
    max_nodes_total: _scale.MaxNodesTotalOption = 0,
    gpu_total: _scale.GpuTotalOption = None,
    expendable_cutoff: _scale.ExpendableCutoffOption = _scale.DEFAULT_EXPENDABLE_CUTOFF,
    priority_config: _scale.PriorityConfigOption = None,
    default_spreading: SpreadOption = PodsMadeBy.DIRECT,
) -> None:
    """Draw which pod lands on which node, GPU, MIG slice or share, what stays free and what pends. Exit 0 / 2."""
    from gpufleet.report import render_html, summary_markdown

    try:
        from gpufleet.outdir import check_own_file, write_own_file

        scale = _scale.scale_options(node_groups, expander, max_nodes_total, gpu_total, expendable_cutoff,
                                     stack=stack is not None, priority_config=priority_config)
        check_own_file(out, _page_is_ours, "report page", force)
        if summary is not None:
            check_own_file(summary, _summary_is_ours, "report summary", force)
            if summary.resolve() == out.resolve():
                raise InputError(f"--summary {summary}: is the same file as --out")
        report = _build(stack, project_dir, nodes, pods, manifests or [], extended_resource_toleration,
                        (kubeconfig, context, request_timeout, chunk_size), scale, default_spreading.value)
        page = render_html(report)
        markdown = SUMMARY_MARK + "\n" + summary_markdown(report) if summary is not None else None
        write_own_file(out, page, _page_is_ours, "report page", force)
        if summary is not None and markdown is not None:
            write_own_file(summary, markdown, _summary_is_ours, "report summary", force)
    except GpufleetError as e:
        print(str(e), file=sys.stderr)
        raise SystemExit(2) from e
    except OSError as e:
        print(f"{e.filename or out}: cannot write: {e.strerror}", file=sys.stderr)
        raise SystemExit(2) from e
    pending = len(report.not_running)
    added = f", {report.nodes_added} node(s) to be added by the autoscaler" if report.scale_up is not None else ""
    typer.echo(f"Wrote {out} ({report.nodes} node(s), {len(report.workloads)} workload(s), {pending} not running"
               f"{added})")
