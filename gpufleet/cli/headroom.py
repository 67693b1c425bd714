"""`gpufleet headroom`: how many more of a pod fit, one after another, as the scheduler would place them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpufleet.cli._scale import GpuTotalOption, MaxNodesTotalOption, scale_options
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

if TYPE_CHECKING:
    from gpufleet.scheduling.engine import Spreading


def _probe(path: Path) -> tuple[dict, list[dict]]:
    """The probe workload of the file, and the DRA objects beside it (its ResourceClaimTemplate: each copy
    of the probe gets its claim made from it, as the resourceclaim controller makes it) and the
    PriorityClass its pod names."""
    from gpufleet.capacity.dra import DRA_KINDS
    from gpufleet.manifests.documents import document_errors
    from gpufleet.manifests.reading import load_documents
    from gpufleet.manifests.workloads import workload_of

    docs, problems = load_documents([path])
    beside = [d for d in docs if d.obj.get("kind") in (*DRA_KINDS, "PriorityClass")]
    problems += [e for d in beside for e in document_errors(d)]
    if problems:
        raise InputError("\n".join(problems))
    probes = [d.obj for d in docs if workload_of(d.obj) is not None]
    if len(probes) != 1:
        raise InputError(f"--probe {path}: expected one Pod, or one workload whose pod template is the probe; "
                         f"found {len(probes)}")
    return probes[0], [d.obj for d in beside]


def command(
    probe: Annotated[Path | None, typer.Option("--probe", help="A Pod, or a Deployment/Job/... whose pod "
                                                "template is the probe (YAML or JSON; - reads "
                                                "standard input).")] = None,
    shapes: Annotated[bool, typer.Option("--shapes", help="Instead of a probe: the standard shapes (1, 2, 4, 8 "
                                         "GPUs per product, each MIG profile; with and without the GPU taint's "
                                         "toleration).")] = False,
    manifests: Annotated[list[Path] | None, typer.Argument(
        metavar="MANIFEST", help="Workloads placed first, exactly as `gpufleet check` places them.")] = None,
    nodes: NodesOption = None,
    pods: PodsOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object: instances, instancesRange, "
                                          "byNode, byProduct, byZone, stoppedBy.")] = False,
    extended_resource_toleration: ErtOption = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    request_timeout: RequestTimeoutOption = DEFAULT_TIMEOUT,
    chunk_size: ChunkSizeOption = DEFAULT_CHUNK,
    node_groups: Annotated[Path | None, typer.Option(
        "--node-groups", metavar="FILE|cluster",
        help="Node groups the cluster autoscaler may grow (as `check --node-groups`): also answer with every "
             "group grown to its max size, as far as --max-nodes-total and --gpu-total allow.")] = None,
    max_nodes_total: MaxNodesTotalOption = 0,
    gpu_total: GpuTotalOption = None,
    priority_class: Annotated[str | None, typer.Option(
        "--priority-class", metavar="NAME",
        help="The probe's pods get this PriorityClass (one among MANIFEST and the probe file, the cluster's, or "
             "a system class): also answer how many more fit when they may evict pods of lower priority, as "
             "kube-scheduler's preemption does, and which they evict. A probe that names its own "
             "priorityClassName gets this answer too.")] = None,
    default_spreading: SpreadOption = PodsMadeBy.DIRECT,
) -> None:
    """How many more of a pod fit, one after another, as kube-scheduler would place them.

    The answer cluster-capacity gives: copies of the probe's pod are placed after MANIFEST until one does not
    fit; it says how many, where they land (per node, GPU product or MIG profile, zone), the range over the
    scheduler's tie-breaking, and what stopped the next one. Exit 0, or 2 on bad input.
    """
    from gpufleet.cli.check import capacity_source, read_inputs
    from gpufleet.scheduling.headroom import ProbeError, headroom

    spreading: Spreading = default_spreading.value
    try:
        if (probe is None) == (not shapes):
            raise InputError("give --probe FILE or --shapes (one of them)")
        if shapes and priority_class is not None:
            raise InputError("--priority-class goes with --probe: the standard shapes are counted in free room")
        if shapes and node_groups is not None:
            raise InputError("--node-groups goes with --probe: the standard shapes are counted on the nodes there "
                             "are (give one shape as --probe to count it with every node group at its max size)")
        probe_obj, beside = _probe(probe) if probe is not None else (None, [])
        scale = scale_options(node_groups, max_nodes_total=max_nodes_total, gpu_total=gpu_total)
        live = capacity_source(nodes, pods, kubeconfig, context, request_timeout, chunk_size)
        cap, docs = read_inputs(list(manifests or []), nodes, pods, require_workloads=False, live=live)
        objects = cap.objects + [d.obj for d in docs] + beside
        if shapes:
            from gpufleet.scheduling.headroom import headroom_table

            _print_table(headroom_table(cap.nodes, cap.pods, objects,
                                        extended_resource_toleration=extended_resource_toleration,
                                        default_spreading=spreading), as_json)
            return
        assert probe_obj is not None  # without --shapes, --probe was given (checked above)
        if priority_class is not None or _named_class(probe_obj):
            probe_obj = _with_class(probe_obj, priority_class or _named_class(probe_obj), objects)
        grown = scaled = preempting = None
        try:
            answer = headroom(cap.nodes, cap.pods, objects, probe_obj,
                              extended_resource_toleration=extended_resource_toleration, default_spreading=spreading)
            if _named_class(probe_obj):
                preempting = headroom(cap.nodes, cap.pods, objects, probe_obj, preemption=True,
                                      extended_resource_toleration=extended_resource_toleration,
                                      default_spreading=spreading, waiting=cap.waiting)
            from gpufleet.cli._node_groups import read_groups

            groups = read_groups(scale[0], cap.nodes, live) if scale is not None else []
            if groups:  # none in the cluster: answered without scale-up
                from gpufleet.scheduling.scaleup import grown_fleet

                grown = grown_fleet(cap.nodes, cap.pods, objects, groups, scale[1],
                                    probe_obj, extended_resource_toleration=extended_resource_toleration)
                scaled = headroom(grown.nodes, grown.pods, objects, probe_obj,
                                  extended_resource_toleration=extended_resource_toleration,
                                  default_spreading=spreading)
        except ProbeError as e:
            raise InputError(f"--probe {probe}: {e}") from e
    except GpufleetError as e:
        print(str(e) or type(e).__name__, file=sys.stderr)
        raise SystemExit(2) from e
    if as_json:
        out = answer.to_json()
        if preempting is not None:
            out["withPreemption"] = {**preempting.to_json(), "priorityClass": _named_class(probe_obj)}
        if scaled is not None and grown is not None:
            out["withScaleUp"] = {**scaled.to_json(), "nodesAdded": grown.added, "nodesAtMaxSize": grown.at_max,
                                  "cappedBy": list(grown.capped_by)}
        print(json.dumps(out))
        return
    low, high = answer.instances_range
    spread = f" ({low}-{high} over the scheduler's tie-breaking)" if low != high else ""
    print(f"The cluster can schedule {answer.instances} more instance(s) of the probe{spread}.")
    placed = sum(answer.by_node.values())
    if placed != answer.instances:
        print(f"  where one run of the scheduler put its {placed}:")
    for title, table in (("by GPU product or MIG profile", answer.by_product), ("by zone", answer.by_zone)):
        if table:
            print(f"  {title}: " + ", ".join(f"{k} {v}" for k, v in table.items()))
    if answer.by_node:
        shown = sorted(answer.by_node.items(), key=lambda kv: (-kv[1], kv[0]))
        more = f", and {len(shown) - 10} more node(s)" if len(shown) > 10 else ""
        print("  by node: " + ", ".join(f"{k} {v}" for k, v in shown[:10]) + more)
    if answer.stopped_by:
        print(f"Stopped by: {answer.stopped_by}")
    if preempting is not None:
        print(_with_preemption(preempting, _named_class(probe_obj)))
    if scaled is not None and grown is not None:
        print(_with_scale_up(scaled, grown))


def _named_class(probe: dict) -> str:
    """The priorityClassName of the probe's pod ('' when it names none)."""
    from gpufleet.scheduling.headroom import probe_pod

    name = probe_pod(probe)[2].get("priorityClassName")
    return name if isinstance(name, str) else ""


