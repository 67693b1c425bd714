"""What the API server (and Kueue) let in before the scheduler sees a pod: LimitRange defaults and limits,
Priority admission, ResourceQuota, and Kueue's quota for queued Jobs. Pure functions over manifest dicts.

`admit(workloads, objects)` runs, per workload in input order and per pod in the order a controller creates
them, what kube-apiserver v1.34 runs on a pod create:
1. decoding defaults (a container's missing requests default to its limits);
2. mutating admission: LimitRanger injects each LimitRange's Container defaults; Priority resolves the
   PriorityClass (forbidden when it does not exist, where the classes are known);
3. validation of the pod as mutated (a default that breaks a request/limit rule makes the pod invalid);
4. validating admission: LimitRanger's min/max/maxLimitRequestRatio, then ResourceQuota, pod by pod.
A Job queued to Kueue (`kueue.x-k8s.io/queue-name`) is first admitted by Kueue (flavor assignment on the
pods as defaulted); its pods are created only then. See docs/admission.md.

Workloads in namespaces without LimitRanges, ResourceQuotas or Kueue queues, naming no unknown
PriorityClass, come back as the very same objects. The modules of LimitRange, Priority, ResourceQuota and
Kueue load only where their objects (or a queued Job) are among the inputs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from gpufleet.admission.model import Admission, AdmissionWarning, Defaulted, Rejection, Source
from gpufleet.admission.pods import pod_name, with_defaulted_requests
from gpufleet.manifests.workloads import PodWorkload, flatten, workload_of

if TYPE_CHECKING:
    from gpufleet.admission.limitrange import LimitRange
    from gpufleet.admission.priority import PriorityClass
    from gpufleet.admission.quota import Quota, QuotaState

__all__ = ["Admission", "AdmissionWarning", "Defaulted", "Rejection", "admit"]

QUEUED_KINDS = ("Job", "CronJob")
KUEUE_KINDS = ("ClusterQueue", "LocalQueue", "ResourceFlavor")


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def namespace_labels(name: str, labels: Any) -> dict[str, str]:
    """A namespace's labels as the API server keeps them: `kubernetes.io/metadata.name` is always its name."""
    return {**{str(k): str(v) for k, v in _dict(labels).items()}, "kubernetes.io/metadata.name": name}


class _Objects:
    """The admission-relevant objects among the inputs, by kind."""

    def __init__(self, objects: Iterable[Any]):
        self.limit_ranges: dict[str, list[LimitRange]] = {}
        self.quotas: list[Quota] = []
        self.classes: dict[str, PriorityClass] = {}
        self.classes_known = False
        self.namespace_labels: dict[str, dict[str, str]] = {}
        self.sources: dict[str, dict] = {}
        kueue: dict[str, list[dict]] = {kind: [] for kind in KUEUE_KINDS}
        for obj in flatten(objects):
            kind, meta = obj.get("kind"), _dict(obj.get("metadata"))
            name = str(meta.get("name") or "")
            namespace = str(meta.get("namespace") or "default")
            api = str(obj.get("apiVersion") or "")
            if kind == "LimitRange":
                from gpufleet.admission.limitrange import limit_range

                self.limit_ranges.setdefault(namespace, []).append(limit_range(namespace, name, obj.get("spec")))
            elif kind == "ResourceQuota":
                from gpufleet.admission.quota import quota_of

                self.quotas.append(quota_of(namespace, name, obj))
            elif kind == "PriorityClass":
                from gpufleet.admission.priority import PriorityClass

                self.classes_known = True
                value = obj.get("value")
                if isinstance(value, int) and not isinstance(value, bool):
                    self.classes[name] = PriorityClass(name, value, obj.get("globalDefault") is True)
            elif kind == "Namespace":
                self.namespace_labels[name] = namespace_labels(name, meta.get("labels"))
            elif kind in KUEUE_KINDS:
                from gpufleet.admission.kueue import GROUP

                if api.startswith(GROUP):
                    kueue[kind].append(obj)
            elif kind in QUEUED_KINDS:
                w = workload_of(obj)
                if w is not None:
                    self.sources.setdefault(w.key, obj)
        for ranges in self.limit_ranges.values():
            ranges.sort(key=lambda lr: lr.name)
        cqs, lqs, flavors = (kueue[kind] for kind in KUEUE_KINDS)
        self.kueue = None
        if cqs or lqs:
            from gpufleet.admission.kueue import KueueState

            self.kueue = KueueState(cqs, lqs, flavors, self.namespace_labels)


