"""`check_workloads`: will every workload run, and if not, why, in the scheduler's own words.

Per workload, in input order: API validation (rejected), then its pods through kube-scheduler's node
choice one after another (gpufleet.scheduling.simulation: the default profile's filters and scores, the
adaptive percentageOfNodesToScore and its rotating start). Where scores tie the scheduler picks at random,
so the whole sequence runs TIE_RUNS times (SMALL_FLEET_RUNS below SMALL_FLEET nodes) with different seeded
picks (once when no tie could matter):
- Pending (an error): pods stay Pending in every run;
- a warning: they pend in some runs only, which depends on the scheduler's random tie-breaks;
- fits: no run leaves a pod Pending.
The FailedScheduling text and the placements the report draws are those of the first run that pends (the
first run). For a Pending or warned workload, `blocked` names who holds the nodes it could have used.
"""

from __future__ import annotations

import dataclasses
import gc
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from gpufleet.admission import Admission, admit
from gpufleet.admission.validation import rejection
from gpufleet.capacity.dra import DRA_KINDS, dra_objects, labelled_errors
from gpufleet.capacity.kubectl import bound_pods, node_from_object, waiting_pods
from gpufleet.capacity.memory_budget import MemoryProblem, node_gpu_memory
from gpufleet.capacity.model import BoundPod, Node
from gpufleet.errors import GpufleetError, InputError
from gpufleet.manifests.workloads import PodWorkload, flatten, workloads_of
from gpufleet.scheduler.classes import NodeClasses
from gpufleet.scheduler.filters import default_framework, has_pod_rules, matches_node_affinity, pod_terms
from gpufleet.scheduler.node_tree import tree_order
from gpufleet.scheduler.plugins.imagelocality import ImageStates
from gpufleet.scheduler.snapshot import PodShape, Snapshot
from gpufleet.scheduling.result import CheckResult, Unschedulable, Warning
from gpufleet.scheduling.run_state import Run, SpreadInputs
from gpufleet.scheduling.simulation import Simulation

if TYPE_CHECKING:  # imported where used: CEL loads only for pods with claims
    from gpufleet.scheduler.plugins.dynamicresources.claims import DraState

DEFAULT_SCHEDULER = "default-scheduler"
#: How many tie-break outcomes are tried when ties could change an outcome; below SMALL_FLEET nodes, where a
#: run costs little, SMALL_FLEET_RUNS.
TIE_RUNS = 3
SMALL_FLEET, SMALL_FLEET_RUNS = 100, 8
#: How the check's pods are made, which decides what the system default topology spreading counts them with:
#: "direct" (the default): made directly, without an owner, as cluster-capacity and the reference scheduler
#: make them, so only the Services that select a pod give it default spreading; "controllers": made by their
#: controllers, as on a cluster, so a Deployment's ReplicaSet and a StatefulSet select their pods too; "off":
#: no default spreading (a profile with `defaultingType: List` and no constraints).
Spreading = Literal["direct", "controllers", "off"]
SPREADING: tuple[Spreading, ...] = ("direct", "controllers", "off")


def _nodes(nodes: Iterable[Node | dict]) -> list[Node]:
    return [n if isinstance(n, Node) else node_from_object(n) for n in nodes]


def _pods(pods: Iterable[BoundPod | dict]) -> list[BoundPod]:
    items = list(pods)
    objects = [p for p in items if isinstance(p, dict)]
    return [p for p in items if isinstance(p, BoundPod)] + bound_pods(objects)


