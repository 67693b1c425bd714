"""Output that goes to a pipe or a file has no width: every table row and message stays on one line, so
`grep NAME` finds the whole row; on a terminal the same output folds to the terminal's width."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli.run_inprocess import run

ROOT = Path(__file__).resolve().parents[2]
ONE_NODE = ROOT / "tests" / "fixtures" / "nodes-one-h100x8.json"
NAME = "my-inference-server-with-a-very-long-name-for-buffer2"


def deployment(tmp_path: Path, replicas: int = 40) -> Path:
    path = tmp_path / "app.yaml"
    path.write_text(f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {NAME}, namespace: default}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: x}}}}
  template:
    metadata: {{labels: {{app: x}}}}
    spec:
      containers:
      - {{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}
""")
    return path


def piped(*args: object) -> subprocess.CompletedProcess:
    """The real entry point with standard output a pipe, as `gpufleet ... | grep` runs it (COLUMNS set, as
    some shells export it: a pipe still has no width)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", *map(str, args)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_piped_check_prints_each_row_and_explanation_on_one_line(tmp_path):
    r = piped("check", deployment(tmp_path), "--nodes", ONE_NODE)
    assert r.returncode == 1, r.stderr
    [row] = [line for line in r.stdout.splitlines() if "pending" in line and "\u2502" in line]
    assert f"Deployment/default/{NAME}" in row and "1 Insufficient nvidia.com/gpu." in row
    assert f"  fix: set spec.replicas of Deployment/default/{NAME} to 8, or add nodes it may use: 32 more pod(s) " \
           "need nvidia.com/gpu 1 each" in r.stdout.splitlines()


def test_a_terminal_still_gets_the_check_folded_to_its_width(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("TERM", "dumb")
    r = run("check", deployment(tmp_path), "--nodes", ONE_NODE, terminal=True)
    assert r.code == 1
    assert max(map(len, r.out.splitlines())) <= 80


def test_one_node_is_described_in_the_singular(tmp_path):
    r = run("check", deployment(tmp_path), "--nodes", ONE_NODE)
    assert "why: the 1 NVIDIA-H100-80GB-HBM3 node it may use has too little free for its pods" in r.out
