"""The real upstream NVIDIA charts (.tgz) and `helm template` over them with the values gpufleet plans.

The archives are found by tests/upstream_files.py (`$GPUFLEET_UPSTREAM`, `third_party/upstream/` filled by
`make upstream-charts`, or the copy beside the clone); a test that needs one skips, naming both, when none
has it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import upstream_files
import yaml
from helm_binary import run_helm

from gpufleet.nvidia import versions

CHARTS = {
    versions.GPU_OPERATOR_CHART: versions.GPU_OPERATOR_VERSION,
    versions.DEVICE_PLUGIN_CHART: versions.DEVICE_PLUGIN_VERSION,
    versions.DRA_DRIVER_CHART: versions.DRA_DRIVER_VERSION,
}


def chart_archive(chart: str, version: str | None = None) -> Path:
    """The chart's .tgz as `helm pull` names it (`<chart>-<version>.tgz`); skips the test when absent."""
    return upstream_files.chart_archive(chart, version or CHARTS[chart])


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
