"""The effective request of a pod: `PodRequests` and `PodLimits` of component-helpers (k8s.io/kubernetes v1.34
staging/src/k8s.io/component-helpers/resource/helpers.go), the one rule the scheduler, the capacity model and
admission (quota, LimitRanger, Kueue) all use.

The sum over app containers; each init container needs its own amount plus every restartable (sidecar) init
container started before it; sidecars also run alongside the app containers; the pod needs the max of the two;
`spec.overhead` is added on top (to limits only where the pod has that limit). A container's missing request
defaults to its limit (SetDefaults_Pod, k8s.io/kubernetes v1.34 pkg/apis/core/v1/defaults.go).

`pod_amounts` is the rule over any amount type that adds with `+` and compares with `>` (compared units here,
printable quantities in admission); `pod_requests` is it in compared units.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from gpufleet.capacity.quantity import to_units

V = TypeVar("V")


def container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    """Requests of one container, defaulted from limits, in compared units."""
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    out: dict[str, int] = {}
    for name, value in limits.items():
        if name not in requests:
            out[name] = to_units(name, value)
    for name, value in requests.items():
        out[name] = to_units(name, value)
    return out


# V is whatever amount type `read` gives (ints, or the scheduler's own): the ignores below are for an unbounded
# type variable used with + and >, which every amount type supports.
def _add(into: dict[str, V], more: Mapping[str, V]) -> None:
    for name, value in more.items():
        into[name] = into[name] + value if name in into else value  # type: ignore[operator]


def _max(into: dict[str, V], more: Mapping[str, V]) -> None:
    """maxResourceList: a resource not yet there is taken as it is, even a zero."""
    for name, value in more.items():
        if name not in into or value > into[name]:  # type: ignore[operator]
            into[name] = value


def _containers(spec: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = spec.get(key)
    return [c for c in items if isinstance(c, Mapping)] if isinstance(items, (list, tuple)) else []


def pod_amounts(spec: Mapping[str, Any], read: Callable[[Mapping[str, Any]], Mapping[str, V]],
                overhead: Mapping[str, V] | None = None, overhead_where_set: bool = False) -> dict[str, V]:
    """The pod's amounts by the PodRequests rule, `read` giving one container's (requests or limits).

    `overhead` is added on top; with `overhead_where_set` only to resources the containers set (PodLimits).
    """
    total: dict[str, V] = {}
    for container in _containers(spec, "containers"):
        _add(total, read(container))
    init_max: dict[str, V] = {}
    sidecars: dict[str, V] = {}
    for container in _containers(spec, "initContainers"):
        own = read(container)
        if container.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            _max(init_max, sidecars)
        else:
            need = dict(own)
            _add(need, sidecars)
            _max(init_max, need)
    _max(total, init_max)
    for name, value in (overhead or {}).items():
        if name in total or not overhead_where_set:
            _add(total, {name: value})
    return total


#: What the scheduler's scoring (and NodeInfo.NonZeroRequested) assumes for a container that requests no
#: cpu or memory at all (pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest).
NON_ZERO_DEFAULTS = {"cpu": 100, "memory": 200 * 1024 * 1024}


def pod_requests(spec: Mapping[str, Any], non_missing: Mapping[str, int] | None = None) -> dict[str, int]:
    """Effective request of a pod spec (camelCase Kubernetes shape), resource -> compared units.

    `non_missing`: amounts given to each container that lacks a request for them (NON_ZERO_DEFAULTS gives
    the request that LeastAllocated scoring and NodeInfo.NonZeroRequested count).
    """
    def read(container: Mapping[str, Any]) -> dict[str, int]:
        req = container_requests(container)
        for name, value in (non_missing or {}).items():
            req.setdefault(name, value)  # only a missing request; an explicit 0 stays 0
        return req

    overhead = {name: to_units(name, value) for name, value in (spec.get("overhead") or {}).items()}
    return pod_amounts(spec, read, overhead)
