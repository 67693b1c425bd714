"""`check_workloads`: will every workload run, and if not, why, in the scheduler's own words.

Per workload, in input order: API validation (rejected) -> effective pod request -> static filters per
node class -> NodeResourcesFit against free capacity. Earlier workloads consume capacity, simulated twice:
packed (tightest nodes first) and spread (the default scheduler's LeastAllocated, which ignores GPUs).
Verdicts follow scheduling-rules.md 4.2:
- Pending (an error) only when pods pend under every placement: the workload alone does not fit, or the
  workloads placed so far plus this one provably cannot all be placed: by an exact search on small
  inputs (at most 64 pods and 32 nodes), and by cut bounds over node classes at any scale
  (gpufleet.scheduling.bounds). The FailedScheduling text is the one for the packed simulation.
- A warning when the outcome depends on how earlier workloads were placed.
Nodes are grouped into classes and buckets (gpufleet.scheduling.classes, .buckets), so a fleet costs
what its distinct node shapes and the pods placed cost, not nodes x workloads.
"""

from __future__ import annotations

import gc
from typing import Iterable, Sequence

from gpufleet.capacity.dra import DRA_KINDS, dra_objects, labelled_errors
from gpufleet.capacity.kubectl import bound_pods, node_from_object
from gpufleet.capacity.memory_budget import MemoryProblem, node_gpu_memory
from gpufleet.capacity.model import BoundPod, Node
from gpufleet.capacity.model_fit import MODEL_ANNOTATION, check_manifest_model, container_argv
from gpufleet.capacity.requests import pod_requests
from gpufleet.errors import GpufleetError, InputError
from gpufleet.scheduling.bounds import CutBound, Kind
from gpufleet.scheduling.buckets import FreeState, Request
from gpufleet.scheduling.classes import NodeClasses
from gpufleet.scheduling.filters import checked_request, failed_scheduling, fit_failures, pod_terms
from gpufleet.scheduling.manifests import PodWorkload, flatten, workloads_of
from gpufleet.scheduling.placement import ClusterState, SmallSearch
from gpufleet.scheduling.result import CheckResult, Unschedulable, Warning
from gpufleet.scheduling.validation import rejection

DEFAULT_SCHEDULER = "default-scheduler"


def _nodes(nodes: Iterable[Node | dict]) -> list[Node]:
    return [n if isinstance(n, Node) else node_from_object(n) for n in nodes]


def _pods(pods: Iterable[BoundPod | dict]) -> list[BoundPod]:
    items = list(pods)
    objects = [p for p in items if isinstance(p, dict)]
    return [p for p in items if isinstance(p, BoundPod)] + bound_pods(objects)


def check_workloads(nodes: Sequence[Node | dict], running_pods: Sequence[BoundPod | dict], manifests: list[dict],
                    *, extended_resource_toleration: bool = False) -> CheckResult:
    """Check manifest dicts (Kubernetes JSON shape) against nodes and the pods already bound to them.

    `nodes` are capacity-model Nodes or Node objects as `kubectl get nodes -o json` items; `running_pods`
    are BoundPods or Pod objects (terminal and unbound ones are ignored). Numbers may be ints, floats or
    quantity strings. DRA objects (DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate of
    resource.k8s.io/v1) among the manifests are the devices and claims that pods with claims use.
    """
    collecting = gc.isenabled()
    gc.disable()  # the check makes no reference cycles; collections would only rescan the parsed input
    try:
        node_list = _nodes(nodes)
        workloads = workloads_of(manifests)
        check = _Check(node_list, _pods(running_pods), workloads, extended_resource_toleration)
        if any(w.spec.get("resourceClaims") for w in workloads):
            from gpufleet.scheduling.dra.claims import DraState  # CEL loads only for pods with claims

            objects = [o for o in flatten(manifests) if o.get("kind") in DRA_KINDS]
            problems = [e for i, o in enumerate(objects) for e in labelled_errors(o, f"DRA object {i + 1}")]
            if problems:  # objects from the Python API (the CLI has refused them already)
                raise InputError("\n".join(problems))
            check.dra_base = DraState(dra_objects(objects))
            check.dra = check.dra_base.copy()
        for w in workloads:
            check.result.checked.append(w.key)
            try:
                check.one(w)
            except GpufleetError as e:
                raise InputError(f"{w.key}: {e}") from e
        return check.result
    finally:
        if collecting:
            gc.enable()


