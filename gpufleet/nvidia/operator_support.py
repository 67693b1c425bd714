"""The gpu-operator's support matrix: the Kubernetes minors each major release was validated with, the
data-center driver branches of the pinned release, and the API removals that break old releases outright.

Sources (NVIDIA/cloud-native-docs, gpu-operator/platform-support.rst and life-cycle-policy.rst, at the
commit that released each version's docs):
- v26.7.0 ("Release docs 26.7.0", 187a4a5b; driver matrix as of 70fde02f): Kubernetes 1.33-1.36 on
  every listed OS, 1.32-1.36 on Ubuntu 24.04; drivers 610.57.04, 595.91.07 (default, recommended),
  580.173.02, 535.309.01. "The GPU Operator is supported on all active NVIDIA data center production
  drivers." The chart itself declares `kubeVersion: '>= 1.16.0-0'` (Chart.yaml of gpu-operator-v26.7.0).
- 26.3 (de99f9d3, 26.3.2): 1.32-1.36. 25.10 (3e11d275): 1.30-1.34. 25.3 (7788e329): 1.29-1.32.
  24.9 (f1ea3ff8): 1.24-1.31. 22.9 (a3375125): 1.21-1.25. 1.11 (967be6b3): 1.21-1.24. (Bare-metal rows,
  upstream Kubernetes column; the widest range over the listed operating systems.)
- Release notes (gpu-operator/release-notes.rst): 1.6.0 moved the ClusterPolicy CRD to
  apiextensions.k8s.io/v1 (before it: v1beta1, which Kubernetes 1.22 stopped serving); 22.9.0 moved the
  RuntimeClass to node.k8s.io/v1 and dropped PodSecurityPolicy (both removed in Kubernetes 1.25).
Major releases not listed here are not checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Minor = tuple[int, int]


@dataclass(frozen=True)
class OperatorRelease:
    """One major gpu-operator release line (YY.MM, or 1.x before calendar versioning)."""

    line: str
    kubernetes: tuple[Minor, Minor]
    #: Driver versions the release's component matrix lists, newest first; empty where gpufleet did not
    #: record them.
    drivers: tuple[str, ...] = ()

    @property
    def driver_branches(self) -> tuple[int, ...]:
        return tuple(int(d.split(".")[0]) for d in self.drivers)


RELEASES: dict[str, OperatorRelease] = {r.line: r for r in [
    OperatorRelease("1.11", ((1, 21), (1, 24))),
    OperatorRelease("22.9", ((1, 21), (1, 25))),
    OperatorRelease("24.9", ((1, 24), (1, 31))),
    OperatorRelease("25.3", ((1, 29), (1, 32))),
    OperatorRelease("25.10", ((1, 30), (1, 34))),
    OperatorRelease("26.3", ((1, 32), (1, 36))),
    OperatorRelease("26.7", ((1, 32), (1, 36)), ("610.57.04", "595.91.07", "580.173.02", "535.309.01")),
]}


@dataclass(frozen=True)
class ApiRemoval:
    """Operator releases before `fixed_in` create an object whose API Kubernetes `removed_in` no longer serves."""

    fixed_in: tuple[int, int, int]
    removed_in: Minor
    what: str


API_REMOVALS = (
    ApiRemoval((1, 6, 0), (1, 22), "its ClusterPolicy CRD as apiextensions.k8s.io/v1beta1"),
    ApiRemoval((22, 9, 0), (1, 25), "a node.k8s.io/v1beta1 RuntimeClass and a PodSecurityPolicy"),
)

_OPERATOR = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")
_KUBERNETES = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def operator_version(text: str) -> tuple[int, int, int] | None:
    m = _OPERATOR.match(text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def kubernetes_version(text: str) -> tuple[int, int, int | None] | None:
    """1.34 -> (1, 34, None); v1.34.2 -> (1, 34, 2)."""
    m = _KUBERNETES.match(text or "")
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) is not None else None


def release_of(version: tuple[int, int, int]) -> OperatorRelease | None:
    return RELEASES.get(f"{version[0]}.{version[1]}")


def api_removal(operator: tuple[int, int, int], kubernetes: Minor) -> ApiRemoval | None:
    """The removed API an operator release would create on this Kubernetes minor (the install fails)."""
    return next((r for r in API_REMOVALS if operator < r.fixed_in and kubernetes >= r.removed_in), None)


def minor_text(minor: Minor) -> str:
    return f"{minor[0]}.{minor[1]}"