def check_workloads(nodes: Sequence[Node | dict], running_pods: Sequence[BoundPod | dict], manifests: list[dict],
                    *, extended_resource_toleration: bool = False, tie_runs: int = TIE_RUNS,
                    preemption: bool = True, default_spreading: Spreading = "direct",
                    made_directly: frozenset[str] = frozenset(),
                    waiting: Mapping[str, int] | None = None, apart: frozenset[str] = frozenset()) -> CheckResult:
    """Check manifest dicts (Kubernetes JSON shape) against nodes and the pods already bound to them.

    `nodes` are capacity-model Nodes or Node objects as `kubectl get nodes -o json` items; `running_pods`
    are BoundPods or Pod objects (terminal and unbound ones are ignored). Numbers may be ints, floats or
    quantity strings. DRA objects (DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate of
    resource.k8s.io/v1) among the manifests are the devices and claims that pods with claims use.
    `preemption`: whether a pod that fits nowhere may evict pods of lower priority (DefaultPreemption).
    `default_spreading`: how the pods are made, which decides what the scheduler's system default topology
    spreading (the default profile's `defaultingType: System`) counts them with: "direct" (pods made without
    an owner, as cluster-capacity makes them: only Services select them), "controllers" (made by their
    controllers: a Deployment's ReplicaSet and a StatefulSet select them too) or "off". `made_directly`: keys
    of workloads whose pods are made without their owner whatever `default_spreading` says (the copies of a
    headroom probe, as cluster-capacity makes them). `waiting`: per controller (workload key), its pods not
    bound yet, which a PodDisruptionBudget without status counts in its controller's scale (Pod objects among
    `running_pods` that are not bound add theirs). `apart`: keys of workloads that each come after all the
    others, alone, on a copy of what they left (the probes of a headroom table, answered in one pass); not with
    preemption.
    """
    collecting = gc.isenabled()
    gc.disable()  # the check makes no reference cycles; collections would only rescan the parsed input
    try:
        # API admission first (LimitRange, Priority, ResourceQuota, Kueue): the scheduler only sees what it admits
        admission = admit(workloads_of(manifests), list(flatten(manifests)))
        workloads = admission.workloads
        pods = _pods(running_pods)
        pending = Counter(waiting or {})
        pending.update(waiting_pods(p for p in running_pods if isinstance(p, dict)))
        objects = list(flatten(manifests)) if preemption and _priorities_matter(manifests, workloads, pods) else []
        remade: tuple[list[PodWorkload], dict[int, int]] = ([], {})
        if objects:
            from gpufleet.scheduling.preempting import remade_pods

            remade = remade_pods(objects, workloads, pods)
        check = _Check(_nodes(nodes), pods, workloads, extended_resource_toleration, remade)
        check.waiting = pending
        check.admission = admission
        check.objects = objects
        check.namespaces = [o for o in flatten(manifests) if o.get("kind") == "Namespace"]
        if default_spreading not in SPREADING:
            raise ValueError(f"default_spreading must be one of {', '.join(SPREADING)}, not {default_spreading!r}")
        if default_spreading != "off":
            check.services = _service_selectors(flatten(manifests))
        check.owned = default_spreading == "controllers"
        check.made_directly = made_directly
        check.apart = apart
        if any(w.spec.get("resourceClaims") for w in workloads):
            from gpufleet.scheduler.plugins.dynamicresources.claims import (
                DraState,  # CEL loads only for pods with claims
            )

            objects = [o for o in flatten(manifests) if o.get("kind") in DRA_KINDS]
            problems = [e for i, o in enumerate(objects) for e in labelled_errors(o, f"DRA object {i + 1}")]
            if problems:  # objects from the Python API (the CLI has refused them already)
                raise InputError("\n".join(problems))
            check.dra_base = DraState(dra_objects(objects))
        if tie_runs == TIE_RUNS and len(check.nodes) < SMALL_FLEET:
            tie_runs = SMALL_FLEET_RUNS
        check.run(max(1, tie_runs))
        return check.result
    finally:
        if collecting:
            gc.enable()


