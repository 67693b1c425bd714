"""DRA API objects (resource.k8s.io/v1) from manifests, kubectl files or capacity.json: type checks and the
allocator's view of them.

`dra_errors` type-checks the fields the allocator reads, one `path: problem` line each. `DraObjects`
collects DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates by name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gpufleet.capacity.shape import INT64_MAX, Shape, json_type, quantity_units

API_VERSION = "resource.k8s.io/v1"
DRA_KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")
#: capacity.json key -> the kind of the raw API objects it holds.
CAPACITY_KEYS = {"deviceClasses": "DeviceClass", "resourceSlices": "ResourceSlice", "resourceClaims": "ResourceClaim"}
_INT64 = (-INT64_MAX - 1, INT64_MAX)
_MODES = ("ExactCount", "All")


def dra_errors(obj: dict) -> list[str]:
    """Problems in one DRA object's fields that the allocator reads (empty when it can be used)."""
    shape = Shape()
    kind = obj.get("kind")
    if obj.get("apiVersion") != API_VERSION:
        shape.fail("apiVersion", f"{obj.get('apiVersion')!r} is not read; gpufleet reads {kind} objects of "
                                 f"{API_VERSION} (Kubernetes 1.34 and later)")
    meta = shape.mapping(obj.get("metadata"), "metadata")
    name = shape.string(meta.get("name"), "metadata.name")
    if not name:
        shape.fail("metadata.name", "Required value: a DRA object needs a name")
    shape.string(meta.get("namespace"), "metadata.namespace")
    spec = shape.mapping(obj.get("spec"), "spec")
    if kind == "DeviceClass":
        _selectors(shape, spec.get("selectors"), "spec.selectors")
    elif kind == "ResourceSlice":
        _slice(shape, spec)
    elif kind == "ResourceClaimTemplate":
        _claim_spec(shape, shape.mapping(spec.get("spec"), "spec.spec"), "spec.spec")
    else:
        _claim_spec(shape, spec, "spec")
        _status(shape, shape.mapping(obj.get("status"), "status"))
    return shape.errors


def with_kind(obj: dict, kind: str) -> dict:
    """An item of an API list response (which leaves out kind and apiVersion) as a whole object."""
    return {"apiVersion": API_VERSION, "kind": kind, **obj}


def split_dra(items: list) -> tuple[list, list[dict]]:
    """(other items, DRA objects) of a kubectl List's items, e.g. `kubectl get pods,resourceclaims -A -o json`."""
    dra = [i for i in items if isinstance(i, dict) and i.get("kind") in DRA_KINDS]
    return [i for i in items if not (isinstance(i, dict) and i.get("kind") in DRA_KINDS)], dra


def labelled_errors(obj: dict, where: str, prefix: str = "") -> list[str]:
    """dra_errors as `Kind/name: path: problem` lines (`where` when the object has no usable name)."""
    meta = m if isinstance(m := obj.get("metadata"), dict) else {}
    name, ns = meta.get("name"), meta.get("namespace")
    label = where
    if isinstance(name, str) and name:
        label = f"{obj.get('kind')}/{ns}/{name}" if isinstance(ns, str) and ns else f"{obj.get('kind')}/{name}"
        label = f"{prefix} ({label})" if prefix else label
    return [f"{label}: {e}" for e in dra_errors(obj)]


def _required(shape: Shape, value: Any, path: str) -> str | None:
    if value is None or value == "":
        shape.fail(path, "Required value")
        return None
    return shape.string(value, path)


def _selectors(shape: Shape, value: Any, path: str) -> None:
    for spath, sel in shape.objects(value, path):
        cel = shape.mapping(sel.get("cel"), f"{spath}.cel")
        _required(shape, cel.get("expression"), f"{spath}.cel.expression")


