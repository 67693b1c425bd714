"""`gpufleet headroom` against the real kube-scheduler v1.34.1: how many more copies of a probe pod it placed
on generated fleets (tests/fixtures/oracle-headroom, recorded with scripts/record_headroom_oracle.py, 5 runs
each; the suite never runs the scheduler). The fleets were recorded after headroom was written and never tuned
to. The answer must lie within the real runs' own spread, plus or minus 1%."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
import yaml

from gpufleet.scheduling.headroom import headroom
from tests.scheduling.headroom_probes import probe_deployment, probe_pod
from tests.scheduling.oracle_fleets import generate, write

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures" / "oracle-headroom").glob("*.json"))


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_headroom_lies_within_the_real_schedulers_runs(path, tmp_path):
    fixture = json.loads(path.read_text())
    g = fixture["generator"]
    fleet = generate(g["seed"], g["nodes"], g["shape"], g.get("oversubscription"))
    files = write(fleet, tmp_path)
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()
    assert digest == fixture["inputs_sha256"], "the generator no longer builds the fleet the runs were made on"
    deployment, _ = probe_deployment(fixture["probe"], fleet.nodes, fleet.pods)
    assert deployment["spec"]["replicas"] == fixture["replicas"]
    manifests = list(yaml.load_all(files[2].read_text(), Loader=yaml.CSafeLoader))
    answer = headroom(fleet.nodes, fleet.pods, manifests, probe_pod(fixture["probe"]))
    real = [r["scheduled"] for r in fixture["runs"]]
    low, high = math.floor(min(real) * 0.99), math.ceil(max(real) * 1.01)
    assert low <= answer.instances <= high, (answer.instances, answer.instances_range, real)
    assert answer.instances_range[0] <= answer.instances <= answer.instances_range[1]
    if max(real) < fixture["replicas"]:  # the scheduler says why the next copy did not fit
        assert answer.stopped_by.startswith(f"0/{g['nodes']} nodes are available")


def test_the_fixtures_cover_full_fleets_and_fleets_with_room():
    runs = [[r["scheduled"] for r in json.loads(p.read_text())["runs"]] for p in FIXTURES]
    assert len(runs) >= 5
    assert any(max(r) == 0 for r in runs) or any(min(r) < 5 for r in runs)
    assert any(min(r) > 50 for r in runs)


def test_the_shapes_table_gives_what_each_probe_gives_on_its_own(tmp_path):
    """The table skips the scheduler where every node with a GPU repels an untolerating probe; the count is the
    scheduler's own all the same."""
    from gpufleet.scheduling.engine import _nodes, _pods
    from gpufleet.scheduling.headroom import headroom_table

    fleet = generate(5, 120, "mixed", 0.0)
    files = write(fleet, tmp_path)
    manifests = list(yaml.load_all(files[2].read_text(), Loader=yaml.CSafeLoader))
    nodes, pods = _nodes(fleet.nodes), _pods(fleet.pods)
    rows = headroom_table(nodes, pods, manifests)
    assert any(not shape.tolerates for shape, _ in rows) and any(shape.tolerates for shape, _ in rows)
    for shape, answer in rows:
        direct = headroom(nodes, pods, manifests, shape.pod(), tie_runs=1)
        assert answer.instances == direct.instances, shape.label