class _Check:
    def __init__(self, node_list: list[Node], pods: list[BoundPod], workloads: list[PodWorkload], ert: bool,
                 remade: tuple[list[PodWorkload], dict[int, int]] = ([], {})):
        """`remade`: the new pods running pods' controllers make when preemption evicts them, and per running pod
        (by `id`) its own (gpufleet.scheduling.preempting.remade_pods)."""
        ordered = [node_list[i] for i in tree_order(node_list)]
        self.snapshot = Snapshot(ordered, pods)
        self.nodes, self.running, self.workloads, self.ert = ordered, pods, workloads, ert
        self.remade, self.remade_of = remade
        self.framework = default_framework()  # every pod has the default scheduler's profile
        self.classes = NodeClasses(ordered, (w.spec for w in (*workloads, *self.remade)), self.framework)
        self.class_of = np.array(self.classes.of, dtype=np.int64)
        self.images = ImageStates(ordered)
        self.result = CheckResult()
        self.dra_base: DraState | None = None
        self.admission: Admission | None = None
        self.objects: list[dict] = []
        self.namespaces: list[dict] = []
        self.services: dict[str, list[dict[str, str]]] | None = None
        """Per namespace, the selectors of its Services; None: no system default spreading."""
        self.made_directly: frozenset[str] = frozenset()
        self.apart: frozenset[str] = frozenset()
        """Keys of workloads each placed alone after the others (check_workloads' `apart`)."""
        self.waiting: Mapping[str, int] = {}
        """Per controller, its pods not bound yet (check_workloads' `waiting`)."""
        self.owned = False
        """Whether a workload's pods have its controller as their owner (else made directly)."""
        self._affinity: dict[str, np.ndarray] = {}
        self._terms_groups: dict[tuple[str, str], int] = {}
        """Running pods with pod (anti-)affinity, by namespace and terms: who holds their terms when placed."""
        self._shapes: dict[str, PodShape] = {}
        self.shapes: dict[int, PodShape] = {}

    def run(self, tie_runs: int) -> None:
        result = self.result
        shapes: dict[int, PodShape] = {}
        early: dict[int, Unschedulable | Warning] = {}  # answered before any placement
        for index, w in enumerate(self.workloads):
            result.checked.append(w.key)
            try:
                found = self._admit(w)
            except GpufleetError as e:
                raise InputError(f"{w.key}: {e}") from e
            if isinstance(found, PodShape):
                shapes[index] = found
            elif found is not None:
                early[index] = found
        kind_of = self.class_of * (len(self.images.sets) or 1) + (self.images.group_of if self.images.sets else 0)
        constraints = self._pod_constraints(shapes)
        priorities = None
        remade: dict[int, PodShape] = {}
        if self.objects:
            from gpufleet.scheduling.preempting import check_priorities

            groups = self._terms_groups
            first = len(self.workloads)
            priorities = check_priorities(self.objects, [*self.workloads, *self.remade], list(shapes), self.running,
                                          self.snapshot, lambda p: groups.get((p.namespace, repr(p.pod_affinity)))
                                          if p.pod_affinity else None,
                                          {pod: first + k for pod, k in self.remade_of.items()}, self.waiting)
            if priorities is not None:
                remade = {first + k: self._shape(w) for k, w in enumerate(self.remade)}
        apart = [i for i in shapes if self.workloads[i].key in self.apart]
        if apart and priorities is not None:
            raise ValueError("workloads placed apart are answered without preemption (preemption=False)")
        simulation = Simulation(self.snapshot, [*self.workloads, *self.remade], shapes, kind_of, self.dra_base,
                                constraints, priorities, self._default_spreads(shapes), remade, apart)
        runs = [simulation.run(0)]
        if runs[0].decisive_ties:
            runs += [simulation.run(seed) for seed in range(1, tie_runs)]
        self.shapes = shapes
        refused: dict[str, list[Unschedulable]] = {}
        warned: dict[str, list[Warning]] = {}
        if self.admission is not None:
            for r in self.admission.rejections:
                refused.setdefault(r.workload, []).append(
                    Unschedulable(r.workload, "rejected", r.refused, r.message, admitted=r.admitted, refused_by=r.by))
            for a in self.admission.warnings:
                warned.setdefault(a.subject, []).append(Warning(a.subject, a.message, reason="admission"))
        for index in range(len(self.workloads)):
            key = self.workloads[index].key
            result.unschedulable += refused.pop(key, [])
            result.warnings += warned.pop(key, [])
            if index in early:
                entry = early[index]
                if isinstance(entry, Unschedulable):
                    result.unschedulable.append(entry)
                else:
                    result.warnings.append(entry)
            elif index in shapes:
                try:
                    self._verdict(index, shapes[index], runs)
                except GpufleetError as e:
                    raise InputError(f"{self.workloads[index].key}: {e}") from e
        result.warnings += [w for ws in warned.values() for w in ws]  # about quota objects, not workloads
        if remade:
            self._remade(remade, runs)
        defaulted = self.admission.defaulted if self.admission is not None else {}
        if defaulted:  # each explanation says which LimitRange put in a request the template does not make
            result.unschedulable = [dataclasses.replace(u, defaulted=tuple(defaulted[u.workload]))
                                    if u.workload in defaulted else u for u in result.unschedulable]

    def _remade(self, remade: dict[int, PodShape], runs: list[Run]) -> None:
        """Where the new pods of evicted running pods went, and the evictions in turn: running workloads whose
        evicted pods their controllers made again, and whom those new pods evicted (one entry per workload, its
        templates together)."""
        from gpufleet.scheduling.preempting import preemption_verdict
        from gpufleet.scheduling.run_state import Outcome

        first = len(self.workloads)
        by_key: dict[str, list[int]] = {}
        for index in remade:
            by_key.setdefault(self.remade[index - first].key, []).append(index)
        names = [node.name for node in self.nodes]
        for key, indices in by_key.items():
            counts: dict[int, int] = {}
            for index in indices:
                for node in getattr(runs[0].outcomes.get(index), "nodes", ()):
                    counts[node] = counts.get(node, 0) + 1
            self.result.remade_placements += [(key, names[n], c) for n, c in sorted(counts.items())]
            merged = []
            for r in runs:
                out = Outcome()
                for got in (r.outcomes[i] for i in indices if i in r.outcomes):
                    out.by_preemption += got.by_preemption
                    out.evicted += got.evicted
                    out.preempted_by = out.preempted_by or got.preempted_by
                merged.append(out)
            found = preemption_verdict(key, merged[0], names, merged[1:])
            if found is not None:
                self.result.preemptions.append(dataclasses.replace(found, remade_after=merged[0].preempted_by))

    def _pod_constraints(self, shapes: dict[int, PodShape]) -> dict:
        """Per workload, its pods against the others, when any pod of the check has topology spread or pod
        (anti-)affinity, or a running pod has pod (anti-)affinity: the snapshot then keeps the pods on each
        node with their labels, and the terms of the pods there."""
        running = [p for p in self.running if p.pod_affinity and p.node in self.snapshot.index]
        if not running and not any(has_pod_rules(self.workloads[i].spec) for i in shapes):
            return {}
        from gpufleet.scheduler.plugins.interpodaffinity import merge_namespace_selectors, terms_of
        from gpufleet.scheduler.pod_constraints import PlacedTerms, PodConstraints
        from gpufleet.scheduler.pods_on_nodes import PodsOnNodes

        snap = self.snapshot
        snap.pods = PodsOnNodes(snap.n, [(snap.index[p.node], p.namespace, dict(p.labels))
                                         for p in self.running if p.node in snap.index])
        snap.placed = PlacedTerms(snap.n)
        groups = self._terms_groups  # running pods with the same terms count as one holder
        labels = self._namespace_labels()
        for p in running:
            group = groups.setdefault((p.namespace, repr(p.pod_affinity)), -1 - len(groups))
            affinity = merge_namespace_selectors(p.pod_affinity or {}, labels)
            snap.placed.place(group, terms_of({"affinity": affinity}, p.namespace), snap.index[p.node])
        out = {}
        for i in shapes:
            w = self.workloads[i]
            ok = self._affinity_ok(w, shapes[i])
            spec = w.spec
            if isinstance(spec.get("affinity"), dict):
                spec = {**spec, "affinity": merge_namespace_selectors(spec["affinity"], labels)}
            out[i] = PodConstraints(self.framework, spec, w.namespace, w.labels, ok)
        return out

    def _affinity_ok(self, w: PodWorkload, shape: PodShape) -> np.ndarray:
        """Per node, whether it matches the workload's node selector and required node affinity (what the
        pods a spread counts must match); workloads with the same node terms share one array."""
        terms = pod_terms(w.spec, shape.requests, self.ert)
        key = repr(terms)
        found = self._affinity.get(key)
        if found is None:
            by_class = np.array([matches_node_affinity(node, terms) for node in self.classes.nodes], dtype=bool)
            found = self._affinity[key] = by_class[self.class_of]
        return found

    def _default_spreads(self, shapes: dict[int, PodShape]) -> dict[int, SpreadInputs]:
        """Per workload whose pods get the system default topology spreading (no constraints of their own, a
        non-empty default selector), what its scores count."""
        if self.services is None or not shapes or not (self.owned or any(self.services.values())):
            return {}  # off, or pods made directly with no Service to select them
        from gpufleet.labels import selector_matches
        from gpufleet.scheduler.plugins.default_plugins import PROFILE
        from gpufleet.scheduler.plugins.helper import default_selector
        from gpufleet.scheduler.plugins.podtopologyspread.system_default import HOSTNAME, ZONE, Layout

        weight = next(w for p, w in PROFILE if p.name == "PodTopologySpread") or 0
        snap = self.snapshot
        layout = Layout(snap.domains(HOSTNAME) >= 0, snap.domains(ZONE))
        out: dict[int, SpreadInputs] = {}
        by_namespace: dict[str, list[tuple[int, dict[str, str]]]] | None = None  # running pods, read once
        for i in shapes:
            w = self.workloads[i]
            if w.spec.get("topologySpreadConstraints"):
                continue
            kind = w.kind if self.owned and w.key not in self.made_directly else "Pod"  # made directly: no owner
            selector, own_only = default_selector(kind, w.selector, w.labels, self.services.get(w.namespace, []))
            if selector is None:
                continue
            base = None
            matchers: tuple[int, ...] = (i,)
            if not own_only:
                base = np.zeros(snap.n, dtype=np.int64)
                if by_namespace is None:
                    by_namespace = {}
                    for p in self.running:
                        at = snap.index.get(p.node)
                        if at is not None:
                            by_namespace.setdefault(p.namespace, []).append((at, dict(p.labels)))
                for at, labels in by_namespace.get(w.namespace, ()):
                    if selector_matches(selector, labels):
                        base[at] += 1
                others = self.workloads
                matchers = tuple(j for j in shapes if j == i or (
                    others[j].namespace == w.namespace and selector_matches(selector, others[j].labels)))
            if base is not None and not base.any():
                base = None
            out[i] = SpreadInputs(base, matchers, layout, self._affinity_ok(w, shapes[i]), weight)
        return out

    def _namespace_labels(self) -> dict[str, dict[str, str]]:
        """Every namespace a pod of the check is or will be in, and those Namespace objects among the inputs
        name, with their labels (the API server sets `kubernetes.io/metadata.name` on each)."""
        from gpufleet.admission import namespace_labels

        labels = {ns: namespace_labels(ns, None)
                  for ns in {p.namespace for p in self.running} | {w.namespace for w in self.workloads}}
        for obj in self.namespaces:
            meta = obj.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            name = meta.get("name")
            if isinstance(name, str) and name:
                labels[name] = namespace_labels(name, meta.get("labels"))
        return labels

    def _admit(self, w: PodWorkload) -> PodShape | Unschedulable | Warning | None:
        """API validation and the scheduler name: the workload's pod shape when the scheduler will see it,
        else what to report (None: nothing, as for zero replicas)."""
        message = rejection(w)
        if message is not None:
            return Unschedulable(w.key, "rejected", w.replicas, message)
        if w.replicas <= 0:
            return None
        scheduler = w.spec.get("schedulerName") or DEFAULT_SCHEDULER
        if scheduler != DEFAULT_SCHEDULER:
            return Warning(w.key, f"scheduled by '{scheduler}', whose rules gpufleet does not model; not checked")
        return self._shape(w)

    def _shape(self, w: PodWorkload) -> PodShape:
        """The shape of a workload's pods, shared by workloads whose pods every plugin sees alike."""
        from gpufleet.capacity.requests import pod_requests

        terms = pod_terms(w.spec, pod_requests(w.spec), self.ert)
        # Pods with equal filter terms and equal fragments of every plugin's declared reads share one shape
        # (upstream's SignPod): a plugin that reads a new field only declares it.
        signature = repr((terms, self.framework.sign_pod(w.spec)))
        shape = self._shapes.get(signature)
        if shape is None:
            static = self.classes.static(repr(terms), terms)
            shape = self._shapes[signature] = PodShape(w.spec, terms, self.classes, static, self.images, self.class_of)
        return shape

    def _verdict(self, index: int, shape: PodShape, runs: list[Run]) -> None:
        w, result = self.workloads[index], self.result
        outcomes = [r.outcomes[index] for r in runs]
        pending_runs = [k for k, o in enumerate(outcomes) if o.pending]
        result.pending_by_run[w.key] = tuple(o.pending for o in outcomes)
        shown = outcomes[pending_runs[0]] if pending_runs else outcomes[0]
        first = outcomes[0]
        counts: dict[int, int] = {}
        for node in first.nodes:
            counts[node] = counts.get(node, 0) + 1
        result.placements += [(w.key, self.nodes[i].name, n) for i, n in sorted(counts.items())]
        if first.released and not first.pending:
            result.warnings.append(Warning(w.key, _reallocated(first.released)))
        if first.by_preemption or first.evicted:
            from gpufleet.scheduling.preempting import preemption_verdict

            found = preemption_verdict(w.key, first, [node.name for node in self.nodes], outcomes[1:])
            if found is not None:
                result.preemptions.append(found)
        for node, used, allocated in first.devices:
            result.devices += [(w.key, self.nodes[node].name, d.label) for d in allocated]
            result.device_uses += [(w.key, self.nodes[node].name, d.label) for d in used]
        if pending_runs:
            from gpufleet.scheduling.blocked import blocked_by

            run = runs[pending_runs[0]]
            blocked = blocked_by(index, shape, shown, run, self.workloads, self.shapes, self.snapshot,
                                 self.dra_base)
            if len(pending_runs) == len(runs):
                result.unschedulable.append(Unschedulable(w.key, "pending", shown.pending, shown.message, blocked))
            else:
                result.warnings.append(Warning(
                    w.key, f"{shown.pending} of {w.replicas} pods stay Pending in {len(pending_runs)} of {len(runs)} "
                           f"runs of the scheduler: where scores tie it picks a node at random, and some picks leave "
                           f"too little room: {shown.message}", blocked))
        if w.spec.get("resourceClaims"):
            self._device_memory(w, first)
        elif not (w.annotations and self._model_memory(w, shape)):
            result.memory += _memory(w, [(self.nodes[i], n) for i, n in sorted(counts.items())], shape.requests, result)

    def _model_memory(self, w: PodWorkload, shape: PodShape) -> bool:
        """A workload's model against the GPU memory of the nodes it may land on; True when that decided it."""
        from gpufleet.capacity.model_fit import MODEL_ANNOTATION, check_manifest_model, container_argv

        if MODEL_ANNOTATION not in w.annotations:
            return False
        eligible = [self.nodes[i] for i in np.flatnonzero(shape.eligible)]
        verdict = check_manifest_model(w.key, w.annotations, eligible, shape.requests, container_argv(w.spec))
        if verdict is None:  # no model declared (the annotation is there, so not reached)
            return False
        result = self.result
        result.warnings += [Warning(w.key, m, reason="model") for m in verdict.warnings]
        if verdict.error is not None:
            result.unschedulable.append(Unschedulable(w.key, "memory", w.replicas, verdict.error))
            result.memory.append(MemoryProblem(w.key, verdict.need_mib, verdict.budget_mib, verdict.error,
                                               error=True))
        return not verdict.overridden

    def _device_memory(self, w: PodWorkload, first) -> None:
        from gpufleet.capacity.model_fit import MODEL_ANNOTATION
        from gpufleet.scheduler.plugins.dynamicresources.claims import memory_mib
        from gpufleet.scheduling.dra_memory import model_on_devices

        if MODEL_ANNOTATION in w.annotations and model_on_devices(w, first.devices, self.result):
            return
        expected = w.expected_gpu_memory_mib
        for node, used, _ in first.devices:
            budget = memory_mib(used)
            if expected is not None and budget is not None and expected > budget:
                text = (f"{w.key} expects {expected} MiB of GPU memory; the devices allocated to its claims on "
                        f"node {self.nodes[node].name} have {budget} MiB")
                self.result.warnings.append(Warning(w.key, text))
                self.result.memory.append(MemoryProblem(w.key, expected, budget, text))
                break


