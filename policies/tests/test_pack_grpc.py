"""End to end: the pack as its own process (`python -u -m pulumi.policy 127.0.0.1:0 policies`), driven over
the analyzer gRPC protocol by gpufleet's client, as `pulumi preview --policy-pack policies` drives it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.config.loading import load_stack
from gpufleet.planning.engine import Plan, PlannedResource, run_program
from gpufleet.planning.policy_client import UNKNOWN_WIRE, PolicyPackError, PolicyPackProcess, analyze_plan
from policies import ALL_POLICIES

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "policies"


def _plan(stack: str) -> Plan:
    return run_program(load_stack(stack, ROOT))


def test_pack_reports_greed_capacity_violation_as_mandatory_over_grpc():
    report = analyze_plan(_plan("greed"), PACK, ROOT)
    assert report.policies == [p.name for p in ALL_POLICIES]
    [v] = report.violations
    assert (v.policy, v.level) == ("gpu-capacity-fit", "mandatory")
    assert "requests 101 nvidia.com/gpu" in v.message and "Insufficient nvidia.com/gpu" in v.message
    assert v.urn.endswith("::greed-greed-greedy-trainer-deployment")


def test_pack_finds_nothing_in_dev_over_grpc():
    report = analyze_plan(_plan("dev"), PACK, ROOT)
    assert report.violations == []


def test_pack_config_all_advisory_downgrades_the_violation():
    report = analyze_plan(_plan("greed"), PACK, ROOT, {"all": "advisory"})
    assert [v.level for v in report.violations] == ["advisory"] and report.mandatory == []


def test_pack_config_disables_a_policy_and_reaches_its_properties():
    plan = _plan("greed")
    assert analyze_plan(plan, PACK, ROOT, {"gpu-capacity-fit": "disabled"}).violations == []
    nodes_file = {"capacitySource": "nodesFile", "nodesFile": "policies/tests/fixtures/nodes-k3s.json"}
    report = analyze_plan(plan, PACK, ROOT, {"gpu-capacity-fit": nodes_file})
    assert "kubernetes capacity (2 node(s))" in report.violations[0].message


def test_resource_violation_is_attributed_to_the_analyzed_resource_over_grpc():
    plan = Plan("dev", "gpufleet", [PlannedResource(
        "urn:pulumi:dev::gpufleet::kubernetes:core/v1:Pod::bad", "kubernetes:core/v1:Pod", "bad", None, True,
        {"metadata": {"name": "bad"}, "spec": {"containers": [{"name": "c", "image": "x:latest",
                                                               "resources": {"limits": {"nvidia.com/gpu": 0.5}}}]}})])
    report = analyze_plan(plan, PACK, ROOT)
    by_policy = {v.policy: v for v in report.violations}
    assert {"pinned-versions", "gpu-request-shape", "gpu-capacity-fit"} <= set(by_policy)
    assert by_policy["pinned-versions"].urn == "urn:pulumi:dev::gpufleet::kubernetes:core/v1:Pod::bad"
    assert by_policy["pinned-versions"].resource == "kubernetes:core/v1:Pod bad"


def test_unknown_preview_values_do_not_crash_the_pack():
    plan = Plan("dev", "gpufleet", [
        PlannedResource("urn:pulumi:dev::gpufleet::kubernetes:helm.sh/v3:Release::op", "kubernetes:helm.sh/v3:Release",
                        "op", None, True, {"chart": "gpu-operator", "version": UNKNOWN_WIRE, "values": UNKNOWN_WIRE}),
        PlannedResource("urn:pulumi:dev::gpufleet::kubernetes:apps/v1:Deployment::d", "kubernetes:apps/v1:Deployment",
                        "d", None, True, {"metadata": {"name": "d"}, "spec": UNKNOWN_WIRE})])
    report = analyze_plan(plan, PACK, ROOT)
    assert report.mandatory == []
    assert all("during preview" in v.message for v in report.violations)


def test_pack_process_is_terminated_after_use():
    process = PolicyPackProcess(PACK, ROOT)
    with process:
        assert process.proc.poll() is None
    assert process.proc.poll() is not None


def test_a_broken_pack_is_reported_not_hung(tmp_path):
    (tmp_path / "__main__.py").write_text("raise SystemExit('no pack here')\n")
    with pytest.raises(PolicyPackError, match="did not start"):
        with PolicyPackProcess(tmp_path, ROOT):
            pass
