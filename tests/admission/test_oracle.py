"""admit() then check, against the real kube-scheduler v1.34.1 (the schedoracle build of it) given the pods as
admission leaves them (it runs no admission itself). Recorded in fixtures/oracle-admitted.json."""

import json
from pathlib import Path

import pytest

from gpufleet.scheduling import check_workloads
from tests.admission.objects import admitted, as_manifests

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "oracle-admitted.json").read_text())["scenarios"]


@pytest.mark.parametrize("name", sorted(FIXTURE))
def test_admitted_pods_schedule_as_the_real_scheduler_places_them(name):
    case = FIXTURE[name]
    result = admitted(*json.loads(json.dumps(case["input"])))
    manifests = as_manifests(result.workloads)
    assert manifests == case["admitted"]
    verdict = check_workloads(case["nodes"], [], manifests)
    pending = {u.workload: (u.pending, u.message) for u in verdict.unschedulable if u.reason == "pending"}
    for run in case["oracle"]:
        real = {w["workload"]: (w["pending"], w["message"]) for w in run if w["pending"]}
        assert pending == real
