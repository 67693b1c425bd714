"""What the API server rejects at create time in a pod spec's resources (k8s.io/kubernetes v1.34
pkg/apis/core/validation/validation.go, pkg/apis/core/helper/helpers.go).

Shared by `gpufleet check` (a rejected workload) and `gpufleet validate` (a problem).

As in the API server, defaulting runs first: a Pod's containers get requests defaulted from their
limits (`SetDefaults_Pod`; not pod templates). Then `ValidateResourceRequirements` /
`ValidateResourceQuantityValue`: every quantity non-negative; integer resources (every extended
resource) must be whole; resources that cannot be overcommitted (extended resources, hugepages) need a
limit and requests equal to it; others need request <= limit. Messages are the API server's field
errors, joined as its aggregate error prints them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpufleet.capacity.quantity import canonical, milli
from gpufleet.errors import InputError
from gpufleet.validation.fields import FieldError, invalid, required

#: resource.ParseQuantity's error for text that is not a quantity (the request fails to decode).
QUANTITY_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
CONTAINER_LISTS = ("initContainers", "containers")


def is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    return not is_native(name) and not name.startswith("requests.")


def overcommit_allowed(name: str) -> bool:
    return is_native(name) and not name.startswith("hugepages-")


def _milli(value: Any) -> int | None:
    try:
        return milli(value)
    except (InputError, ValueError, TypeError, ArithmeticError):
        return None


def _shown(value: Any) -> str:
    return canonical(value) if _milli(value) is not None else str(value)


def _value_errors(name: str, value: Any, path: str) -> list[FieldError]:
    m = _milli(value)
    if m is None:
        return [invalid(path, value if isinstance(value, str) else str(value), QUANTITY_FORMAT)]
    if m < 0:
        return [invalid(path, canonical(value), "must be greater than or equal to 0")]
    if is_extended(name) and m % 1000:
        return [invalid(path, canonical(value), "must be an integer")]
    return []


def _mapping(value: Any) -> Mapping:
    return value if isinstance(value, Mapping) else {}


def resource_errors(resources: Any, path: str) -> list[FieldError]:
    """`ValidateResourceRequirements` for one container's `resources` at `path` (wrong types are skipped)."""
    resources = _mapping(resources)
    limits, requests = _mapping(resources.get("limits")), _mapping(resources.get("requests"))
    errors: list[FieldError] = []
    for name in sorted(limits, key=str):
        errors += _value_errors(str(name), limits[name], f"{path}.limits[{name}]")
    for name in sorted(requests, key=str):
        value = requests[name]
        errors += _value_errors(str(name), value, f"{path}.requests[{name}]")
        if name in limits:
            req, lim = _milli(value), _milli(limits[name])
            if req is None or lim is None:
                continue
            if req != lim and not overcommit_allowed(str(name)):
                errors.append(invalid(f"{path}.requests", _shown(value),
                                      f"must be equal to {name} limit of {_shown(limits[name])}"))
            elif req > lim:
                errors.append(invalid(f"{path}.requests", _shown(value),
                                      f"must be less than or equal to {name} limit of {_shown(limits[name])}"))
        elif not overcommit_allowed(str(name)):
            errors.append(required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
    return errors


def with_defaulted_requests(spec: Mapping) -> dict:
    """`SetDefaults_Pod`: every container's missing requests default to its limits (a copy; Pods only)."""
    out = dict(spec)
    for field in CONTAINER_LISTS:
        containers = spec.get(field)
        if not isinstance(containers, list):
            continue
        defaulted = []
        for c in containers:
            resources = _mapping(c.get("resources")) if isinstance(c, Mapping) else {}
            limits = resources.get("limits")
            if isinstance(limits, Mapping) and limits:
                requests = resources.get("requests")
                requests = dict(requests) if isinstance(requests, Mapping) else {}
                for name, value in limits.items():
                    if _milli(value) is not None:  # text that is no quantity fails decoding, before defaulting
                        requests.setdefault(name, value)
                c = {**c, "resources": {**resources, "requests": requests}}
            defaulted.append(c)
        out[field] = defaulted
    return out


def spec_errors(spec: Mapping, spec_path: str) -> list[FieldError]:
    """Resource errors of every container and init container, then of `overhead` (`validateOverhead`)."""
    errors: list[FieldError] = []
    for field in ("containers", "initContainers"):
        containers = spec.get(field)
        for i, container in enumerate(containers if isinstance(containers, list) else ()):
            if isinstance(container, Mapping):
                errors += resource_errors(container.get("resources"), f"{spec_path}.{field}[{i}].resources")
    overhead = spec.get("overhead")
    if isinstance(overhead, Mapping):
        for name in sorted(overhead, key=str):
            errors += _value_errors(str(name), overhead[name], f"{spec_path}.overhead[{name}]")
    return errors


def aggregate(errors: list[FieldError]) -> str:
    """`field.ErrorList.ToAggregate().Error()`: duplicates dropped; several errors in brackets."""
    texts = list(dict.fromkeys(str(e) for e in errors))
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
