"""The node facts gpufleet reads, from the spellings real nodes report: `status.nodeInfo.osImage` of each OS
family (and the labels that name one), `containerRuntimeVersion` of each runtime, `kubeletVersion` with its
distribution suffix; and the facts that follow from them."""

from __future__ import annotations

import pytest

from gpufleet.nvidia import node_platforms as facts


@pytest.mark.parametrize("os_image, key", [
    ("Talos (v1.8.3)", "talos"),
    ("Bottlerocket OS 1.26.1 (aws-k8s-1.31-nvidia)", "bottlerocket"),
    ("Container-Optimized OS from Google", "cos"),
    ("Amazon Linux 2023.6.20241212", "amzn2023"),
    ("Flatcar Container Linux by Kinvolk 4081.2.0 (Oklo)", "flatcar"),
    ("Red Hat Enterprise Linux CoreOS 418.94.202410090804-0", "rhcos"),
    ("Red Hat Enterprise Linux 9.4 (Plow)", "rhel"),
    ("Ubuntu 22.04.5 LTS", "ubuntu"),
])
def test_each_os_family_is_recognised_by_its_real_os_image(os_image, key):
    assert facts.node_os(os_image, {}).key == key


@pytest.mark.parametrize("os_image", ["Amazon Linux 2", "Debian GNU/Linux 12 (bookworm)", "", "Windows Server 2022"])
def test_an_os_gpufleet_has_no_facts_for_is_not_guessed(os_image):
    assert facts.node_os(os_image, {}) is None


@pytest.mark.parametrize("labels, key", [
    ({facts.NFD_OS_LABEL: "talos"}, "talos"), ({facts.NFD_OS_LABEL: "flatcar"}, "flatcar"),
    ({facts.GKE_OS_LABEL: "cos"}, "cos"), ({facts.GKE_OS_LABEL: "ubuntu"}, "ubuntu"),
])
def test_without_an_os_image_the_os_labels_name_it(labels, key):
    assert facts.node_os("", labels).key == key


def test_only_the_operators_unsupported_oses_refuse_its_driver_container():
    verdicts = {o.key: o.driver_container for o in facts.OPERATING_SYSTEMS}
    assert verdicts == {"talos": "impossible", "bottlerocket": "impossible", "cos": "impossible",
                        "amzn2023": "unvalidated", "flatcar": "unvalidated", "rhcos": "supported",
                        "rhel": "supported", "ubuntu": "supported"}


@pytest.mark.parametrize("text, runtime", [
    ("containerd://1.7.23", ("containerd", (1, 7, 23))), ("containerd://2.0.0", ("containerd", (2, 0, 0))),
    ("containerd://1.7.22+bottlerocket", ("containerd", (1, 7, 22))),
    ("containerd://2.0.4-k3s2", ("containerd", (2, 0, 4))), ("docker://27.3.1", ("docker", (27, 3, 1))),
    ("cri-o://1.31.1-4.rhaos4.18.gitc1e2d3f.el9", ("cri-o", (1, 31, 1))), ("", None), ("containerd", None),
])
def test_container_runtime_versions_read_as_name_and_numbers(text, runtime):
    assert facts.runtime_of(text) == runtime


@pytest.mark.parametrize("kubelet, version", [
    ("v1.31.2+k3s1", (1, 31, 2)), ("v1.32.4+rke2r1", (1, 32, 4)), ("v1.30.5-gke.1014001", (1, 30, 5)),
    ("v1.29.10-eks-59bf375", (1, 29, 10)), ("v1.33.5", (1, 33, 5)), ("garbage", None),
])
def test_kubelet_versions_drop_their_distribution_suffix(kubelet, version):
    assert facts.version_of(kubelet) == version


@pytest.mark.parametrize("operator, override, reads", [
    ((24, 9, 2), None, True), ((24, 6, 2), None, False), ((26, 7, 0), "v1.16.2-ubuntu20.04", False),
    ((24, 6, 2), "v1.17.4", True), ((26, 7, 0), "sha256:abc", True),
])
def test_the_first_toolkit_for_containerd_2_is_v1_17_4(operator, override, reads):
    assert facts.toolkit_reads_containerd_2(operator, override) is reads


def test_rke2s_generated_config_names_the_template_of_the_nodes_containerd():
    path = "/var/lib/rancher/rke2/agent/etc/containerd/config.toml"
    assert "config-v3.toml.tmpl (containerd 2.x)" in facts.regenerated_config_problem(path, (2, 0, 4))
    assert "config.toml.tmpl (containerd 1.x)" in facts.regenerated_config_problem(path, (1, 7, 23))
    assert facts.regenerated_config_problem("/var/lib/rancher/k3s/agent/etc/containerd/config.toml") is None
    assert facts.regenerated_config_problem(path + ".tmpl") is None