#: Objects that make preemption's inputs: classes give priorities, budgets are read (and refused when malformed).
_PREEMPTION_KINDS = ("PriorityClass", "PodDisruptionBudget")


def _priorities_matter(manifests: list[dict], workloads: Sequence[PodWorkload], pods: Sequence[BoundPod]) -> bool:
    """Whether any pod may have a priority other than 0, or a budget is given: else every pod's priority is 0,
    nothing may preempt, and a check need not load preemption at all."""
    return (any(o.get("kind") in _PREEMPTION_KINDS for o in flatten(manifests))
            or any("priorityClassName" in w.spec or "priority" in w.spec for w in workloads)
            or any(p.priority or p.priority_class for p in pods))


def _service_selectors(objects: Iterable[dict]) -> dict[str, list[dict[str, str]]]:
    """Per namespace, the `spec.selector` of each Service among the inputs that has one (a Service without a
    selector selects no pod)."""
    out: dict[str, list[dict[str, str]]] = {}
    for obj in objects:
        if obj.get("kind") != "Service":
            continue
        meta, spec = obj.get("metadata"), obj.get("spec")
        selector = spec.get("selector") if isinstance(spec, dict) else None
        if not isinstance(selector, dict):
            continue
        namespace = (meta.get("namespace") if isinstance(meta, dict) else None) or "default"
        out.setdefault(str(namespace), []).append({str(k): str(v) for k, v in selector.items()})
    return out


