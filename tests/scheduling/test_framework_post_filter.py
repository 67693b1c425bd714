"""The framework's PostFilter point (RunPostFilterPlugins) and where DynamicResources stands in the profile."""

from __future__ import annotations

from gpufleet.scheduler.framework.interface import Plugin
from gpufleet.scheduler.framework.runtime import Framework
from gpufleet.scheduler.plugins.default_plugins import PROFILE
from gpufleet.scheduler.plugins.dynamicresources import DynamicResources
from tests.conftest import ROOT


class _Nominates(Plugin):
    def __init__(self, name: str, node: int | None, calls: list):
        self.name, self.node, self.calls = name, node, calls  # type: ignore[misc]

    def post_filter(self, state, pod_state, failures):
        self.calls.append((self.name, state, pod_state, dict(failures)))
        return self.node


def test_post_filter_plugins_run_in_profile_order_until_one_nominates_a_node():
    calls: list = []
    framework = Framework([(_Nominates("A", None, calls), None), (_Nominates("B", 7, calls), None),
                           (_Nominates("C", 3, calls), None)])
    nominated = framework.run_post_filter_plugins({"A": "run-a", "B": "run-b"}, {"B": "pod-b"}, {"full": 2})
    assert nominated == 7
    assert calls == [("A", "run-a", None, {"full": 2}), ("B", "run-b", "pod-b", {"full": 2})]


def test_no_post_filter_plugin_nominates_and_the_pod_stays_pending():
    calls: list = []
    framework = Framework([(_Nominates("A", None, calls), None)])
    assert framework.run_post_filter_plugins({}, {}, {}) is None and len(calls) == 1


def test_dynamic_resources_filters_last_and_post_filters_first_as_v1_34_places_it():
    names = [plugin.name for plugin, _ in PROFILE]
    # applyDynamicResources: just before DefaultPreemption, which follows InterPodAffinity.
    assert names.index("DynamicResources") == names.index("InterPodAffinity") + 1
    assert names.index("DefaultPreemption") == names.index("DynamicResources") + 1
    framework = Framework(PROFILE)
    assert [p.name for p in framework.claims_plugins] == ["DynamicResources"]
    assert [p.name for p in framework.post_filters] == ["DynamicResources", "DefaultPreemption"]
    assert [weight for plugin, weight in PROFILE if isinstance(plugin, DynamicResources)] == [None]  # no score


def test_the_profile_naming_dynamic_resources_loads_no_cel():
    import subprocess
    import sys

    code = ("import sys; from gpufleet.scheduler.plugins import default_plugins; "
            "print('celpy' in sys.modules, 'gpufleet.scheduler.plugins.dynamicresources.claims' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.split() == ["False", "False"]
