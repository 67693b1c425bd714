"""gpu-request-shape, decided: GPU requests the API server accepts and the device plugin can serve.

Pure functions over one pod spec (camelCase, as in a manifest or a Pulumi resource's props). The policy
pack (policies/gpu_request_shape.py) reads the planned device plugin setup from the stack; `gpufleet
check` has no stack and passes what its nodes advertise instead. Values are only read through `Mapping`
and `Sequence`, so the pack's preview proxies still raise on an unknown value, where they did before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, TypeGuard

NVIDIA_PREFIX = "nvidia.com/"
LEGACY_GPU = "alpha.kubernetes.io/nvidia-gpu"
#: nvidia.com/ names other GPU schedulers use (HAMi); not the device plugin's, so not judged here.
FOREIGN_NVIDIA_NAMES = {"nvidia.com/gpumem", "nvidia.com/gpucores", "nvidia.com/gpumem-percentage"}
_QUANTITY = re.compile(r"\s*([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)\s*(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?\s*")
_SCALE: dict[str | None, int | Decimal] = {
    None: 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


@dataclass(frozen=True)
class DevicePluginFacts:
    """What is known of the device plugin setup the workloads meet; None where it is not known."""

    mig_strategy: str | None = None
    rename_by_default: bool | None = None
    """Whether any sharing profile advertises shared GPUs as `<name>.shared`."""
    mig_profiles: frozenset[str] | None = None
    """MIG profiles the nodes serve (`1g.10gb`); None: any profile of NVIDIA's tables."""
    advertised: frozenset[str] = frozenset()
    """Resource names real nodes advertise: never a wrong name, whatever the plan says."""


def is_list(value: Any) -> TypeGuard[Sequence[Any]]:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def containers(spec: Any) -> Iterator[Mapping]:
    """Init, regular and ephemeral containers of a pod spec (entries that are no object are skipped)."""
    if not isinstance(spec, Mapping):
        return
    for key in ("initContainers", "containers", "ephemeralContainers"):
        items = spec.get(key) or []
        for c in items if is_list(items) else []:
            if isinstance(c, Mapping):
                yield c


def quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity ('2', '500m', 2.0, '1Gi') as a Decimal; None when it does not parse."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    m = _QUANTITY.fullmatch(str(value))
    if not m:
        return None
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:
        return None
    return number * Decimal(_SCALE[m.group(2)])


def shown(value: Any) -> str:
    """A quantity as the user wrote it, without the float noise of the wire (2.0 -> 2)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _known_mig_resources(profiles: frozenset[str] | None) -> set[str]:
    from gpufleet.nvidia.mig_profiles import TABLES, resource_name  # loaded for a MIG resource only

    names = profiles if profiles is not None else {p for t in TABLES.values() for p in t.profiles}
    return {resource_name(p) for p in names}


def name_problem(res: str, facts: DevicePluginFacts) -> str | None:
    """Why the device plugin setup of `facts` never advertises `res` (an nvidia.com/ name), or None."""
    if res in facts.advertised:
        return None
    base = res[: -len(".shared")] if res.endswith(".shared") else res
    if res.endswith(".shared") and facts.rename_by_default is False:
        return (f"'{res}' is advertised only when a sharing profile sets renameByDefault: true; "
                f"expected '{base}'")
    if base == "nvidia.com/gpu":
        return None
    if base.startswith("nvidia.com/mig-"):
        strategy = facts.mig_strategy
        if strategy is not None and strategy != "mixed":
            return (f"'{res}' exists only under the mixed MIG strategy (planned: {strategy}); "
                    "expected nvidia.com/gpu")
        known = _known_mig_resources(facts.mig_profiles)
        if base not in known:
            allowed = ", ".join(sorted(known)) or "(no MIG geometry planned)"
            return f"'{res}' names no planned MIG profile; expected one of: {allowed}"
        return None
    return f"'{res}' is not a resource the NVIDIA device plugin advertises; expected nvidia.com/gpu, " \
           "nvidia.com/gpu.shared or nvidia.com/mig-<profile>"


def _mapping(value: Any) -> dict:
    return dict(value) if isinstance(value, Mapping) else {}


def request_shape_messages(what: str, spec: Any, facts: Callable[[], DevicePluginFacts], *,
                           api_rules: bool = True) -> list[str]:
    """The gpu-request-shape violations of a pod spec; `what` names the workload (`Deployment ml/web`).

    `facts` is called once, at the first nvidia.com/ name (the pack loads the stack only then). Without
    `api_rules` only the names are judged: quantities, missing limits and requests unequal to limits are
    left to whoever reports the API server's own errors (`gpufleet check`).
    """
    found: list[str] = []
    planned: DevicePluginFacts | None = None
    for c in containers(spec):
        res = c.get("resources") or {}
        res = res if isinstance(res, Mapping) else {}
        limits = _mapping(res.get("limits") or {})
        requests = _mapping(res.get("requests") or {})
        where = f"{what} container '{c.get('name')}'"
        for name in sorted(n for n in set(limits) | set(requests) if isinstance(n, str)):
            if name == LEGACY_GPU:
                found.append(f"{where} requests the removed '{LEGACY_GPU}'; expected nvidia.com/gpu "
                             "(served by the NVIDIA device plugin).")
                continue
            if not name.startswith(NVIDIA_PREFIX) or name in FOREIGN_NVIDIA_NAMES:
                continue
            if api_rules:
                found += _api_problems(where, name, limits, requests)
            if planned is None:
                planned = facts()
            problem = name_problem(name, planned)
            if problem:
                found.append(f"{where}: {problem}.")
    return found


def _api_problems(where: str, name: str, limits: dict, requests: dict) -> list[str]:
    found = []
    for section, values in (("limits", limits), ("requests", requests)):
        if name in values:
            q = quantity(values[name])
            if q is None or q < 0 or q != q.to_integral_value():
                found.append(f"{where} {section}[{name}] is {shown(values[name])}; expected a "
                             "non-negative integer (the API server rejects fractions of extended resources).")
    if name in requests and name not in limits:
        found.append(f"{where} requests {name} without a limit; expected limits[{name}] set "
                     "(extended resources cannot be overcommitted).")
    elif name in requests and quantity(requests[name]) != quantity(limits[name]):
        found.append(f"{where} requests {shown(requests[name])} {name} but limits {shown(limits[name])}; "
                     "expected requests equal to limits.")
    return found
