"""The ResourceQuota admission plugin on pods: which quotas a pod is counted against, what it counts, and the
refusal of the pod that would cross a limit, in the API server's words.

Read at kubernetes/kubernetes v1.34:
- `pkg/quota/v1/evaluator/core/pods.go` (stored index commit 05e7cb29dcda): the items a pod is counted
  under (`pods`, `count/pods`, `cpu`/`memory`/`ephemeral-storage` and their `requests.`/`limits.` forms,
  hugepages, and an extended resource only as `requests.<name>`); usage from PodRequests/PodLimits (overhead
  included); scopes (Terminating, NotTerminating, BestEffort, NotBestEffort, PriorityClass,
  CrossNamespacePodAffinity); the backward-compatible rule that a quota on cpu or memory requires every
  container to set it (`must specify ...`).
- `staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go` CheckRequest: quotas whose
  items and scopes match; `failed quota: NAME: ...`; `status unknown for quota: NAME, resources: ...` when a
  live quota has no usage recorded for an item; the pod's usage masked to each quota's items, added to
  `status.used` and compared with `status.hard`; the first quota crossed refuses the pod with `exceeded quota:
  NAME, requested: ..., used: ..., limited: ...` (items sorted, `name=quantity` joined by commas).

A quota given as a manifest (no `status`) starts from zero usage, as its controller computes it once created;
a quota read from a cluster starts from its `status.used`. The quotas of a namespace are checked by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufleet.admission.pods import (
    containers,
    is_best_effort,
    pod_limit_quantities,
    pod_request_quantities,
    quantities,
    requests_limits,
)
from gpufleet.admission.quantities import ZERO, Q
from gpufleet.validation.resources import is_extended, is_native

#: podResources: the items the pod evaluator counts by exact name.
POD_ITEMS = frozenset({"count/pods", "pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
                       "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage"})
#: validationSet: quota items that oblige every container to set the resource.
REQUIRED_ITEMS = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})
SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
          "CrossNamespacePodAffinity", "VolumeAttributesClass")


def counted_for_pods(item: str) -> bool:
    """MatchingResources: whether the pod evaluator counts this quota item at all."""
    return (item in POD_ITEMS or item.startswith(("hugepages-", "requests.hugepages-"))
            or (not is_native(item) and item.startswith("requests.")))


@dataclass
class Quota:
    namespace: str
    name: str
    hard: dict[str, Q]
    used: dict[str, Q]
    live: bool
    """Read from a cluster (has `status.hard`): its `status.used` must cover every item it counts."""
    selectors: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)
    """(scopeName, operator, values): `spec.scopes` as Exists, then `spec.scopeSelector.matchExpressions`."""

    @property
    def ref(self) -> str:
        return f"ResourceQuota/{self.namespace}/{self.name}"


def quota_of(namespace: str, name: str, obj: dict) -> Quota:
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    status = obj.get("status")
    status = status if isinstance(status, dict) else {}
    live = isinstance(status.get("hard"), dict)
    hard = quantities(status.get("hard") if live else spec.get("hard"))
    # A manifest quota: its controller fills status.used with zeros as soon as it exists.
    used = quantities(status.get("used")) if live else {k: ZERO for k in hard}
    selectors: list[tuple[str, str, tuple[str, ...]]] = []
    if isinstance(spec.get("scopes"), list):
        selectors = [(s, "Exists", ()) for s in spec["scopes"] if isinstance(s, str)]
    selector = spec.get("scopeSelector")
    expressions = selector.get("matchExpressions") if isinstance(selector, dict) else None
    for e in expressions if isinstance(expressions, list) else ():
        if isinstance(e, dict) and isinstance(e.get("scopeName"), str):
            values = e.get("values")
            values = tuple(str(v) for v in values) if isinstance(values, list) else ()
            selectors.append((e["scopeName"], str(e.get("operator") or ""), values))
    return Quota(namespace, name, hard, used, live, selectors)


def _is_terminating(spec: dict) -> bool:
    deadline = spec.get("activeDeadlineSeconds")
    return isinstance(deadline, (int, float)) and not isinstance(deadline, bool) and deadline >= 0


def _cross_namespace(spec: dict) -> bool:
    affinity = spec.get("affinity")
    affinity = affinity if isinstance(affinity, dict) else {}
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = affinity.get(kind)
        rules = rules if isinstance(rules, dict) else {}
        terms = list(rules.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [w.get("podAffinityTerm") for w in rules.get("preferredDuringSchedulingIgnoredDuringExecution") or []
                  if isinstance(w, dict)]
        for t in terms:
            if isinstance(t, dict) and (t.get("namespaces") or t.get("namespaceSelector") is not None):
                return True
    return False


def _scope_matches(scope: str, operator: str, values: tuple[str, ...], spec: dict, class_name: str) -> bool:
    if scope == "Terminating":
        return _is_terminating(spec)
    if scope == "NotTerminating":
        return not _is_terminating(spec)
    if scope == "BestEffort":
        return is_best_effort(spec)
    if scope == "NotBestEffort":
        return not is_best_effort(spec)
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace(spec)
    if scope == "PriorityClass":
        # A label selector on the single label PriorityClass=<class name> (none when the pod has no class).
        if operator == "Exists":
            return bool(class_name)
        if operator == "DoesNotExist":
            return not class_name
        if operator == "In":
            return bool(class_name) and class_name in values
        if operator == "NotIn":
            return not class_name or class_name not in values
        return False
    return False


def pod_usage(spec: dict) -> dict[str, Q]:
    """What one pod counts against quota (podComputeUsageHelper over PodRequests/PodLimits), zeros left out."""
    usage = _compute_usage(pod_request_quantities(spec), pod_limit_quantities(spec))
    return {k: v for k, v in usage.items() if v.value != 0}


def _compute_usage(requests: dict[str, Q], limits: dict[str, Q]) -> dict[str, Q]:
    one = Q(ZERO.value + 1)
    out = {"pods": one, "count/pods": one}
    for resource in ("cpu", "memory", "ephemeral-storage"):
        if resource in requests:
            out[resource] = out[f"requests.{resource}"] = requests[resource]
        if resource in limits:
            out[f"limits.{resource}"] = limits[resource]
    for name, value in requests.items():
        if name.startswith("hugepages-"):
            out[name] = out[f"requests.{name}"] = value
        elif is_extended(name):
            out[f"requests.{name}"] = value
    return out


def _missing(spec: dict, required: set[str]) -> str | None:
    """The pod evaluator's Constraints: every container must set the cpu/memory items a quota tracks."""
    if not required:
        return None
    missing: dict[str, set[str]] = {}
    for _, _, c in containers(spec):
        have = set(_compute_usage(*requests_limits(c)))
        for item in required - have:
            missing.setdefault(item, set()).add(str(c.get("name") or ""))
    if not missing:
        return None
    return "must specify " + "; ".join(f"{item} for: {','.join(sorted(missing[item]))}" for item in sorted(missing))


