"""The DRA filter's shortcuts, held to the allocator itself on random nodes and claims of any shape (several
claims and requests, firstAvailable, All, admin access, matchAttribute constraints, selectors that fail on
some devices, devices in use): wherever refuting says "cannot allocate", the allocator answers exactly that
(not a pass, not the filter's error, not a timeout); wherever the first descent says the node passes, the
allocator allocates there."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gpufleet.capacity.dra import dra_objects
from gpufleet.capacity.kubectl import node_from_object
from gpufleet.scheduler.plugins.dynamicresources.claims import CANNOT_ALLOCATE, DraState
from gpufleet.scheduler.plugins.dynamicresources.structured.allocator import Claim, FilterError
from gpufleet.scheduler.plugins.dynamicresources.structured.descent import passes
from gpufleet.scheduler.plugins.dynamicresources.structured.refuting import outcomes, refuted

V1 = "resource.k8s.io/v1"
DRIVER = "gpu.nvidia.com"
PRODUCTS = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Tesla T4")
SELECTORS = (
    None,
    "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'",
    "device.attributes['gpu.nvidia.com'].productName != 'Tesla T4'",
    "device.attributes['gpu.nvidia.com'].index < 2",  # fails on a device without an index
    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
)
CLASSES = [{"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}},
           {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": "mig"},
            "spec": {"selectors": [{"cel": {"expression": f"device.attributes['{DRIVER}'].type == 'mig'"}}]}}]

device = st.fixed_dictionaries({
    "product": st.sampled_from(PRODUCTS), "mig": st.booleans(), "root": st.sampled_from(("pci0", "pci1")),
    "index": st.booleans(), "memory": st.sampled_from(("10Gi", "40Gi", "80Gi")), "busy": st.booleans()})
#: Nodes with room: more devices, fewer in use, most of them with every attribute (more nodes that pass).
roomy = st.fixed_dictionaries({
    "product": st.sampled_from(PRODUCTS[:2]), "mig": st.integers(0, 4).map(lambda n: n == 0),
    "root": st.sampled_from(("pci0", "pci1")), "index": st.integers(0, 5).map(lambda n: n > 0),
    "memory": st.sampled_from(("40Gi", "80Gi")), "busy": st.integers(0, 4).map(lambda n: n == 0)})
alternative = st.fixed_dictionaries({
    "class": st.sampled_from(("gpu", "mig")), "all": st.integers(0, 5).map(lambda n: n == 0),
    "count": st.integers(1, 4), "selector": st.sampled_from(SELECTORS),
    "admin": st.integers(0, 9).map(lambda n: n == 0)})
request = st.lists(alternative, min_size=1, max_size=3)
claim = st.fixed_dictionaries({"requests": st.lists(request, min_size=1, max_size=3), "same_root": st.booleans(),
                               "scoped": st.booleans()})


def _alternative(name: str, alt: dict) -> dict:
    out: dict = {"name": name, "deviceClassName": alt["class"]}
    out.update({"allocationMode": "All"} if alt["all"] else {"count": alt["count"]})
    if alt["selector"]:
        out["selectors"] = [{"cel": {"expression": alt["selector"]}}]
    if alt["admin"]:
        out["adminAccess"] = True
    return out


def _claim_spec(c: dict) -> dict:
    requests = []
    for i, alts in enumerate(c["requests"]):
        if len(alts) == 1:
            one = _alternative(f"r{i}", alts[0])
            requests.append({"name": one.pop("name"), "exactly": one})
        else:
            requests.append({"name": f"r{i}", "firstAvailable": [_alternative(f"s{j}", a) for j, a in enumerate(alts)]})
    spec: dict = {"devices": {"requests": requests}}
    if c["same_root"]:
        constraint: dict = {"matchAttribute": "resource.kubernetes.io/pcieRoot"}
        if c["scoped"]:
            constraint["requests"] = ["r0"]
        spec["devices"]["constraints"] = [constraint]
    return spec


def _state(devices: list[dict], complete: bool) -> tuple[DraState, list]:
    published = []
    for j, d in enumerate(devices):
        attributes = {"type": {"string": "mig" if d["mig"] else "gpu"}, "productName": {"string": d["product"]},
                      "resource.kubernetes.io/pcieRoot": {"string": d["root"]}}
        if d["index"]:
            attributes["index"] = {"int": j}
        published.append({"name": f"gpu-{j}", "attributes": attributes, "capacity": {"memory": {"value": d["memory"]}}})
    objects = [*CLASSES, {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": {
        "driver": DRIVER, "nodeName": "n0", "pool": {"name": "n0", "generation": 1,
                                                     "resourceSliceCount": 1 if complete else 2},
        "devices": published}}]
    state = DraState(dra_objects(objects))
    node = node_from_object({"metadata": {"name": "n0", "labels": {"kubernetes.io/hostname": "n0"}},
                             "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110"}}})
    state.attach([node])
    state.in_use |= {(DRIVER, "n0", f"gpu-{j}") for j, d in enumerate(devices) if d["busy"]}
    return state, [node]


def _shortcut_and_allocator(shortcut, devices: list[dict], claims: list[dict], complete: bool):
    """(what the shortcut says of the node, the allocator's answer there: devices, a reason, or the
    filter's error as `FilterError`), the allocator asked only where the shortcut said True."""
    state, nodes = _state(devices, complete)
    wanted = [Claim("ml", f"c{i}", _claim_spec(c)) for i, c in enumerate(claims)]
    says = bool(shortcut(state, state.table(), state.free(), wanted, np.array([0]))[0])
    event(f"{shortcut.__name__}: {says}")
    if not says:
        return False, None
    needs = state.needs("ml", "p", {})
    needs.allocate = [(c, None) for c in wanted]
    try:
        return True, state.allocate(nodes[0], needs)
    except FilterError as e:
        return True, e


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(devices=st.lists(device, max_size=7), claims=st.lists(claim, min_size=1, max_size=2),
       complete=st.integers(0, 9).map(lambda n: n > 0))
def test_a_node_said_to_fail_fails_in_the_allocator_too(devices, claims, complete):
    says, answer = _shortcut_and_allocator(refuted, devices, claims, complete)
    if says:
        assert answer == CANNOT_ALLOCATE, f"refuted, but the allocator says: {answer}"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(devices=st.lists(roomy, min_size=2, max_size=10), claims=st.lists(claim, min_size=1, max_size=3),
       complete=st.integers(0, 9).map(lambda n: n > 0))
def test_a_node_said_to_pass_at_once_passes_in_the_allocator_too(devices, claims, complete):
    says, answer = _shortcut_and_allocator(passes, devices, claims, complete)
    if says:
        assert isinstance(answer, list), f"said to pass, but the allocator says: {answer}"


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(devices=st.lists(roomy, min_size=2, max_size=12), claims=st.lists(claim, min_size=1, max_size=3),
       budget=st.sampled_from((5, 10, 20, 40, 80)))
def test_a_search_said_to_run_out_of_steps_runs_out_in_the_allocator_too(devices, claims, budget):
    import gpufleet.scheduler.plugins.dynamicresources.structured.allocator as allocator

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(allocator, "SEARCH_BUDGET", budget)  # small: searches that fail run out of it often
        says, answer = _shortcut_and_allocator(_runs_out, devices, claims, True)
    if says:
        assert answer == "timed out trying to allocate devices", f"said to run out of steps: {answer}"


def _runs_out(state, table, free, claims, positions):
    fails, slow = outcomes(state, table, free, claims, positions)
    assert not (fails & slow).any(), "both fails within the budget and runs out of it"
    return slow


def test_a_claim_for_a_product_the_node_lacks_is_refuted_without_the_allocator():
    state, _ = _state([{"product": "Tesla T4", "mig": False, "root": "pci0", "index": True, "memory": "16Gi",
                        "busy": False}] * 2, True)
    h100 = {"requests": [[{"class": "gpu", "all": False, "count": 1, "selector": SELECTORS[1], "admin": False}]],
            "same_root": False, "scoped": False}
    other = {"requests": [[{"class": "gpu", "all": False, "count": 2, "selector": None, "admin": False}]],
             "same_root": False, "scoped": False}
    claims = [Claim("ml", "a", _claim_spec(other)), Claim("ml", "b", _claim_spec(h100))]
    assert refuted(state, state.table(), state.free(), claims, np.array([0])).tolist() == [True]
    assert refuted(state, state.table(), state.free(), claims[:1], np.array([0])).tolist() == [False]


def test_a_search_that_could_run_out_of_steps_is_left_to_the_allocator():
    many = [{"product": "NVIDIA A100-SXM4-80GB", "mig": False, "root": "pci0", "index": True, "memory": "80Gi",
             "busy": False}] * 16
    state, nodes = _state(many, True)
    eight_then_h100 = {"requests": [[{"class": "gpu", "all": False, "count": 8, "selector": None, "admin": False}],
                                    [{"class": "gpu", "all": False, "count": 1, "selector": SELECTORS[1],
                                      "admin": False}]], "same_root": False, "scoped": False}
    claims = [Claim("ml", "a", _claim_spec(eight_then_h100))]
    assert refuted(state, state.table(), state.free(), claims, np.array([0])).tolist() == [False]
    needs = state.needs("ml", "p", {})
    needs.allocate = [(c, None) for c in claims]
    assert state.allocate(nodes[0], needs) == "timed out trying to allocate devices"
