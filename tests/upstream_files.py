"""Where the tests find NVIDIA's upstream files: the pinned chart archives and the values files in them.

The repository holds none of them (only what its own authors wrote, and recorded facts). A test that needs
one asks `require(name)`, which looks, in this order, in:

1. `$GPUFLEET_UPSTREAM`: a folder with `charts/<chart>-<version>.tgz` and the values files beside `charts/`;
2. `third_party/upstream/` (ignored by git), which `make upstream-charts` fills with a `helm pull` of each
   pinned version and the values files taken from those archives;
3. `../shared/reference/upstream/`, which this project's CI and development machines have.

The first folder that has the file wins. A file found nowhere skips the test with one line naming the
variable and the make target; with `$GPUFLEET_REQUIRE_UPSTREAM` set (`.ci/run` sets it where the third
place exists) the test fails instead, so CI cannot quietly lose that coverage. A `$GPUFLEET_UPSTREAM` that is
not a folder fails the test: a wrong pointer is a mistake, never a reason to look elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = "GPUFLEET_UPSTREAM"
REQUIRE_ENV = "GPUFLEET_REQUIRE_UPSTREAM"
MAKE_TARGET = "make upstream-charts"
#: What `make upstream-charts` fills (ignored by git).
FETCHED = ROOT / "third_party" / "upstream"
#: The copy this project's CI and development machines have beside the clone.
BESIDE = ROOT.parent / "shared" / "reference" / "upstream"
#: The reason every skip for a missing upstream file starts with (the summary collects them by it).
SKIP_PREFIX = "upstream file"


def places() -> list[Path]:
    """The folders looked in, in order."""
    found = [Path(os.environ[ENV])] if os.environ.get(ENV) else []
    return [*found, FETCHED, BESIDE]


def find(name: str) -> Path | None:
    """The first copy of `name` (a path relative to an upstream folder), or None."""
    for place in places():
        if (place / name).is_file():
            return place / name
    return None


def require(name: str) -> Path:
    """The upstream file `name`, or this test skips (fails with $GPUFLEET_REQUIRE_UPSTREAM) saying why."""
    pointer = os.environ.get(ENV)
    if pointer and not Path(pointer).is_dir():
        pytest.fail(f"{ENV}={pointer} is not a folder: point it at a folder with charts/*.tgz and the values "
                    f"files, or unset it", pytrace=False)
    path = find(name)
    if path is not None:
        return path
    looked = ", ".join(str(p) for p in places())
    message = (f"{SKIP_PREFIX} {name} not found: set {ENV} to a folder that has it, or run `{MAKE_TARGET}` "
               f"(looked in {looked})")
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{message}; {REQUIRE_ENV} is set, so a missing upstream file is an error", pytrace=False)
    pytest.skip(message)


def chart_archive(chart: str, version: str) -> Path:
    """The chart's archive as `helm pull` names it (`charts/<chart>-<version>.tgz`)."""
    return require(f"charts/{chart}-{version}.tgz")


def values_name(chart: str, version: str) -> str:
    """The name a chart's values.yaml is saved under beside `charts/`: `<chart>-v<version>-values.yaml`."""
    return f"{chart}-v{version.removeprefix('v')}-values.yaml"


def values_file(chart: str, version: str) -> Path:
    """The chart's values.yaml, as `make upstream-charts` takes it from the archive."""
    return require(values_name(chart, version))


#: gpu-operator's default mig-parted ConfigMap (its release tag's assets/state-mig-manager/0400_configmap.yaml:
#: not in the chart archive, so `make upstream-charts` fetches it from the tag where the network allows).
def mig_parted_default_config(operator_version: str) -> Path:
    return require(f"gpu-operator-{operator_version}-default-mig-parted-config.yaml")
