"""Any topology spread or pod affinity input, however odd: `check` answers 0, 1 or 2, never a crash."""

import json

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.run_inprocess import run

ANY = st.recursive(st.none() | st.booleans() | st.integers(-5, 200) | st.sampled_from(["", "app", "zone", "In", "x"]),
                   lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                       st.sampled_from(["labelSelector", "matchLabels", "matchExpressions", "key", "operator",
                                        "values", "topologyKey", "maxSkew", "whenUnsatisfiable", "minDomains",
                                        "namespaces", "namespaceSelector", "weight", "podAffinityTerm",
                                        "matchLabelKeys"]), inner, max_size=4), max_leaves=12)
SELECTOR = st.fixed_dictionaries({}, optional={"matchLabels": st.dictionaries(st.sampled_from(["app", "tier"]),
                                                                            st.sampled_from(["a", "b"])),
                                               "matchExpressions": st.lists(st.fixed_dictionaries({
                                                   "key": st.sampled_from(["app", "tier"]),
                                                   "operator": st.sampled_from(["In", "NotIn", "Exists", "Bad"]),
                                                   "values": st.lists(st.sampled_from(["a", "b"]), max_size=2)}),
                                                   max_size=2)})
TERM = st.fixed_dictionaries({"topologyKey": st.sampled_from(["kubernetes.io/hostname", "zone", "", "absent"])},
                             optional={"labelSelector": SELECTOR, "namespaces": st.lists(st.sampled_from(["a", "ml"])),
                                       "namespaceSelector": st.sampled_from([{}, {"matchLabels": {"t": "x"}}])})
SPREAD = st.fixed_dictionaries({"maxSkew": st.integers(-1, 3), "topologyKey": st.sampled_from(["zone", "", "absent"]),
                                "whenUnsatisfiable": st.sampled_from(["DoNotSchedule", "ScheduleAnyway", "x"])},
                               optional={"labelSelector": SELECTOR, "minDomains": st.integers(-1, 4),
                                         "matchLabelKeys": st.lists(st.sampled_from(["app", "x"]), max_size=2)})
RULES = st.fixed_dictionaries({}, optional={
    "topologySpreadConstraints": st.lists(SPREAD, max_size=2) | ANY,
    "affinity": st.fixed_dictionaries({}, optional={
        "podAffinity": st.fixed_dictionaries({}, optional={
            "requiredDuringSchedulingIgnoredDuringExecution": st.lists(TERM, max_size=2) | ANY}),
        "podAntiAffinity": st.fixed_dictionaries({}, optional={
            "requiredDuringSchedulingIgnoredDuringExecution": st.lists(TERM, max_size=2),
            "preferredDuringSchedulingIgnoredDuringExecution": st.lists(st.fixed_dictionaries(
                {"weight": st.integers(-1, 120), "podAffinityTerm": TERM | ANY}), max_size=2)})}) | ANY})

NODES = {"kind": "List", "items": [
    {"metadata": {"name": f"n{i}", "labels": {"zone": f"z{i % 2}", "kubernetes.io/hostname": f"n{i}"}},
     "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10", "nvidia.com/gpu": "1"}}} for i in range(3)]}


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(RULES, min_size=1, max_size=3), st.integers(1, 4))
def test_pod_rules_never_crash_check(tmp_path, rules, replicas):
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(NODES))
    docs = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"w{i}", "namespace": "ml"},
             "spec": {"replicas": replicas, "template": {"metadata": {"labels": {"app": "a", "tier": "b"}},
                                                          "spec": {"containers": [{"name": "c", "image": "i",
                                                                   "resources": {"limits": {"nvidia.com/gpu": 1}}}],
                                                                   **r}}}} for i, r in enumerate(rules)]
    manifest = tmp_path / "w.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    out = run("check", "--json", "--nodes", nodes, manifest)
    assert out.code in (0, 1, 2), out.err
    assert "internal error" not in out.err and "Traceback" not in out.err
    if out.code == 2:
        assert out.err.strip() and str(manifest) in out.err