def _with_class(probe: dict, name: str, objects: list[dict]) -> dict:
    """The probe with its pod's priorityClassName set to `name`, which must be a class the inputs know."""
    import copy

    from gpufleet.admission.priority import priority_classes

    known = priority_classes(objects).values
    if name not in known:
        given = sorted(k for k in known if not k.startswith("system-"))
        raise InputError(f"priority class {name!r} of the probe: no PriorityClass of that name among the inputs "
                         "(MANIFEST, the probe file, the cluster's); expected one of " + ", ".join(
                             [*given, "system-cluster-critical", "system-node-critical"]))
    out = copy.deepcopy(probe)
    if out.get("kind") == "Pod":
        spec = out.setdefault("spec", {})
    elif out.get("kind") == "CronJob":
        spec = out["spec"]["jobTemplate"]["spec"]["template"].setdefault("spec", {})
    else:
        spec = out["spec"]["template"].setdefault("spec", {})
    spec["priorityClassName"] = name
    spec.pop("priority", None)
    return out


def _with_preemption(answer, class_name: str) -> str:
    """The answer when the copies may preempt: how many, and whom they evict."""
    low, high = answer.instances_range
    spread = f" ({low}-{high})" if low != high else ""
    head = (f"With preemption at priority {answer.priority} (PriorityClass {class_name}): {answer.instances} more "
            f"instance(s){spread}")
    if not answer.victims:
        return head + ", evicting nothing (no pod of lower priority is in the way)."
    shown = [v.words() for v in answer.victims[:10]]
    more = f", and {len(answer.victims) - 10} more group(s)" if len(answer.victims) > 10 else ""
    return head + ", evicting " + ", ".join(shown) + more + "."