def admit(workloads: list[PodWorkload], objects: list[dict]) -> Admission:
    """The workloads as admission leaves them, what it refuses, and what it warns about.

    `objects`: every object given to the check (manifests and kubectl List items); the LimitRanges,
    ResourceQuotas (with `status.used` when read from a cluster), PriorityClasses, Namespaces and Kueue
    ClusterQueues, LocalQueues and ResourceFlavors among them are used. Malformed entries in those objects
    are skipped, never raised.
    """
    from gpufleet.admission.validation import rejection

    found = _Objects(objects)
    result = Admission([])
    quotas = None  # no ResourceQuota among the inputs: none counts a pod
    if found.quotas:
        from gpufleet.admission.quota import QuotaState, quota_key_warnings

        quotas = QuotaState(found.quotas)
        result.warnings += [AdmissionWarning(ref, text) for ref, text in quota_key_warnings(found.quotas)]
    if found.sources:
        from gpufleet.admission.kueue import queue_name
    for w in workloads:
        source = found.sources.get(w.key)
        queue = queue_name(source) if source is not None else None
        ranges = found.limit_ranges.get(w.namespace, [])
        counted = quotas is not None and w.namespace in quotas.by_namespace
        if not (ranges or counted or queue or found.classes_known) or w.replicas <= 0 or rejection(w) is not None:
            result.workloads.append(w)
            continue
        result.workloads.append(_admit_one(w, ranges, queue, found, quotas, result))
    return result


def _refuse(w: PodWorkload, result: Admission, admitted: int, by: str, reason: str, source: Source,
            invalid: bool = False) -> PodWorkload:
    name = pod_name(w, admitted)
    message = f'Pod "{name}" is invalid: {reason}' if invalid else f'pods "{name}" is forbidden: {reason}'
    result.rejections.append(Rejection(w.key, w.replicas - admitted, admitted, by, reason, message, source))
    return dataclasses.replace(w, replicas=admitted) if admitted == 0 else w


def _admit_one(w: PodWorkload, ranges: list[LimitRange], queue: str | None, found: _Objects,
               quotas: QuotaState | None, result: Admission) -> PodWorkload:
    from gpufleet.admission.limitrange import aggregate, inject_defaults, violations
    from gpufleet.admission.priority import resolve
    from gpufleet.validation.resources import aggregate as field_aggregate
    from gpufleet.validation.resources import spec_errors

    spec = with_defaulted_requests(w.spec)
    defaulted = inject_defaults(spec, ranges)
    if defaulted:
        result.defaulted[w.key] = defaulted
    changed = bool(defaulted)
    priority = resolve(spec, found.classes, found.classes_known)
    if priority.error is not None:
        return _refuse(w, result, 0, f"PriorityClass/{_dict(w.spec).get('priorityClassName')}", priority.error,
                       "Priority")
    if changed:
        errors = spec_errors(spec, "spec")
        if errors:
            return _refuse(w, result, 0, ranges[0].ref, field_aggregate(errors), "PodValidation", invalid=True)
    for lr in ranges:
        messages = violations(spec, lr)
        if messages:
            return _refuse(w, result, 0, lr.ref, aggregate(messages), "LimitRanger")
    if queue is not None:
        if found.kueue is None:
            outcome, by, message, placed = "never", f"LocalQueue/{w.namespace}/{queue}", \
                f"LocalQueue {queue} doesn't exist", None
        else:
            outcome, by, message, placed = found.kueue.admit(w.namespace, queue, spec, w.replicas)
        if outcome == "never":
            return _kueue_refuse(w, result, by, message)
        if outcome == "wait":
            result.warnings.append(AdmissionWarning(
                w.key, f"stays suspended in Kueue until quota is free ({by}): {message}", "kueue-wait"))
            return dataclasses.replace(w, replicas=0)
        assert placed is not None, "an admission comes with the spec placed on its flavor"
        spec, changed = placed, True
    admitted, quota, reason = (max(w.replicas, 0), None, "") if quotas is None else \
        quotas.admit_pods(w.namespace, spec, priority.class_name, w.replicas)
    if quota is not None:
        _refuse(w, result, admitted, quota.ref, reason, "ResourceQuota")
    if admitted == 0 and w.replicas > 0:
        return dataclasses.replace(w, replicas=0)
    if not changed and admitted == w.replicas:
        return w
    return dataclasses.replace(w, spec=spec if changed else w.spec, replicas=admitted)


def _kueue_refuse(w: PodWorkload, result: Admission, by: str, message: str) -> PodWorkload:
    """A queued Job Kueue can never admit: it stays suspended, none of its pods is created."""
    result.rejections.append(Rejection(w.key, w.replicas, 0, by, message,
                                       f"{w.object_ref} is never admitted by Kueue: {message}", "Kueue"))
    return dataclasses.replace(w, replicas=0)
