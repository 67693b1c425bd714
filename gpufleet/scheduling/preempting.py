"""What a check needs for preemption: the pods' priorities, the running pods as victims, the
PodDisruptionBudgets, and the verdict of a workload that runs by evicting others (docs/capacity.md,
Preemption)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from gpufleet.admission.priority import priority_classes
from gpufleet.capacity.model import BoundPod
from gpufleet.capacity.shape import Shape, label_selector
from gpufleet.errors import InputError
from gpufleet.manifests.workloads import PodWorkload
from gpufleet.scheduler.filters import has_pod_rules
from gpufleet.scheduler.framework.preemption import Budget, Victim
from gpufleet.scheduler.plugins.defaultpreemption.default_preemption import SCALABLE
from gpufleet.scheduler.snapshot import Snapshot
from gpufleet.scheduling.queue_order import creation_step
from gpufleet.scheduling.result import Evicted, Preemption
from gpufleet.scheduling.run_state import STARTED_IN_CHECK, Outcome, PriorityInputs

#: The controllers that make a new pod for each of theirs that preemption evicts (a bare Pod is gone for good).
REMADE_BY = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "DaemonSet")
#: The labels that tell a controller's templates apart (a Deployment's ReplicaSets, a StatefulSet's and a
#: DaemonSet's revisions).
_TEMPLATE_LABELS = ("pod-template-hash", "controller-revision-hash")


def remade_pods(objects: list[dict], workloads: Sequence[PodWorkload],
                running: Sequence[BoundPod]) -> tuple[list[PodWorkload], dict[int, int]]:
    """The new pods that running pods' controllers make when preemption evicts them, as workloads to place: one
    per template (a controller's pods of one revision; a DaemonSet's per node, its pods being pinned to theirs),
    made from a running pod's spec less its node; and, per running pod (by `id`), its template's position in
    that list. Only pods that some workload of the check may evict (of lower priority than the highest that may
    preempt) and whose new pod the default scheduler places without DRA claims (whose devices a check does not
    free) and that has no topology spread or pod (anti-)affinity of its own (placed against other pods only
    for the check's workloads) are counted."""
    known = priority_classes(objects)
    top = max((known.of(w.spec) for w in workloads if w.replicas > 0 and known.preempts(w.spec)), default=None)
    made: list[PodWorkload] = []
    of: dict[int, int] = {}
    if top is None:
        return made, of
    templates: dict[tuple, int] = {}
    for p in running:
        if not p.workload or (known.of({}, p.priority_class) if p.priority is None else p.priority) >= top:
            continue
        spec = p.spec
        kind, _, rest = p.workload.partition("/")
        if kind not in REMADE_BY or not isinstance(spec, dict) or spec.get("resourceClaims") or has_pod_rules(spec) \
                or (spec.get("schedulerName") or "default-scheduler") != "default-scheduler":
            continue
        labels = dict(p.labels)
        template = (p.workload, *(labels.get(k, "") for k in _TEMPLATE_LABELS), p.node if kind == "DaemonSet" else "")
        at = templates.get(template)
        if at is None:
            at = templates[template] = len(made)
            namespace, _, name = rest.partition("/")
            made.append(PodWorkload(kind, namespace, name, {k: v for k, v in spec.items() if k != "nodeName"}, 1,
                                    "spec", labels=labels))
        of[id(p)] = at
    return made, of


def check_priorities(objects: list[dict], workloads: list[PodWorkload], indices: Sequence[int],
                     running: Sequence[BoundPod], snap: Snapshot,
                     group_of: Callable[[BoundPod], int | None] | None = None,
                     remade: dict[int, int] | None = None,
                     waiting: Mapping[str, int] | None = None) -> PriorityInputs | None:
    """The priorities of the workloads to schedule and of the running pods, or None when no pod can preempt
    (none may, or none has a lower-priority pod to evict): the check then runs as it always did. `group_of`:
    who holds a running pod's (anti-)affinity terms among the snapshot's placed terms. `remade`: per running
    pod (by `id`), the index in `workloads` of the new pod its controller makes when it is evicted (the
    workloads after `indices`, from `remade_pods`). `waiting`: per controller (workload key), its pods not bound
    yet (Pending), which its scale counts."""
    known, budgets = priority_classes(objects), budgets_of(objects)  # a malformed budget exits 2 either way
    priority = {i: known.of(workloads[i].spec) for i in indices}
    preempts = {i: known.preempts(workloads[i].spec) for i in indices}
    on_node = [p for p in running if p.node in snap.index]
    levels = [known.of({}, p.priority_class) if p.priority is None else p.priority for p in on_node]
    lowest = min([*priority.values(), *levels], default=0)
    if not any(preempts[i] and priority[i] > lowest for i in indices):
        return None
    remade = remade or {}
    for i in set(remade.values()):
        priority[i], preempts[i] = known.of(workloads[i].spec), known.preempts(workloads[i].spec)
    pods: list[list[Victim]] = [[] for _ in range(snap.n)]
    # Per node in the order the scheduler's node info would hold them: among equal priorities and start
    # times the pod bound first is the more important, and a pod that a controller made a step later was bound
    # later (gpufleet.scheduling.queue_order).
    order = sorted(range(len(on_node)), key=lambda k: creation_step(on_node[k].key.split("/", 1)[0]))
    for p, level in ((on_node[k], levels[k]) for k in order):
        pods[snap.index[p.node]].append(Victim(level, _started(p.start), p.key, -1, p.namespace, dict(p.labels),
                                               p.requests, p.non_zero(), p.ports,
                                               group_of(p) if group_of is not None else None,
                                               remade.get(id(p), -1)))
    scales = controller_scales(workloads, indices, running, waiting or {})
    return PriorityInputs(priority, preempts, pods, budgets, scales)


def controller_scales(workloads: Sequence[PodWorkload], indices: Sequence[int], running: Sequence[BoundPod],
            waiting: Mapping[str, int]) -> dict[str, int]:
    """Per controller whose scale the disruption controller reads: its replicas. A running one's are its pods,
    bound or Pending (its spec is not among the inputs); a workload of the check's, its manifest's."""
    scales: Counter[str] = Counter(p.workload for p in running if p.workload.split("/", 1)[0] in SCALABLE)
    scales.update({key: n for key, n in waiting.items() if key.split("/", 1)[0] in SCALABLE})
    for i in indices:
        if workloads[i].kind in SCALABLE:
            scales[workloads[i].key] = workloads[i].replicas
    return dict(scales)


def _started(stamp: str) -> float:
    """status.startTime in seconds; a pod not started yet counts as starting now (after every other)."""
    if not stamp:
        return STARTED_IN_CHECK
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return STARTED_IN_CHECK


def _count(value: Any, where: str) -> int | str | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return value
    raise InputError(f"{where}: {value!r} is not a count of pods or a percentage (allowed: 2, \"50%\")")


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def budgets_of(objects: list[dict]) -> list[Budget]:
    """The PodDisruptionBudgets among `objects`; a malformed one exits 2 naming its field."""
    out = []
    for obj in objects:
        if obj.get("kind") != "PodDisruptionBudget":
            continue
        meta = _mapping(obj.get("metadata"))
        name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "default")
        ref = f"PodDisruptionBudget/{namespace}/{name}"
        spec = _mapping(obj.get("spec"))
        selector = spec.get("selector")
        shape = Shape()
        label_selector(shape, selector, "spec.selector")
        if shape.errors:
            raise InputError("\n".join(f"{ref}: {e} (a label selector: matchLabels, matchExpressions)"
                                        for e in shape.errors))
        status = _mapping(obj.get("status"))
        allowed = status.get("disruptionsAllowed")
        if allowed is not None and (not isinstance(allowed, int) or isinstance(allowed, bool)):
            raise InputError(f"{ref}: status.disruptionsAllowed: {allowed!r} is not an integer")
        out.append(Budget(namespace, name, selector or {},
                          _count(spec.get("minAvailable"), f"{ref}: spec.minAvailable"),
                          _count(spec.get("maxUnavailable"), f"{ref}: spec.maxUnavailable"), allowed))
    return out


