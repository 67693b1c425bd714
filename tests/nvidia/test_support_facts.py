"""The facts tables gpufleet checks a stack against: each product's architecture and its last driver
branch and MPS kind, the gpu-operator's support matrix for the pinned release, and the DRA driver's
prerequisites, the latter two held against the pinned charts' own files."""

from __future__ import annotations

import tarfile

import pytest
import upstream_files
import yaml

from gpufleet.nvidia import dra_prerequisites as dra_req
from gpufleet.nvidia import operator_support as support
from gpufleet.nvidia import versions
from gpufleet.nvidia.architectures import ARCHITECTURES, driver_branch, driver_version
from gpufleet.nvidia.products import PRODUCTS
from tests.upstream.upstream_charts import chart_archive


def test_every_product_has_an_architecture_listing_its_compute_capability():
    for product in PRODUCTS.values():
        assert product.compute_capability in product.architecture.compute_capabilities, product.key


@pytest.mark.parametrize("key, last", [("GRID-K520", 470), ("Tesla-M60", 580), ("Tesla-P100-PCIE-16GB", 580),
                                       ("Tesla-P4", 580), ("Tesla-V100-SXM2-16GB", 580), ("Tesla-T4", None),
                                       ("NVIDIA-A100-SXM4-80GB", None), ("NVIDIA-L4", None),
                                       ("NVIDIA-H100-80GB-HBM3", None), ("NVIDIA-B200", None)])
def test_last_driver_branch_per_product(key, last):
    arch = PRODUCTS[key].architecture
    assert arch.last_driver_branch == last
    assert arch.supports_branch(580) is (last is None or last >= 580)
    assert arch.supports_branch(590) is (last is None)


@pytest.mark.parametrize("key, volta_mps", [("Tesla-V100-SXM2-16GB", True), ("Tesla-T4", True),
                                            ("NVIDIA-H100-80GB-HBM3", True), ("Tesla-P100-PCIE-16GB", False),
                                            ("Tesla-M60", False), ("GRID-K520", False)])
def test_mps_as_the_device_plugin_configures_it_needs_volta(key, volta_mps):
    assert PRODUCTS[key].mps_supported is volta_mps


def test_only_products_with_a_mig_table_are_mig_capable_and_all_of_them_are_ampere_or_newer():
    mig = {p.key for p in PRODUCTS.values() if p.mig_capable}
    assert {"A100-PCIE-40GB", "NVIDIA-A30", "NVIDIA-H100-80GB-HBM3", "NVIDIA-H200", "NVIDIA-B200"} <= mig
    assert not mig & {"Tesla-T4", "NVIDIA-A10", "NVIDIA-L4", "NVIDIA-L40S", "Tesla-V100-SXM2-16GB"}
    assert all(PRODUCTS[k].compute_capability >= (8, 0) for k in mig)


@pytest.mark.parametrize("text, branch", [("595.91.07", 595), ("580", 580), ("R470", 470), ("535.309.01", 535),
                                          ("sha256:abc", None), ("latest", None), ("", None)])
def test_driver_branch_of_a_version(text, branch):
    assert driver_branch(text) == branch


def test_driver_versions_compare_numerically():
    assert driver_version("570.133.20") > driver_version("570.86.15") > driver_version("535.309.01")


def test_every_architecture_the_issue_names_is_in_the_table():
    assert {a.name for a in ARCHITECTURES.values()} == {"Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere",
                                                       "Ada", "Hopper", "Blackwell"}


def test_the_pinned_operator_release_lists_the_driver_its_chart_pins():
    release = support.release_of(support.operator_version(versions.GPU_OPERATOR_VERSION))
    values = yaml.safe_load(upstream_files.values_file(versions.GPU_OPERATOR_CHART,
                                                       versions.GPU_OPERATOR_VERSION).read_text())
    assert values["driver"]["version"] == versions.DRIVER_VERSION
    assert versions.DRIVER_VERSION in release.drivers
    assert release.kubernetes[0] <= (1, 34) <= release.kubernetes[1]


@pytest.mark.parametrize("operator, kubernetes, broken", [
    ("v1.11.0", (1, 25), "node.k8s.io/v1beta1 RuntimeClass"),
    ("v1.11.0", (1, 24), None),
    ("v22.9.0", (1, 25), None),
    ("v1.5.2", (1, 22), "apiextensions.k8s.io/v1beta1"),
    ("v26.7.0", (1, 36), None),
])
def test_old_operator_releases_create_objects_kubernetes_stopped_serving(operator, kubernetes, broken):
    removal = support.api_removal(support.operator_version(operator), kubernetes)
    if broken is None:
        assert removal is None
    else:
        assert removal is not None and broken in removal.what


def _chart_file(chart: str, member: str) -> dict:
    with tarfile.open(chart_archive(chart)) as tar:
        return yaml.safe_load(tar.extractfile(f"{chart}/{member}").read())


def test_the_dra_kubelet_plugin_labels_are_the_charts_node_affinity():
    values = _chart_file(versions.DRA_DRIVER_CHART, "values.yaml")["kubeletPlugin"]
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    chart_labels = {(e["key"], v) for t in terms for e in t["matchExpressions"] for v in e["values"]}
    assert chart_labels == set(dra_req.KUBELET_PLUGIN_NODE_LABELS)
    assert values["nodeSelector"] == {}
    assert values["tolerations"] == list(dra_req.KUBELET_PLUGIN_TOLERATIONS)


def test_the_dra_chart_installs_from_the_kubernetes_version_recorded():
    kube_version = _chart_file(versions.DRA_DRIVER_CHART, "Chart.yaml")["kubeVersion"]
    assert kube_version == ">={}.{}.0-0".format(*dra_req.CHART_MIN_KUBERNETES)


@pytest.mark.parametrize("labels, runs", [
    ({"feature.node.kubernetes.io/pci-10de.present": "true"}, True),
    ({"feature.node.kubernetes.io/pci-0302_10de.present": "true"}, True),
    ({"nvidia.com/gpu.present": "true"}, True),
    ({"nvidia.com/gpu.product": "Tesla-T4"}, False),
    ({"feature.node.kubernetes.io/pci-10de.present": "false"}, False),
])
def test_where_the_dra_kubelet_plugin_runs(labels, runs):
    assert dra_req.kubelet_plugin_runs_on(labels) is runs
