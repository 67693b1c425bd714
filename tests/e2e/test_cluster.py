"""The control plane itself: the pinned release answers, and capacity gpufleet reads becomes KWOK nodes the
API server holds with the same labels, taints and allocatable."""

from __future__ import annotations

import pytest

from gpufleet.capacity.model import Taint
from tests.e2e.cluster import ROOT, Cluster, ClusterError, bin_dir
from tests.e2e.kwok_nodes import create_nodes, delete_kwok_nodes, nodes_from_file, nodes_from_items, wait_nodes_ready

NODES_FILE = ROOT / "tests" / "fixtures" / "nodes-mixed-cluster.json"


def test_api_server_reports_the_pinned_release(cluster):
    version = cluster.api().ok("GET", "/version")
    assert (version["major"], version["minor"]) == ("1", "34")
    assert version["gitVersion"].startswith("v1.34.")
    assert bin_dir() is not None


def test_nodes_from_a_kubectl_file_keep_labels_taints_and_allocatable(cluster):
    api = cluster.api()
    wanted = nodes_from_file(NODES_FILE)
    try:
        create_nodes(api, wanted)
        wait_nodes_ready(api, [n.name for n in wanted])
        live = nodes_from_items(api.ok("GET", "/api/v1/nodes")["items"])
    finally:
        delete_kwok_nodes(api)
    by_name = {n.name: n for n in live}
    for node in wanted:
        got = by_name[node.name]
        assert {k: v for k, v in got.labels.items() if k in node.labels} == node.labels
        # A cordoned node also gets the unschedulable taint from the node lifecycle controller, as anywhere.
        cordon = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
        derived = {cordon} if node.unschedulable else set()
        assert set(got.taints) == set(node.taints) | derived
        assert got.unschedulable == node.unschedulable
        for resource, value in node.allocatable.items():
            assert got.allocatable[resource] == value, (node.name, resource)


def test_a_start_that_fails_names_the_component_and_shows_its_log(cluster, tmp_path):
    # An etcd that cannot use its data directory (a file stands where the directory should be).
    broken = Cluster(tmp_path / "broken", cluster.bins)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "etcd").write_text("not a directory")
    with pytest.raises(ClusterError) as exc:
        broken.start(timeout=20)
    assert "etcd" in str(exc.value)
    assert "the end of" in str(exc.value)
    assert broken.procs == []


def test_a_component_whose_port_was_taken_meanwhile_gets_a_fresh_start(cluster, tmp_path, monkeypatch):
    # Another process listens on kube-controller-manager's port between the pick and the component's bind.
    import socket

    import tests.e2e.cluster as cluster_module

    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    held = squatter.getsockname()[1]
    real_pick = cluster_module.free_port
    picks: list[int] = []

    def pick(taken=()):
        picks.append(held if len(picks) == 3 else real_pick(taken))  # the 4th pick is kube-controller-manager's
        return picks[-1]

    monkeypatch.setattr(cluster_module, "free_port", pick)
    second = Cluster(tmp_path / "second", cluster.bins)
    try:
        second.start(timeout=60)
        assert len(picks) == 12  # a second set of six ports: the first start failed on the taken port
        assert second.ports["kcm"] != held
        assert second.api().ok("GET", "/version")["major"] == "1"
    finally:
        second.stop()
        squatter.close()
