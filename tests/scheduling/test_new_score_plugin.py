"""Adding a score plugin touches its own folder and the profile's list, nothing else.

The example plugin, PreferTier, is written into a folder of the test's own (as a plugin folder under
gpufleet/scheduler/plugins/ would be) and joins the default profile by one entry in
gpufleet.scheduler.plugins.default_plugins.PROFILE. The cycle then runs it, its declared reads key the node
classes and pass the check of what it reads, and pods go where it says.
"""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from gpufleet.scheduler.plugins import default_plugins
from gpufleet.scheduling import check_workloads
from tests.scheduling.kube import deployment, node, pod_spec
from tests.scheduling.plugin_reads import undeclared_reads

PLUGIN = '''
"""PreferTier: nodes labelled tier=fast score 100, the others 0 (an example, not an upstream plugin)."""

import numpy as np

from gpufleet.scheduler.framework.interface import Plugin, Reads


class PreferTier(Plugin):
    name = "PreferTier"
    reads = Reads(node=("labels",))

    def sign_node(self, node, context=None):
        return (node.labels.get("tier"),)  # only this label, so hostnames do not split the classes

    def pre_score(self, shape):
        per_class = [100 if n.labels.get("tier") == "fast" else 0 for n in shape.classes.nodes]
        return np.array(per_class, dtype=np.int64)[shape.class_of]

    def score(self, snap, state, nodes):
        return state[nodes]

    def score_one(self, snap, state, i):
        return int(state[i])
'''


@pytest.fixture
def prefer_tier(tmp_path, monkeypatch):
    """The plugin's folder, importable, and the profile with it (weight 5)."""
    folder = tmp_path / "example_plugins" / "prefertier"
    folder.mkdir(parents=True)
    (tmp_path / "example_plugins" / "__init__.py").write_text("")
    (folder / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = importlib.import_module("example_plugins.prefertier").PreferTier()
    monkeypatch.setattr(default_plugins, "PROFILE", [*default_plugins.PROFILE, (plugin, 5)])
    yield plugin
    for name in ("example_plugins.prefertier", "example_plugins"):
        sys.modules.pop(name, None)


def _placements():
    nodes = [node(name, cpu=8, gpus=0, labels={"tier": tier}) for name, tier in
             (("n1-slow", "slow"), ("n2-fast", "fast"), ("n3-slow", "slow"))]
    small = {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}
    result = check_workloads(nodes, [], [deployment("web", 6, pod_spec(small))])
    return {name: n for _, name, n in result.placements}


def test_without_the_plugin_pods_spread_by_free_room():
    assert _placements() == {"n1-slow": 2, "n2-fast": 2, "n3-slow": 2}


def test_a_new_score_plugin_in_the_profile_moves_pods_to_the_nodes_it_prefers(prefer_tier):
    assert _placements() == {"n2-fast": 6}


def test_a_new_plugin_gets_the_check_of_what_it_reads(prefer_tier):
    assert undeclared_reads(prefer_tier) == (set(), set())
