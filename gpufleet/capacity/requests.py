"""The effective request of a pod, as kube-scheduler computes it (scheduling-rules.md 1.2, 1.3).

`PodRequests` in component-helpers: the sum over app containers; each init container needs its own
request plus every restartable (sidecar) init container started before it; sidecars also run
alongside the app containers; the pod needs the max of the two; `spec.overhead` is added on top.
A container's missing request defaults to its limit (SetDefaults_Pod).
"""

from __future__ import annotations

from typing import Any, Mapping

from gpufleet.capacity.quantity import to_units


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


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0) + value


#: What the scheduler's scoring (and NodeInfo.NonZeroRequested) assumes for a container that requests no
#: cpu or memory at all (pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest).
NON_ZERO_DEFAULTS = {"cpu": 100, "memory": 200 * 1024 * 1024}


def _with_defaults(req: dict[str, int], non_missing: Mapping[str, int] | None) -> dict[str, int]:
    if non_missing:
        for name, value in non_missing.items():
            req.setdefault(name, value)  # only a missing request; an explicit 0 stays 0
    return req


def pod_requests(spec: Mapping[str, Any], non_missing: Mapping[str, int] | None = None) -> dict[str, int]:
    """Effective request of a pod spec (camelCase Kubernetes shape), resource -> compared units.

    `non_missing`: amounts given to each container that lacks a request for them (NON_ZERO_DEFAULTS gives
    the request that LeastAllocated scoring and NodeInfo.NonZeroRequested count).
    """
    result: dict[str, int] = {}
    for container in spec.get("containers") or ():
        _add(result, _with_defaults(container_requests(container), non_missing))
    init_max: dict[str, int] = {}
    restartable: dict[str, int] = {}
    for container in spec.get("initContainers") or ():
        req = _with_defaults(container_requests(container), non_missing)
        if container.get("restartPolicy") == "Always":
            _add(result, req)
            _add(restartable, req)
            use = dict(restartable)
        else:
            use = dict(req)
            _add(use, restartable)
        for name, value in use.items():
            if value > init_max.get(name, 0):
                init_max[name] = value
    for name, value in init_max.items():
        if value > result.get(name, 0):
            result[name] = value
    overhead = spec.get("overhead") or {}
    _add(result, {name: to_units(name, value) for name, value in overhead.items()})
    return {name: value for name, value in result.items()}
