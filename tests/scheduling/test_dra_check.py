"""`gpufleet check` allocates DRA claims as kube-scheduler's DynamicResources plugin does.

The cluster: two nodes with 8 x H100 80GB each, published by NVIDIA's DRA driver (tests/fixtures/dra),
and a claim that already holds 6 GPUs of dra-node-a (2 left there, 8 on dra-node-b).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.cli.run_inprocess import run

DRA = Path(__file__).parents[1] / "fixtures" / "dra"
CLUSTER = [DRA / "deviceclasses.yaml", DRA / "resourceslices.json", DRA / "resourceclaims.json"]


def template(name: str, requests: list[dict], constraints: list[dict] | None = None, ns: str = "ml") -> dict:
    devices: dict = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": ns}, "spec": {"spec": {"devices": devices}}}


def gpus(count: int = 1, cls: str = "gpu.nvidia.com", selectors: tuple[str, ...] = (), name: str = "gpus") -> dict:
    exactly: dict = {"deviceClassName": cls, "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": exactly}


def pod(name: str, claims: list[dict], node: str | None = None, kind: str = "Pod", replicas: int = 1,
        annotations: dict | None = None) -> dict:
    spec: dict = {"resourceClaims": claims,
                  "containers": [{"name": "main", "image": "trainer:1",
                                  "resources": {"claims": [{"name": c["name"]} for c in claims]}}]}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    meta = {"name": name, "namespace": "ml", "annotations": annotations or {}}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"replicas": replicas, "template": {"metadata": {"annotations": annotations or {}},
                                                         "spec": spec}}}


def check(tmp_path: Path, docs: list[dict], nodes: Path = DRA / "nodes.json", inputs=CLUSTER):
    path = tmp_path / "workloads.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    outcome = run("check", "--json", "--nodes", nodes, *inputs, path)
    assert outcome.code in (0, 1), outcome.err
    result = json.loads(outcome.out)
    for u in result["unschedulable"]:  # who holds the capacity is tested in test_blocked_by.py
        u.pop("blockedBy", None)
    return outcome.code, result


def messages(result: dict) -> dict[str, str]:
    return {u["workload"]: u["message"] for u in result["unschedulable"]}


def test_three_gpu_claim_pends_on_a_node_with_two_free_gpus_in_the_schedulers_words(tmp_path):
    code, result = check(tmp_path, [template("three", [gpus(3)]),
                                    pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "three"}],
                                        node="dra-node-a")])
    assert code == 1
    assert messages(result) == {"Pod/ml/trainer": "0/2 nodes are available: 1 cannot allocate all claims, "
                                                  "1 node(s) didn't match Pod's node affinity/selector."}


def test_two_gpu_claim_fits_in_the_two_gpus_left(tmp_path):
    code, result = check(tmp_path, [template("two", [gpus(2)]),
                                    pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "two"}],
                                        node="dra-node-a")])
    assert (code, result["unschedulable"]) == (0, [])


def test_template_claims_take_fresh_devices_per_pod_until_none_are_left(tmp_path):
    # 10 GPUs are free in all: two pods of 4 fit, the third finds 2 on dra-node-a and 0 on dra-node-b.
    code, result = check(tmp_path, [template("four", [gpus(4)]),
                                    pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "four"}],
                                        kind="Deployment", replicas=3)])
    assert code == 1
    assert result["unschedulable"] == [{"workload": "Deployment/ml/trainer", "reason": "pending", "pending": 1,
                                        "message": "0/2 nodes are available: 2 cannot allocate all claims."}]


def test_selector_for_a_product_nobody_has_is_reported(tmp_path):
    code, result = check(tmp_path, [template("a100", [gpus(1, selectors=(
        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-80GB'",))]),
        pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "a100"}])])
    assert code == 1
    assert messages(result) == {"Pod/ml/trainer": "0/2 nodes are available: 2 cannot allocate all claims."}


def test_first_available_takes_h100_else_a100_in_order(tmp_path):
    first_available = {"name": "gpu", "firstAvailable": [
        {"name": "h100", "deviceClassName": "gpu.nvidia.com", "count": 8, "selectors": [
            {"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')"}}]},
        {"name": "a100", "deviceClassName": "gpu.nvidia.com", "count": 1, "selectors": [
            {"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA A100')"}}]}]}
    # Only dra-node-b has 8 free H100s: the first pod gets them; the second has neither 8 H100s nor an A100.
    code, result = check(tmp_path, [template("prio", [first_available]),
                                    pod("trainer", [{"name": "gpu", "resourceClaimTemplateName": "prio"}],
                                        kind="Deployment", replicas=2)])
    assert code == 1
    assert result["unschedulable"][0]["pending"] == 1
    assert messages(result) == {"Deployment/ml/trainer": "0/2 nodes are available: 2 cannot allocate all claims."}


def test_first_available_falls_back_to_its_second_choice(tmp_path):
    first_available = {"name": "gpu", "firstAvailable": [
        {"name": "a100", "deviceClassName": "gpu.nvidia.com", "selectors": [
            {"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA A100')"}}]},
        {"name": "hopper", "deviceClassName": "gpu.nvidia.com", "count": 2, "selectors": [
            {"cel": {"expression": "device.attributes['gpu.nvidia.com'].architecture == 'Hopper'"}}]}]}
    code, result = check(tmp_path, [template("prio", [first_available]),
                                    pod("trainer", [{"name": "gpu", "resourceClaimTemplateName": "prio"}])])
    assert (code, result["unschedulable"]) == (0, [])


def b200_else_every_gpu(b200s: int) -> dict:
    """`b200s` B200s (no node has one), else allocationMode All: an All subrequest after the first."""
    return {"name": "gpus", "firstAvailable": [
        {"name": "b200", "deviceClassName": "gpu.nvidia.com", "count": b200s, "selectors": [
            {"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA B200'"}}]},
        {"name": "every", "deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}]}


def test_an_all_subrequest_after_the_first_takes_one_device_as_the_scheduler_does(tmp_path):
    claim = {"name": "gpus", "resourceClaimTemplateName": "b200-else-all"}
    # kube-scheduler v1.34's allocator loses the subrequest's index after the first device of such an All:
    # it goes on with the first subrequest's count (1, here) and so takes one of dra-node-b's 8 GPUs, and
    # a 7-GPU pod still fits there, as it does under the real kube-scheduler v1.34.5.
    code, result = check(tmp_path, [template("b200-else-all", [b200_else_every_gpu(1)]),
                                    template("seven", [gpus(7)]),
                                    pod("greedy", [claim], node="dra-node-b"),
                                    pod("seven", [{"name": "gpus", "resourceClaimTemplateName": "seven"}],
                                        node="dra-node-b")])
    assert (code, result["unschedulable"]) == (0, [])


def test_an_all_subrequest_after_the_first_needs_the_rest_of_the_first_ones_count(tmp_path):
    claim = {"name": "gpus", "resourceClaimTemplateName": "b200s-else-all"}
    # The same rule the other way: after one GPU of the All it still wants a second device that passes
    # the first subrequest (a B200), which no node has, so the pod pends where every GPU is free.
    code, result = check(tmp_path, [template("b200s-else-all", [b200_else_every_gpu(2)]),
                                    pod("greedy", [claim], node="dra-node-b")])
    assert code == 1
    assert messages(result) == {"Pod/ml/greedy": "0/2 nodes are available: 1 cannot allocate all claims, "
                                                 "1 node(s) didn't match Pod's node affinity/selector."}


SAME_ROOT = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]


def test_same_pcie_root_fits_when_one_root_has_enough_free_gpus(tmp_path):
    # dra-node-b: 4 GPUs on each of its two PCIe roots.
    code, result = check(tmp_path, [template("root4", [gpus(4)], SAME_ROOT),
                                    pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "root4"}],
                                        kind="Deployment", replicas=2)])
    assert (code, result["unschedulable"]) == (0, [])


def test_same_pcie_root_pends_when_no_root_has_enough(tmp_path):
    # Five GPUs on one root exist nowhere, although dra-node-b has 8 free GPUs.
    code, result = check(tmp_path, [template("root5", [gpus(5)], SAME_ROOT),
                                    pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "root5"}])])
    assert code == 1
    assert messages(result) == {"Pod/ml/trainer": "0/2 nodes are available: 2 cannot allocate all claims."}
    code, _ = check(tmp_path, [template("root5", [gpus(5)]),
                               pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "root5"}])])
    assert code == 0


def shared_claim(count: int) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "shared-gpus", "namespace": "ml"},
            "spec": {"devices": {"requests": [gpus(count)]}}}


def test_shared_claim_is_allocated_once_for_two_pods(tmp_path):
    # 8 GPUs once: both pods follow the claim to dra-node-b; as template claims the second finds none left,
    # whichever node the first took: Pending, not a warning.
    shared = [{"name": "gpus", "resourceClaimName": "shared-gpus"}]
    code, result = check(tmp_path, [shared_claim(8), pod("reader-a", shared), pod("reader-b", shared)])
    assert (code, result["unschedulable"], result["warnings"]) == (0, [], [])
    code, result = check(tmp_path, [template("eight", [gpus(8)]),
                                    *(pod(n, [{"name": "gpus", "resourceClaimTemplateName": "eight"}])
                                      for n in ("reader-a", "reader-b"))])
    assert (code, result["warnings"]) == (1, [])
    assert messages(result) == {"Pod/ml/reader-b": "0/2 nodes are available: 2 cannot allocate all claims."}


def test_consumers_of_a_shared_claim_follow_it_to_its_node(tmp_path):
    shared = [{"name": "gpus", "resourceClaimName": "shared-gpus"}]
    code, result = check(tmp_path, [shared_claim(8), pod("reader-a", shared),
                                    pod("reader-b", shared, node="dra-node-a")])
    assert code == 1
    assert messages(result) == {"Pod/ml/reader-b": "0/2 nodes are available: 1 node(s) didn't match Pod's node "
                                                   "affinity/selector, 1 resourceclaim not available on the node."}


def idle_claim_on_node_b(reserved_for: list[dict]) -> dict:
    """A claim of 2 GPUs allocated on dra-node-b, reserved for `reserved_for`."""
    results = [{"request": "gpus", "driver": "gpu.nvidia.com", "pool": "dra-node-b", "device": d}
               for d in ("gpu-0", "gpu-1")]
    selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                        "values": ["dra-node-b"]}]}]}
    return {**shared_claim(2), "status": {"allocation": {"devices": {"results": results}, "nodeSelector": selector},
                                          "reservedFor": reserved_for}}


def test_a_claim_reserved_for_no_pod_is_deallocated_and_the_pod_tried_again_where_it_fits(tmp_path):
    # The pod may only run on dra-node-a; its claim sits on dra-node-b, used by nobody. The scheduler's
    # DynamicResources PostFilter deallocates it, the claim's update requeues the pod, and the next attempt
    # allocates the claim on dra-node-a (a real control plane places such pods: tests/e2e/test_dra_scenarios.py).
    shared = [{"name": "gpus", "resourceClaimName": "shared-gpus"}]
    code, result = check(tmp_path, [idle_claim_on_node_b([]), pod("moved", shared, node="dra-node-a"),
                                    pod("follower", shared)])
    assert (code, result["unschedulable"]) == (0, [])
    assert [w["workload"] for w in result["warnings"]] == ["Pod/ml/moved"]
    assert "ResourceClaim ml/shared-gpus is allocated to devices on a node the pod cannot use and reserved for no " \
           "pod" in result["warnings"][0]["message"]
    # The follower goes where the claim went: dra-node-a, in every run.
    from gpufleet.scheduling import check_workloads

    nodes = json.loads((DRA / "nodes.json").read_text())["items"]
    cluster = [*yaml.safe_load_all((DRA / "deviceclasses.yaml").read_text()),
               *json.loads((DRA / "resourceslices.json").read_text())["items"]]
    placed = check_workloads(nodes, [], [*cluster, idle_claim_on_node_b([]), pod("moved", shared, node="dra-node-a"),
                                         pod("follower", shared)]).placements
    assert sorted(placed) == [("Pod/ml/follower", "dra-node-a", 1), ("Pod/ml/moved", "dra-node-a", 1)]


def test_the_retry_warning_counts_the_pods_that_were_tried_again_not_the_claims_freed():
    from gpufleet.scheduling.engine import _reallocated

    one_pod_two_claims = _reallocated([(0, ("ml", "a")), (0, ("ml", "b"))])
    assert one_pod_two_claims.startswith("a pod finds no node at first: ResourceClaims ml/a, ml/b are allocated")
    assert "deallocates each," in one_pod_two_claims
    two_pods = _reallocated([(0, ("ml", "a")), (3, ("ml", "a"))])
    assert two_pods.startswith("2 of its pods find no node at first: ResourceClaim ml/a is allocated")


def test_a_claim_reserved_for_a_running_pod_is_not_deallocated(tmp_path):
    shared = [{"name": "gpus", "resourceClaimName": "shared-gpus"}]
    holder = [{"resource": "pods", "name": "holder", "uid": "9b0e6a4c-2f1d-4c6e-8f3a-1d2c3b4a5f60"}]
    code, result = check(tmp_path, [idle_claim_on_node_b(holder), pod("moved", shared, node="dra-node-a")])
    assert (code, result["warnings"]) == (1, [])
    assert messages(result) == {"Pod/ml/moved": "0/2 nodes are available: 1 node(s) didn't match Pod's node "
                                                "affinity/selector, 1 resourceclaim not available on the node."}


def test_missing_device_class_is_the_schedulers_prefilter_message(tmp_path):
    code, result = check(tmp_path, [template("t", [gpus(1, cls="gpu.example.com")]),
                                    pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "t"}])])
    assert code == 1
    assert messages(result) == {"Pod/ml/trainer": "0/2 nodes are available: request gpus: device class "
                                                  "gpu.example.com does not exist."}


def test_missing_template_leaves_the_pod_waiting_without_a_scheduling_attempt(tmp_path):
    code, result = check(tmp_path, [pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "nope"}])])
    assert code == 1
    assert messages(result) == {"Pod/ml/trainer": (
        'pod "ml/trainer": ResourceClaim not created yet (the resourceclaim controller reports '
        'FailedResourceClaimCreation: PodResourceClaim gpus: resource claim template "nope": '
        'resourceclaimtemplate.resource.k8s.io "nope" not found); the pod waits without a scheduling attempt')}


def test_missing_named_claim_leaves_the_pod_waiting(tmp_path):
    code, result = check(tmp_path, [pod("trainer", [{"name": "gpus", "resourceClaimName": "nope"}])])
    assert code == 1
    assert messages(result) == {"Pod/ml/trainer": 'could not find ResourceClaim "ml/nope"; the pod waits without '
                                                  'a scheduling attempt'}


def test_cel_runtime_error_aborts_the_attempt_as_in_the_scheduler(tmp_path):
    code, result = check(tmp_path, [template("t", [gpus(1, selectors=(
        "device.attributes['gpu.nvidia.com'].memoryClock > 1000",))]),
        pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "t"}])])
    assert code == 1
    assert messages(result) == {"Pod/ml/trainer": 'running "DynamicResources" filter plugin: claim '
                                                  'ml/trainer-gpus-: selector #0: CEL runtime error: no such key: '
                                                  'memoryClock'}


def test_cel_compile_error_names_the_selector(tmp_path):
    code, result = check(tmp_path, [template("t", [gpus(1, selectors=("device.driver ==",))]),
                                    pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "t"}])])
    assert code == 1
    assert messages(result) == {"Pod/ml/trainer": 'running "DynamicResources" filter plugin: claim ml/trainer-gpus-: '
                                                  'selector #0: CEL compile error: compilation failed: ERROR: '
                                                  '<input>:1:15: Syntax error: unexpected end of expression\n'
                                                  ' | device.driver ==\n | ..............^'}


def test_quantity_and_semver_selectors(tmp_path):
    # 81559 MiB: more than 79Gi, less than 80Gi.
    selectors = ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('79Gi')) >= 0",
                 "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))",
                 "device.attributes['gpu.nvidia.com'].cudaComputeCapability.major() == 9",
                 "device.attributes['example.com'].size() == 0")
    code, result = check(tmp_path, [template("t", [gpus(2, selectors=selectors)]),
                                    pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "t"}])])
    assert (code, result["unschedulable"]) == (0, [])
    code, result = check(tmp_path, [template("t", [gpus(1, selectors=(
        "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('100Gi'))",))]),
        pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "t"}])])
    assert code == 1


def test_classic_gpu_nodes_and_dra_nodes_in_one_cluster(tmp_path):
    classic = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "classic", "namespace": "ml"},
               "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}
    code, result = check(tmp_path, [classic, template("eight", [gpus(8)]),
                                    pod("dra", [{"name": "gpus", "resourceClaimTemplateName": "eight"}],
                                        kind="Deployment", replicas=2)],
                         nodes=DRA / "nodes-mixed.json")
    # The classic pod takes classic-node's 8 nvidia.com/gpu; one DRA pod fits on dra-node-b, not two.
    assert code == 1
    assert result["unschedulable"] == [{"workload": "Deployment/ml/dra", "reason": "pending", "pending": 1,
                                        "message": "0/3 nodes are available: 3 cannot allocate all claims."}]


def test_memory_budget_uses_the_allocated_devices_memory(tmp_path):
    annotations = {"gpufleet.io/expected-gpu-memory-mib": "100000"}
    code, result = check(tmp_path, [template("one", [gpus(1)]),
                                    pod("big", [{"name": "gpus", "resourceClaimTemplateName": "one"}],
                                        annotations=annotations)])
    assert code == 0
    assert [m["availableMiB"] for m in result["memoryBudget"]] == [81559]
    code, result = check(tmp_path, [template("two", [gpus(2)]),
                                    pod("big", [{"name": "gpus", "resourceClaimTemplateName": "two"}],
                                        annotations=annotations)])
    assert result["memoryBudget"] == []


def test_a_bad_dra_object_is_an_input_error_naming_file_object_and_field(tmp_path):
    bad = template("t", [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": "three"}}])
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump_all([bad, pod("p", [{"name": "gpus", "resourceClaimTemplateName": "t"}])]))
    outcome = run("check", "--nodes", DRA / "nodes.json", *CLUSTER, path)
    assert outcome.code == 2
    assert outcome.err.strip() == (f"{path}: ResourceClaimTemplate/ml/t: spec.spec.devices.requests[0].exactly.count: "
                                   "must be an integer, not the string 'three'")


def test_a_search_past_its_budget_is_the_schedulers_timeout(tmp_path, monkeypatch):
    import gpufleet.scheduler.plugins.dynamicresources.structured.allocator as allocator

    monkeypatch.setattr(allocator, "SEARCH_BUDGET", 3)
    code, result = check(tmp_path, [template("t", [gpus(4)]),
                                    pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "t"}])])
    assert code == 1
    assert messages(result) == {"Pod/ml/trainer": "0/2 nodes are available: 2 timed out trying to allocate devices."}


def test_devices_that_consume_counters_are_never_allocated(tmp_path):
    slices = json.loads((DRA / "resourceslices.json").read_text())
    for s in slices["items"]:
        for d in s["spec"]["devices"]:
            d["consumesCounters"] = [{"counterSet": "gpu", "counters": {"memory": {"value": "80Gi"}}}]
    path = tmp_path / "slices.json"
    path.write_text(json.dumps(slices))
    code, result = check(tmp_path, [template("t", [gpus(1)]),
                                    pod("trainer", [{"name": "gpus", "resourceClaimTemplateName": "t"}])],
                         inputs=[DRA / "deviceclasses.yaml", path])
    assert messages(result) == {"Pod/ml/trainer": "0/2 nodes are available: 2 cannot allocate all claims."}


def test_first_available_h100_else_a100_gets_the_a100_once_the_h100s_are_taken():
    from gpufleet.scheduling import check_workloads

    slices = json.loads((DRA / "resourceslices.json").read_text())["items"]
    a100 = json.loads(json.dumps(slices[1]))
    a100["metadata"]["name"], a100["spec"]["nodeName"], a100["spec"]["pool"]["name"] = "a100", "a100-node", "a100-node"
    for d in a100["spec"]["devices"]:
        d["attributes"]["productName"] = {"string": "NVIDIA A100-SXM4-80GB"}
    nodes = json.loads((DRA / "nodes.json").read_text())["items"]
    extra = json.loads(json.dumps(nodes[1]))
    extra["metadata"] = {"name": "a100-node", "labels": {"kubernetes.io/hostname": "a100-node"}}
    product = "device.attributes['gpu.nvidia.com'].productName.startsWith('{}')"
    prio = {"name": "gpu", "firstAvailable": [
        {"name": "h100", "deviceClassName": "gpu.nvidia.com", "count": 4,
         "selectors": [{"cel": {"expression": product.format("NVIDIA H100")}}]},
        {"name": "a100", "deviceClassName": "gpu.nvidia.com", "count": 4,
         "selectors": [{"cel": {"expression": product.format("NVIDIA A100")}}]}]}
    classes = list(yaml.safe_load_all((DRA / "deviceclasses.yaml").read_text()))
    claims = json.loads((DRA / "resourceclaims.json").read_text())["items"]
    deployment = pod("trainer", [{"name": "gpu", "resourceClaimTemplateName": "prio"}], kind="Deployment",
                     replicas=3)
    result = check_workloads([*nodes, extra], [], [*classes, *slices, a100, *claims, template("prio", [prio]),
                                                   deployment])
    assert result.fits
    # 10 H100s are free: two pods get 4 H100s each on dra-node-b; the third falls back to 4 A100s.
    assert sorted((node, device.split("/")[2]) for _, node, device in result.devices)[:4] == [
        ("a100-node", f"gpu-{i}") for i in range(4)]
    assert sorted({node for _, node, _ in result.devices}) == ["a100-node", "dra-node-b"]


def test_a_pod_joining_an_allocated_claim_gets_its_devices_memory(tmp_path):
    # ml/train-0-gpus-8bq4r already holds 6 H100s on dra-node-a; a second consumer follows it there.
    joined = [{"name": "gpus", "resourceClaimName": "train-0-gpus-8bq4r"}]
    code, result = check(tmp_path, [pod("helper", joined, annotations={
        "gpufleet.io/expected-gpu-memory-mib": "600000"})])
    assert code == 0
    assert [(m["expectedMiB"], m["availableMiB"]) for m in result["memoryBudget"]] == [(600000, 6 * 81559)]
    code, result = check(tmp_path, [pod("helper", joined, node="dra-node-b")])
    assert messages(result) == {"Pod/ml/helper": "0/2 nodes are available: 1 node(s) didn't match Pod's node "
                                                 "affinity/selector, 1 resourceclaim not available on the node."}


def _model(model_id: str, max_model_len: int, max_num_seqs: int) -> dict:
    """The annotation gpufleet renders for a vLLM server of a real checkpoint (tests/fixtures/checkpoints)."""
    from gpufleet.capacity.model_fit import MODEL_ANNOTATION
    from gpufleet.config.model import ModelSpec
    from gpufleet.config.model_serving import served_model

    folder = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints" / model_id.replace("/", "__")
    spec = ModelSpec.model_validate({"name": model_id, "config": str(folder), "maxModelLen": max_model_len,
                                     "maxNumSeqs": max_num_seqs})
    return {MODEL_ANNOTATION: json.dumps(served_model(spec, "vllm/vllm-openai:v0.11.0").to_json())}


def test_model_larger_than_the_allocated_gpu_is_an_error_naming_the_device(tmp_path):
    # Llama-3.1-70B in bf16: 141 GB of weights on one 80 GB H100
    docs = [template("one", [gpus(1)]), pod("llama70b", [{"name": "g", "resourceClaimTemplateName": "one"}],
                                           annotations=_model("meta-llama/Llama-3.1-70B-Instruct", 8192, 4))]
    code, out = check(tmp_path, docs)
    assert code == 1
    (u,) = out["unschedulable"]
    assert u["reason"] == "memory"
    assert "the allocated DRA device gpu.nvidia.com/" in u["message"]
    assert "CUDA out of memory while loading the model" in u["message"]
    assert out["memoryBudget"][0]["error"] is True


def test_model_that_fits_the_allocated_gpu_passes(tmp_path):
    docs = [template("one", [gpus(1)]), pod("llama8b", [{"name": "g", "resourceClaimTemplateName": "one"}],
                                           annotations=_model("meta-llama/Llama-3.1-8B-Instruct", 8192, 4))]
    code, out = check(tmp_path, docs)
    assert code == 0, out
    assert out["memoryBudget"] == []


DIGEST_2030 = "f13dc863bd7ce105"


def test_generated_cluster_where_a_later_all_subrequest_left_a_pod_falsely_pending():
    # dra_scenarios seed 2030: train-0's template is "a device of one kind, else All of another"; the real
    # kube-scheduler v1.34.5 scheduled train-0 in 3 of 3 runs, where gpufleet used to call it Pending.
    from gpufleet.scheduling import check_workloads
    from tests.scheduling.dra_scenarios import digest, scenario

    s = scenario(2030)
    assert digest(s) == DIGEST_2030, "dra_scenarios.py no longer makes this cluster"
    result = check_workloads(s["nodes"], s["pods"], s["manifests"]).to_json()
    pending = {u["workload"]: u["pending"] for u in result["unschedulable"] if u["reason"] == "pending"}
    assert pending == {"Job/ml/infer-1": 1, "Pod/ml/eval-3": 1, "Deployment/ml/tune-4": 3}
