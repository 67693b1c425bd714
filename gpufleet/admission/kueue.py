"""Kueue's admission of queued Jobs: the LocalQueue and ClusterQueue a Job is queued to, and the flavor
assignment that reserves quota for its pods, in Kueue's own words.

Follows Kueue release v0.19.2 (kubernetes-sigs/kueue tag v0.19.2, commit 8eab68778fc1, 2026-08-20), read at
`pkg/scheduler/flavorassigner/flavorassigner.go`, `pkg/controller/core/workload_controller.go`
(getQueueBlocker), `pkg/workload/resources.go` (ErrNamespaceMismatch) and `pkg/resources/resource_formatter.go`:
- a Workload whose LocalQueue does not exist is inadmissible: `LocalQueue NAME doesn't exist`; likewise
  `ClusterQueue NAME doesn't exist`; a stopped queue: `... is inactive`; a namespace the ClusterQueue's
  selector leaves out: `workload namespace doesn't match ClusterQueue selector`;
- a requested resource no resource group covers ends the search: `resource R unavailable in ClusterQueue`
  (the first one met; Go walks the requests in map order, gpufleet by name);
- per resource group, flavors are tried in order: a flavor whose `nodeTaints` (NoSchedule/NoExecute) the pod
  and the flavor's `tolerations` do not tolerate is skipped (`untolerated taint K=V:E in flavor F`), as is one
  whose `nodeLabels` contradict the pod's nodeSelector on the flavor's own label keys (`flavor F doesn't
  match node affinity`);
- per resource of a flavor (every one is checked, also after one cannot fit), the pod set's total request
  against the flavor's quota: above the most the ClusterQueue could ever get (nominal quota, plus what it may
  borrow in its cohort: the other members' lendable quota, capped by its borrowingLimit) it can never fit:
  `insufficient quota for R in flavor F, previously considered podsets requests (A) + current podset request
  (B) > maximum capacity (C)` (A is 0: gpufleet reads one pod set); within that but above what is unused now
  it waits: `insufficient unused quota for R in flavor F, N more needed`; the first flavor that fits is
  assigned;
- a resource group no flavor can ever fit replaces the reasons gathered so far; the condition message is
  `couldn't assign flavors to pod set main: ` and the reasons sorted (Status.Message), joined by `, `.
An admitted Job's pods get the flavor's `nodeLabels` in their nodeSelector and its `tolerations`.

Not modelled: preemption within the ClusterQueue or cohort (a Job that waits may get in by preempting lower
priority workloads), Cohort objects with their own quota and hierarchical cohorts, fair sharing,
topology-aware scheduling, admission checks, partial admission, flavor fungibility settings other than the
defaults, and the pod, JobSet, RayJob and other integrations (only batch/v1 Job and CronJob are read).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from gpufleet.admission.pods import pod_request_quantities, quantities
from gpufleet.admission.quantities import Q, quantity_string
from gpufleet.labels import selector_matches  # metav1.LabelSelector; null selects nothing, as namespaceSelector
from gpufleet.taints import tolerates_taint

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GROUP = "kueue.x-k8s.io/"
POD_SET = "main"


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def units(resource: str, value: Q) -> int:
    """Kueue's int64 for a quantity: MilliValue for cpu, Value (rounded up) for the rest."""
    return value.milli if resource == "cpu" else math.ceil(value.value)


def shown(resource: str, value: int) -> str:
    """resources.ResourceQuantityString."""
    if resource == "cpu":
        return quantity_string(Decimal(value) / 1000)
    binary = resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")
    return quantity_string(Decimal(value), binary)


@dataclass
class Flavor:
    name: str
    node_labels: dict[str, str]
    node_taints: list[dict]
    tolerations: list[dict]


@dataclass
class FlavorQuota:
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None


