"""NVIDIA's charts and values files are never in the repository: the tests find them at a pinned place
(`$GPUFLEET_UPSTREAM`, then `third_party/upstream/` that `make upstream-charts` fills, then the copy beside the
clone), skip naming the variable and the make target when none has them, and fail instead where CI says the
files must be there. `make upstream-charts` pulls exactly the pinned versions and checks what it pulled."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import upstream_files
import yaml

from gpufleet.nvidia import versions
from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "upstream-charts"


def git_files() -> list[str]:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    run = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return run.stdout.splitlines()


def test_the_repository_holds_no_chart_archive_or_copied_upstream_file():
    files = git_files()
    archives = [f for f in files if f.endswith((".tgz", ".tar.gz", ".tar", ".zip", ".whl"))]
    copied = [f for f in files if f.startswith(("third_party/", "tests/fixtures/upstream/"))
              or f.endswith("-values.yaml") or "mig-parted-config" in f]
    assert archives == [] and copied == []


def test_the_folder_make_fills_is_ignored_by_git():
    git_files()
    probe = "third_party/upstream/charts/gpu-operator-v26.7.0.tgz"
    run = subprocess.run(["git", "check-ignore", "-q", probe], cwd=ROOT)
    assert run.returncode == 0


@pytest.fixture
def places(tmp_path, monkeypatch):
    """Three empty upstream folders standing in for $GPUFLEET_UPSTREAM, third_party/upstream and the copy
    beside the clone."""
    dirs = {name: tmp_path / name for name in ("env", "fetched", "beside")}
    for d in dirs.values():
        d.mkdir()
    monkeypatch.setenv(upstream_files.ENV, str(dirs["env"]))
    monkeypatch.delenv(upstream_files.REQUIRE_ENV, raising=False)
    monkeypatch.setattr(upstream_files, "FETCHED", dirs["fetched"])
    monkeypatch.setattr(upstream_files, "BESIDE", dirs["beside"])
    return dirs


def put(folder: Path, name: str) -> Path:
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(str(folder))
    return folder / name


def test_files_are_looked_for_in_the_variable_then_the_fetched_folder_then_beside_the_clone(places):
    name = "charts/gpu-operator-v26.7.0.tgz"
    beside = put(places["beside"], name)
    assert upstream_files.require(name) == beside
    fetched = put(places["fetched"], name)
    assert upstream_files.require(name) == fetched
    pointed = put(places["env"], name)
    assert upstream_files.require(name) == pointed
    assert upstream_files.places() == [places["env"], places["fetched"], places["beside"]]


def test_a_missing_file_skips_in_one_line_naming_the_variable_and_the_make_target(places):
    with pytest.raises(pytest.skip.Exception) as exc:
        upstream_files.chart_archive(versions.GPU_OPERATOR_CHART, versions.GPU_OPERATOR_VERSION)
    message = str(exc.value)
    assert "\n" not in message
    assert "gpu-operator-v26.7.0.tgz" in message
    assert "GPUFLEET_UPSTREAM" in message and "make upstream-charts" in message
    assert all(str(d) in message for d in places.values())


def test_a_missing_file_fails_where_ci_requires_the_upstream_files(places, monkeypatch):
    monkeypatch.setenv(upstream_files.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception) as exc:
        upstream_files.values_file(versions.DEVICE_PLUGIN_CHART, versions.DEVICE_PLUGIN_VERSION)
    assert "nvidia-device-plugin-v0.20.0-values.yaml" in str(exc.value)
    assert upstream_files.REQUIRE_ENV in str(exc.value)


def test_a_variable_that_points_at_no_folder_is_an_error_not_a_fallback(places, monkeypatch):
    put(places["beside"], "charts/x.tgz")
    monkeypatch.setenv(upstream_files.ENV, str(places["env"] / "typo"))
    with pytest.raises(pytest.fail.Exception) as exc:
        upstream_files.require("charts/x.tgz")
    assert "typo" in str(exc.value) and "not a folder" in str(exc.value)


def test_ci_requires_the_upstream_files_where_the_copy_beside_the_clone_exists(tmp_path):
    # .ci/run's own lines up to `make test`, run in a scratch clone with and without the copy beside it.
    lines = (ROOT / ".ci" / "run").read_text().split("make test")[0]
    env = {k: v for k, v in os.environ.items() if k != upstream_files.REQUIRE_ENV}
    clone = tmp_path / "clone"
    (clone / ".ci").mkdir(parents=True)
    (clone / ".ci" / "run").write_text(lines + f'echo "[${{{upstream_files.REQUIRE_ENV}:-}}]"\n')
    seen = []
    for beside in (False, True):
        if beside:
            (tmp_path / "shared" / "reference" / "upstream").mkdir(parents=True)
        run = subprocess.run(["bash", str(clone / ".ci" / "run")], capture_output=True, text=True, env=env)
        assert run.returncode == 0, run.stderr
        seen.append(run.stdout.strip())
    assert seen == ["[]", "[1]"]


PLUGIN = """
import upstream_files
upstream_files.places = lambda: []
"""


def run_upstream_test_without_files(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """pytest over one upstream test module as `make test` runs it, with no upstream folder anywhere."""
    (tmp_path / "no_upstream_plugin.py").write_text(PLUGIN)
    environ = {k: v for k, v in os.environ.items() if k not in (upstream_files.ENV, upstream_files.REQUIRE_ENV)}
    environ["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT / "tests")])
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no_upstream_plugin",
                           "tests/upstream/test_dra_charts.py"], cwd=ROOT, capture_output=True, text=True,
                          env=environ)


def test_a_run_without_the_files_passes_and_its_summary_names_each_skipped_test(tmp_path):
    run = run_upstream_test_without_files(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    summary = run.stdout.split("upstream files", 1)[1]
    assert "GPUFLEET_UPSTREAM" in summary and "make upstream-charts" in summary
    assert "tests/upstream/test_dra_charts.py::test_" in summary
    assert " failed" not in run.stdout


def test_a_run_that_requires_the_files_fails_without_them(tmp_path):
    run = run_upstream_test_without_files(tmp_path, **{upstream_files.REQUIRE_ENV: "1"})
    assert run.returncode == 1 and " failed" in run.stdout


FAKE_HELM = """#!{python}
import io, sys, tarfile, pathlib, json
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps(args) + "\\n")
chart = args[1].rsplit("/", 1)[-1]
version = args[args.index("--version") + 1]
dest = pathlib.Path(args[args.index("--destination") + 1])
wrong = {wrong!r}
meta = "name: %s\\nversion: %s\\n" % (chart, wrong.get(chart, version))
with tarfile.open(dest / ("%s-%s.tgz" % (chart, version)), "w:gz") as tar:
    for name, text in (("Chart.yaml", meta), ("values.yaml", "chart: %s\\n" % chart)):
        info = tarfile.TarInfo("%s/%s" % (chart, name))
        info.size = len(text.encode())
        tar.addfile(info, io.BytesIO(text.encode()))
