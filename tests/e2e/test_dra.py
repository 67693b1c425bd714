"""DRA, for real: the `dra` stack's nodes as KWOK nodes, the DeviceClasses of NVIDIA's real DRA driver chart,
and ResourceSlices as that driver publishes them for these nodes (gpufleet's planned slices). The plan's
claims, templates and workloads are applied; the real resourceclaim controller and scheduler allocate
devices. The workloads left Pending must be those `gpufleet check` on the live cluster calls Pending, and
every pod that runs must have its claims allocated."""

from __future__ import annotations

import json

import pytest
import yaml

from gpufleet.config.loading import load_stack
from tests.e2e.cluster import ROOT
from tests.e2e.dra_driver import driver_device_classes, publish_driver_devices
from tests.e2e.kwok_nodes import create_nodes, nodes_from_stack, wait_nodes_ready
from tests.e2e.workloads import check_json, collection, ensure_namespaces, outcome, plan_documents, settle, workload_key
from tests.scheduling.oracle_fleets import pod_count

RESULTS = ROOT / "build" / "e2e" / "dra.json"


@pytest.fixture(scope="module")
def device_classes(tmp_path_factory) -> list[dict]:
    """The DeviceClasses of the DRA driver chart gpufleet pins, as `helm template` renders them."""
    return driver_device_classes(tmp_path_factory.mktemp("dra"))


def test_claims_are_allocated_and_pending_matches_check(cluster, device_classes, tmp_path):
    api = cluster.api()
    cfg = load_stack("dra", ROOT).config
    nodes = nodes_from_stack("dra", ROOT)
    create_nodes(api, nodes)
    wait_nodes_ready(api, [n.name for n in nodes])
    publish_driver_devices(api, device_classes, cfg)

    docs = [d for d in plan_documents("dra", tmp_path / "plan") if d.get("kind") != "HelmRelease"]
    manifests = tmp_path / "manifests.yaml"
    manifests.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    on_cluster = check_json("--kubeconfig", str(cluster.kubeconfig), str(manifests))

    ensure_namespaces(api, {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"})
    for d in docs:
        if d["kind"] == "Namespace":
            continue
        status, doc = api.request("POST", collection(d["kind"], d["metadata"].get("namespace")), d)
        assert status < 300, doc
    workloads = {workload_key(d): pod_count(d) for d in docs if d["kind"] in ("Deployment", "Job", "Pod")}
    settle(api, workloads)
    run = outcome(api, workloads, {})

    real_pending = {k for k, r in run.items() if r["pending"]}
    check_pending = {u["workload"] for u in on_cluster.get("unschedulable", [])
                     if u["reason"] in ("pending", "rejected")}
    assert real_pending == check_pending

    claims = api.ok("GET", "/apis/resource.k8s.io/v1/resourceclaims")["items"]
    allocated = {(c["metadata"]["namespace"], c["metadata"]["name"]) for c in claims
                 if c.get("status", {}).get("allocation")}
    placed = [p for p in api.ok("GET", "/api/v1/pods")["items"]
              if p["spec"].get("nodeName") and p["spec"].get("resourceClaims")]
    assert placed, "no pod with claims was placed: the test would prove nothing"
    for pod in placed:
        names = [c["resourceClaimName"] for c in pod["spec"]["resourceClaims"] if c.get("resourceClaimName")]
        names += [st["resourceClaimName"] for st in pod.get("status", {}).get("resourceClaimStatuses") or ()]
        assert names and all((pod["metadata"]["namespace"], n) in allocated for n in names), pod["metadata"]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    summary = {"real": run, "check_pending": sorted(check_pending), "pods_with_claims_placed": len(placed),
               "claims_allocated": len(allocated)}
    RESULTS.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")

