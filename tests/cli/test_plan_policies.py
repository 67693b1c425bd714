"""`gpufleet plan` runs the policy pack: greed stops with exit 1 naming the 101 GPUs, dev passes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


def _one_line_exit_2(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr
    assert "Traceback" not in result.stderr and "[mandatory]" not in result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_capacity_source_nodes_file_without_nodes_file_is_bad_input(tmp_path):
    config = tmp_path / "pack.json"
    config.write_text('{"gpu-capacity-fit": {"capacitySource": "nodesFile"}}')
    line = _one_line_exit_2(_plan("--stack", "dev", "--policy-pack-config", str(config)))
    assert line == f"{config}: gpu-capacity-fit.nodesFile: missing; capacitySource nodesFile needs it"


def test_unknown_capacity_source_is_bad_input(tmp_path):
    config = tmp_path / "pack.json"
    config.write_text('{"gpu-capacity-fit": {"capacitySource": "cluster"}}')
    line = _one_line_exit_2(_plan("--stack", "dev", "--policy-pack-config", str(config)))
    assert line == (f'{config}: gpu-capacity-fit.capacitySource: unknown source "cluster"; allowed: stack, '
                    "nodesFile, kubeconfig")


def test_nodes_file_that_does_not_exist_is_bad_input(tmp_path):
    config = tmp_path / "pack.json"
    config.write_text('{"gpu-capacity-fit": {"nodesFile": "no/such/nodes.json"}}')
    line = _one_line_exit_2(_plan("--stack", "dev", "--policy-pack-config", str(config)))
    assert line == f"{config}: gpu-capacity-fit.nodesFile: no such file {ROOT / 'no/such/nodes.json'}"


@pytest.mark.parametrize("text", ['{"all": ', "[1, 2]", ""])
def test_policy_pack_config_that_is_not_a_json_object_is_bad_input(tmp_path, text):
    config = tmp_path / "pack.json"
    config.write_text(text)
    line = _one_line_exit_2(_plan("--stack", "dev", "--policy-pack-config", str(config)))
    assert line.startswith(f"{config}: ")


def test_missing_policy_pack_config_file_is_bad_input(tmp_path):
    line = _one_line_exit_2(_plan("--stack", "dev", "--policy-pack-config", str(tmp_path / "none.json")))
    assert line == f"{tmp_path / 'none.json'}: no such policy pack config file"


def test_settings_the_pack_does_not_have_are_bad_input_one_line_each(tmp_path):
    config = tmp_path / "pack.json"
    config.write_text(json.dumps({"gpu-capacity-fit": {"checkMemoryBudget": "yes"}, "gpu-fits": "mandatory"}))
    result = _plan("--stack", "dev", "--policy-pack-config", str(config))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("warning: ")]
    assert lines == [
        f"{config}: gpu-capacity-fit.checkMemoryBudget: 'yes' is not of type 'boolean'",
        f"{config}: gpu-fits: no such policy in the pack; policies: " + lines[1].split("policies: ")[1],
    ]
    assert "gpu-capacity-fit" in lines[1]


def test_plan_runs_leave_no_stray_event_loop_messages():
    """The SDK's event loops are closed by the planning run, not at interpreter exit (where finalising them
    sometimes printed `Exception ignored in BaseEventLoop.__del__ ... Invalid file descriptor`)."""
    for _ in range(5):
        result = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-c",
                                 "from gpufleet.cli import main; main()", "plan", "--stack", "dev"],
                                cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        assert "Exception ignored" not in result.stderr
        assert "unclosed event loop" not in result.stderr and "ResourceWarning" not in result.stderr


def test_pack_starts_before_the_plan_exists_and_always_ends():
    """plan starts the pack when it begins, so the pack's start-up overlaps the Pulumi program."""
    from gpufleet.planning.policies import PolicyStep

    with PolicyStep(ROOT, "dev", None) as step:
        assert step.process.proc is not None and step.process.proc.poll() is None
    assert step.process.proc.poll() is not None


def test_unusable_pack_config_starts_no_pack(tmp_path, monkeypatch):
    from gpufleet.planning import policies
    from gpufleet.planning.pack_config import PackConfigError

    started = []
    monkeypatch.setattr(policies, "start_pack", lambda *a, **k: started.append(a))
    config = tmp_path / "pack.json"
    config.write_text('{"all": "strict"}')
    with pytest.raises(PackConfigError, match="enforcement level 'strict'"):
        policies.PolicyStep(ROOT, "dev", config)
    assert started == []


def test_plan_stops_a_dra_claim_no_planned_node_can_satisfy(tmp_path):
    """The pack allocates the stack's claims on the ResourceSlices its node pools will publish: a Job whose
    pods each claim 9 GPUs of one PCIe root pends on two 8-GPU nodes, in the scheduler's words."""
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    stack = (ROOT / "Pulumi.dra.yaml").read_text()
    job = stack[stack.index("kind: job"):]
    count = job.index("count: 2")
    (tmp_path / "Pulumi.dra.yaml").write_text(stack[:stack.index("kind: job")] + job[:count] + "count: 9"
                                              + job[count + len("count: 2"):])
    result = _plan("--stack", "dra", "--project-dir", str(tmp_path))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "[mandatory] gpu-capacity-fit  kubernetes:batch/v1:Job dra-research-train-job" in result.stdout
    assert "0/2 nodes are available: 2 cannot allocate all claims." in result.stdout


def test_plan_passes_the_dra_stack_with_its_claims_allocated_on_planned_slices():
    result = _plan("--stack", "dra")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no violations" in result.stdout


def test_plan_of_the_dra_stack_shows_the_gpucluster_the_claim_templates_and_no_clusterpolicy():
    result = _plan("--stack", "dra", "--no-policies")
    assert result.returncode == 0, result.stderr
    assert "gpu-operator v26.7.0 in gpu-operator: a GPUCluster (the DRA driver), no ClusterPolicy" in result.stdout
    assert result.stdout.count("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate") == 2
    dev = _plan("--stack", "dev", "--no-policies")
    assert "gpu-operator v26.7.0 in gpu-operator: a ClusterPolicy" in dev.stdout and "GPUCluster" not in dev.stdout


def test_a_policy_the_pack_lacks_fails_before_the_preview_is_printed(tmp_path):
    config = tmp_path / "pack.json"
    config.write_text('{"gpu-capacity-fitt": "advisory"}')
    result = _plan("--stack", "dev", "--policy-pack-config", str(config))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""  # no preview tree above the error
    [line] = [line for line in result.stderr.strip().splitlines() if not line.startswith("warning: ")]
    assert line.startswith(f"{config}: gpu-capacity-fitt: no such policy in the pack; did you mean gpu-capacity-fit?")
