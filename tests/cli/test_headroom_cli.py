"""`gpufleet headroom` as a user runs it: the JSON contract, the text answer, and bad input (exit 2, one clear
line, no traceback)."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.cli.run_inprocess import run
from tests.conftest import ROOT
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


def test_shapes_with_node_groups_is_exit_2_not_an_answer_that_ignores_them(fleet, tmp_path):
    groups = tmp_path / "groups.yaml"
    groups.write_text("nodeGroups: []\n")
    done = run("headroom", "--shapes", "--nodes", fleet["nodes"], "--node-groups", groups)
    assert done.code == 2 and "--node-groups goes with --probe" in done.err


def test_shapes_table_as_json_lists_each_gpu_shape_with_and_without_the_toleration(fleet):
    done = run("headroom", "--shapes", "--json", "--nodes", fleet["nodes"], "--pods", fleet["pods"])
    assert done.code == 0, done.err
    rows = json.loads(done.out)
    shapes = {(r["shape"], r["tolerates"]) for r in rows}
    assert any(s.startswith("1x ") for s, _ in shapes) and {t for _, t in shapes} == {True, False}


DRA = ROOT / "tests" / "fixtures" / "dra"


def _dra_table(*inputs) -> dict[tuple[str, bool], int]:
    done = run("headroom", "--shapes", "--json", "--nodes", DRA / "nodes.json", DRA / "deviceclasses.yaml",
               *inputs)
    assert done.code == 0, done.err
    return {(r["shape"], r["tolerates"]): r["instances"] for r in json.loads(done.out)}


def test_shapes_on_dra_cluster_files_are_claims_and_claimed_devices_are_not_free():
    # Two nodes of 8 H100s published in ResourceSlices (no nvidia.com/gpu); an existing claim holds 6 of
    # node a's.
    table = _dra_table(DRA / "resourceslices.json", DRA / "resourceclaims.json")
    h100 = "NVIDIA H100 80GB HBM3 (gpu.nvidia.com)"
    assert table == {(f"{n}x {h100}", t): free
                     for n, free in ((1, 10), (2, 5), (4, 2), (8, 1)) for t in (True, False)}


def _mig(node: str, profiles: list[str]) -> dict:
    product = {"string": "NVIDIA A100-SXM4-80GB"}
    devices = [{"name": f"gpu-0-mig-{i}",
                "attributes": {"type": {"string": "mig"}, "profile": {"string": p}, "productName": product}}
               for i, p in enumerate(profiles)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-mig"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node, "devices": devices,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}}}


def test_shapes_on_dra_mig_devices_are_claims_of_the_mig_class_per_profile(tmp_path):
    slices = tmp_path / "slices.yaml"
    slices.write_text(yaml.safe_dump_all([_mig("dra-node-a", ["3g.40gb", "3g.40gb", "1g.10gb"]),
                                          _mig("dra-node-b", ["1g.10gb"] * 7)]))
    table = _dra_table(slices)
    assert {s: n for (s, t), n in table.items() if t} == {
        "1x 1g.10gb (mig.nvidia.com)": 8, "2x 1g.10gb (mig.nvidia.com)": 3, "4x 1g.10gb (mig.nvidia.com)": 1,
        "1x 3g.40gb (mig.nvidia.com)": 2, "2x 3g.40gb (mig.nvidia.com)": 1}


def test_a_probe_file_with_its_claim_template_is_placed_on_the_free_devices(tmp_path):
    probe = tmp_path / "probe.yaml"
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "one-gpu", "namespace": "ml"},
                "spec": {"spec": {"devices": {"requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}}
    container = {"name": "c", "image": "x:1", "resources": {"claims": [{"name": "gpu"}]}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "infer", "namespace": "ml"},
           "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                    "containers": [container]}}
    probe.write_text(yaml.safe_dump_all([template, pod]))
    done = run("headroom", "--probe", probe, "--json", "--nodes", DRA / "nodes.json",
               DRA / "deviceclasses.yaml", DRA / "resourceslices.json", DRA / "resourceclaims.json")
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    # 16 H100s less the 6 an existing claim holds on node a
    assert doc["instances"] == 10 and doc["byNode"] == {"dra-node-a": 2, "dra-node-b": 8}
    assert doc["byProduct"] == {"NVIDIA H100 80GB HBM3": 10}


def test_a_probe_whose_claim_template_no_input_holds_is_exit_2_naming_the_file_and_the_template(tmp_path):
    probe = tmp_path / "probe.yaml"
    container = {"name": "c", "image": "x:1", "resources": {"claims": [{"name": "gpu"}]}}
    probe.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "infer", "namespace": "ml"},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                 "containers": [container]}}))
    done = run("headroom", "--probe", probe, "--nodes", DRA / "nodes.json", DRA / "deviceclasses.yaml",
               DRA / "resourceslices.json")
    assert done.code == 2 and "Traceback" not in done.err
    assert done.err.startswith(f"--probe {probe}: the probe's pod claim gpu names ResourceClaimTemplate "
                               "ml/one-gpu, which none of the inputs holds"), done.err


def test_classes_that_select_the_same_devices_share_one_row_per_shape(tmp_path):
    h100 = tmp_path / "h100-class.yaml"
    h100.write_text(yaml.safe_dump({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "h100.example.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName == "
                                                      "'NVIDIA H100 80GB HBM3'"}}]}}))
    table = _dra_table(DRA / "resourceslices.json", DRA / "resourceclaims.json", h100)
    assert {s for s, _ in table} == {f"{n}x NVIDIA H100 80GB HBM3 (gpu.nvidia.com, h100.example.com)"
                                     for n in (1, 2, 4, 8)}


def test_a_quota_in_the_probes_namespace_caps_the_count_and_is_what_stops_it(tmp_path):
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"kind": "List", "items": [{
        "kind": "Node", "metadata": {"name": "gpu-1", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
        "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"}}}]}))
    quota = tmp_path / "quota.yaml"
    quota.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "ResourceQuota",
                                     "metadata": {"name": "gpus", "namespace": "default"},
                                     "spec": {"hard": {"requests.nvidia.com/gpu": "3"}}}))
    probe = tmp_path / "probe.yaml"
    container = {"name": "c", "image": "nvcr.io/nvidia/cuda:12.8.0", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    meta = {"name": "p", "namespace": "default"}
    probe.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                                     "spec": {"containers": [container]}}))
    done = run("headroom", "--probe", probe, "--nodes", nodes, "--json", quota)
    assert done.code == 0, done.err  # the quota is the cluster's answer, not a fault of the probe
    doc = json.loads(done.out)
    assert doc["instances"] == 3 and doc["byNode"] == {"gpu-1": 3}
    assert "exceeded quota: gpus" in doc["stoppedBy"]
    shapes = run("headroom", "--shapes", "--nodes", nodes, "--json", quota)
    assert shapes.code == 0, shapes.err
    assert "exceeded quota" in shapes.out
