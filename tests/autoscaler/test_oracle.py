"""gpufleet's scale-up verdicts against recorded runs of the real cluster-autoscaler 1.34.5.

tests/fixtures/oracle-autoscaler/scenarios.json holds, per generated scenario (tests/autoscaler/scenarios.py;
the digest of the files the runs were made on is checked), five runs of the autoscaler's scale-up with the
real scheduler placing pods first, the last two with the Pending workloads handed to the autoscaler in
reverse order (scripts/record_autoscaler_oracle.py; the suite never runs the autoscaler). expanders.json holds
the same scenarios run with an expander chain and the priority expander's priorities in place of their own
options (`expander_variant`; `--expanders`).
Per workload the verdict must be the one every run gives (or one of them, where runs differ): runs now, runs
after scale-up, partly, never; per node group, the nodes added must lie within the runs' own range.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from tests.autoscaler.scenarios import scenario, write
from tests.cli.run_inprocess import run

FIXTURE = Path(__file__).parents[1] / "fixtures" / "oracle-autoscaler" / "scenarios.json"
RECORDED = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {"scenarios": []}
EXPANDERS = FIXTURE.with_name("expanders.json")
RECORDED_EXPANDERS = json.loads(EXPANDERS.read_text()) if EXPANDERS.exists() else {"scenarios": []}
#: Why gpufleet disagrees with the recorded runs, per seed; each is an expected failure that must keep failing
#: (strict), so a fix shows. Seeds 29 and 48 agree since every pass of the loop places the Pending pods again
#: on fresh nodes on their way, as each loop of the autoscaler does.
KNOWN: dict[int, str] = {
    155: "the autoscaler walks nodes in an order of its map iteration: whether w2's two pods, handed out round "
         "robin over the three nodes with room for them (two freed of expendable pods, one H100 node on its "
         "way), leave the H100 node whole for w3's 8-GPU pod depends on it; gpufleet's fixed walk (freed nodes "
         "first) leaves it whole, which a third of the orders do and none of the five recorded runs did",
}


def real_verdict(w: dict) -> str:
    if not w["pending"]:
        return "after" if w["afterScaleUp"] else "now"
    return "partly" if w["afterScaleUp"] else "never"


def gpufleet_verdicts(doc: dict) -> dict[str, str]:
    out = {w: "now" for w in doc["checked"]}
    for entry in doc.get("scaledFor", []):
        out[entry["workload"]] = "after"
    for u in doc["unschedulable"]:
        out[u["workload"]] = "partly" if u.get("scaleUp") else ("never" if u["reason"] in ("never", "pending")
                                                                 else u["reason"])
    return out


def added(scale_ups: list[dict]) -> dict[str, int]:
    """Nodes added per group, over every scale-up (a group can grow in more than one loop)."""
    out: dict[str, int] = {}
    for s in scale_ups:
        out[s["nodeGroup"]] = out.get(s["nodeGroup"], 0) + s["to"] - s["from"]
    return out


@pytest.mark.parametrize("entry", [
    pytest.param(e, id=f"seed-{e['seed']}", marks=[pytest.mark.xfail(strict=True, reason=KNOWN[e["seed"]])]
                 if e["seed"] in KNOWN else []) for e in RECORDED["scenarios"]])
def test_verdicts_and_nodes_added_follow_the_real_cluster_autoscaler(entry, tmp_path):
    compare(entry, tmp_path)


@pytest.mark.parametrize("entry", [pytest.param(e, id=f"seed-{e['seed']}-{e['options'][1]}")
                                   for e in RECORDED_EXPANDERS["scenarios"]])
def test_expander_chains_and_priorities_pick_as_the_real_cluster_autoscaler(entry, tmp_path):
    compare(entry, tmp_path)


def compare(entry: dict, tmp_path: Path) -> None:
    s = scenario(entry["seed"])
    paths = write(s, tmp_path)
    assert hashlib.sha256(b"".join(p.read_bytes() for p in paths)).hexdigest() == entry["inputs_sha256"], \
        "the generator no longer builds the scenario the runs were made on"
    options = list(entry["options"])
    if "priorities" in entry:  # the ConfigMap whose `priorities` value the reference read
        config = tmp_path / "priority-expander.yaml"
        config.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "cluster-autoscaler-priority-expander", "namespace": "kube-system"}, "data": {
            "priorities": yaml.safe_dump({int(k): v for k, v in entry["priorities"].items()})}}))
        options += ["--priority-config", config]
    out = run("check", "--nodes", paths[0], "--node-groups", paths[1], paths[2], "--json",
              *options)
    assert out.code in (0, 1), out.err
    mine = gpufleet_verdicts(json.loads(out.out))
    wrong = {}
    for workload, verdict in mine.items():
        real = {real_verdict(r["workloads"][workload]) for r in entry["runs"] if workload in r["workloads"]}
        if real and verdict not in real:
            wrong[workload] = (verdict, sorted(real))
    nodes = added(json.loads(out.out)["scaleUps"])
    runs = [added(r["scaleUps"]) for r in entry["runs"]]
    groups = set(nodes).union(*runs)
    spread = {g: (min(r.get(g, 0) for r in runs), max(r.get(g, 0) for r in runs)) for g in groups}
    outside = {g: (nodes.get(g, 0), spread[g]) for g in groups if not spread[g][0] <= nodes.get(g, 0) <= spread[g][1]}
    assert not wrong and not outside, {"verdicts (gpufleet, real)": wrong, "nodes added (gpufleet, real range)":
                                       outside}


def test_the_recorded_runs_cover_every_verdict_and_cap():
    verdicts = {real_verdict(w) for e in RECORDED["scenarios"] for r in e["runs"] for w in r["workloads"].values()}
    if not RECORDED["scenarios"]:
        pytest.skip(f"no recorded runs at {FIXTURE}")
    assert {"now", "after", "partly", "never"} <= verdicts
    assert any("--max-nodes-total" in e["options"] for e in RECORDED["scenarios"])
    assert any("--gpu-total" in e["options"] for e in RECORDED["scenarios"])
