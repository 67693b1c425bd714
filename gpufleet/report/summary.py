"""The fleet report as Markdown, for a pull-request comment beside the plan diff."""

from __future__ import annotations

from gpufleet.report.model import FleetReport


def _cell(text: str) -> str:
    """One Markdown table cell / list item: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def summary_markdown(report: FleetReport) -> str:
    """Per pool: nodes, GPUs used/free, MIG slices used/free, shares used/free and the workloads pending for
    lack of room there (their taint and selector filters pass on the pool's nodes); then what does not run."""
    lines = [f"### GPU fleet: {_cell(report.title)}", "",
             "| pool | nodes | GPUs used | GPUs free | MIG slices used | MIG slices free | shares used | shares free "
             "| pending workloads |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in report.pools:
        waiting = ", ".join(f"`{_cell(w.key)}`" for w in report.pending_in(p.name)) or "none"
        lines.append(f"| {_cell(p.name)} | {p.nodes} | {p.gpus_used} | {p.gpus - p.gpus_used} | {p.mig_slices_used} | "
                     f"{p.mig_slices - p.mig_slices_used} | {p.shares_used} | {p.shares - p.shares_used} | {waiting} |")
    lines.append("")
    pending = report.not_running
    if pending:
        lines.append(f"**{len(pending)} workload(s) will not run:**")
        lines.append("")
        for view in pending:
            lines.append(f"- `{_cell(view.key)}` {view.verdict}, {view.placed} of {view.wanted} pod(s) placed: "
                         f"{_cell(view.message)}")
            if view.held_by:
                lines.append(f"  why: {_cell(view.held_by)}; fix: {_cell(view.fix)}")
    else:
        lines.append("Every workload is placed.")
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