def _with_scale_up(scaled, grown) -> str:
    """The second answer: how far the groups grew (and which cap stopped them), and how many more fit."""
    low, high = scaled.instances_range
    spread = f" ({low}-{high})" if low != high else ""
    if not grown.capped_by:
        added = ", ".join(f"{g} +{n}" for g, n in grown.added.items()) or "no group can grow"
        return (f"With scale-up (every node group at its max size: {added}): {scaled.instances} more instance(s)"
                f"{spread}.")
    added = ", ".join(f"{g} +{grown.added.get(g, 0)} of {n}" for g, n in grown.at_max.items())
    per = " per GPU" if grown.per_gpu else ""
    return (f"With scale-up (node groups grown as far as {' and '.join(grown.capped_by)} allow, first the groups "
            f"whose new node holds the most copies of the probe{per}: {added}): at most {scaled.instances} more "
            f"instance(s){spread}.")


def _print_table(rows, as_json: bool) -> None:
    if as_json:
        print(json.dumps([{"shape": s.label, "tolerates": s.tolerates, **h.to_json()} for s, h in rows]))
        return
    if not rows:
        print("No GPU nodes: no standard GPU shapes to probe.")
        return
    from rich.table import Table

    from gpufleet.cli._console import console

    table = Table(title="How many more fit")
    for name in ("shape", "GPU taint tolerated", "instances", "range"):
        table.add_column(name, justify="right" if name in ("instances", "range") else "left")
    for shape, h in rows:
        low, high = h.instances_range
        table.add_row(shape.label, "yes" if shape.tolerates else "no", str(h.instances),
                      f"{low}-{high}" if low != high else "")
    console().print(table)
