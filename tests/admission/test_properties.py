"""Random LimitRanges and quotas, garbage included, never crash admit; namespaces without them are untouched."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.admission import admit
from gpufleet.manifests.workloads import workloads_of
from tests.admission.objects import container, deployment, in_ns, job, pod, pod_spec

RESOURCES = ["cpu", "memory", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "hugepages-2Mi", "ephemeral-storage",
             "requests.nvidia.com/gpu", "limits.cpu", "requests.cpu", "limits.memory", "pods", "count/pods",
             "limits.nvidia.com/gpu", "services"]
quantity = st.one_of(st.integers(-2, 40), st.sampled_from(["0", "1", "2", "500m", "1Gi", "512Mi", "1.5", "3k",
                                                           "abc", "", "-1", "1e3"]),
                     st.none(), st.floats(allow_nan=True), st.booleans(), st.just({}))
resource_list = st.one_of(st.dictionaries(st.sampled_from(RESOURCES), quantity, max_size=4), st.none(),
                          st.just("junk"), st.just([1]))
item = st.one_of(st.fixed_dictionaries({"type": st.sampled_from(["Container", "Pod", "PersistentVolumeClaim", 3])},
                                       optional={k: resource_list for k in ("min", "max", "default", "defaultRequest",
                                                                            "maxLimitRequestRatio")}),
                 st.none(), st.just("junk"))
limit_ranges = st.lists(st.builds(lambda items, n: {"kind": "LimitRange",
                                                    "metadata": {"name": f"lr{n}", "namespace": "ml"},
                                                    "spec": {"limits": items}},
                                  st.lists(item, max_size=3), st.integers(0, 3)), max_size=2)
scope_expr = st.fixed_dictionaries({"scopeName": st.sampled_from(["PriorityClass", "BestEffort", "Terminating", "x"]),
                                    "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "?"]),
                                    "values": st.one_of(st.lists(st.sampled_from(["high", "low"]), max_size=2),
                                                        st.none())})
quotas = st.lists(st.builds(
    lambda hard, used, scopes, exprs, n: {"kind": "ResourceQuota", "metadata": {"name": f"q{n}", "namespace": "ml"},
                                          "spec": {"hard": hard, "scopes": scopes,
                                                   "scopeSelector": {"matchExpressions": exprs}},
                                          **({"status": {"hard": hard, "used": used}} if used is not None else {})},
    resource_list, st.one_of(st.none(), resource_list),
    st.one_of(st.none(), st.lists(st.sampled_from(["BestEffort", "NotBestEffort", "Terminating", "NotTerminating",
                                                   "PriorityClass", "bogus"]), max_size=2)),
    st.one_of(st.none(), st.lists(scope_expr, max_size=2)), st.integers(0, 3)), max_size=3)
resources = st.fixed_dictionaries({}, optional={"limits": resource_list, "requests": resource_list})
specs = st.builds(lambda r, extra: pod_spec(container(**{k: v for k, v in r.items()}), **extra), resources,
                  st.fixed_dictionaries({}, optional={"priorityClassName": st.sampled_from(["high", "low", ""]),
                                                      "activeDeadlineSeconds": st.integers(-1, 10)}))


def workloads_in(namespace, spec_list):
    out = []
    for i, spec in enumerate(spec_list):
        made = [pod(f"p{i}", spec), deployment(f"d{i}", 1 + i % 4, spec), job(f"j{i}", 2, spec)][i % 3]
        out.append(in_ns(made, namespace))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(limit_ranges, quotas, st.lists(specs, min_size=1, max_size=4), st.lists(specs, max_size=3))
def test_admit_never_crashes_and_leaves_other_namespaces_untouched(lrs, qs, ml_specs, other_specs):
    objects = lrs + qs + workloads_in("ml", ml_specs) + workloads_in("other", other_specs)
    workloads = workloads_of(objects)
    result = admit(workloads, objects)
    assert len(result.workloads) == len(workloads)
    for before, after in zip(workloads, result.workloads, strict=True):
        assert after.key == before.key and 0 <= after.replicas <= max(before.replicas, 0)
        if before.namespace == "other":
            assert after is before
    for r in result.rejections:
        before = next(w for w in workloads if w.key == r.workload)
        assert r.admitted + r.refused == before.replicas and r.message.endswith(r.reason)
