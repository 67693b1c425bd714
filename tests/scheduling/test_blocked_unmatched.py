"""Requests no node can meet at all get an explanation that points at the request, not "ask for less, or add
nodes": a DRA selector that passes no device (with the values the devices carry), a DeviceClass whose devices
no node has, more devices than one node offers, an extended resource no node advertises, a MIG profile the
GPUs are not split into, and more GPUs than any node of a known product holds. The scheduler's own message
stays as it is."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from gpufleet.scheduling import check_workloads
from tests.scheduling.kube import container, deployment, node, pod_spec
from tests.scheduling.test_dra_check import gpus, pod, template

DRA = Path(__file__).parents[1] / "fixtures" / "dra"
ATTR = 'device.attributes["gpu.nvidia.com"]'


def _dra_cluster(slices: list[dict] | None = None) -> tuple[list[dict], list[dict]]:
    """The fixture's two nodes of 8 H100s (or these slices), every device free (no existing claim)."""
    nodes = json.loads((DRA / "nodes.json").read_text())["items"]
    classes = list(yaml.safe_load_all((DRA / "deviceclasses.yaml").read_text()))
    if slices is None:
        slices = json.loads((DRA / "resourceslices.json").read_text())["items"]
    return nodes, [*classes, *slices]


def _pending(nodes, objects, *docs):
    result = check_workloads(nodes, [], [*objects, *docs])
    (u,) = result.unschedulable
    return u


def test_a_selector_no_device_passes_is_named_with_the_values_the_devices_carry_though_every_device_is_free():
    nodes, objects = _dra_cluster()
    a100 = f'{ATTR}.productName == "NVIDIA A100-SXM4-80GB"'
    u = _pending(nodes, objects, template("a100", [gpus(1, selectors=(a100,))]),
                 pod("infer", [{"name": "gpus", "resourceClaimTemplateName": "a100"}]))
    # the scheduler's words are kept; beside them: the selector, and what the devices carry
    assert u.message == "0/2 nodes are available: 2 cannot allocate all claims."
    assert u.blocked.summary == (
        "request gpus of ResourceClaimTemplate ml/a100 matches no device on the 2 nodes it may use: its "
        f"selector #0 `{a100}` (a stack config's `product: NVIDIA A100-SXM4-80GB`) passes none of the 16 "
        "device(s) DeviceClass gpu.nvidia.com selects; they carry productName: NVIDIA H100 80GB HBM3")
    assert u.blocked.fix == ("select what the devices carry (productName: NVIDIA H100 80GB HBM3), or add "
                             "nodes with devices that match")


def _mig_slice(node_name: str, profiles: list[str]) -> dict:
    product = {"string": "NVIDIA A100-SXM4-80GB"}
    devices = [{"name": f"gpu-0-mig-{i}",
                "attributes": {"type": {"string": "mig"}, "profile": {"string": p}, "productName": product}}
               for i, p in enumerate(profiles)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-mig"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node_name, "devices": devices,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1}}}


def test_a_mig_profile_the_devices_are_not_split_into_names_the_profiles_they_offer():
    nodes, objects = _dra_cluster([_mig_slice("dra-node-a", ["3g.40gb", "3g.40gb"]),
                                   _mig_slice("dra-node-b", ["1g.10gb"] * 7)])
    small = f'{ATTR}.profile == "1g.5gb"'
    u = _pending(nodes, objects, template("slice", [gpus(1, cls="mig.nvidia.com", selectors=(small,))]),
                 pod("tiny", [{"name": "gpus", "resourceClaimTemplateName": "slice"}]))
    assert u.blocked.summary.endswith("passes none of the 9 device(s) DeviceClass mig.nvidia.com selects; "
                                      "they carry profile: 1g.10gb, 3g.40gb")


def test_a_device_class_whose_devices_no_node_has_names_the_classes_that_select_them():
    nodes, objects = _dra_cluster()
    u = _pending(nodes, objects, template("slice", [gpus(1, cls="mig.nvidia.com")]),
                 pod("tiny", [{"name": "gpus", "resourceClaimTemplateName": "slice"}]))
    assert "DeviceClass mig.nvidia.com's selector" in u.blocked.summary
    assert u.blocked.summary.endswith("passes none of the 16 device(s) the nodes publish; they carry "
                                      "type: gpu")
    assert u.blocked.fix.startswith("ask for a DeviceClass that selects these devices (gpu.nvidia.com)")


def test_more_devices_sharing_an_attribute_than_one_node_has_says_the_most_there_is():
    nodes, objects = _dra_cluster()
    roots = {}
    for s in objects:
        for d in s.get("spec", {}).get("devices") or ():
            root = d["attributes"]["resource.kubernetes.io/pcieRoot"]["string"]
            roots[(s["spec"]["nodeName"], root)] = roots.get((s["spec"]["nodeName"], root), 0) + 1
    most = max(roots.values())
    claim = template("pair", [gpus(most + 1)], [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}])
    u = _pending(nodes, objects, claim, pod("train", [{"name": "gpus", "resourceClaimTemplateName": "pair"}]))
    assert u.blocked.summary.startswith(
        f"request gpus of ResourceClaimTemplate ml/pair asks for {most + 1} device(s) that share one "
        f"resource.kubernetes.io/pcieRoot; the most that pass its selectors on one node it may use is "
        f"{most} ")
    assert u.blocked.fix == (f"ask for at most {most} device(s) that share one resource.kubernetes.io/pcieRoot"
                             f" per claim, or add nodes with {most + 1} such devices")