def _memory(w: PodWorkload, placed: list[tuple[Node, int]], requests, result: CheckResult) -> list[MemoryProblem]:
    expected = w.expected_gpu_memory_mib
    if expected is None:
        return []
    problems = []
    for node, n in placed:
        got = node_gpu_memory(node, requests)
        if got is None:
            continue
        budget, how, what = got
        total = expected * n if how == "time-slicing" else expected
        if how == "time-slicing":
            devices = int(node.labels.get("nvidia.com/gpu.count", "1") or 1)
            budget *= devices
            what = f"{n} pod(s) on {devices} time-sliced device(s) of node {node.name}"
        if total > budget:
            problems.append(MemoryProblem(w.key, total, budget,
                                          f"{w.key} expects {total} MiB of GPU memory; {what} gives it {budget} MiB"))
    for p in problems:
        result.warnings.append(Warning(p.workload, p.message))
    return problems[:1] if problems else []


def _reallocated(released: list[tuple[int, tuple[str, str]]]) -> str:
    """The warning for a workload placed only once the scheduler deallocated claims it uses: (its pod, the
    claim) per deallocation."""
    claims_freed = dict.fromkeys(claim for _, claim in released)
    names = ", ".join(f"{ns}/{name}" for ns, name in claims_freed)
    pods = len({pod for pod, _ in released})
    who = "a pod finds" if pods == 1 else f"{pods} of its pods find"
    one = len(claims_freed) == 1
    claims = f"ResourceClaim {names} is" if one else f"ResourceClaims {names} are"
    return (f"{who} no node at first: {claims} allocated to devices on a node the pod cannot use and reserved for "
            f"no pod. The scheduler deallocates {'it' if one else 'each'}, tries the pod again, and allocates the "
            f"claim anew; in a cluster that retry waits out the scheduler's backoff, and other pods may take the "
            f"devices first")
