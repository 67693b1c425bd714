"""The shipped `dra` stack as `pulumi up` would create it, and what gpufleet's renderers make of claims:
claim templates and named claims (resource.k8s.io/v1), pods that reference them and no nvidia.com/gpu
limits, the gpu-operator release with a GPUCluster and no ClusterPolicy, and the standalone DRA driver."""

from __future__ import annotations

import copy

import pytest
from charts.chart_support import plan_objects

from gpufleet.config.loading import parse_sections
from gpufleet.planning.engine import run_program
from gpufleet.render.claims import claim_spec, named_claims, selectors
from tests.conftest import ROOT, loaded_from
from tests.dra.test_dra_config import base


@pytest.fixture(scope="module")
def objects():
    return plan_objects(ROOT, "dra")


def by(objects, kind):
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def pod_spec(o):
    return o["spec"]["template"]["spec"]


def test_each_claiming_workload_gets_a_claim_template_its_pods_reference(objects):
    templates = by(objects, "ResourceClaimTemplate")
    assert sorted(templates) == ["llm-gpu", "train-gpu"]
    train = pod_spec(by(objects, "Job")["train"])
    assert train["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "train-gpu"}]
    assert train["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    devices = templates["train-gpu"]["spec"]["spec"]["devices"]
    assert devices["requests"] == [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2}}]
    assert devices["constraints"] == [{"requests": ["gpu"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]


def test_shorthands_become_cel_selectors_on_the_drivers_attributes(objects):
    llm = by(objects, "ResourceClaimTemplate")["llm-gpu"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert [s["cel"]["expression"] for s in llm["selectors"]] == [
        'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"',
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80G")) >= 0']


def test_the_shared_claim_is_one_resource_claim_with_time_slicing_config_for_both_workloads(objects):
    (claim,) = by(objects, "ResourceClaim").values()
    assert claim["metadata"]["namespace"] == "research"
    assert claim["spec"]["devices"]["config"] == [{"requests": ["gpu"],
                                                   "opaque": {"driver": "gpu.nvidia.com", "parameters": {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
        "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Medium"}}}}}]
    deployments = by(objects, "Deployment")
    for name in ("explore", "embed"):
        assert pod_spec(deployments[name])["resourceClaims"] == [{"name": "gpu", "resourceClaimName": "shared-h100"}]


def test_no_pod_of_a_dra_stack_asks_for_nvidia_gpu_extended_resources(objects):
    for o in objects:
        if o["kind"] in ("Deployment", "Job"):
            limits = pod_spec(o)["containers"][0].get("resources", {}).get("limits", {})
            assert not any(k.startswith("nvidia.com/") for k in limits), o["metadata"]["name"]


def test_operator_release_deploys_a_gpu_cluster_and_no_cluster_policy_with_the_driver_from_a_cr():
    plan = run_program(loaded_from(base() | {"operator": {"driver": {"enabled": True}}}))
    (release,) = [x for x in plan.resources if x.type == "kubernetes:helm.sh/v3:Release"]
    values = release.inputs["values"]
    assert values["clusterPolicy"] == {"deployCR": False} and values["gpuCluster"] == {"deployCR": True}
    assert values["driver"]["nvidiaDriverCRD"] == {"enabled": True}
    assert values["draDriver"] == {"featureGates": {"TimeSlicingSettings": True}, "computeDomains": {"enabled": False}}


def test_standalone_dra_installs_the_pinned_dra_driver_chart_and_no_device_plugin():
    sections = base() | {"mode": "standalone", "draDriver": {"featureGates": {"TimeSlicingSettings": True},
                                                              "version": "v0.4.1"}}
    plan = run_program(loaded_from(sections))
    (release,) = [x for x in plan.resources if x.type == "kubernetes:helm.sh/v3:Release"]
    i = release.inputs
    assert (i["chart"], i["version"], i["namespace"]) == ("dra-driver-nvidia-gpu", "0.4.1", "nvidia-dra-driver-gpu")
    assert i["repositoryOpts"]["repo"] == "oci://registry.k8s.io/dra-driver-nvidia/charts"
    assert i["values"]["gpuResourcesEnabledOverride"] is True and i["values"]["resources"]["gpus"] == {"enabled": True}
    assert i["values"]["image"] == {"tag": "v0.4.1"}
    assert not plan.by_type("gpufleet:index:DevicePlugin")


def test_first_available_alternatives_keep_their_order_and_mig_profiles_select_the_profile_attribute():
    s = copy.deepcopy(base())
    s["workloads"][0]["gpu"]["claim"] = {"firstAvailable": [
        {"product": "NVIDIA H100 80GB HBM3"}, {"deviceClass": "mig.nvidia.com", "profile": "3g.40gb", "count": 2}]}
    cfg = parse_sections(s, "Pulumi.t.yaml")
    request = claim_spec(cfg.workloads[0].gpu.claim)["devices"]["requests"][0]
    assert [a["name"] for a in request["firstAvailable"]] == ["alt-0", "alt-1"]
    assert request["firstAvailable"][1]["deviceClassName"] == "mig.nvidia.com"
    assert request["firstAvailable"][1]["selectors"] == [
        {"cel": {"expression": 'device.attributes["gpu.nvidia.com"].profile == "3g.40gb"'}}]


def test_a_product_name_with_quotes_stays_one_cel_string_literal():
    s = copy.deepcopy(base())
    s["workloads"][0]["gpu"]["claim"] = {"product": 'x" || true || "'}
    cfg = parse_sections(s, "Pulumi.t.yaml")
    assert selectors(cfg.workloads[0].gpu.claim) == [
        'device.attributes["gpu.nvidia.com"].productName == "x\\" || true || \\""']


def test_mps_sharing_renders_the_drivers_mps_config():
    s = copy.deepcopy(base())
    s["draDriver"]["featureGates"] = {"MPSSupport": True}
    s["claims"][0]["sharing"] = {"strategy": "MPS", "defaultActiveThreadPercentage": 25,
                                 "defaultPinnedDeviceMemoryLimit": "10Gi"}
    (claim,) = named_claims(parse_sections(s, "Pulumi.t.yaml"))
    assert claim["spec"]["devices"]["config"][0]["opaque"]["parameters"]["sharing"] == {
        "strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 25, "defaultPinnedDeviceMemoryLimit": "10Gi"}}


def test_gitops_installs_the_standalone_driver_from_its_oci_repository():
    from gpufleet.charts.gitops import flux_releases, flux_sources

    cfg = parse_sections(base() | {"mode": "standalone"}, "Pulumi.t.yaml")
    (repo,) = [s for s in flux_sources(cfg, "https://git.example/fleet", "main") if s["kind"] == "HelmRepository"]
    assert repo["spec"] == {"interval": "10m", "url": "oci://registry.k8s.io/dra-driver-nvidia/charts", "type": "oci"}
    release = flux_releases(cfg, "gpufleet-t", "charts/t")[1]
    assert release["spec"]["chart"]["spec"]["chart"] == "dra-driver-nvidia-gpu"
    assert release["spec"]["values"]["gpuResourcesEnabledOverride"] is True