def test_more_devices_than_any_known_gpu_node_holds_does_not_suggest_adding_nodes():
    nodes, objects = _dra_cluster()
    u = _pending(nodes, objects, template("many", [gpus(24)]),
                 pod("huge", [{"name": "gpus", "resourceClaimTemplateName": "many"}]))
    assert "no node of a known GPU product holds 24 GPUs (the most is 20 GPUs)" in u.blocked.summary
    assert "add nodes" not in u.blocked.fix


def test_a_misspelt_extended_resource_gets_the_name_the_nodes_have():
    nodes = [node("a", 8), node("b", 4)]
    typo = deployment("typo", 1, pod_spec(container(limits={"nvidia.com/gpus": 1})))
    (u,) = check_workloads(nodes, [], [typo]).unschedulable
    assert u.message == "0/2 nodes are available: 2 Insufficient nvidia.com/gpus."
    assert u.blocked.summary == ("no node has nvidia.com/gpus (one pod asks for nvidia.com/gpus 1); the "
                                 "nodes have nvidia.com/gpu")
    assert u.blocked.fix == "did you mean nvidia.com/gpu? ask for nvidia.com/gpu 1"


def test_a_mig_profile_no_node_offers_names_the_profiles_they_offer_and_which_gpus_have_it():
    nodes = [node("a", 7, resource="nvidia.com/mig-1g.10gb"), node("b", 2, resource="nvidia.com/mig-3g.40gb")]
    u = check_workloads(nodes, [], [deployment("mig", 1, pod_spec(container(
        limits={"nvidia.com/mig-1g.5gb": 1})))])
    (u,) = u.unschedulable
    assert u.blocked.summary == ("no node offers MIG profile 1g.5gb (one pod asks for nvidia.com/mig-1g.5gb "
                                 "1); the nodes offer 1g.10gb, 3g.40gb")
    assert "1g.5gb exists on A100-PCIE-40GB, NVIDIA-A100-SXM4-40GB" in u.blocked.fix


def test_more_gpus_than_any_known_product_holds_says_so_instead_of_adding_nodes():
    result = check_workloads([node("a", 8), node("b", 8)], [],
                             [deployment("big", 1, pod_spec(container(limits={"nvidia.com/gpu": 101})))])
    (u,) = result.unschedulable
    assert u.blocked.summary == ("one pod asks for nvidia.com/gpu 101; the largest node it may use has "
                                 "nvidia.com/gpu 8 allocatable; no node of a known GPU product holds 101 "
                                 "(the most is 20 GPUs)")
    assert "add nodes" not in u.blocked.fix
