"""Random small DRA clusters: check never crashes and never hands one device to two claims."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.scheduling import check_workloads

V1 = "resource.k8s.io/v1"
PRODUCTS = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB")
CLASS = {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
         "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                                       "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}}


def node(name: str) -> dict:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110"}}}


devices = st.lists(st.tuples(st.sampled_from(PRODUCTS), st.sampled_from(("pci0", "pci1"))), max_size=4)
requests = st.fixed_dictionaries({
    "count": st.integers(1, 3), "all": st.booleans(), "product": st.none() | st.sampled_from(PRODUCTS),
    "fallback": st.booleans(), "same_root": st.booleans(), "shared": st.booleans()})


@st.composite
def clusters(draw):
    n = draw(st.integers(1, 3))
    slices, pool_devices = [], []
    for i in range(n):
        devs = draw(devices)
        slices.append({"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": f"s{i}"}, "spec": {
            "driver": "gpu.nvidia.com", "nodeName": f"n{i}", "pool": {"name": f"n{i}", "generation": 1,
                                                                      "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{j}", "attributes": {
                "type": {"string": "gpu"}, "productName": {"string": p},
                "resource.kubernetes.io/pcieRoot": {"string": r}}, "capacity": {"memory": {"value": "80Gi"}}}
                for j, (p, r) in enumerate(devs)]}})
        pool_devices += [(f"n{i}", f"gpu-{j}") for j in range(len(devs))]
    taken = draw(st.lists(st.sampled_from(pool_devices), unique=True, max_size=3)) if pool_devices else []
    existing = [{"apiVersion": V1, "kind": "ResourceClaim", "metadata": {"name": f"old-{k}", "namespace": "ml"},
                 "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
                 "status": {"allocation": {"devices": {"results": [
                     {"request": "r", "driver": "gpu.nvidia.com", "pool": pool, "device": dev}]}}}}
                for k, (pool, dev) in enumerate(taken)]
    workloads = []
    for k, r in enumerate(draw(st.lists(requests, min_size=1, max_size=4))):
        exactly = {"deviceClassName": "gpu.nvidia.com"}
        exactly.update({"allocationMode": "All"} if r["all"] else {"count": r["count"]})
        if r["product"]:
            exactly["selectors"] = [{"cel": {"expression": f"device.attributes['gpu.nvidia.com'].productName == "
                                                           f"'{r['product']}'"}}]
        request = {"name": "gpus", "exactly": exactly}
        if r["fallback"]:
            request = {"name": "gpus", "firstAvailable": [{"name": "first", **exactly},
                                                          {"name": "one", "deviceClassName": "gpu.nvidia.com"}]}
        devices_spec: dict = {"requests": [request]}
        if r["same_root"]:
            devices_spec["constraints"] = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
        kind = "ResourceClaim" if r["shared"] else "ResourceClaimTemplate"
        spec = {"devices": devices_spec} if r["shared"] else {"spec": {"devices": devices_spec}}
        workloads.append({"apiVersion": V1, "kind": kind, "metadata": {"name": f"c{k}", "namespace": "ml"},
                          "spec": spec})
        ref = {"name": "gpus", ("resourceClaimName" if r["shared"] else "resourceClaimTemplateName"): f"c{k}"}
        workloads.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"w{k}",
                                                                                    "namespace": "ml"},
                          "spec": {"replicas": draw(st.integers(1, 2)), "template": {"spec": {
                              "resourceClaims": [ref], "containers": [{"name": "c", "image": "x"}]}}}})
    return [node(f"n{i}") for i in range(n)], [CLASS, *slices, *existing, *workloads], taken


@settings(max_examples=60, deadline=None)
@given(clusters())
def test_random_dra_clusters_never_crash_and_never_allocate_a_device_twice(cluster):
    nodes, manifests, taken = cluster
    result = check_workloads(nodes, [], manifests)
    allocated = [device for _, _, device in result.devices]
    assert len(allocated) == len(set(allocated))
    assert not set(allocated) & {f"gpu.nvidia.com/{pool}/{dev}" for pool, dev in taken}
    for _, node_name, device in result.devices:
        assert device.split("/")[1] == node_name  # node-local pools: devices of the node the pod is on
    assert len(result.checked) == sum(m["kind"] == "Deployment" for m in manifests)
    shared = {m["metadata"]["name"][1:] for m in manifests if m["kind"] == "ResourceClaim"
              and not m["metadata"]["name"].startswith("old-")}
    for k in shared:  # the consumers of a shared claim all run where its devices are
        assert len({n for w, n, _ in result.placements if w == f"Deployment/ml/w{k}"}) <= 1


def _damageable() -> list[dict]:
    import json
    from pathlib import Path

    import yaml

    dra = Path(__file__).parents[1] / "fixtures" / "dra"
    slices = json.loads((dra / "resourceslices.json").read_text())["items"]
    slices[0]["spec"]["devices"] = slices[0]["spec"]["devices"][:2]
    claim = json.loads((dra / "resourceclaims.json").read_text())["items"][0]
    tmpl = {"apiVersion": V1, "kind": "ResourceClaimTemplate", "metadata": {"name": "t", "namespace": "ml"},
            "spec": {"spec": {"devices": {
                "requests": [{"name": "gpus", "firstAvailable": [
                    {"name": "big", "deviceClassName": "gpu.nvidia.com", "count": 2, "selectors": [
                        {"cel": {"expression": "device.capacity['gpu.nvidia.com'].memory.isGreaterThan("
                                               "quantity('40Gi'))"}}]},
                    {"name": "any", "deviceClassName": "gpu.nvidia.com"}]}],
                "constraints": [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]}}}}
    workload = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}, "spec": {
        "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "t"}],
        "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpus"}]}}]}}
    return [*yaml.safe_load_all((dra / "deviceclasses.yaml").read_text()), slices[0], claim, tmpl, workload]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_damaged_dra_objects_are_exit_2_naming_the_file_never_a_crash(tmp_path, data):
    import json

    import yaml

    from tests.cli.run_inprocess import run
    from tests.mutations import mutated

    docs = _damageable()
    k = data.draw(st.integers(0, len(docs) - 1))
    docs[k] = data.draw(mutated(docs[k]))
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": [node("dra-node-a"), node("x")]}))
    app = tmp_path / "app.yaml"
    app.write_text(yaml.safe_dump_all(docs))
    outcome = run("check", "--json", "--nodes", nodes, app)
    assert "Traceback" not in outcome.err
    assert outcome.code in (0, 1, 2), outcome
    if outcome.code == 2:
        assert all(str(app) in line or str(nodes) in line for line in outcome.err.strip().splitlines()), outcome.err
    else:
        assert json.loads(outcome.out)["fits"] is (outcome.code == 0)


def test_a_bad_dra_object_given_to_the_python_api_is_an_input_error():
    import pytest

    from gpufleet.errors import InputError

    broken = {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": "planned-0"},
              "spec": {"driver": "gpu.nvidia.com", "nodeName": "n0", "pool": {"name": "n0"}, "devices": [{}]}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "resourceClaims": [{"name": "g", "resourceClaimName": "c"}], "containers": [{"name": "c", "image": "x"}]}}
    with pytest.raises(InputError, match=r"^ResourceSlice/planned-0: spec.devices\[0\].name: Required value$"):
        check_workloads([node("n0")], [], [CLASS, broken, pod])
