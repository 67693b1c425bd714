"""`gpufleet plan` runs the policy pack: greed stops with exit 1 naming the 101 GPUs, dev passes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _plan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", "plan", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_plan_stops_greed_on_the_capacity_policy():
    result = _plan("--stack", "greed")
    assert result.returncode == 1, result.stderr
    assert "[mandatory] gpu-capacity-fit" in result.stdout
    assert "requests 101 nvidia.com/gpu" in result.stdout


def test_plan_passes_dev_with_the_pack():
    result = _plan("--stack", "dev")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no violations" in result.stdout


def test_plan_skips_the_pack_with_no_policies():
    result = _plan("--stack", "greed", "--no-policies")
    assert result.returncode == 0 and "gpu-capacity-fit" not in result.stdout


def test_plan_reads_the_policy_pack_config(tmp_path):
    config = tmp_path / "pack.json"
    config.write_text('{"gpu-capacity-fit": {"enforcementLevel": "advisory"}}')
    result = _plan("--stack", "greed", "--policy-pack-config", str(config))
    assert result.returncode == 0 and "[advisory] gpu-capacity-fit" in result.stdout


def test_plan_rejects_a_bad_policy_pack_config(tmp_path):
    config = tmp_path / "pack.json"
    config.write_text('{"all": "strict"}')
    result = _plan("--stack", "dev", "--policy-pack-config", str(config))
    assert result.returncode == 2 and "enforcement level 'strict'" in result.stderr
