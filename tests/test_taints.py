"""The API's ToleratesTaint, written once (gpufleet.taints) and used by the scheduler emulation, the renderer,
the policy pack, Kueue admission and the AKS rules: its edge cases, and every user agreeing with it."""

from __future__ import annotations

import pytest

from gpufleet.taints import extended_resource_tolerations, tolerates_any, tolerates_taint

TAINT = ("dedicated", "gpu", "NoSchedule")


@pytest.mark.parametrize("toleration, expected", [
    ({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}, True),
    ({"key": "dedicated", "value": "gpu"}, True),                       # empty operator is Equal, any effect
    ({"key": "dedicated", "operator": "Exists"}, True),
    ({"key": "dedicated", "operator": "Equal", "value": "cpu"}, False),
    ({"key": "dedicated", "operator": "Equal"}, False),                 # value "" is not "gpu"
    ({"key": "sku", "operator": "Exists"}, False),                      # a wrong key never tolerates
    ({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, False),
    ({"operator": "Exists"}, True),                                     # empty key + Exists: every taint
    ({"operator": "Exists", "effect": "NoExecute"}, False),
    ({"operator": "Equal", "value": "gpu"}, True),                      # empty key + Equal: the value decides
    ({"operator": "Equal", "value": "other"}, False),
    ({"key": "dedicated", "operator": "Gt", "value": "gpu"}, False),    # an unknown operator tolerates nothing
])
def test_a_toleration_tolerates_a_taint_as_the_api_decides(toleration, expected):
    assert tolerates_taint(toleration, *TAINT) is expected


def test_a_taint_without_value_is_tolerated_by_equal_with_no_value():
    assert tolerates_taint({"key": "nvidia.com/gpu", "operator": "Equal"}, "nvidia.com/gpu", "", "NoSchedule")
    assert tolerates_taint({"key": "nvidia.com/gpu", "operator": "Equal", "value": ""}, "nvidia.com/gpu", None,
                           "NoSchedule")
    assert not tolerates_any([], "nvidia.com/gpu", "", "NoSchedule")


def test_the_extended_resource_shortcut_tolerates_noschedule_only_and_only_its_own_resource():
    added = extended_resource_tolerations(["nvidia.com/gpu", "nvidia.com/gpu"])
    assert added == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert tolerates_any(added, "nvidia.com/gpu", "", "NoSchedule")
    assert not tolerates_any(added, "nvidia.com/gpu", "", "NoExecute")
    assert not tolerates_any(added, "nvidia.com/mig-1g.10gb", "", "NoSchedule")


def test_every_part_of_gpufleet_decides_tolerations_with_the_one_rule():
    """The renderer, the scheduler filter, Kueue and the AKS rules agree with gpufleet.taints on every case."""
    from gpufleet.admission.kueue import _tolerates as kueue_tolerates
    from gpufleet.capacity.model import Taint as NodeTaint
    from gpufleet.config.aks_rules import _tolerates as aks_tolerates
    from gpufleet.config.node_pools import Taint as PoolTaint
    from gpufleet.config.workloads import Toleration
    from gpufleet.render.tolerations import tolerates as render_tolerates
    from gpufleet.scheduler.filters import tolerates as filter_tolerates

    cases = [{"key": "dedicated", "operator": "Equal", "value": "gpu"}, {"key": "dedicated", "operator": "Exists"},
             {"key": "sku", "operator": "Exists"}, {"operator": "Exists"},
             {"operator": "Exists", "effect": "NoExecute"},
             {"key": "dedicated", "operator": "Equal", "value": "cpu", "effect": "NoSchedule"}]
    for effect in ("NoSchedule", "NoExecute"):
        for t in cases:
            want = tolerates_taint(t, "dedicated", "gpu", effect)
            assert filter_tolerates(t, NodeTaint("dedicated", "gpu", effect)) is want, t
            assert render_tolerates(t, PoolTaint(key="dedicated", value="gpu", effect=effect)) is want, t
            assert kueue_tolerates(t, {"key": "dedicated", "value": "gpu", "effect": effect}) is want, t
            assert aks_tolerates(PoolTaint(key="dedicated", value="gpu", effect=effect), [Toleration(**t)]) is want, t
