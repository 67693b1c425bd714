"""LimitRanger: defaults injected (max -> default -> defaultRequest, min -> defaultRequest), then min, max and
maxLimitRequestRatio per Container and per Pod, with the plugin's messages."""

import pytest

from tests.admission.objects import admitted, container, deployment, in_ns, limit_range, pod, pod_spec

GPU = "nvidia.com/gpu"


def only_rejection(result):
    assert len(result.rejections) == 1, result.rejections
    return result.rejections[0]


@pytest.mark.parametrize("item, resources, reason", [
    pytest.param({"type": "Container", "max": {GPU: 2}}, {"limits": {GPU: 4}},
                 "maximum nvidia.com/gpu usage per Container is 2, but limit is 4", id="container max on a gpu limit"),
    pytest.param({"type": "Container", "max": {"memory": "1Gi"}}, {"limits": {"memory": "2Gi"}},
                 "maximum memory usage per Container is 1Gi, but limit is 2Gi", id="container max keeps binary units"),
    pytest.param({"type": "Container", "max": {"cpu": "2"}, "default": {"cpu": "1"}},
                 {"requests": {"cpu": "3"}, "limits": {"cpu": "4"}},
                 "maximum cpu usage per Container is 2, but limit is 4", id="max checks the limit first"),
    pytest.param({"type": "Container", "min": {"cpu": "100m"}}, {"requests": {"cpu": "50m"}, "limits": {"cpu": "1"}},
                 "minimum cpu usage per Container is 100m, but request is 50m", id="container min on the request"),
    pytest.param({"type": "Container", "min": {"cpu": "500m"}, "defaultRequest": {"cpu": "1"}},
                 {"limits": {"cpu": "250m"}},
                 "minimum cpu usage per Container is 500m, but request is 250m",
                 id="request defaulted from the limit is checked against min"),
    pytest.param({"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}},
                 {"requests": {"cpu": "1"}, "limits": {"cpu": "4"}},
                 "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000",
                 id="ratio over the maximum"),
    pytest.param({"type": "Container", "maxLimitRequestRatio": {"memory": "2"}}, {"limits": {"cpu": "1"}},
                 "memory max limit to request ratio per Container is 2, but no request is specified or request is 0",
                 id="ratio without a request"),
    pytest.param({"type": "Pod", "max": {GPU: 4}}, {"limits": {"cpu": "1"}},
                 "maximum nvidia.com/gpu usage per Pod is 4.  No limit is specified",
                 id="pod max forbids pods that ask for no gpu"),
    pytest.param({"type": "Pod", "min": {"cpu": "1"}}, {"limits": {"memory": "1Gi"}},
                 "minimum cpu usage per Pod is 1.  No request is specified", id="pod min without a request"),
])
def test_limit_range_item_forbids_the_pod_in_the_plugins_words(item, resources, reason):
    r = only_rejection(admitted(limit_range(item), in_ns(pod("p", pod_spec(container(**resources))))))
    assert (r.reason, r.source, r.by, r.refused) == (reason, "LimitRanger", "LimitRange/ml/limits", 1)
    assert r.message == f'pods "p" is forbidden: {reason}'


def test_pod_max_sums_the_containers():
    spec = pod_spec(container(limits={GPU: 3}), dict(container(limits={GPU: 3}), name="side"))
    r = only_rejection(admitted(limit_range({"type": "Pod", "max": {GPU: 4}}), in_ns(pod("p", spec))))
    assert r.reason == "maximum nvidia.com/gpu usage per Pod is 4, but limit is 6"


def test_several_failures_are_joined_once_each_like_an_aggregate_error():
    spec = pod_spec(container(limits={GPU: 4, "memory": "2Gi"}), dict(container(limits={GPU: 4}), name="b"))
    item = {"type": "Container", "max": {GPU: 2, "memory": "1Gi"}}
    r = only_rejection(admitted(limit_range(item), in_ns(pod("p", spec))))
    assert r.reason == ("[maximum memory usage per Container is 1Gi, but limit is 2Gi, "
                        "maximum nvidia.com/gpu usage per Container is 2, but limit is 4]")


def test_max_without_default_becomes_the_default_limit_and_request_of_containers_that_ask_for_none():
    result = admitted(limit_range({"type": "Container", "max": {GPU: 2}}),
                      in_ns(deployment("web", 3, pod_spec(container(requests={"cpu": "1"}, limits={"cpu": "1"})))))
    assert result.rejections == []
    [w] = result.workloads
    assert w.replicas == 3
    assert w.spec["containers"][0]["resources"] == {"requests": {"cpu": "1", GPU: "2"},
                                                    "limits": {"cpu": "1", GPU: "2"}}


def test_default_request_comes_from_min_when_there_is_no_default():
    result = admitted(limit_range({"type": "Container", "min": {"cpu": "250m"}}),
                      in_ns(pod("p", pod_spec(container()))))
    assert result.workloads[0].spec["containers"][0]["resources"] == {"requests": {"cpu": "250m"}, "limits": {}}


def test_explicit_default_and_default_request_fill_only_what_the_container_leaves_out():
    item = {"type": "Container", "default": {"cpu": "2", "memory": "1Gi"}, "defaultRequest": {"cpu": "500m"}}
    result = admitted(limit_range(item), in_ns(pod("p", pod_spec(container(requests={"memory": "256Mi"})))))
    assert result.workloads[0].spec["containers"][0]["resources"] == {
        "requests": {"memory": "256Mi", "cpu": "500m"}, "limits": {"cpu": "2", "memory": "1Gi"}}


def test_init_containers_get_defaults_and_are_checked():
    spec = pod_spec(container(limits={GPU: 1}), initContainers=[dict(container(limits={GPU: 3}), name="init")])
    r = only_rejection(admitted(limit_range({"type": "Container", "max": {GPU: 2}}), in_ns(pod("p", spec))))
    assert r.reason == "maximum nvidia.com/gpu usage per Container is 2, but limit is 3"


def test_a_default_that_breaks_a_request_makes_the_pod_invalid():
    result = admitted(limit_range({"type": "Container", "default": {"cpu": "1"}}),
                      in_ns(pod("p", pod_spec(container(requests={"cpu": "2"})))))
    r = only_rejection(result)
    assert r.source == "PodValidation"
    assert r.message == ('Pod "p" is invalid: spec.containers[0].resources.requests: Invalid value: "2": '
                         "must be less than or equal to cpu limit of 1")


def test_controller_pods_are_named_by_their_generate_name_and_stateful_set_pods_by_their_own():
    result = admitted(limit_range({"type": "Container", "max": {GPU: 2}}),
                      in_ns(deployment("web", 2, pod_spec(container(limits={GPU: 4})))),
                      in_ns(deployment("db", 2, pod_spec(container(limits={GPU: 4})), kind="StatefulSet")))
    assert [(r.workload, r.refused) for r in result.rejections] == [("Deployment/ml/web", 2), ("StatefulSet/ml/db", 2)]
    assert result.rejections[0].message.startswith('pods "web-<pod-template-hash>-" is forbidden: ')
    assert result.rejections[1].message.startswith('pods "db-0" is forbidden: ')
    assert [w.replicas for w in result.workloads] == [0, 0]


def test_a_limit_range_in_another_namespace_changes_nothing():
    d = deployment("web", 2, pod_spec(container(limits={GPU: 4})))
    result = admitted(limit_range({"type": "Container", "max": {GPU: 2}}), d)
    assert result.rejections == [] and result.warnings == []
    assert result.workloads[0].spec is d["spec"]["template"]["spec"]
