"""What admission decided: the workloads as it leaves them, what it refused, and what it warns about."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpufleet.manifests.workloads import PodWorkload

#: The admission step that refused pods (a Rejection's `source`).
Source = Literal["LimitRanger", "Priority", "PodValidation", "ResourceQuota", "Kueue"]


@dataclass(frozen=True)
class Rejection:
    """Replicas of a workload that never become pods (or, for Kueue, a Job that is never started).

    `message` is the whole error as a client sees it (`pods "web-<hash>-" is forbidden: exceeded quota: ...`);
    `reason` is the part after `is forbidden: ` / `is invalid: `, word for word the API server's (or
    Kueue's condition message). Pods made from a template are named by their generateName: the API server's
    random suffix is not known offline.
    """

    workload: str
    """`Kind/namespace/name` of the workload."""
    refused: int
    """How many of its wanted pods are refused."""
    admitted: int
    """How many got in before the first refusal."""
    by: str
    """The object that refused them: `ResourceQuota/ns/name`, `LimitRange/ns/name`, `PriorityClass/name`,
    `LocalQueue/ns/name`, `ClusterQueue/name`, or `Pod` for the API server's validation of the pod."""
    reason: str
    message: str
    source: Source = "ResourceQuota"


@dataclass(frozen=True)
class Defaulted:
    """One value a LimitRange's Container default put into a container that did not set it."""

    container: str
    part: str
    """requests or limits"""
    resource: str
    value: str
    limit_range: str
    """LimitRange/namespace/name"""

    def to_json(self) -> dict:
        return {"container": self.container, "part": self.part, "resource": self.resource, "value": self.value,
                "limitRange": self.limit_range}


def defaulted_words(entries) -> str:
    """Where requests the template did not set came from, one clause per value:
    `nvidia.com/gpu 1 (requests and limits of container c) comes from LimitRange/ml/gpu-defaults's default`."""
    parts: dict[tuple[str, str, str, str], list[str]] = {}
    for d in entries:
        parts.setdefault((d.resource, d.value, d.container, d.limit_range), []).append(d.part)
    return "; ".join(f"{resource} {value} ({' and '.join(sorted(p, reverse=True))} of container "
                     f"{container or '(unnamed)'}) comes from {ref}'s default: the template sets none (a value "
                     "set there overrides it)" for (resource, value, container, ref), p in parts.items())


@dataclass(frozen=True)
class AdmissionWarning:
    """Something admission will not refuse but the user should know: a quota item that limits nothing, a Kueue
    Job that waits for quota in use, an object gpufleet could not read."""

    subject: str
    """A workload key, or the object the warning is about (`ResourceQuota/ns/name`)."""
    message: str
    kind: Literal["quota-key", "kueue-wait", "unreadable"] = "quota-key"


@dataclass
class Admission:
    """The outcome of `admit`: `workloads` in input order and as many as given (a fully refused workload stays,
    with `replicas` 0 and its original spec, so `checked` lists it and its template is validated as written)."""

    workloads: list[PodWorkload]
    rejections: list[Rejection] = field(default_factory=list)
    warnings: list[AdmissionWarning] = field(default_factory=list)
    defaulted: dict[str, list[Defaulted]] = field(default_factory=dict)
    """Per workload key, the values LimitRange defaults put into its containers (the template set none)."""
