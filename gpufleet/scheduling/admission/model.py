"""What admission decided: the workloads as it leaves them, what it refused, and what it warns about."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpufleet.scheduling.manifests import PodWorkload


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
    source: Literal["LimitRanger", "Priority", "PodValidation", "ResourceQuota", "Kueue"] = "ResourceQuota"


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
