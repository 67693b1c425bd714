"""DRA objects reach `check` from manifests, kubectl files (`--pods`, `discover --dra`), a live cluster
(through the ClusterSource interface) and capacity.json, all read strictly."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from gpufleet.cli.discover import discover
from gpufleet.discovery.fakes import FakeCluster
from tests.cli.run_inprocess import run
from tests.scheduling.test_dra_check import DRA, gpus, pod, template

CLASSES = list(yaml.safe_load_all((DRA / "deviceclasses.yaml").read_text()))
SLICES = json.loads((DRA / "resourceslices.json").read_text())["items"]
CLAIMS = json.loads((DRA / "resourceclaims.json").read_text())["items"]
PENDS = "0/2 nodes are available: 1 cannot allocate all claims, 1 node(s) didn't match Pod's node affinity/selector."


def kubectl_list(path: Path, items: list[dict]) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def workload(tmp_path: Path) -> Path:
    path = tmp_path / "trainer.yaml"
    path.write_text(yaml.safe_dump_all([template("three", [gpus(3)]),
                                        pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "three"}],
                                            node="dra-node-a")]))
    return path


def verdict(outcome) -> tuple[int, list[str]]:
    assert outcome.code in (0, 1), outcome.err
    return outcome.code, [u["message"] for u in json.loads(outcome.out)["unschedulable"]]


def test_discover_writes_dra_files_into_capacity_json_and_check_reads_them(tmp_path):
    dra = kubectl_list(tmp_path / "dra.json", CLASSES + SLICES)
    claims = kubectl_list(tmp_path / "claims.json", CLAIMS)
    out = tmp_path / "capacity.json"
    made = run("discover", "--out", out, "--nodes", DRA / "nodes.json", "--dra", dra, "--dra", claims)
    assert made.code == 0, made.err
    assert "5 DRA object(s)" in made.out
    written = json.loads(out.read_text())
    assert [len(written[k]) for k in ("deviceClasses", "resourceSlices", "resourceClaims")] == [2, 2, 1]
    assert verdict(run("check", "--json", "--nodes", out, workload(tmp_path))) == (1, [PENDS])


def test_without_the_claim_that_holds_six_gpus_the_pod_fits(tmp_path):
    out = tmp_path / "capacity.json"
    dra = kubectl_list(tmp_path / "dra.json", CLASSES + SLICES)
    assert run("discover", "--out", out, "--nodes", DRA / "nodes.json", "--dra", dra).code == 0
    assert verdict(run("check", "--json", "--nodes", out, workload(tmp_path))) == (0, [])


def test_live_cluster_dra_objects_go_into_the_capacity_model(tmp_path):
    nodes = json.loads((DRA / "nodes.json").read_text())["items"]
    served = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in SLICES]  # as the API lists
    cap = discover(kubeconfig=tmp_path / "kubeconfig",
                   cluster=FakeCluster(nodes, [], [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                                    **o} for o in served] + CLASSES + CLAIMS))
    doc = cap.to_json()
    assert [o["metadata"]["name"] for o in doc["resourceSlices"]] == ["dra-node-a-gpu.nvidia.com-x7k2p",
                                                                       "dra-node-b-gpu.nvidia.com-x7k2p"]
    out = tmp_path / "capacity.json"
    out.write_text(json.dumps(doc))
    assert verdict(run("check", "--json", "--nodes", out, workload(tmp_path))) == (1, [PENDS])


def test_claims_in_a_pods_file_are_read(tmp_path):
    pods = kubectl_list(tmp_path / "pods.json", CLAIMS)
    dra = tmp_path / "dra.yaml"
    dra.write_text(yaml.safe_dump_all(CLASSES + SLICES))
    outcome = run("check", "--json", "--nodes", DRA / "nodes.json", "--pods", pods, dra, workload(tmp_path))
    assert verdict(outcome) == (1, [PENDS])


def test_bad_dra_object_in_capacity_json_names_file_object_and_field(tmp_path):
    broken = json.loads(json.dumps(SLICES[0]))
    broken["spec"]["devices"][0]["attributes"]["productName"] = {"string": 7}
    doc = {"format": "gpufleet.io/capacity/v1", "source": "kubectl",
           "nodes": [{"name": "dra-node-a", "allocatable": {"pods": 110}}], "pods": [], "resourceSlices": [broken]}
    path = tmp_path / "capacity.json"
    path.write_text(json.dumps(doc))
    outcome = run("check", "--nodes", path, workload(tmp_path))
    assert outcome.code == 2
    assert outcome.err.strip() == (f"{path}: resourceSlices[0] (ResourceSlice/dra-node-a-gpu.nvidia.com-x7k2p): "
                                   "spec.devices[0].attributes[productName].string: must be a string, not the number 7")


def test_dra_file_holding_another_kind_is_refused_naming_the_item(tmp_path):
    nodes = json.loads((DRA / "nodes.json").read_text())["items"]
    dra = kubectl_list(tmp_path / "dra.json", CLASSES + nodes[:1])
    outcome = run("discover", "--out", tmp_path / "capacity.json", "--nodes", DRA / "nodes.json", "--dra", dra)
    assert outcome.code == 2
    assert outcome.err.strip() == (f"{dra}: items[2]: kind: expected DeviceClass, ResourceSlice or ResourceClaim "
                                   "(this file is read as the output of `kubectl get resourceslices,deviceclasses "
                                   "-o json` or `kubectl get resourceclaims -A -o json`), got 'Node'")
    assert not (tmp_path / "capacity.json").exists()


def test_dra_needs_the_files_source(tmp_path):
    outcome = run("discover", "--out", tmp_path / "c.json", "--nvml", "--dra", DRA / "resourceslices.json")
    assert (outcome.code, outcome.err.strip()) == (2, "--dra goes with --nodes (--kubeconfig reads the DRA objects "
                                                      "from the cluster)")


def test_report_reads_the_dra_objects_of_capacity_json_as_check_does(tmp_path):
    out = tmp_path / "capacity.json"
    dra = kubectl_list(tmp_path / "dra.json", CLASSES + SLICES + CLAIMS)
    assert run("discover", "--out", out, "--nodes", DRA / "nodes.json", "--dra", dra).code == 0
    made = run("report", "--out", tmp_path / "r.html", "--nodes", out, workload(tmp_path))
    assert made.code == 0, made.err
    assert "1 cannot allocate all claims" in (tmp_path / "r.html").read_text()
