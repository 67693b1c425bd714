"""Whether a toleration tolerates a taint: the Kubernetes API's one rule, used by every part of gpufleet.

`v1.Toleration.ToleratesTaint` (k8s.io/api v0.34, core/v1/toleration.go):
- an effect, when the toleration names one, must be the taint's;
- a key, when the toleration names one, must be the taint's (an empty key matches every key);
- operator `Exists` (any value) tolerates; `Equal` or an empty operator needs the same value; any other
  operator tolerates nothing.

The API server refuses a pod toleration with an empty key and operator `Equal`, but tolerations gpufleet reads
elsewhere (chart values, Kueue flavors) are not validated by it, so the rule is applied as written, never
"fixed up". The ExtendedResourceToleration admission plugin's tolerations are built here too, so the scheduler
emulation and the policy pack cannot disagree on what that shortcut tolerates (NoSchedule only).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def tolerates_taint(toleration: Mapping[str, Any], key: str, value: str | None, effect: str) -> bool:
    """Whether this toleration (a pod spec's mapping) tolerates the taint `key=value:effect`."""
    wanted_effect = toleration.get("effect") or ""
    if wanted_effect and wanted_effect != effect:
        return False
    wanted_key = toleration.get("key") or ""
    if wanted_key and wanted_key != key:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return str(toleration.get("value") or "") == (value or "")
    return False


def tolerates_any(tolerations: Iterable[Mapping[str, Any]] | None, key: str, value: str | None,
                  effect: str) -> bool:
    """Whether any of these tolerations tolerates the taint `key=value:effect`."""
    return any(tolerates_taint(t, key, value, effect) for t in tolerations or ())


def extended_resource_tolerations(resources: Iterable[str]) -> list[dict[str, str]]:
    """What the ExtendedResourceToleration admission plugin adds to a pod that requests these extended
    resources: `{key: <resource>, operator: Exists, effect: NoSchedule}` each, sorted by name (a NoExecute
    taint keyed by the resource is not tolerated by it)."""
    return [{"key": r, "operator": "Exists", "effect": "NoSchedule"} for r in sorted(set(resources))]
