"""`make upstream-charts` fetches exactly the charts gpufleet pins, and a missing chart fails the tests with
a message that says where it was looked for and how to get it."""

from __future__ import annotations

import re

import pytest

from gpufleet.nvidia import versions
from tests.conftest import ROOT
from tests.upstream.upstream_charts import FETCHED, chart_archive, chart_dirs

PULL = re.compile(r"helm pull (\S+)(?: --repo (\S+))? --version (\S+)")


def test_make_upstream_charts_pulls_the_pinned_chart_versions_from_their_repositories():
    pulls = {m.group(1).rsplit("/", 1)[-1]: (m.group(2) or m.group(1).rsplit("/", 1)[0], m.group(3))
             for m in PULL.finditer((ROOT / "Makefile").read_text())}
    assert pulls == {
        versions.GPU_OPERATOR_CHART: (versions.GPU_OPERATOR_REPO, versions.GPU_OPERATOR_VERSION),
        versions.DEVICE_PLUGIN_CHART: (versions.DEVICE_PLUGIN_REPO, versions.DEVICE_PLUGIN_VERSION),
        versions.DRA_DRIVER_CHART: (versions.DRA_DRIVER_REPO, versions.DRA_DRIVER_VERSION),
    }


def test_fetched_charts_stay_out_of_git():
    assert "/upstream-charts/" in (ROOT / ".gitignore").read_text().split()
    assert FETCHED == ROOT / "upstream-charts"


def test_a_missing_chart_fails_naming_every_place_and_the_make_target(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUFLEET_REFERENCE", str(tmp_path))
    with pytest.raises(pytest.fail.Exception) as exc:
        chart_archive(versions.GPU_OPERATOR_CHART, "v0.0.0")
    message = str(exc.value)
    assert "gpu-operator-v0.0.0.tgz" in message and "make upstream-charts" in message
    assert all(str(d) in message for d in chart_dirs()) and str(tmp_path / "upstream" / "charts") in message
