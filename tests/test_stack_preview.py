"""scripts/stack-preview's choice of engine and its refusals, without a Pulumi backend (the real engine's run,
against a deployed stack, is in tests/e2e/test_pulumi_up.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "stack-preview"


def stack_preview(*args: str, path: str) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PATH": path}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          timeout=300)


def without_pulumi() -> str:
    return os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not (Path(d) / "pulumi").exists())


def test_a_pulumi_that_is_not_logged_in_falls_back_to_the_offline_diff_and_says_why(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pulumi").write_text("#!/bin/sh\necho 'error: no credentials' >&2\nexit 255\n")
    (fake / "pulumi").chmod(0o755)
    out = tmp_path / "preview.md"
    done = stack_preview("--stack", "dev", "--base", str(ROOT), "--head", str(ROOT), "--out", str(out),
                         path=f"{fake}{os.pathsep}{without_pulumi()}")
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.startswith("<!-- gpufleet-stack-preview:dev -->\n")
    assert "Offline plan diff of stack `dev`" in text and "not logged in to a backend" in text
    assert "### Stack `dev`" in text and "No changes." in text


def test_engine_pulumi_without_a_cli_and_bad_arguments_exit_2_naming_each(tmp_path):
    done = stack_preview("--stack", "dev", "--base", str(ROOT), "--head", str(ROOT), "--engine", "pulumi",
                         path=without_pulumi())
    assert done.returncode == 2
    assert done.stderr.strip() == "stack-preview: --engine pulumi: no Pulumi CLI on PATH"

    existing = tmp_path / "taken.md"
    existing.write_text("")
    done = stack_preview("--stack", "nope", "--base", str(tmp_path / "missing"), "--head", str(ROOT),
                         "--pulumi-stack", "a b", "--out", str(existing), path=without_pulumi())
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert f"stack-preview: --base {tmp_path / 'missing'}: not a directory" in lines
    assert f"stack-preview: --stack nope: no Pulumi.nope.yaml in {ROOT}" in lines
    assert "stack-preview: --pulumi-stack 'a b': expected STACK, ORG/STACK or ORG/PROJECT/STACK" in lines
    assert f"stack-preview: --out {existing}: already exists; give a new file name" in lines
