"""`plan --nodes` as pack config: the node-facts policies get the file, their own settings stay."""

from __future__ import annotations

from pathlib import Path

from gpufleet.planning.pack_config import NODE_FACTS_POLICIES, checked_against_nodes, with_nodes_file


def test_nodes_file_reaches_every_node_facts_policy_and_keeps_their_levels():
    doc = with_nodes_file({"stack-matches-nodes": "advisory", "gpu-capacity-fit": "disabled"}, Path("/x/nodes.json"))
    assert doc["stack-matches-nodes"] == {"enforcementLevel": "advisory", "nodesFile": "/x/nodes.json"}
    assert doc["preinstalled-driver"] == {"nodesFile": "/x/nodes.json"}
    assert doc["gpu-capacity-fit"] == "disabled"
    assert set(NODE_FACTS_POLICIES) <= set(doc)


def test_nodes_file_replaces_a_kubeconfig_source():
    doc = with_nodes_file({"stack-matches-nodes": {"kubeconfig": "~/.kube/config", "context": "lab"}},
                          Path("/x/nodes.json"))
    assert doc["stack-matches-nodes"] == {"nodesFile": "/x/nodes.json"}


def test_node_checks_count_as_made_with_a_source_or_when_disabled():
    assert not checked_against_nodes({})
    assert not checked_against_nodes({"stack-matches-nodes": "mandatory"})
    assert checked_against_nodes({"stack-matches-nodes": {"kubeconfig": "kc"}})
    assert checked_against_nodes(with_nodes_file({}, Path("/n.json")))
    assert checked_against_nodes({"stack-matches-nodes": "disabled"})
    assert checked_against_nodes({"all": "disabled"})
    assert not checked_against_nodes({"all": "disabled", "stack-matches-nodes": "mandatory"})
