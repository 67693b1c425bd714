"""Pod specs as admission sees them: container resources as quantities, pod sums, QoS, generated names.

Sources (kubernetes/kubernetes v1.34): `pkg/apis/core/v1/defaults.go` SetDefaults_Pod (a container's missing
request defaults to its limit, on every created pod, templates' pods included); PodRequests/PodLimits as the
quota evaluator uses them (the one rule in gpufleet.capacity.requests, here over printable quantities);
`pkg/apis/core/v1/helper/qos` GetPodQOS (only cpu and memory decide BestEffort).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

from gpufleet.admission.quantities import Q, q
from gpufleet.capacity.requests import pod_amounts
from gpufleet.manifests.workloads import PodWorkload

CONTAINER_LISTS = ("containers", "initContainers")
QOS_RESOURCES = ("cpu", "memory")


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def containers(spec: dict) -> Iterator[tuple[str, int, dict]]:
    """(list name, index, container) for app then init containers, skipping entries that are not objects."""
    for key in CONTAINER_LISTS:
        items = spec.get(key)
        for i, c in enumerate(items if isinstance(items, list) else ()):
            if isinstance(c, dict):
                yield key, i, c


def quantities(mapping: Any) -> dict[str, Q]:
    """A ResourceList as quantities; entries that are not quantities are left out (API validation reports
    them, see gpufleet.validation.resources)."""
    out = {}
    for name, value in _dict(mapping).items():
        parsed = q(value)
        if parsed is not None and isinstance(name, str):
            out[name] = parsed
    return out


def requests_limits(container: Mapping[str, Any]) -> tuple[dict[str, Q], dict[str, Q]]:
    resources = _dict(container.get("resources"))
    return quantities(resources.get("requests")), quantities(resources.get("limits"))


def with_defaulted_requests(spec: dict) -> dict:
    """A deep copy of the spec with every container's missing requests set to its limits (SetDefaults_Pod)."""
    out = copy.deepcopy(spec)
    for _, _, c in containers(out):
        resources = c.get("resources")
        if not isinstance(resources, dict):
            continue
        limits = _dict(resources.get("limits"))
        if not limits:
            continue
        requests = resources.get("requests")
        if not isinstance(requests, dict):
            requests = resources["requests"] = {}
        for name, value in limits.items():
            requests.setdefault(name, value)
    return out


def pod_request_quantities(spec: dict, overhead: bool = True) -> dict[str, Q]:
    """PodRequests as quantities: what the pod asks for (the quota evaluator adds `spec.overhead`; the
    LimitRanger does not). Requests are read as written: admission defaults them from limits first."""
    extra = quantities(spec.get("overhead")) if overhead else None
    return pod_amounts(spec, lambda c: requests_limits(c)[0], extra)


def pod_limit_quantities(spec: dict, overhead: bool = True) -> dict[str, Q]:
    """PodLimits as quantities; overhead is added only to resources that have a limit."""
    extra = quantities(spec.get("overhead")) if overhead else None
    return pod_amounts(spec, lambda c: requests_limits(c)[1], extra, overhead_where_set=True)


def is_best_effort(spec: dict) -> bool:
    """GetPodQOS == BestEffort: no container requests or limits cpu or memory above zero (GPUs do not count)."""
    for _, _, c in containers(spec):
        for part in requests_limits(c):
            if any(part[r].value > 0 for r in QOS_RESOURCES if r in part):
                return False
    return True


def pod_name(w: PodWorkload, ordinal: int) -> str:
    """The name the API server's admission errors give the `ordinal`-th pod of a workload: the Pod's or
    StatefulSet pod's own name, else the controller's generateName (the random suffix is unknown offline)."""
    if w.kind == "Pod":
        return w.name
    if w.kind == "StatefulSet":
        return f"{w.name}-{ordinal}"
    if w.kind == "Deployment":
        return f"{w.name}-<pod-template-hash>-"
    if w.kind == "CronJob":
        return f"{w.name}-<scheduled-time>-"
    return f"{w.name}-"