"""


def fake_helm(tmp_path: Path, wrong: dict[str, str] | None = None) -> tuple[Path, Path]:
    log = tmp_path / "helm-calls.jsonl"
    helm = tmp_path / "helm"
    helm.write_text(FAKE_HELM.format(python=sys.executable, log=str(log), wrong=wrong or {}))
    helm.chmod(0o755)
    return helm, log


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def test_make_upstream_charts_pulls_each_pinned_version_and_takes_the_values_from_the_archives(tmp_path):
    helm, log = fake_helm(tmp_path)
    dest = tmp_path / "upstream"
    dest.mkdir()
    (dest / "mine.txt").write_text("not the script's")
    run = run_script("--helm", str(helm), "--dest", str(dest))
    assert run.returncode == 0, run.stderr
    calls = [yaml.safe_load(line) for line in log.read_text().splitlines()]
    pulled = {(c[1], c[c.index("--version") + 1], c[c.index("--repo") + 1] if "--repo" in c else None)
              for c in calls}
    assert pulled == {
        (versions.GPU_OPERATOR_CHART, versions.GPU_OPERATOR_VERSION, versions.GPU_OPERATOR_REPO),
        (versions.DEVICE_PLUGIN_CHART, versions.DEVICE_PLUGIN_VERSION, versions.DEVICE_PLUGIN_REPO),
        (f"{versions.DRA_DRIVER_REPO}/{versions.DRA_DRIVER_CHART}", versions.DRA_DRIVER_VERSION, None),
    }
    for chart, version in ((versions.GPU_OPERATOR_CHART, versions.GPU_OPERATOR_VERSION),
                           (versions.DEVICE_PLUGIN_CHART, versions.DEVICE_PLUGIN_VERSION),
                           (versions.DRA_DRIVER_CHART, versions.DRA_DRIVER_VERSION)):
        assert (dest / "charts" / f"{chart}-{version}.tgz").is_file()
        values = dest / upstream_files.values_name(chart, version)
        assert yaml.safe_load(values.read_text()) == {"chart": chart}
    assert (dest / "mine.txt").read_text() == "not the script's"


def test_make_upstream_charts_refuses_an_archive_that_is_not_the_pinned_version_and_writes_nothing(tmp_path):
    helm, _ = fake_helm(tmp_path, wrong={versions.DEVICE_PLUGIN_CHART: "0.19.9"})
    dest = tmp_path / "upstream"
    run = run_script("--helm", str(helm), "--dest", str(dest))
    assert run.returncode == 1
    assert "0.19.9" in run.stderr and "0.20.0" in run.stderr and "nothing written" in run.stderr
    assert not dest.exists() or not any(dest.rglob("*"))


def test_a_failed_pull_says_how_to_work_without_network_and_writes_nothing(tmp_path):
    helm = tmp_path / "helm"
    helm.write_text("#!/bin/sh\necho 'Error: failed to fetch: dial tcp: no route to host' >&2\nexit 1\n")
    helm.chmod(0o755)
    dest = tmp_path / "upstream"
    run = run_script("--helm", str(helm), "--dest", str(dest))
    assert run.returncode == 1
    assert "no route to host" in run.stderr and "GPUFLEET_UPSTREAM" in run.stderr
    assert not dest.exists()


def test_the_pinned_files_found_are_the_pinned_chart_versions():
    for chart, version in ((versions.GPU_OPERATOR_CHART, versions.GPU_OPERATOR_VERSION),
                           (versions.DEVICE_PLUGIN_CHART, versions.DEVICE_PLUGIN_VERSION),
                           (versions.DRA_DRIVER_CHART, versions.DRA_DRIVER_VERSION)):
        archive = upstream_files.chart_archive(chart, version)
        with tarfile.open(archive) as tar:
            meta = yaml.safe_load(tar.extractfile(f"{chart}/Chart.yaml").read())
            values = tar.extractfile(f"{chart}/values.yaml").read()
        assert (meta["name"], str(meta["version"])) == (chart, version)
        found = upstream_files.find(upstream_files.values_name(chart, version))
        if found is not None:
            assert found.read_bytes() == values, found


def test_only_the_finder_and_ci_look_beside_the_repository():
    beside = re.compile(r"\.\./" "shared|" "shared/reference|[\"']shared[\"']\\s*/\\s*[\"']reference")
    allowed = {ROOT / "tests" / "upstream_files.py", ROOT / ".ci" / "run"}
    for path in [ROOT / "Makefile", ROOT / ".ci" / "run", *ROOT.joinpath("tests").rglob("*.py"),
                 *ROOT.joinpath("gpufleet").rglob("*.py"), *ROOT.joinpath("policies").rglob("*.py"),
                 *ROOT.joinpath("scripts").glob("*"), *ROOT.joinpath("components").rglob("*.py")]:
        if path.is_dir() or path in allowed or path == Path(__file__):
            continue
        text = path.read_text()
        assert not beside.search(text), path
