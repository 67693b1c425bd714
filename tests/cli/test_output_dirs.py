"""`plan --out` and `charts --out` never delete or overwrite what gpufleet did not write, write nothing when
planning fails, and replace their own earlier output completely (stale files included)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.outdir import MARKER, OutputDirError, write_tree

ROOT = Path(__file__).resolve().parents[2]


def gpufleet(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", *map(str, args)],
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=300)


def snapshot(top: Path) -> dict[str, str]:
    """Every path under `top` (symlinks not followed) with its content, link target or `<dir>`."""
    out = {}
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(root) / name
            rel = path.relative_to(top).as_posix()
            out[rel] = f"-> {os.readlink(path)}" if path.is_symlink() else "<dir>" if path.is_dir() \
                else path.read_bytes().decode(errors="replace")
    return out


@pytest.fixture
def project(tmp_path) -> Path:
    """A project directory of its own (Pulumi.yaml and the shipped stacks) inside tmp_path, with a user file."""
    proj = tmp_path / "proj"
    proj.mkdir()
    for name in ["Pulumi.yaml", "Pulumi.dev.yaml", "Pulumi.mig.yaml", "Pulumi.greed.yaml"]:
        shutil.copy(ROOT / name, proj)
    (proj / "README.md").write_text("the user's own readme\n")
    return proj


@pytest.mark.parametrize("command", ["plan", "charts"])
def test_user_file_in_out_dir_survives_and_is_named(command, project):
    out = project / "build"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    before = snapshot(project)
    result = gpufleet(command, "--stack", "dev", "--out", out, "--project-dir", project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "notes.txt" in result.stderr and "did not write" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert snapshot(project) == before


@pytest.mark.parametrize("command", ["plan", "charts"])
@pytest.mark.parametrize("out", ["..", ".", "PROJECT", "README.md"])
def test_out_that_is_or_holds_the_project_or_a_file_is_refused(command, out, project):
    """`--out ..` / `.` / the project directory / an existing file: exit 2 and nothing changed around it."""
    before = snapshot(project.parent)
    target = project if out == "PROJECT" else out
    result = gpufleet(command, "--stack", "dev", "--out", target, cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert snapshot(project.parent) == before  # no *.tmp, no staging directory, nothing deleted


def test_out_holding_the_current_directory_is_refused_even_with_another_project_dir(project, tmp_path):
    work = tmp_path / "work" / "here"
    work.mkdir(parents=True)
    result = gpufleet("plan", "--stack", "dev", "--no-policies", "--project-dir", project, "--out", tmp_path / "work",
                      cwd=work)
    assert result.returncode == 2 and "contains the current directory" in result.stderr
    assert snapshot(tmp_path / "work") == {"here": "<dir>"}


def test_symlink_in_place_of_a_file_gpufleet_wrote_is_not_followed_or_replaced(project, tmp_path):
    out = tmp_path / "out"
    assert gpufleet("plan", "--stack", "dev", "--no-policies", "--out", out, cwd=project).returncode == 0
    precious = tmp_path / "precious.json"
    precious.write_text("keep me\n")
    (out / "plan.json").unlink()
    (out / "plan.json").symlink_to(precious)
    before = snapshot(tmp_path)
    result = gpufleet("plan", "--stack", "dev", "--no-policies", "--out", out, cwd=project)
    assert result.returncode == 2 and "plan.json" in result.stderr
    assert snapshot(tmp_path) == before


def test_rerun_into_own_output_replaces_it_and_removes_stale_files(project, tmp_path):
    out = tmp_path / "out"
    first = gpufleet("plan", "--stack", "dev", "--no-policies", "--out", out, cwd=project)
    assert first.returncode == 0, first.stderr
    assert (out / "manifests/myasetest1").is_dir()
    second = gpufleet("plan", "--stack", "mig", "--no-policies", "--out", out, cwd=project)
    assert second.returncode == 0, second.stderr
    written = sorted(p for p in snapshot(out) if not (out / p).is_dir())
    marker = json.loads((out / MARKER).read_text())
    assert marker["command"] == "gpufleet plan --stack mig"
    assert sorted([*marker["files"], MARKER]) == written  # nothing of dev's plan is left
    assert json.loads((out / "plan.json").read_text())["stack"] == "mig"
    assert not (out / "manifests/myasetest1").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "proj"]  # no staging directories left


def test_mandatory_violation_writes_nothing_and_keeps_the_previous_output(project, tmp_path):
    out = tmp_path / "out"
    assert gpufleet("plan", "--stack", "dev", "--no-policies", "--out", out, cwd=project).returncode == 0
    before = snapshot(tmp_path)
    result = gpufleet("plan", "--stack", "greed", "--out", out, cwd=project)
    assert result.returncode == 1 and "[mandatory] gpu-capacity-fit" in result.stdout
    assert snapshot(tmp_path) == before
    fresh = gpufleet("plan", "--stack", "greed", "--out", tmp_path / "fresh", cwd=project)
    assert fresh.returncode == 1 and not (tmp_path / "fresh").exists()


def test_no_policies_writes_right_away(project, tmp_path):
    result = gpufleet("plan", "--stack", "greed", "--no-policies", "--out", tmp_path / "out", cwd=project)
    assert result.returncode == 0 and (tmp_path / "out" / "plan.json").is_file()


def test_config_error_writes_nothing_and_keeps_the_previous_output(project, tmp_path):
    out = tmp_path / "out"
    assert gpufleet("charts", "--stack", "dev", "--out", out, cwd=project).returncode == 0
    stack = yaml.safe_load((project / "Pulumi.dev.yaml").read_text())
    stack["config"]["gpufleet:mode"] = "operatr"
    (project / "Pulumi.dev.yaml").write_text(yaml.safe_dump(stack))
    before = snapshot(tmp_path)
    for command in ["charts", "plan"]:
        result = gpufleet(command, "--stack", "dev", "--out", out, cwd=project)
        assert result.returncode == 2 and re.search(r"^Pulumi\.dev\.yaml:\d+: gpufleet:mode: ", result.stderr, re.M)
        assert snapshot(tmp_path) == before


def test_bad_policy_pack_config_writes_nothing(project, tmp_path):
    config = tmp_path / "pack.json"
    config.write_text('{"gpu-capacity-fit": {"capacitySource": "nodesFile"}}')
    result = gpufleet("plan", "--stack", "dev", "--policy-pack-config", config, "--out", tmp_path / "out", cwd=project)
    assert result.returncode == 2 and not (tmp_path / "out").exists()


def test_make_charts_regenerates_the_committed_chart_dir_in_place(tmp_path):
    """`make charts` runs `gpufleet charts --stack dev --out charts/dev` in the project: the committed tree
    (written by gpufleet, marker included) is recognised and comes back byte-identical."""
    proj = tmp_path / "repo"
    proj.mkdir()
    for name in ["Pulumi.yaml", "Pulumi.dev.yaml"]:
        shutil.copy(ROOT / name, proj)
    shutil.copytree(ROOT / "charts" / "dev", proj / "charts" / "dev", symlinks=True)
    committed = snapshot(proj / "charts")
    result = gpufleet("charts", "--stack", "dev", "--out", "charts/dev", cwd=proj)
    assert result.returncode == 0, result.stderr
    assert snapshot(proj / "charts") == committed
    assert json.loads((proj / "charts/dev" / MARKER).read_text())["command"] == "gpufleet charts --stack dev"


def test_failure_while_writing_leaves_the_previous_output_and_no_temporary_files(tmp_path, monkeypatch):
    out = tmp_path / "out"
    write_tree(out, {"a.txt": "one\n", "sub/b.txt": "two\n"}, "test", {})
    before = snapshot(tmp_path)
    real_write = Path.write_text
    calls = []

    def failing_write(self, *args, **kwargs):
        calls.append(self)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", failing_write)
    with pytest.raises(OutputDirError, match="No space left on device.*previous content is unchanged"):
        write_tree(out, {"a.txt": "new\n", "sub/b.txt": "new\n", "c.txt": "new\n"}, "test", {})
    monkeypatch.undo()
    assert snapshot(tmp_path) == before


NAMES = st.sampled_from(["a.txt", "b.yaml", "sub/c.txt", "sub/d.yaml", "sub/deep/e.txt", "f"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ours=st.sets(NAMES, max_size=4), user=st.sets(NAMES, max_size=3), new=st.sets(NAMES, min_size=1, max_size=4))
def test_only_files_gpufleet_wrote_are_ever_replaced(tmp_path_factory, ours, user, new):
    """Whatever a directory holds, a write either refuses and changes nothing, or the directory then holds
    exactly the new files and no user file was there."""
    base = tmp_path_factory.mktemp("prop")
    out = base / "out"
    if ours:
        write_tree(out, {n: f"ours {n}\n" for n in ours}, "test", {})
    user = {n for n in user if n not in ours and not any(n.startswith(o + "/") or o.startswith(n + "/")
                                                          for o in ours)}
    for name in user:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(f"user {name}\n")
    before = snapshot(base)
    try:
        write_tree(out, {n: f"new {n}\n" for n in new}, "test", {})
    except OutputDirError as e:
        assert user and all(n in str(e) for n in sorted(user)[:5])
        assert snapshot(base) == before
        return
    assert not user
    assert {p for p, v in snapshot(out).items() if v != "<dir>"} == set(new) | {MARKER}
    assert all((out / n).read_text() == f"new {n}\n" for n in new)


def test_make_plan_path_inside_the_project_can_be_rerun(project):
    """`make plan` writes build/plan-dev inside the project, again and again."""
    for _ in range(2):
        result = gpufleet("plan", "--stack", "dev", "--no-policies", "--out", "build/plan-dev", cwd=project)
        assert result.returncode == 0, result.stderr
    assert json.loads((project / "build/plan-dev/plan.json").read_text())["stack"] == "dev"
    assert sorted(p.name for p in (project / "build").iterdir()) == ["plan-dev"]


def test_out_that_is_a_symlink_is_refused(tmp_path):
    real = tmp_path / "real"
    write_tree(real, {"a.txt": "ours\n"}, "test", {})
    (tmp_path / "link").symlink_to(real)
    before = snapshot(tmp_path)
    with pytest.raises(OutputDirError, match="is a symlink"):
        write_tree(tmp_path / "link", {"a.txt": "new\n"}, "test", {})
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("marker", ['{"files": ["a.txt"]}', "not json", '{"format": "gpufleet-output/v1"}'])
def test_unreadable_marker_is_not_trusted(tmp_path, marker):
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_text("whose?\n")
    (out / MARKER).write_text(marker)
    before = snapshot(tmp_path)
    with pytest.raises(OutputDirError, match="not a gpufleet output marker"):
        write_tree(out, {"a.txt": "new\n"}, "test", {})
    assert snapshot(tmp_path) == before
