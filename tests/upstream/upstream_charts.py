"""The real upstream NVIDIA charts (.tgz) and `helm template` over them with the values gpufleet plans.

Charts are the repository's vendored copies (third_party/charts, refreshed and digest-checked by `make
upstream-charts`); $GPUFLEET_REFERENCE/upstream/charts may point at another copy, looked at after them. A test
that needs one fails (not skips) when none has it, naming every place it looked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.nvidia import versions
from helm_binary import run_helm
from tests.conftest import ROOT

#: The vendored charts, with their licence, README and SHA256SUMS (`make upstream-charts` refreshes them).
VENDORED = ROOT / "third_party" / "charts"

CHARTS = {
    versions.GPU_OPERATOR_CHART: versions.GPU_OPERATOR_VERSION,
    versions.DEVICE_PLUGIN_CHART: versions.DEVICE_PLUGIN_VERSION,
    versions.DRA_DRIVER_CHART: versions.DRA_DRIVER_VERSION,
}


def chart_dirs() -> list[Path]:
    dirs = [VENDORED]
    if os.environ.get("GPUFLEET_REFERENCE"):
        dirs.append(Path(os.environ["GPUFLEET_REFERENCE"]) / "upstream" / "charts")
    return dirs


def chart_archive(chart: str, version: str | None = None) -> Path:
    """The chart's .tgz as `helm pull` names it (`<chart>-<version>.tgz`); fails the test when absent."""
    name = f"{chart}-{version or CHARTS[chart]}.tgz"
    for d in chart_dirs():
        if (d / name).is_file():
            return d / name
    places = ", ".join(str(d) for d in chart_dirs())
    pytest.fail(f"upstream chart {name} not found in: {places}; pin it in gpufleet/nvidia/versions.py, the "
                f"Makefile and {VENDORED.relative_to(ROOT)}/SHA256SUMS, then run `make upstream-charts`",
                pytrace=False)


def helm_template(archive: Path, release: str, namespace: str, values: dict[str, Any], tmp_path: Path,
                  *extra: str) -> list[dict]:
    """`helm template` of the archive with these values (and extra flags): every rendered object."""
    values_file = tmp_path / f"{release}-values.yaml"
    values_file.write_text(yaml.safe_dump(values, sort_keys=False))
    run = run_helm("template", release, str(archive), "--namespace", namespace, "--values", str(values_file), *extra)
    assert run.returncode == 0, run.stderr
    return [d for d in yaml.safe_load_all(run.stdout) if d]


def crd_schema(archive: Path, crd_file: str, version: str) -> dict[str, Any]:
    """The openAPIV3Schema of one version of a CRD shipped in the chart's crds/ directory."""
    import tarfile

    chart = archive.name.rsplit("-", 1)[0]
    with tarfile.open(archive) as tar:
        crd = yaml.safe_load(tar.extractfile(f"{chart}/crds/{crd_file}").read())
    return next(v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == version)


def by_kind(objects: list[dict], kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}
