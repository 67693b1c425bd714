"""gpufleet's verdicts against recorded runs of the real kube-scheduler v1.34.1 on generated fleets.

Each fixture in tests/fixtures/oracle/ holds a fleet's generator parameters (tests/scheduling/oracle_fleets.py
rebuilds it exactly; the digest of the files the runs were made on is checked) and three to five runs of the
real scheduler (in-process over a fake clientset, default profile) on it, to know its own spread: per workload,
pods scheduled and pending and the FailedScheduling message. The fixtures were recorded with
scripts/record_oracle.py; the suite never runs the scheduler itself. The `ho-*` fleets (new seeds and
oversubscriptions in every shape) were recorded after the engine was written and never tuned to: held out, kept
here as they came.

Per fleet, the issue's criteria: no false Pending (gpufleet Pending while every real run places the workload),
no silent miss (pending in every real run, yet neither Pending nor warned), gpufleet's Pending set within the
real runs' own spread + 1 % of the workloads, at most 2 % of workloads warned.
"""

import hashlib
import json
from pathlib import Path

import pytest

from gpufleet.scheduling import check_workloads
from tests.scheduling.oracle_compare import compare, held_out, verdicts
from tests.scheduling.oracle_fleets import generate, write

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures" / "oracle").glob("*.json"))
ANSWERS: dict[Path, dict] = {}  # gpufleet's answer per fixture, made once for the tests of this module


def _inputs(fixture: dict, tmp: Path) -> tuple[list, list, list]:
    """The fixture's fleet, rebuilt (nodes, running pods, manifests); the files are checked to be the ones the real
    runs were made on."""
    g = fixture["generator"]
    tmp.mkdir(parents=True, exist_ok=True)
    files = write(generate(g["seed"], g["nodes"], g["shape"], g.get("oversubscription")), tmp)
    if fixture.get("inputs_sha256"):
        digest = hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()
        assert digest == fixture["inputs_sha256"], "the generator no longer builds the fleet the runs were made on"
    nodes, pods = (json.loads(p.read_text())["items"] for p in files[:2])
    import yaml

    return nodes, pods, list(yaml.load_all(files[2].read_text(), Loader=yaml.CSafeLoader))


def _answer(path: Path, tmp: Path) -> dict:
    """gpufleet's answer on a fixture's fleet (pods made directly), made once for the tests of this module."""
    if path not in ANSWERS:
        ANSWERS[path] = check_workloads(*_inputs(json.loads(path.read_text()), tmp)).to_json()
    return ANSWERS[path]


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_verdicts_follow_the_real_scheduler(path, tmp_path):
    fixture = json.loads(path.read_text())
    metrics = compare(_answer(path, tmp_path), fixture)
    failed = [k for k, ok in verdicts(metrics).items() if not ok]
    assert not failed, {k: metrics[k] for k in ("false_pending", "silent_miss", "distance", "real_spread", "warnings",
                                                 "workloads")} | {"failed": failed}


def test_gpufleet_misses_unseen_real_runs_no_more_often_than_three_real_runs_miss_them(tmp_path):
    # The scheduler breaks score ties at random, so near a full pool its runs disagree, and an answer drawn from
    # three runs (gpufleet's, or the real scheduler's own) now and then misses a fourth: a workload that pends in
    # all three may run in the next. On the fixtures with five runs, every split into three runs and two judges:
    # gpufleet may miss as often as the real scheduler misses itself, not more (a bias in its placements would).
    totals = {"gpufleet": 0, "real": 0, "splits": 0}
    for path in FIXTURES:
        fixture = json.loads(path.read_text())
        if len(fixture["runs"]) >= 5:
            found = held_out(_answer(path, tmp_path / path.stem), fixture)
            totals = {k: totals[k] + found[k] for k in totals}
    assert totals["splits"] >= 100
    assert totals["gpufleet"] <= totals["real"], totals


def test_held_out_counts_the_real_runs_own_misses_and_an_answers_misses_on_the_same_judges():
    def run(pending: int) -> dict:
        return {"Deployment/a/tight": {"scheduled": 2 - pending, "pending": pending, "reason": "pending",
                                       "message": "0/3 nodes are available" if pending else None},
                "Deployment/a/roomy": {"scheduled": 2, "pending": 0, "reason": None, "message": None}}

    fixture = {"runs": [run(1), run(1), run(1), run(0)]}  # the fourth run found room for `tight`
    always_pending = {"unschedulable": [{"workload": "Deployment/a/tight", "reason": "pending", "pending": 1,
                                         "message": ""}], "warnings": []}
    warned = {"unschedulable": [], "warnings": [{"workload": "Deployment/a/tight"}]}
    # Four splits: the one that judges by the fourth run calls `tight` Pending, a false Pending; the three that
    # include it warn, and a warning misses nothing.
    assert held_out(always_pending, fixture) == {"gpufleet": 1, "real": 1, "splits": 4}
    assert held_out(warned, fixture) == {"gpufleet": 0, "real": 1, "splits": 4}
    assert held_out(warned, {"runs": fixture["runs"][:3]})["splits"] == 0


def test_on_10000_nodes_gpufleet_misses_only_workloads_that_ties_decide_and_more_runs_warn_about_them(tmp_path):
    # One real run on a 10,000-node fleet with 52,521 running pods (it took about 49 minutes). Judged by a single
    # run, the default three tie-break runs miss a few workloads at the edge of a full pool. Each is one that
    # gpufleet's own runs disagree on once it takes eight: then nothing is missed, with at most 2 % warned.
    path = Path(__file__).parents[1] / "fixtures" / "oracle-10k" / "mixed-10000.json"
    fixture = json.loads(path.read_text())
    nodes, pods, manifests = _inputs(fixture, tmp_path)
    three = compare(check_workloads(nodes, pods, manifests).to_json(), fixture)
    eight_answer = check_workloads(nodes, pods, manifests, tie_runs=8).to_json()
    eight = compare(eight_answer, fixture)
    assert all(verdicts(eight).values()), {k: eight[k] for k in ("false_pending", "silent_miss", "distance",
                                                                  "warnings")}
    warned = {w["workload"] for w in eight_answer["warnings"]}
    missed = set(three["false_pending"]) | set(three["silent_miss"])
    assert missed <= warned, missed - warned
    assert three["distance"] <= 0.01 * three["workloads"] and three["warnings"] <= 0.02 * three["workloads"]


def test_the_fixtures_cover_the_issue_shapes():
    shapes = {json.loads(p.read_text())["generator"]["shape"] for p in FIXTURES}
    sizes = {json.loads(p.read_text())["generator"]["nodes"] for p in FIXTURES}
    assert {"mixed", "l4-trap", "cpu-bound", "mig"} <= shapes and max(sizes) >= 5000
    assert all(len(json.loads(p.read_text())["runs"]) >= 3 for p in FIXTURES)
