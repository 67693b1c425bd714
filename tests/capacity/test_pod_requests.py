"""One PodRequests rule: the scheduler's compared units and admission's printable quantities come from the
same sum (init containers by the max rule, sidecars added, overhead on top), so they always agree."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpufleet.admission.pods import pod_limit_quantities, pod_request_quantities, with_defaulted_requests
from gpufleet.capacity.quantity import to_units
from gpufleet.capacity.requests import pod_requests

# Amounts whole in compared units (millicores, bytes, devices): the scheduler rounds each container's
# request, upstream rounds the pod's sum, and the two differ only for fractions of a unit.
AMOUNTS = {"cpu": ("0", "1", "250m", "2"), "memory": ("0", "1Gi", "512Mi", "1000"),
           "nvidia.com/gpu": ("0", "1", "3")}


def _list():
    pairs = st.sampled_from(sorted(AMOUNTS)).flatmap(
        lambda r: st.tuples(st.just(r), st.sampled_from(AMOUNTS[r])))
    return st.lists(pairs, max_size=3).map(dict)


def _container(sidecar_allowed: bool):
    policy = st.sampled_from([None, "Always"]) if sidecar_allowed else st.just(None)
    return st.builds(lambda req, lim, p: {"resources": {"requests": req, "limits": lim},
                                          **({"restartPolicy": p} if p else {})},
                     _list(), _list(), policy)


SPECS = st.builds(lambda app, init, overhead: {"containers": app, "initContainers": init,
                                               **({"overhead": overhead} if overhead else {})},
                  st.lists(_container(False), max_size=3), st.lists(_container(True), max_size=3), _list())


@given(SPECS)
def test_admission_quantities_and_scheduler_units_are_one_sum(spec):
    quantities = pod_request_quantities(with_defaulted_requests(spec))
    assert pod_requests(spec) == {r: to_units(r, q.value) for r, q in quantities.items()}


def test_sidecar_then_init_container_needs_both_and_overhead_is_added():
    spec = {"containers": [{"resources": {"requests": {"cpu": "1"}}}],
            "initContainers": [{"restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                               {"resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}],
            "overhead": {"cpu": "250m"}}
    # max(app 1 + sidecar 1, init 3 + sidecar 1) + overhead
    assert pod_requests(spec) == {"cpu": 4250, "memory": 1024**3}
    assert {r: str(q) for r, q in pod_request_quantities(spec).items()} == {"cpu": "4250m", "memory": "1Gi"}


def test_a_zero_request_in_an_init_container_is_still_listed():
    # maxResourceList takes a resource it has not seen as it is, zero included.
    spec = {"containers": [{}], "initContainers": [{"resources": {"requests": {"nvidia.com/gpu": "0"}}}]}
    assert pod_requests(spec) == {"nvidia.com/gpu": 0}


def test_overhead_is_added_to_limits_only_where_the_pod_has_that_limit():
    spec = {"containers": [{"resources": {"limits": {"cpu": "1"}}}],
            "overhead": {"cpu": "100m", "memory": "1Gi"}}
    assert {r: str(q) for r, q in pod_limit_quantities(spec).items()} == {"cpu": "1100m"}
    assert {r: str(q) for r, q in pod_request_quantities(spec).items()} == {"cpu": "100m", "memory": "1Gi"}
