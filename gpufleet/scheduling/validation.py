"""What the API server rejects at create time in a pod spec's resources (scheduling-rules.md 1.1).

`ValidateResourceRequirements` / `ValidateResourceQuantityValue`: every quantity non-negative;
integer resources (every extended resource) must be whole; resources that cannot be overcommitted
(extended resources, hugepages) need a limit and requests equal to it; others need request <= limit.
Messages are the API server's field errors, joined as its aggregate error prints them.
"""

from __future__ import annotations

from typing import Any

from gpufleet.capacity.quantity import canonical, milli
from gpufleet.errors import InputError
from gpufleet.scheduling.manifests import PodWorkload


def is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    return not is_native(name) and not name.startswith("requests.")


def overcommit_allowed(name: str) -> bool:
    return is_native(name) and not name.startswith("hugepages-")


def _value_errors(name: str, value: Any, path: str) -> list[str]:
    shown = canonical(value)
    m = milli(value)
    if m < 0:
        return [f'{path}: Invalid value: "{shown}": must be greater than or equal to 0']
    if is_extended(name) and m % 1000:
        return [f'{path}: Invalid value: "{shown}": must be an integer']
    return []


def container_errors(container: dict, path: str) -> list[str]:
    resources = container.get("resources") or {}
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    errors: list[str] = []
    for name in sorted(limits):
        errors += _value_errors(name, limits[name], f"{path}.limits[{name}]")
    for name in sorted(requests):
        value = requests[name]
        errors += _value_errors(name, value, f"{path}.requests[{name}]")
        if name in limits:
            req, lim = milli(value), milli(limits[name])
            if req != lim and not overcommit_allowed(name):
                errors.append(f'{path}.requests: Invalid value: "{canonical(value)}": must be equal to {name} '
                              f"limit of {canonical(limits[name])}")
            elif req > lim:
                errors.append(f'{path}.requests: Invalid value: "{canonical(value)}": must be less than or equal '
                              f"to {name} limit of {canonical(limits[name])}")
        elif not overcommit_allowed(name):
            errors.append(f"{path}.limits: Required value: Limit must be set for non overcommitable resources")
    return errors


def spec_errors(spec: dict, spec_path: str) -> list[str]:
    errors: list[str] = []
    for field in ("containers", "initContainers"):
        for i, container in enumerate(spec.get(field) or ()):
            errors += container_errors(container, f"{spec_path}.{field}[{i}].resources")
    return errors


def rejection(workload: PodWorkload) -> str | None:
    """The API server's error for this object, or None when it would be accepted."""
    try:
        errors = spec_errors(workload.spec, workload.spec_path)
    except InputError as e:
        raise InputError(f"{workload.key}: {e}") from e
    if not errors:
        return None
    body = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return f"{workload.object_ref} is invalid: {body}"