def preemption_verdict(key: str, outcome: Outcome, node_names: Sequence[str],
                       others: Sequence[Outcome] = ()) -> Preemption | None:
    """The pods a workload runs by preemption in one run, and whom they evicted (grouped per workload, node,
    priority and broken budget, in eviction order). A workload whose pods evicted pods and then lost the room
    to a workload of higher priority has victims and no pods; one whose pods took room already being freed
    for others has pods and no victims. `others`: the same workload in the other seeded runs,
    whose tie-breaks may have evicted other pods (their victim workloads and counts, where they differ)."""
    if not outcome.by_preemption and not outcome.evicted:
        return None
    groups: dict[tuple[str, int, int, str], int] = {}
    for node, victim, budget in outcome.evicted:
        group = (victim.key, node, victim.priority, budget)
        groups[group] = groups.get(group, 0) + 1
    victims = tuple(Evicted(w, n, node_names[node], priority, budget)
                    for (w, node, priority, budget), n in groups.items())
    mine = _per_workload(outcome)
    seen = [mine]
    for other in others:
        theirs = _per_workload(other)
        if theirs not in seen:
            seen.append(theirs)
    return Preemption(key, outcome.by_preemption, victims, tuple(seen[1:]), len(others) + 1,
                      sum(_per_workload(o) == mine for o in others) + 1)


def _per_workload(outcome: Outcome) -> dict[str, int]:
    """Victim workload -> pods evicted, in one run."""
    out: dict[str, int] = {}
    for _, victim, _ in outcome.evicted:
        out[victim.key] = out.get(victim.key, 0) + 1
    return dict(sorted(out.items()))