@dataclass
class ClusterQueue:
    name: str
    cohort: str
    groups: list[tuple[list[str], list[tuple[str, dict[str, FlavorQuota]]]]]
    namespace_selector: dict | None
    stopped: bool
    used: dict[tuple[str, str], int] = field(default_factory=dict)
    """(flavor, resource) -> reserved, from `status.flavorsReservation` and the Jobs admitted in the check."""

    def quota(self, flavor: str, resource: str) -> FlavorQuota | None:
        for _, flavors in self.groups:
            for name, resources in flavors:
                if name == flavor and resource in resources:
                    return resources[resource]
        return None


def flavor_of(obj: dict) -> Flavor:
    spec = _dict(obj.get("spec"))
    labels = {str(k): str(v) for k, v in _dict(spec.get("nodeLabels")).items()}
    return Flavor(str(_dict(obj.get("metadata")).get("name") or ""), labels,
                  [t for t in _list(spec.get("nodeTaints")) if isinstance(t, dict)],
                  [t for t in _list(spec.get("tolerations")) if isinstance(t, dict)])


def cluster_queue_of(obj: dict) -> ClusterQueue:
    spec = _dict(obj.get("spec"))
    groups = []
    for group in _list(spec.get("resourceGroups")):
        group = _dict(group)
        covered = [str(r) for r in _list(group.get("coveredResources"))]
        flavors = []
        for f in _list(group.get("flavors")):
            f = _dict(f)
            resources = {}
            for r in _list(f.get("resources")):
                r = _dict(r)
                name = str(r.get("name") or "")
                parsed = quantities({k: r.get(k) for k in ("nominalQuota", "borrowingLimit", "lendingLimit")
                                     if r.get(k) is not None})
                if "nominalQuota" not in parsed:
                    continue
                resources[name] = FlavorQuota(
                    units(name, parsed["nominalQuota"]),
                    units(name, parsed["borrowingLimit"]) if "borrowingLimit" in parsed else None,
                    units(name, parsed["lendingLimit"]) if "lendingLimit" in parsed else None)
            flavors.append((str(f.get("name") or ""), resources))
        groups.append((covered, flavors))
    selector = spec.get("namespaceSelector")
    cq = ClusterQueue(str(_dict(obj.get("metadata")).get("name") or ""),
                      str(spec.get("cohortName") or spec.get("cohort") or ""), groups,
                      selector if isinstance(selector, dict) else None,
                      spec.get("stopPolicy") in ("Hold", "HoldAndDrain"))
    status = _dict(obj.get("status"))
    for entry in _list(status.get("flavorsReservation")) or _list(status.get("flavorsUsage")):
        entry = _dict(entry)
        for r in _list(entry.get("resources")):
            r = _dict(r)
            total = quantities({"t": r.get("total")}).get("t")
            if total is not None:
                cq.used[(str(entry.get("name")), str(r.get("name")))] = units(str(r.get("name")), total)
    return cq


def queue_name(obj: dict) -> str | None:
    """The Kueue queue a Job (or a CronJob's jobs) is submitted to."""
    meta = _dict(obj.get("metadata"))
    if obj.get("kind") == "CronJob":
        meta = _dict(_dict(_dict(obj.get("spec")).get("jobTemplate")).get("metadata"))
    for where in ("labels", "annotations"):
        name = _dict(meta.get(where)).get(QUEUE_LABEL)
        if isinstance(name, str) and name:
            return name
    return None


def _tolerates(toleration: dict, taint: dict) -> bool:
    return tolerates_taint(toleration, str(taint.get("key") or ""), taint.get("value"),
                           str(taint.get("effect") or ""))


def _taint_text(taint: dict) -> str:
    value = taint.get("value")
    return f"{taint.get('key')}={value}:{taint.get('effect')}" if value else f"{taint.get('key')}:{taint.get('effect')}"