class _Check:
    """The state of one check: the base, packed and spread simulations and what was placed so far."""

    def __init__(self, node_list: list[Node], pods: list[BoundPod], workloads: list[PodWorkload], ert: bool):
        self.nodes, self.ert = node_list, ert
        self.classes = NodeClasses(node_list, (w.spec for w in workloads))
        base = ClusterState(node_list, pods)
        self.base = FreeState(self.classes, base.free, base.pods_free)
        self.packed, self.spread = self.base.copy(), self.base.copy()
        self.search = SmallSearch(base, self.classes)
        self.bound = CutBound(self.base)
        self.result = CheckResult()
        self.dra_base = self.dra = None  # DraStates, when pods have DRA claims
        self._requests: dict[tuple, dict[int, Request]] = {}
        self._alone: dict[tuple, int] = {}
        self._kinds: dict[tuple, Kind] = {}
        self._messages: dict[tuple, tuple[list[int], str]] = {}

    def one(self, w: PodWorkload) -> None:
        result = self.result
        message = rejection(w)
        if message is not None:
            result.unschedulable.append(Unschedulable(w.key, "rejected", w.replicas, message))
            return
        if w.replicas <= 0:
            return
        scheduler = w.spec.get("schedulerName") or DEFAULT_SCHEDULER
        if scheduler != DEFAULT_SCHEDULER:
            result.warnings.append(Warning(w.key, f"scheduled by '{scheduler}', whose rules gpufleet does not "
                                                  "model; not checked"))
            return
        requests = pod_requests(w.spec)
        terms = pod_terms(w.spec, requests, self.ert)
        signature = repr(terms)
        static = self.classes.static(signature, terms)
        key = (signature, tuple(sorted(requests.items())))
        reqs = self._per_class(key, static, requests)
        if w.spec.get("resourceClaims"):
            self._with_claims(w, key, static, reqs)
            return
        wanted = w.replicas
        alone = self._alone.get((key, wanted))
        if alone is None:
            alone = self._alone[(key, wanted)] = self.base.capacity(reqs, wanted)
        placements = self.packed.pack(reqs, wanted)
        result.placements += [(w.key, self.nodes[i].name, n) for i, n in placements]
        n_packed = sum(n for _, n in placements)
        n_spread = self.spread.spread(reqs, wanted)
        best = max(n_packed, n_spread)
        kind = self._kinds.get(key)
        if kind is None:
            kind = self._kinds[key] = Kind(key, reqs)
        if best < wanted:
            proven = alone < wanted or self._proven(kind, wanted)
            text = self._message(self.packed, "packed", key, static, reqs)
            if proven:
                result.unschedulable.append(Unschedulable(w.key, "pending", wanted - best, text))
            else:
                result.warnings.append(Warning(w.key, f"{wanted - best} of {wanted} pods may stay Pending, depending "
                                                      f"on where earlier workloads land: {text}"))
        elif n_spread < wanted:
            text = self._message(self.spread, "spread", key, static, reqs)
            result.warnings.append(Warning(
                w.key, f"{wanted - n_spread} of {wanted} pods fit only if earlier workloads are packed tightly; the "
                       f"default scheduler spreads pods (its scoring ignores GPUs) and may leave them Pending: {text}"))
        if best:
            self.search.add(reqs, best)
            self.bound.add(kind, best)
        if not self._model_memory(w, static, requests):
            result.memory += _memory(w, self.nodes, requests, placements, result)

    def _with_claims(self, w: PodWorkload, key: tuple, static: list[str | None], reqs: dict[int, Request]) -> None:
        """A workload whose pods have DRA claims: placed one pod at a time, devices allocated per node."""
        from gpufleet.scheduling.dra.claims import memory_mib

        wanted, result = w.replicas, self.result
        alone, _ = self._claims_run(w, static, reqs, self.dra_base.copy(), self.base.copy(), None)
        placed, attempts = self._claims_run(w, static, reqs, self.dra, self.packed, self.spread)
        for a in attempts:
            if a.node is not None:
                result.placements.append((w.key, self.nodes[a.node].name, 1))
                result.devices += [(w.key, self.nodes[a.node].name, d.label) for d in a.allocated]
                result.device_uses += [(w.key, self.nodes[a.node].name, d.label) for d in a.devices]
        if placed < wanted:
            text = attempts[-1].message
            if alone < wanted:
                result.unschedulable.append(Unschedulable(w.key, "pending", wanted - placed, text))
            else:
                result.warnings.append(Warning(w.key, f"{wanted - placed} of {wanted} pods may stay Pending, "
                                                      f"depending on where earlier workloads land: {text}"))
        if placed:
            kind = self._kinds.get(key)
            if kind is None:
                kind = self._kinds[key] = Kind(key, reqs)
            self.search.add(reqs, placed)
            self.bound.add(kind, placed)
        if MODEL_ANNOTATION in w.annotations and self._model_on_devices(w, attempts):
            return
        expected = w.expected_gpu_memory_mib
        for a in attempts:
            budget = memory_mib(a.devices) if a.node is not None else None
            if expected is not None and budget is not None and expected > budget:
                text = (f"{w.key} expects {expected} MiB of GPU memory; the devices allocated to its claims on "
                        f"node {self.nodes[a.node].name} have {budget} MiB")
                result.warnings.append(Warning(w.key, text))
                result.memory.append(MemoryProblem(w.key, expected, budget, text))
                break

    def _model_on_devices(self, w: PodWorkload, attempts) -> bool:
        """A declared model against each GPU its claims were allocated (the device's published memory);
        True when the model decided the memory verdict (a misfit is an error, as on labelled nodes)."""
        import json

        from gpufleet.capacity.model_fit import container_argv, misfit_message
        from gpufleet.nvidia.model_budget import dra_budget
        from gpufleet.nvidia.model_memory import from_annotation, need_per_gpu
        from gpufleet.scheduling.dra.claims import memory_mib

        try:
            doc = json.loads(w.annotations[MODEL_ANNOTATION])
            label, shape, serving, vllm = from_annotation(doc if isinstance(doc, dict) else {})
        except (json.JSONDecodeError, ValueError) as e:
            raise InputError(f"{w.key}: annotation {MODEL_ANNOTATION} is not usable: {e}") from e
        argv = container_argv(w.spec)
        for a in attempts:
            for device in (a.devices if a.node is not None else []):
                mib = memory_mib([device])
                if mib is None:
                    continue
                budget = dra_budget(device.label, mib)
                message = misfit_message(w.key, label, shape, serving, budget, None, vllm, argv)
                if message is not None:
                    self.result.unschedulable.append(Unschedulable(w.key, "memory", w.replicas, message))
                    self.result.memory.append(MemoryProblem(w.key, need_per_gpu(shape, serving).mib,
                                                            budget.usable_mib, message, error=True))
                    return True
        return True

    def _claims_run(self, w, static, reqs, dra, packed, spread):
        """Place the workload's pods one by one until one stays Pending: (pods placed, attempts)."""
        from gpufleet.scheduling.dra.place import schedule_one

        attempts = []
        for _ in range(w.replicas):
            a = schedule_one(dra, packed, self.nodes, static, reqs, w.namespace, w.name, w.spec)
            attempts.append(a)
            if a.node is None:
                break
            if spread is not None and not fit_failures(*spread.free_of(a.node), reqs[self.classes.of[a.node]]):
                spread.place_on(a.node, reqs[self.classes.of[a.node]])
        return sum(a.node is not None for a in attempts), attempts

    def _model_memory(self, w: PodWorkload, static: list[str | None], requests: dict[str, int]) -> bool:
        """A workload's model against the GPU memory of the nodes it may land on; True when that decided it."""
        if MODEL_ANNOTATION not in w.annotations:
            return False
        members = self.classes.members
        eligible = [self.nodes[i] for c, s in enumerate(static) if s is None for i in members[c]]
        verdict = check_manifest_model(w.key, w.annotations, eligible, requests, container_argv(w.spec))
        result = self.result
        result.warnings += [Warning(w.key, m) for m in verdict.warnings]
        if verdict.error is not None:
            result.unschedulable.append(Unschedulable(w.key, "memory", w.replicas, verdict.error))
            result.memory.append(MemoryProblem(w.key, verdict.need_mib, verdict.budget_mib, verdict.error,
                                               error=True))
        return not verdict.overridden

    def _per_class(self, key: tuple, static: list[str | None], requests: dict[str, int]) -> dict[int, Request]:
        """The request each eligible class checks (resources of unknown size left out), by class."""
        found = self._requests.get(key)
        if found is None:
            nodes = self.classes.nodes
            found = self._requests[key] = {c: checked_request(requests, nodes[c].unknown)
                                           for c, s in enumerate(static) if s is None}
        return found

    def _proven(self, kind: Kind, wanted: int) -> bool:
        decided = self.search.can_place_all(kind.requests, wanted)
        if decided is not None:
            return not decided
        return self.bound.proves_pending(kind, wanted)

    def _message(self, state: FreeState, which: str, key: tuple, static: list[str | None],
                 reqs: dict[int, Request]) -> str:
        """FailedScheduling for one more pod: each node's first failing filter, counted (cached per version)."""
        versions = [state.version[c] for c in reqs]
        cached = self._messages.get((which, key))
        if cached is not None and cached[0] == versions:
            return cached[1]
        counts: dict[str, int] = {}
        members = self.classes.members
        for c, failure in enumerate(static):
            if failure is not None:
                counts[failure] = counts.get(failure, 0) + len(members[c])
            else:
                for reason, n in state.failures(c, reqs[c]).items():
                    counts[reason] = counts.get(reason, 0) + n
        text = failed_scheduling(counts, len(self.nodes))
        self._messages[(which, key)] = (versions, text)
        return text


def _memory(w: PodWorkload, node_list, requests, placements, result: CheckResult) -> list[MemoryProblem]:
    expected = w.expected_gpu_memory_mib
    if expected is None:
        return []
    problems = []
    for i, n in placements:
        got = node_gpu_memory(node_list[i], requests)
        if got is None:
            continue
        budget, how, what = got
        total = expected * n if how == "time-slicing" else expected
        if how == "time-slicing":
            devices = int(node_list[i].labels.get("nvidia.com/gpu.count", "1") or 1)
            budget *= devices
            what = f"{n} pod(s) on {devices} time-sliced device(s) of node {node_list[i].name}"
        if total > budget:
            problems.append(MemoryProblem(w.key, total, budget,
                                          f"{w.key} expects {total} MiB of GPU memory; {what} gives it {budget} MiB"))
    for p in problems:
        result.warnings.append(Warning(p.workload, p.message))
    return problems[:1] if problems else []
