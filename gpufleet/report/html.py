"""The fleet report as one self-contained HTML page: inline CSS and SVG, no script, nothing fetched."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from gpufleet.report.model import FleetReport, GpuView, NodeRow, PoolView, WorkloadView

GPU_W, GPU_H, GPU_GAP, LABEL_H = 168, 84, 12, 14  # 21 px per memory slice, 12 per compute slice
WHOLE_W = 96  # a GPU with no MIG instances has no slices to draw to scale: narrower, so 8 fit on a line
BAR_W = 200
#: Distinct, colour-blind-friendlier colours first; then evenly turned hues.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759", "#76b7b2", "#edc948", "#9c755f", "#ff9da7",
           "#1f77b4", "#8cd17d", "#d37295")
RUNNING_COLOUR = "#6b6b6b"


def colour(index: int) -> str:
    if index < len(PALETTE):
        return PALETTE[index]
    return f"hsl({(index * 137.508) % 360:.1f}, 55%, 52%)"


def _gpu_width(gpus: tuple[GpuView, ...]) -> int:
    return GPU_W if any(uv.unit.mig_profile for gpu in gpus for uv in gpu.units) else WHOLE_W


def _gpu_shapes(gpus: tuple[GpuView, ...], workloads: list[WorkloadView]) -> list[dict]:
    out = []
    gpu_w = _gpu_width(gpus)
    for g, gpu in enumerate(gpus):
        x0 = g * (gpu_w + GPU_GAP)
        units = []
        for uv in gpu.units:
            u = uv.unit
            users = [uv.workload, *uv.sharers] if uv.workload is not None else [None]
            who = ", ".join(workloads[i].key for i in users if i is not None) or "free"
            memory = f", {u.memory_mib} MiB" if u.memory_mib is not None else ""
            # A MIG instance owns its memory slices outright, so it fills the box's height over them: what is
            # left empty is really free. Its compute slices are in its name (the `3` of 3g.40gb) and title.
            y, h = (0.0, 1.0) if u.mig_profile else (u.y, u.height)
            # A device several workloads share (one named DRA claim) is split into one stripe each.
            width = u.width * gpu_w / len(users)
            for k, i in enumerate(users):
                units.append({"x": round(x0 + u.x * gpu_w + k * width + 1, 2),
                              "y": round(LABEL_H + (1 - y - h) * GPU_H + 1, 2),
                              "w": round(max(width - 2, 1), 2), "h": round(max(h * GPU_H - 2, 1), 2),
                              "cls": f"w{i}" if i is not None else "free", "kind": u.kind,
                              "title": f"GPU {g}: {u.label}{memory}: {who}"
                                       + (" (shared: one claim)" if len(users) > 1 else "")})
        out.append({"x": x0, "w": gpu_w, "index": g, "label": f"GPU {g}{_layout(gpu)}", "units": units,
                    "title": f"GPU {g}: {gpu.product}" + (f", {gpu.memory_mib} MiB" if gpu.memory_mib else "")})
    return out


def _layout(gpu: GpuView) -> str:
    """` 7x 1g.5gb`, ` MPS x4`: what the GPU is split into."""
    profiles: dict[str, set[int]] = {}
    for uv in gpu.units:
        if uv.unit.mig_profile:
            profiles.setdefault(uv.unit.mig_profile, set()).add(uv.unit.slot)
    parts = [f"{len(slots)}\u00d7 {p}" for p, slots in profiles.items()]
    shared = [uv.unit.kind for uv in gpu.units if uv.unit.kind in ("mps", "time-slicing")]
    if shared:
        per = len(shared) // max(len({uv.unit.slot for uv in gpu.units}), 1)
        parts.append(f"{'MPS' if shared[0] == 'mps' else 'time-sliced'} \u00d7{per}")
    return " \u00b7 " + ", ".join(parts) if parts else ""


def _row(row: NodeRow, workloads: list[WorkloadView]) -> dict:
    n = len(row.gpus)
    products: dict[str, int] = {}
    for g in row.gpus:
        products[g.product] = products.get(g.product, 0) + 1
    return {"names": row.shown_names, "products": [f"{c}\u00d7 {p}" for p, c in products.items()], "count": row.count,
            "more": row.count - len(row.shown_names),
            "gpus": _gpu_shapes(row.gpus, workloads),
            "width": max(n * (_gpu_width(row.gpus) + GPU_GAP) - GPU_GAP, 1), "height": LABEL_H + GPU_H,
            "pods": [(workloads[i].key, i, p) for i, p in sorted(row.pods.items())]}


def _bar(w: WorkloadView) -> dict | None:
    if w.model is not None:
        m = w.model
        scale = max(m.visible_mib, m.weights_mib + m.overhead_mib, 1)
        parts = [("weights", m.weights_mib), ("overhead", m.overhead_mib), ("kv", m.kv_mib)]
        x, segments = 0.0, []
        for name, n in parts:
            width = round(n / scale * BAR_W, 1)
            segments.append({"name": name, "x": x, "width": width, "mib": n})
            x += width
        return {"model": True, "segments": segments, "width": BAR_W,
                "reserved": round(m.reserved_mib / scale * BAR_W, 1)}
    if w.expected_mib is None or w.budget_mib is None:
        return None
    scale = max(w.expected_mib, w.budget_mib, 1)
    return {"model": False, "budget": round(w.budget_mib / scale * BAR_W, 1),
            "need": round(min(w.expected_mib, w.budget_mib) / scale * BAR_W, 1),
            "over": round(max(w.expected_mib - w.budget_mib, 0) / scale * BAR_W, 1), "width": BAR_W}


def _environment() -> Environment:
    return Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"), autoescape=True,
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def _pool(p: PoolView, workloads: list[WorkloadView]) -> dict:
    return {"name": p.name, "nodes": p.nodes, "gpus": p.gpus, "gpus_used": p.gpus_used, "mig": p.mig_slices,
            "mig_used": p.mig_slices_used, "shares": p.shares, "shares_used": p.shares_used,
            "rows": [_row(r, workloads) for r in p.rows]}


def render_html(report: FleetReport) -> str:
    """The page. Every string from the input is escaped (autoescape); shapes carry class `gpu` or `unit`; the
    nodes to be added by the autoscaler are in section `scale-up`, their drawings of class `node new`."""
    workloads = report.workloads
    colours = [RUNNING_COLOUR if w.verdict == "running" else colour(w.index) for w in workloads]
    pools = [{**_pool(p, workloads), "pending": report.pending_in(p.name)} for p in report.pools]
    added = [{**_pool(g.pool, workloads), "before": g.before, "after": g.after, "on_their_way": g.on_their_way,
              "new": g.pool.nodes - g.on_their_way} for g in report.added]
    return _environment().get_template("report.html.j2").render(
        title=report.title, pools=pools, gpu_h=GPU_H, label_h=LABEL_H, workloads=workloads, colours=colours,
        bars={w.index: _bar(w) for w in workloads}, not_running=report.not_running, warnings=report.warnings,
        after_scale_up=report.after_scale_up,
        headroom=report.headroom, preemptions=report.preemptions, scale_up=report.scale_up, added=added,
        nodes_added=report.nodes_added,
        nodes=report.nodes, gpus=sum(p["gpus"] for p in pools), gpus_used=sum(p["gpus_used"] for p in pools))
