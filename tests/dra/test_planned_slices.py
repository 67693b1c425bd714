"""What gpufleet expects NVIDIA's DRA driver to publish for a stack's node pools, and how the capacity
policy hands it to the check engine."""

from __future__ import annotations

import copy
from collections import Counter

from gpufleet.capacity.model import Capacity
from gpufleet.capacity.stack import planned_dra_objects, planned_resource_slices, stack_capacity
from gpufleet.config.loading import load_stack, parse_sections
from gpufleet.validation.kube import validate_documents
from policies._capacity import manifests_to_check
from tests.conftest import ROOT
from tests.dra.test_dra_config import base


def dra_cfg():
    return load_stack("dra", ROOT).config


def test_one_node_local_pool_per_node_with_every_gpu_of_the_pool():
    slices = planned_resource_slices(dra_cfg())
    assert [(s["spec"]["nodeName"], s["spec"]["pool"]["name"]) for s in slices] == [
        ("h100-node-0", "h100-node-0"), ("h100-node-1", "h100-node-1")]
    for s in slices:
        assert s["spec"]["driver"] == "gpu.nvidia.com"
        assert s["spec"]["pool"]["resourceSliceCount"] == 1
        assert [d["name"] for d in s["spec"]["devices"]] == [f"gpu-{i}" for i in range(8)]


def test_devices_carry_the_drivers_attributes_and_nvml_memory():
    device = planned_resource_slices(dra_cfg())[0]["spec"]["devices"][0]
    a = device["attributes"]
    assert a["type"] == {"string": "gpu"} and a["productName"] == {"string": "NVIDIA H100 80GB HBM3"}
    assert a["architecture"] == {"string": "Hopper"} and a["cudaComputeCapability"] == {"version": "9.0.0"}
    assert a["driverVersion"] == {"version": "595.91.7"}
    assert device["capacity"] == {"memory": {"value": "81559Mi"}}


def test_hgx_boards_pair_their_gpus_under_four_pcie_roots():
    devices = planned_resource_slices(dra_cfg())[0]["spec"]["devices"]
    roots = Counter(d["attributes"]["resource.kubernetes.io/pcieRoot"]["string"] for d in devices)
    assert sorted(roots.values()) == [2, 2, 2, 2]


def test_uuids_are_stable_across_runs_and_unique_across_the_fleet():
    def uuids():
        slices = planned_resource_slices(dra_cfg())
        return [d["attributes"]["uuid"]["string"] for s in slices for d in s["spec"]["devices"]]

    first, again = uuids(), uuids()
    assert first == again and len(set(first)) == 16 and all(u.startswith("GPU-") for u in first)


def test_pcie_cards_each_sit_on_their_own_root():
    s = copy.deepcopy(base())
    s["nodePools"][0]["gpu"] = {"product": "NVIDIA-L4", "count": 4}
    devices = planned_resource_slices(parse_sections(s, "Pulumi.t.yaml"))[0]["spec"]["devices"]
    assert len({d["attributes"]["resource.kubernetes.io/pcieRoot"]["string"] for d in devices}) == 4


def test_planned_objects_are_valid_resource_api_objects_for_kubernetes_1_34():
    objects = planned_dra_objects(dra_cfg())
    assert Counter(o["kind"] for o in objects) == {"DeviceClass": 3, "ResourceSlice": 2}
    assert validate_documents(objects, "1.34") == []


def test_a_device_plugin_stack_plans_no_dra_objects():
    assert planned_dra_objects(load_stack("dev", ROOT).config) == []


def test_the_capacity_policy_checks_planned_slices_and_classes_only_on_planned_capacity():
    cfg = dra_cfg()
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    planned = manifests_to_check(stack_capacity(cfg), cfg, [claim], [pod])
    assert [o["kind"] for o in planned] == ["DeviceClass"] * 3 + ["ResourceSlice"] * 2 + ["ResourceClaim", "Pod"]
    discovered = manifests_to_check(Capacity("nodes.json", []), cfg, [claim], [pod])
    assert discovered == [claim, pod]


def test_an_h100_has_80g_of_memory_but_not_80gi_as_the_dra_stack_says():
    from gpufleet.capacity.quantity import parse

    memory = parse(planned_resource_slices(dra_cfg())[0]["spec"]["devices"][0]["capacity"]["memory"]["value"])
    assert parse("80G") <= memory < parse("80Gi")
    assert dra_cfg().workloads[0].gpu.claim.min_memory == "80G"


def test_gpu_operators_device_class_has_no_extended_resource_name_the_driver_charts_has():
    operator = {o["metadata"]["name"]: o["spec"] for o in planned_dra_objects(dra_cfg()) if o["kind"] == "DeviceClass"}
    assert "extendedResourceName" not in operator["gpu.nvidia.com"]
    s = copy.deepcopy(base()) | {"mode": "standalone"}
    standalone = {o["metadata"]["name"]: o["spec"] for o in planned_dra_objects(parse_sections(s, "Pulumi.t.yaml"))
                  if o["kind"] == "DeviceClass"}
    assert standalone["gpu.nvidia.com"]["extendedResourceName"] == "nvidia.com/gpu"
    assert standalone["gpu.nvidia.com"]["selectors"] == operator["gpu.nvidia.com"]["selectors"]
