"""The charts the tests render are vendored (third_party/charts) exactly as gpufleet pins them, with their
digests, licence and sources; `make upstream-charts` refreshes exactly those pins; nothing reads a directory
beside the repository; a missing chart fails the tests saying where it was looked for and what to do."""

from __future__ import annotations

import re

import pytest

from gpufleet.nvidia import versions
from tests.conftest import ROOT
import hashlib

from tests.upstream.upstream_charts import CHARTS, VENDORED, chart_archive, chart_dirs

PULL = re.compile(r"helm pull (\S+)(?: --repo (\S+))? --version (\S+)")


def test_make_upstream_charts_pulls_the_pinned_chart_versions_from_their_repositories():
    pulls = {m.group(1).rsplit("/", 1)[-1]: (m.group(2) or m.group(1).rsplit("/", 1)[0], m.group(3))
             for m in PULL.finditer((ROOT / "Makefile").read_text())}
    assert pulls == {
        versions.GPU_OPERATOR_CHART: (versions.GPU_OPERATOR_REPO, versions.GPU_OPERATOR_VERSION),
        versions.DEVICE_PLUGIN_CHART: (versions.DEVICE_PLUGIN_REPO, versions.DEVICE_PLUGIN_VERSION),
        versions.DRA_DRIVER_CHART: (versions.DRA_DRIVER_REPO, versions.DRA_DRIVER_VERSION),
    }


def test_the_pinned_charts_are_vendored_with_their_digests_licence_and_sources():
    sums = dict(reversed(line.split()) for line in (VENDORED / "SHA256SUMS").read_text().splitlines() if line)
    assert set(sums) == {f"{chart}-{version}.tgz" for chart, version in CHARTS.items()}
    for name, digest in sums.items():
        assert hashlib.sha256((VENDORED / name).read_bytes()).hexdigest() == digest, name
        assert digest in (VENDORED / "README.md").read_text()
    assert "Apache License" in (VENDORED / "LICENSE").read_text()
    assert chart_dirs()[0] == VENDORED and all(chart_archive(c).parent == VENDORED for c in CHARTS)


def test_nothing_in_the_tests_or_make_reads_beside_the_repository():
    beside = ("../" + "shared", "parent / \"" + "shared\"", "parent / '" + "shared'")
    for path in [ROOT / "Makefile", *ROOT.joinpath("tests").rglob("*.py"), *ROOT.joinpath("gpufleet").rglob("*.py"),
                 *ROOT.joinpath("policies").rglob("*.py"), *ROOT.joinpath("scripts").glob("*")]:
        if path.is_dir():
            continue
        text = path.read_text()
        assert not any(b in text for b in beside), path


def test_a_missing_chart_fails_naming_every_place_and_the_make_target(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUFLEET_REFERENCE", str(tmp_path))
    with pytest.raises(pytest.fail.Exception) as exc:
        chart_archive(versions.GPU_OPERATOR_CHART, "v0.0.0")
    message = str(exc.value)
    assert "gpu-operator-v0.0.0.tgz" in message and "make upstream-charts" in message and "SHA256SUMS" in message
    assert all(str(d) in message for d in chart_dirs()) and str(tmp_path / "upstream" / "charts") in message
