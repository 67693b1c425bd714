"""A pinned Helm release (helm.v3.Release: runs hooks and manages CRDs, as gpu-operator needs)."""

from __future__ import annotations

import os
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

#: A Helm repository (URL) that serves the pinned charts under the same names and versions, used instead of each
#: chart's upstream repository: for clusters without internet access, and for the end-to-end tests.
CHART_MIRROR_ENV = "GPUFLEET_CHART_MIRROR"


def release(name: str, *, chart: str, version: str, repo: str, release_name: str, namespace: str,
            values: dict[str, Any], timeout_seconds: int, opts: pulumi.ResourceOptions) -> k8s.helm.v3.Release:
    return k8s.helm.v3.Release(
        name,
        name=release_name,
        chart=chart,
        version=version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=os.environ.get(CHART_MIRROR_ENV) or repo),
        namespace=namespace,
        values=values,
        timeout=timeout_seconds,
        cleanup_on_fail=True,
        opts=opts,
    )
