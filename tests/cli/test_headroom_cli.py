"""`gpufleet headroom` as a user runs it: the JSON contract, the text answer, and bad input (exit 2, one clear
line, no traceback)."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.cli.run_inprocess import run
from tests.scheduling.headroom_probes import probe_pod
from tests.scheduling.oracle_fleets import generate, write


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    where = tmp_path_factory.mktemp("fleet")
    paths = write(generate(7, 120, "mixed", -0.3), where)
    probe = where / "probe.yaml"
    probe.write_text(yaml.safe_dump(probe_pod("gpu1")))
    return {"nodes": paths[0], "pods": paths[1], "manifests": paths[2], "probe": probe, "dir": where}


def test_json_answer_counts_the_copies_where_they_land_and_what_stopped_the_next(fleet):
    done = run("headroom", "--probe", fleet["probe"], "--nodes", fleet["nodes"], "--pods", fleet["pods"], "--json",
               fleet["manifests"])
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert set(doc) == {"probe", "instances", "instancesRange", "byNode", "byProduct", "byZone", "stoppedBy"}
    low, high = doc["instancesRange"]
    assert low <= doc["instances"] <= high and doc["instances"] > 0
    assert sum(doc["byNode"].values()) == sum(doc["byProduct"].values()) == sum(doc["byZone"].values())
    assert doc["stoppedBy"].startswith("0/120 nodes are available")


def test_text_answer_reads_like_cluster_capacity(fleet):
    done = run("headroom", "--probe", fleet["probe"], "--nodes", fleet["nodes"], "--pods", fleet["pods"],
               fleet["manifests"])
    assert done.code == 0, done.err
    assert done.out.startswith("The cluster can schedule ") and "Stopped by: 0/120 nodes are available" in done.out


@pytest.mark.parametrize("probe_text, words", [
    ("", "found 0"),
    ("kind: ConfigMap\nmetadata: {name: x}\n", "found 0"),
    ("kind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: 'x:1'}]}\n---\n"
     "kind: Pod\nmetadata: {name: b}\nspec: {containers: [{name: c, image: 'x:1'}]}\n", "found 2"),
    ("kind: Pod\n  metadata: [\n", "YAML"),
])
def test_a_probe_that_is_not_one_workload_is_exit_2_naming_the_file(fleet, probe_text, words):
    probe = fleet["dir"] / "bad-probe.yaml"
    probe.write_text(probe_text)
    done = run("headroom", "--probe", probe, "--nodes", fleet["nodes"])
    assert done.code == 2 and "Traceback" not in done.err
    assert "bad-probe.yaml" in done.err and words in done.err, done.err


def test_probe_and_shapes_exclude_each_other(fleet):
    both = run("headroom", "--probe", fleet["probe"], "--shapes", "--nodes", fleet["nodes"])
    neither = run("headroom", "--nodes", fleet["nodes"])
    assert both.code == neither.code == 2
    assert "give --probe FILE or --shapes (one of them)" in both.err and "one of them" in neither.err


def test_shapes_table_as_json_lists_each_gpu_shape_with_and_without_the_toleration(fleet):
    done = run("headroom", "--shapes", "--json", "--nodes", fleet["nodes"], "--pods", fleet["pods"])
    assert done.code == 0, done.err
    rows = json.loads(done.out)
    shapes = {(r["shape"], r["tolerates"]) for r in rows}
    assert any(s.startswith("1x ") for s, _ in shapes) and {t for _, t in shapes} == {True, False}
