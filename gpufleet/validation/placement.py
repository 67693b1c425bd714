"""The API server's checks of the pod-spec fields that steer placement by other pods and by preference
(k8s.io/kubernetes/pkg/apis/core/validation: ValidatePreferredSchedulingTerms, validateWeightedPodAffinityTerms,
validatePodAffinityTerm, validateTopologySpreadConstraints), in their wording. Types were checked before
(gpufleet.capacity.shape); these are the values a scheduler would otherwise read wrongly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpufleet.k8s_names import qualified_name_errors
from gpufleet.validation.fields import FieldError, duplicate, each, invalid, not_supported, required

WHEN_UNSATISFIABLE = ["DoNotSchedule", "ScheduleAnyway"]
NOT_POSITIVE = "must be greater than zero"
WEIGHT = "must be in the range 1-100"


def _items(value: Any) -> list:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _weight(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 100


def placement_errors(spec: Mapping, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    affinity = got if isinstance(got := spec.get("affinity"), Mapping) else {}
    node = got if isinstance(got := affinity.get("nodeAffinity"), Mapping) else {}
    ppath = f"{path}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(_items(node.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        if not _weight(term.get("weight")):
            errors.append(invalid(f"{ppath}[{i}].weight", term.get("weight") or 0, WEIGHT))
    for kind in ("podAffinity", "podAntiAffinity"):
        block = got if isinstance(got := affinity.get(kind), Mapping) else {}
        kpath = f"{path}.affinity.{kind}"
        for i, term in enumerate(_items(block.get("requiredDuringSchedulingIgnoredDuringExecution"))):
            errors += _term_errors(term, f"{kpath}.requiredDuringSchedulingIgnoredDuringExecution[{i}]")
        for i, weighted in enumerate(_items(block.get("preferredDuringSchedulingIgnoredDuringExecution"))):
            wpath = f"{kpath}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            if not _weight(weighted.get("weight")):
                errors.append(invalid(f"{wpath}.weight", weighted.get("weight") or 0, WEIGHT))
            term = weighted.get("podAffinityTerm")
            errors += _term_errors(term if isinstance(term, Mapping) else {}, f"{wpath}.podAffinityTerm")
    constraints = _items(spec.get("topologySpreadConstraints"))
    for i, c in enumerate(constraints):
        cpath = f"{path}.topologySpreadConstraints[{i}]"
        skew = c.get("maxSkew") or 0
        if not isinstance(skew, int) or skew <= 0:
            errors.append(invalid(f"{cpath}.maxSkew", skew, NOT_POSITIVE))
        if not c.get("topologyKey"):
            errors.append(required(f"{cpath}.topologyKey", "can not be empty"))
        when = c.get("whenUnsatisfiable") or ""
        if when not in WHEN_UNSATISFIABLE:
            errors.append(not_supported(f"{cpath}.whenUnsatisfiable", when, WHEN_UNSATISFIABLE))
        if any(o.get("topologyKey") == c.get("topologyKey") and o.get("whenUnsatisfiable") == when
               for o in constraints[i + 1:]):
            errors.append(duplicate(f"{cpath}.{{topologyKey, whenUnsatisfiable}}",
                                    f"{{{c.get('topologyKey') or ''}, {when}}}"))
        if c.get("minDomains") is not None:
            if not isinstance(c["minDomains"], int) or c["minDomains"] <= 0:
                errors.append(invalid(f"{cpath}.minDomains", c["minDomains"], NOT_POSITIVE))
            if when != "DoNotSchedule":
                errors.append(invalid(f"{cpath}.minDomains", c["minDomains"],
                                      f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}"))
    return errors


def _term_errors(term: Mapping, path: str) -> list[FieldError]:
    key = got if isinstance(got := term.get("topologyKey"), str) else ""
    errors = [] if key else [required(f"{path}.topologyKey", "can not be empty")]
    return errors + each(f"{path}.topologyKey", key, qualified_name_errors(key))  # ValidateLabelName