def _slice(shape: Shape, spec: dict) -> None:
    _required(shape, spec.get("driver"), "spec.driver")
    pool = shape.mapping(spec.get("pool"), "spec.pool")
    _required(shape, pool.get("name"), "spec.pool.name")
    for part in ("generation", "resourceSliceCount"):
        shape.integer(pool.get(part), f"spec.pool.{part}", _INT64)
    shape.string(spec.get("nodeName"), "spec.nodeName")
    shape.boolean(spec.get("allNodes"), "spec.allNodes")
    selector = shape.mapping(spec.get("nodeSelector"), "spec.nodeSelector")
    shape.objects(selector.get("nodeSelectorTerms"), "spec.nodeSelector.nodeSelectorTerms")
    chosen = [k for k in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection") if spec.get(k)]
    if len(chosen) != 1:
        shape.fail("spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes` or `perDeviceNodeSelection` "
                           f"is required, found {len(chosen)}")
    for dpath, device in shape.objects(spec.get("devices"), "spec.devices"):
        _required(shape, device.get("name"), f"{dpath}.name")
        for name, value in shape.mapping(device.get("attributes"), f"{dpath}.attributes").items():
            _attribute(shape, value, f"{dpath}.attributes[{name}]")
        for name, value in shape.mapping(device.get("capacity"), f"{dpath}.capacity").items():
            cap = shape.mapping(value, f"{dpath}.capacity[{name}]")
            units = quantity_units("capacity", cap.get("value"))
            if isinstance(units, str):
                shape.fail(f"{dpath}.capacity[{name}].value", units)


_ATTRIBUTE_TYPES = {"int": int, "bool": bool, "string": str, "version": str}


def _attribute(shape: Shape, value: Any, path: str) -> None:
    attr = shape.mapping(value, path)
    given = [k for k in _ATTRIBUTE_TYPES if k in attr]
    if len(given) != 1:
        shape.fail(path, "exactly one of `int`, `bool`, `string` or `version` is required")
        return
    kind = given[0]
    v = attr[kind]
    if kind == "int":
        shape.integer(v, f"{path}.int", _INT64)
    elif not isinstance(v, _ATTRIBUTE_TYPES[kind]):
        shape.fail(f"{path}.{kind}", f"must be {'true or false' if kind == 'bool' else 'a string'}, not {json_type(v)}")


def _claim_spec(shape: Shape, spec: dict, path: str) -> None:
    devices = shape.mapping(spec.get("devices"), f"{path}.devices")
    names = set()
    for rpath, req in shape.objects(devices.get("requests"), f"{path}.devices.requests"):
        name = _required(shape, req.get("name"), f"{rpath}.name")
        names.add(name)
        exactly, first = req.get("exactly"), req.get("firstAvailable")
        if (exactly is None) == (first is None):
            shape.fail(rpath, "exactly one of `exactly` or `firstAvailable` is required")
        if exactly is not None:
            _request(shape, shape.mapping(exactly, f"{rpath}.exactly"), f"{rpath}.exactly")
        for spath, sub in shape.objects(first, f"{rpath}.firstAvailable"):
            _required(shape, sub.get("name"), f"{spath}.name")
            _request(shape, sub, spath)
    for cpath, constraint in shape.objects(devices.get("constraints"), f"{path}.devices.constraints"):
        shape.string_list(constraint.get("requests"), f"{cpath}.requests")
        shape.string(constraint.get("matchAttribute"), f"{cpath}.matchAttribute")
        shape.string(constraint.get("distinctAttribute"), f"{cpath}.distinctAttribute")


def _request(shape: Shape, req: dict, path: str) -> None:
    _required(shape, req.get("deviceClassName"), f"{path}.deviceClassName")
    _selectors(shape, req.get("selectors"), f"{path}.selectors")
    mode = shape.string(req.get("allocationMode"), f"{path}.allocationMode")
    if mode is not None and mode not in _MODES:
        shape.fail(f"{path}.allocationMode", f"Unsupported value: {mode!r}: supported values: \"All\", \"ExactCount\"")
    count = req.get("count")
    shape.integer(count, f"{path}.count", _INT64)
    if isinstance(count, int) and not isinstance(count, bool):
        if mode == "All":
            shape.fail(f"{path}.count", "Invalid value: must not be specified when allocationMode is 'All'")
        elif count <= 0:
            shape.fail(f"{path}.count", f"Invalid value: {count}: must be greater than zero")
    shape.boolean(req.get("adminAccess"), f"{path}.adminAccess")


def _status(shape: Shape, status: dict) -> None:
    allocation = shape.mapping(status.get("allocation"), "status.allocation")
    devices = shape.mapping(allocation.get("devices"), "status.allocation.devices")
    for rpath, result in shape.objects(devices.get("results"), "status.allocation.devices.results"):
        for part in ("request", "driver", "pool", "device"):
            _required(shape, result.get(part), f"{rpath}.{part}")
        shape.boolean(result.get("adminAccess"), f"{rpath}.adminAccess")
    selector = shape.mapping(allocation.get("nodeSelector"), "status.allocation.nodeSelector")
    shape.objects(selector.get("nodeSelectorTerms"), "status.allocation.nodeSelector.nodeSelectorTerms")
    shape.objects(status.get("reservedFor"), "status.reservedFor")


def pod_claim_errors(spec: dict, path: str) -> list[str]:
    """Problems in a pod spec's `resourceClaims` (each names a claim or a template, not both)."""
    shape = Shape()
    for cpath, claim in shape.objects(spec.get("resourceClaims"), f"{path}.resourceClaims"):
        _required(shape, claim.get("name"), f"{cpath}.name")
        named = [k for k in ("resourceClaimName", "resourceClaimTemplateName") if claim.get(k) is not None]
        for k in named:
            shape.string(claim.get(k), f"{cpath}.{k}")
        if len(named) != 1:
            shape.fail(cpath, "must specify exactly one of `resourceClaimName` or `resourceClaimTemplateName`")
    return shape.errors


@dataclass(frozen=True)
class Device:
    driver: str
    pool: str
    name: str
    attributes: dict
    capacity: dict

    @property
    def key(self) -> tuple[str, str, str]:
        return self.driver, self.pool, self.name

    @property
    def label(self) -> str:
        return "/".join(self.key)


@dataclass
class DraObjects:
    """The DRA objects of a check, by name (claims and templates by (namespace, name))."""

    classes: dict[str, dict] = field(default_factory=dict)
    slices: list[dict] = field(default_factory=list)
    claims: dict[tuple[str, str], dict] = field(default_factory=dict)
    templates: dict[tuple[str, str], dict] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.classes or self.slices or self.claims or self.templates)


def dra_objects(objects: Iterable[dict]) -> DraObjects:
    """The DRA objects among manifest dicts (already type-checked), later ones replacing earlier ones."""
    found = DraObjects()
    for obj in objects:
        kind = obj.get("kind")
        if kind not in DRA_KINDS:
            continue
        meta: Any = obj.get("metadata") or {}  # as read: the names are not checked here
        name, ns = meta.get("name"), meta.get("namespace") or "default"
        if kind == "DeviceClass":
            found.classes[name] = obj.get("spec") or {}
        elif kind == "ResourceSlice":
            found.slices.append(obj.get("spec") or {})
        elif kind == "ResourceClaim":
            found.claims[(ns, name)] = obj
        else:
            found.templates[(ns, name)] = (obj.get("spec") or {}).get("spec") or {}
    return found
