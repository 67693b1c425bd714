"""GPUFLEET_CHART_MIRROR: every Helm release fetches the same pinned chart from the mirror instead of its
upstream repository (air-gapped clusters; the e2e tests' loopback repository)."""

from __future__ import annotations

from components._helm import CHART_MIRROR_ENV
from components.gpu_operator import GpuOperator, GpuOperatorArgs
from gpufleet.config.loading import load_stack
from gpufleet.planning.engine import run_program
from gpufleet.render import gpu_stack as r
from tests.conftest import ROOT


def _release_inputs():
    dev = load_stack("dev", ROOT)
    plan = run_program(dev, lambda: GpuOperator("op", GpuOperatorArgs("gpu-operator", r.operator_values(dev.config))),
                       preview=True)
    (release,) = plan.by_type("kubernetes:helm.sh/v3:Release")
    return release.inputs


def test_chart_mirror_replaces_the_repository_and_keeps_chart_and_version(monkeypatch):
    monkeypatch.setenv(CHART_MIRROR_ENV, "http://charts.internal:8080")
    i = _release_inputs()
    assert i["repositoryOpts"] == {"repo": "http://charts.internal:8080"}
    assert (i["chart"], i["version"]) == ("gpu-operator", "v26.7.0")


def test_without_a_mirror_the_chart_comes_from_its_upstream_repository(monkeypatch):
    monkeypatch.delenv(CHART_MIRROR_ENV, raising=False)
    assert _release_inputs()["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
