"""The fleet report as Markdown, for a pull-request comment beside the plan diff."""

from __future__ import annotations

from gpufleet.report.model import AddedGroup, FleetReport


def _cell(text: str) -> str:
    """One Markdown table cell / list item: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _scale_up(report: FleetReport) -> list[str]:
    """With node groups: per group, its size before and after, the nodes to be added, their GPUs and the pods
    placed there; then the autoscaler's decisions in `check`'s words."""
    lines = ["", "Scale-up (cluster-autoscaler, `--node-groups`): the nodes to be added", ""]
    if report.added:
        lines += ["| node group | size | nodes to be added | GPUs used | GPUs free | pods placed there |",
                  "|---|---|---:|---:|---:|---|"]
        for g in report.added:
            lines.append(f"| {_cell(g.name)} | {g.before} → {g.after} | {g.pool.nodes} | {g.pool.gpus_used} | "
                         f"{g.pool.gpus - g.pool.gpus_used} | {_pods_on(report, g) or 'none'} |")
        lines.append("")
    return lines + [f"- {_cell(line)}" for line in report.scale_up or ()]


def _pods_on(report: FleetReport, group: AddedGroup) -> str:
    pods: dict[int, int] = {}
    for row in group.pool.rows:
        for index, n in row.pods.items():
            pods[index] = pods.get(index, 0) + n * row.count
    return ", ".join(f"`{_cell(report.workloads[i].key)}` {n}" for i, n in sorted(pods.items()))


def summary_markdown(report: FleetReport) -> str:
    """Per pool: nodes, GPUs used/free, MIG slices used/free, shares used/free and the workloads pending for
    lack of room there (their taint and selector filters pass on the pool's nodes); with node groups, the
    nodes to be added per group; then what does not run, and what runs only after scale-up."""
    lines = [f"### GPU fleet: {_cell(report.title)}", "",
             "| pool | nodes | GPUs used | GPUs free | MIG slices used | MIG slices free | shares used | shares free "
             "| pending workloads |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in report.pools:
        waiting = ", ".join(f"`{_cell(w.key)}`" for w in report.pending_in(p.name)) or "none"
        lines.append(f"| {_cell(p.name)} | {p.nodes} | {p.gpus_used} | {p.gpus - p.gpus_used} | {p.mig_slices_used} | "
                     f"{p.mig_slices - p.mig_slices_used} | {p.shares_used} | {p.shares - p.shares_used} | {waiting} |")
    if report.scale_up is not None:
        lines += _scale_up(report)
    lines.append("")
    pending = report.not_running
    if pending:
        lines.append(f"**{len(pending)} workload(s) will not run:**")
        lines.append("")
        for view in pending:
            stop = f" ({_cell(view.stopped_by)})" if view.stopped_by else ""
            more = f", {view.added} more after scale-up" if view.added else ""
            lines.append(f"- `{_cell(view.key)}` {view.verdict}{stop}, {view.placed} of {view.wanted} pod(s) placed"
                         f"{more}: {_cell(view.message)}")
            if view.held_by:
                lines.append(f"  why: {_cell(view.held_by)}; fix: {_cell(view.fix)}")
    elif not report.after_scale_up:
        lines.append("Every workload is placed.")
    if report.after_scale_up:
        lines += [""] * bool(pending) + [f"**{len(report.after_scale_up)} workload(s) pending now run after "
                                         "scale-up:**", ""]
        lines += [f"- `{_cell(view.key)}` {view.placed} of {view.wanted} pod(s) placed now, {view.added} more after "
                  "scale-up" for view in report.after_scale_up]
    direct = [p for p in report.preemptions if not p.remade_after]
    if report.preemptions:
        lines += ["", f"**{len(direct)} workload(s) evict lower-priority pods to run:**", ""]
        lines += [f"- `{_cell(p.workload)}`" + (f"'s new pods (`{_cell(p.remade_after)}` evicted its own) evict "
                                                 if p.remade_after else " evicts ")
                  + ("; ".join(_cell(v.words()) for v in p.victims) or _cell(p.evicting()))
                  + ("" if p.pods else " (in vain: a workload of higher priority takes the room)")
                  for p in report.preemptions]
    short = [w for w in report.workloads if w.expected_mib is not None and w.budget_mib is not None
             and w.expected_mib > w.budget_mib]
    if short:
        lines.append("")
        for view in short:
            lines.append(f"- `{_cell(view.key)}` expects {view.expected_mib} MiB of GPU memory; its share gives "
                         f"{view.budget_mib} MiB")
    if report.headroom:
        lines += ["", "How many more fit (copies of each shape after the workloads above):", "",
                  "| shape | GPU taint tolerated | instances | range |", "|---|---|---|---|"]
        for shape, tolerates, instances, low, high in report.headroom:
            lines.append(f"| {_cell(shape)} | {'yes' if tolerates else 'no'} | {instances} | "
                         f"{f'{low}-{high}' if low != high else ''} |")
    return "\n".join(lines) + "\n"
