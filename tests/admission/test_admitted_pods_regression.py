"""Admitted pods, recorded: a regression test for admit() and a real-scheduler test for the check.

fixtures/admitted-pods-recorded.json holds, per scenario (a LimitRange `max` that gives CPU-only pods GPUs, a
quota crossed partway, a Kueue flavor that pins a Job to a pool), the pods gpufleet's own admit() gave when it
was recorded, and where the real kube-scheduler v1.34.1 (which runs no admission itself) placed those pods.
- That admit() still gives the same pods is a regression check only: it compares gpufleet with its own earlier
  output. Whether the API server admits what admit() says is judged by a real one in tests/e2e/test_admission.py
  (`make e2e`).
- That `check` leaves the same pods Pending, with the same message, as the real scheduler did on the recorded
  pods is checked against that scheduler's answers, independently of admit().
"""

import json
from pathlib import Path

import pytest

from gpufleet.scheduling import check_workloads
from tests.admission.objects import admitted, as_manifests

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "admitted-pods-recorded.json").read_text())["scenarios"]


@pytest.mark.parametrize("name", sorted(FIXTURE))
def test_admit_still_gives_the_pods_it_gave_when_recorded(name):
    case = FIXTURE[name]
    result = admitted(*json.loads(json.dumps(case["input"])))
    assert as_manifests(result.workloads) == case["admitted"]


@pytest.mark.parametrize("name", sorted(FIXTURE))
def test_check_leaves_the_recorded_pods_pending_as_the_real_scheduler_did(name):
    case = FIXTURE[name]
    verdict = check_workloads(case["nodes"], [], json.loads(json.dumps(case["admitted"])))
    pending = {u.workload: (u.pending, u.message) for u in verdict.unschedulable if u.reason == "pending"}
    for run in case["oracle"]:
        real = {w["workload"]: (w["pending"], w["message"]) for w in run if w["pending"]}
        assert pending == real