def _affinity_matches(spec: dict, labels: dict[str, str]) -> bool:
    """The pod's nodeSelector and required node affinity, restricted to the flavor's label keys."""
    for k, v in _dict(spec.get("nodeSelector")).items():
        if k in labels and labels[k] != v:
            return False
    required = _dict(_dict(_dict(spec.get("affinity")).get("nodeAffinity"))
                     .get("requiredDuringSchedulingIgnoredDuringExecution"))
    terms = [t for t in _list(required.get("nodeSelectorTerms")) if isinstance(t, dict)]
    if not terms:
        return True
    for term in terms:
        expressions = [e for e in _list(term.get("matchExpressions")) if isinstance(e, dict) and e.get("key") in labels]
        if selector_matches({"matchExpressions": expressions}, labels):
            return True
    return False


class KueueState:
    """The Kueue objects of the check and the quota the Jobs admitted so far reserve."""

    def __init__(self, cluster_queues: list[dict], local_queues: list[dict], flavors: list[dict],
                 namespace_labels: dict[str, dict[str, str]]):
        self.cqs = {cq.name: cq for cq in map(cluster_queue_of, cluster_queues)}
        self.lqs: dict[tuple[str, str], dict] = {}
        for lq in local_queues:
            meta = _dict(lq.get("metadata"))
            self.lqs[(str(meta.get("namespace") or "default"), str(meta.get("name") or ""))] = lq
        self.flavors = {f.name: f for f in map(flavor_of, flavors)}
        self.namespace_labels = namespace_labels

    def admit(self, namespace: str, queue: str, spec: dict, count: int) -> tuple[str, str, str, dict | None]:
        """("admitted" | "wait" | "never", the object that decides, Kueue's message, the spec with the
        flavor's labels and tolerations when admitted)."""
        lq = self.lqs.get((namespace, queue))
        if lq is None:
            return "never", f"LocalQueue/{namespace}/{queue}", f"LocalQueue {queue} doesn't exist", None
        lq_spec = _dict(lq.get("spec"))
        name = str(lq_spec.get("clusterQueue") or "")
        if lq_spec.get("stopPolicy") in ("Hold", "HoldAndDrain"):
            return "wait", f"LocalQueue/{namespace}/{queue}", f"LocalQueue {queue} is inactive", None
        cq = self.cqs.get(name)
        if cq is None:
            return "never", f"ClusterQueue/{name}", f"ClusterQueue {name} doesn't exist", None
        ref = f"ClusterQueue/{cq.name}"
        if cq.stopped:
            return "wait", ref, f"ClusterQueue {cq.name} is inactive", None
        labels = self.namespace_labels.get(namespace, {"kubernetes.io/metadata.name": namespace})
        if not selector_matches(cq.namespace_selector, labels):
            return "never", ref, "workload namespace doesn't match ClusterQueue selector", None
        per_pod = pod_request_quantities(spec)
        covered = {r for group, _ in cq.groups for r in group}
        wanted = {r: units(r, v) * count for r, v in sorted(per_pod.items()) if units(r, v) > 0}
        if "pods" in covered:
            wanted["pods"] = count
        uncovered = sorted(r for r in wanted if r not in covered)
        if uncovered:  # the first resource found without a group ends the search (Go map order: any of them)
            return "never", ref, _message([f"resource {uncovered[0]} unavailable in ClusterQueue"]), None
        chosen: list[tuple[Flavor, dict[str, int]]] = []
        reasons: list[str] = []
        for group, flavors in cq.groups:
            asked = {r: v for r, v in wanted.items() if r in group}
            if not asked:
                continue
            picked, mode, group_reasons = self._assign(cq, asked, flavors, spec)
            if picked is None and mode == "never":  # this group's reasons replace the others'
                return "never", ref, _message(group_reasons), None
            reasons += group_reasons
            if picked is not None:
                chosen.append((picked, asked))
        if reasons:
            return "wait", ref, _message(reasons), None
        out = copy.deepcopy(spec)
        for flavor, asked in chosen:
            for r, v in asked.items():
                cq.used[(flavor.name, r)] = cq.used.get((flavor.name, r), 0) + v
            if flavor.node_labels:
                selector = out.get("nodeSelector")
                if not isinstance(selector, dict):
                    selector = out["nodeSelector"] = {}
                for label, value in flavor.node_labels.items():
                    selector.setdefault(label, value)
            if flavor.tolerations:
                out["tolerations"] = _list(out.get("tolerations")) + copy.deepcopy(flavor.tolerations)
        names = ", ".join(f.name for f, _ in chosen)
        return "admitted", ref, f"Quota reserved in ClusterQueue {cq.name} (flavor {names})", out

    def _assign(self, cq: ClusterQueue, asked: dict[str, int], flavors,
                spec: dict) -> tuple[Flavor | None, str, list[str]]:
        """One resource group: the first flavor that fits (no reasons then), else None, "wait" or "never" and
        every reason of every flavor tried (each resource of a flavor is checked, as Kueue's loop does)."""
        best = "never"
        reasons: list[str] = []
        tolerations = [t for t in _list(spec.get("tolerations")) if isinstance(t, dict)]
        for name, _ in flavors:
            flavor = self.flavors.get(name)
            if flavor is None:
                reasons.append(f"flavor {name} not found")
                continue
            untolerated = [t for t in flavor.node_taints if t.get("effect") in ("NoSchedule", "NoExecute")
                           and not any(_tolerates(x, t) for x in tolerations + flavor.tolerations)]
            if untolerated:
                reasons.append(f"untolerated taint {_taint_text(untolerated[0])} in flavor {name}")
                continue
            if not _affinity_matches(spec, flavor.node_labels):
                reasons.append(f"flavor {name} doesn't match node affinity")
                continue
            fits = [self._fits(cq, name, r, val, reasons) for r, val in asked.items()]
            mode = "never" if "never" in fits else "wait" if "wait" in fits else "fit"
            if mode == "fit":
                return flavor, "fit", []
            if mode == "wait":
                best = "wait"
        return None, best, reasons

    def _fits(self, cq: ClusterQueue, flavor: str, resource: str, val: int, reasons: list[str]) -> str:
        own = cq.quota(flavor, resource)
        if own is None:
            reasons.append(_exceeds(resource, flavor, val, 0))
            return "never"
        used = cq.used.get((flavor, resource), 0)
        potential, available = own.nominal, own.nominal - used
        if cq.cohort:
            lendable, consumed = 0, 0
            for other in self.cqs.values():
                if other is cq or other.cohort != cq.cohort:
                    continue
                theirs = other.quota(flavor, resource)
                if theirs is None:
                    continue
                lends = theirs.nominal if theirs.lending_limit is None else min(theirs.lending_limit, theirs.nominal)
                lendable += lends
                consumed += max(0, other.used.get((flavor, resource), 0) - (theirs.nominal - lends))
            borrow = lendable if own.borrowing_limit is None else min(lendable, own.borrowing_limit)
            potential = own.nominal + borrow
            available = min(own.nominal + borrow - used, own.nominal + lendable - used - consumed)
        if val > potential:
            reasons.append(_exceeds(resource, flavor, val, potential))
            return "never"
        if val <= available:
            return "fit"
        reasons.append(f"insufficient unused quota for {resource} in flavor {flavor}, "
                       f"{shown(resource, val - max(available, 0))} more needed")
        return "wait"


def _exceeds(resource: str, flavor: str, request: int, capacity: int) -> str:
    """Kueue's never-fits reason. The one pod set gpufleet reads (main) has no pod set before it, so the
    requests already considered are 0."""
    return (f"insufficient quota for {resource} in flavor {flavor}, previously considered podsets requests "
            f"({shown(resource, 0)}) + current podset request ({shown(resource, request)}) > maximum capacity "
            f"({shown(resource, capacity)})")


def _message(reasons: list[str]) -> str:
    """Assignment.Message for the one pod set: its reasons sorted (Status.Message sorts them) and joined."""
    return f"couldn't assign flavors to pod set {POD_SET}: " + ", ".join(sorted(reasons))
