"""Config builders for the AKS tests: a valid base stack (one T4 pool, operator installs the driver)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpufleet.config.loading import parse_sections
from gpufleet.config.stack import StackConfig
from gpufleet.errors import ConfigError, ConfigIssue

T4_POOL = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "count": 2, "driver": "operator",
           "taints": ["sku=gpu:NoSchedule"], "labels": {"workload": "inference"}}
A100_MIG_POOL = {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "autoscale": {"minCount": 0, "maxCount": 2},
                 "gpuInstanceProfile": "MIG1g", "driver": "aks", "taints": ["sku=gpu:NoSchedule"]}
INFER = {"kind": "inference", "name": "infer", "namespace": "inference",
         "image": "nvcr.io/nvidia/tritonserver:25.01-py3",
         "nodePool": "t4", "gpu": {"count": 1}, "ports": [{"port": 8000}], "service": {"type": "ClusterIP"}}


def base_sections(**overrides: Any) -> dict[str, Any]:
    sections: dict[str, Any] = {
        "mode": "operator",
        "cluster": {"aks": {"resourceGroup": {"name": "rg-gpu"}, "location": "westeurope",
                            "gpuPools": [copy.deepcopy(T4_POOL)]}},
        "devicePlugin": {"migStrategy": "none"},
        "workloads": [copy.deepcopy(INFER)],
    }
    sections.update(overrides)
    return sections


def a100_mig_sections() -> dict[str, Any]:
    """An A100 pool split by AKS (MIG1g), with AKS installing the driver (so the operator does not)."""
    return base_sections(
        cluster={"aks": {"resourceGroup": {"name": "rg-gpu", "existing": True},
                         "gpuPools": [copy.deepcopy(A100_MIG_POOL)]}},
        operator={"driver": {"enabled": False}},
        devicePlugin={"migStrategy": "mixed"},
        workloads=[{**copy.deepcopy(INFER), "nodePool": "a100", "gpu": {"count": 1, "profile": "1g.10gb"}}],
    )


def parse(sections: dict[str, Any]) -> StackConfig:
    return parse_sections(sections, "Pulumi.test.yaml")


def issues_of(sections: dict[str, Any]) -> list[ConfigIssue]:
    try:
        parse(sections)
    except ConfigError as e:
        return e.issues
    return []


@pytest.fixture
def sections() -> dict[str, Any]:
    return base_sections()