def _pretty(items: dict[str, Q]) -> str:
    return ",".join(f"{k}={items[k]}" for k in sorted(items))


class QuotaState:
    """The quotas of the check's namespaces and the usage the pods admitted so far have added."""

    def __init__(self, quotas: list[Quota]):
        self.by_namespace: dict[str, list[Quota]] = {}
        for quota in sorted(quotas, key=lambda x: (x.namespace, x.name)):
            self.by_namespace.setdefault(quota.namespace, []).append(quota)

    def admit_pods(self, namespace: str, spec: dict, class_name: str, count: int) -> tuple[int, Quota | None, str]:
        """Count `count` identical pods one after another: how many get in, and the quota that refuses the
        next one with the reason (None, "" when all get in). The quotas' usage grows by the pods let in."""
        quotas = self.by_namespace.get(namespace)
        if not quotas or count <= 0:
            return max(count, 0), None, ""
        interesting = []
        for quota in quotas:
            restricted = {k for k in quota.hard if counted_for_pods(k)}
            if not restricted or not all(_scope_matches(s, o, v, spec, class_name) for s, o, v in quota.selectors):
                continue
            problem = _missing(spec, restricted & REQUIRED_ITEMS)
            if problem is not None:
                return 0, quota, f"failed quota: {quota.name}: {problem}"
            if quota.live and any(k not in quota.used for k in restricted):
                return 0, quota, f"status unknown for quota: {quota.name}, resources: " + ",".join(sorted(restricted))
            interesting.append(quota)
        usage = pod_usage(spec)
        for i in range(count if interesting else 0):
            updates = []
            for quota in interesting:
                requested = {k: v for k, v in usage.items() if k in quota.hard}
                new = {k: quota.used[k] + v if k in quota.used else v for k, v in requested.items()}
                exceeded = sorted(k for k, v in new.items() if v.value > quota.hard[k].value)
                if exceeded:
                    return i, quota, (
                        f"exceeded quota: {quota.name}, requested: {_pretty({k: requested[k] for k in exceeded})}, "
                        f"used: {_pretty({k: quota.used[k] for k in exceeded if k in quota.used})}, "
                        f"limited: {_pretty({k: quota.hard[k] for k in exceeded})}")
                updates.append((quota, new))
            for quota, new in updates:
                quota.used.update(new)
        return count, None, ""


def quota_key_warnings(quotas: list[Quota]) -> list[tuple[str, str]]:
    """(quota ref, message) for each item that can never count a pod but was clearly meant to: an extended
    resource without the `requests.` prefix, or with `limits.`."""
    out = []
    for quota in sorted(quotas, key=lambda x: (x.namespace, x.name)):
        for item in sorted(quota.hard):
            if counted_for_pods(item):
                continue
            if item.startswith("limits.") and is_extended(item[len("limits."):]):
                resource = item[len("limits."):]
            elif is_extended(item) and not item.startswith("count/") and not item.split("/", 1)[0].endswith(".k8s.io"):
                resource = item  # storage-class and device-class items (`<name>.<kind>.<group>.k8s.io/...`) excepted
            else:
                continue
            message = (f"quota item {item} limits nothing: extended resources are counted only as "
                       f"requests.{resource}; write requests.{resource}: {quota.hard[item]}")
            out.append((quota.ref, message))
    return out
