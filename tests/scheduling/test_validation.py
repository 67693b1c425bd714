import pytest

from gpufleet.scheduling import check_workloads
from tests.scheduling.kube import container, deployment, node, pod, pod_spec


def verdict(*manifests):
    return check_workloads([node("n", 8)], [], list(manifests))


def only(result):
    assert len(result.unschedulable) == 1, result.to_json()
    return result.unschedulable[0]


def test_fractional_gpu_limit_on_a_pod_reports_the_limit_and_the_request_defaulted_from_it():
    """The API server defaults a Pod's requests from its limits before validating, so both are wrong."""
    u = only(verdict(pod("half", pod_spec(container(limits={"nvidia.com/gpu": "500m"})))))
    assert u.reason == "rejected"
    assert u.message == ('Pod "half" is invalid: [spec.containers[0].resources.limits[nvidia.com/gpu]: '
                         'Invalid value: "500m": must be an integer, '
                         'spec.containers[0].resources.requests[nvidia.com/gpu]: '
                         'Invalid value: "500m": must be an integer]')


def test_pod_template_is_not_defaulted_so_only_the_limit_is_reported():
    u = only(verdict(deployment("d", 1, pod_spec(container(limits={"nvidia.com/gpu": "500m"})))))
    assert u.message == ('Deployment.apps "d" is invalid: spec.template.spec.containers[0].resources.limits'
                         '[nvidia.com/gpu]: Invalid value: "500m": must be an integer')


def test_negative_replicas_are_rejected_in_api_server_words():
    u = only(verdict(deployment("d", -1)))
    assert u.message == ('Deployment.apps "d" is invalid: spec.replicas: Invalid value: -1: '
                         'must be greater than or equal to 0')


def test_fractional_gpu_overhead_is_rejected():
    u = only(verdict(pod("p", pod_spec(overhead={"nvidia.com/gpu": "0.5"}))))
    assert u.message == 'Pod "p" is invalid: spec.overhead[nvidia.com/gpu]: Invalid value: "500m": must be an integer'


def test_fractional_gpu_in_deployment_template_is_rejected_at_template_path():
    u = only(verdict(deployment("d", 3, pod_spec(container(limits={"nvidia.com/gpu": 0.5})))))
    assert u.message.startswith('Deployment.apps "d" is invalid: spec.template.spec.containers[0].resources.limits'
                                '[nvidia.com/gpu]: Invalid value: "500m"')
    assert u.pending == 3


def test_gpu_request_different_from_limit_is_rejected():
    u = only(verdict(pod("p", pod_spec(container(limits={"nvidia.com/gpu": 2}, requests={"nvidia.com/gpu": 1})))))
    assert u.message.endswith('spec.containers[0].resources.requests: Invalid value: "1": must be equal to '
                              "nvidia.com/gpu limit of 2")


def test_gpu_request_without_limit_is_rejected():
    u = only(verdict(pod("p", pod_spec(container(requests={"nvidia.com/gpu": 1})))))
    assert u.message.endswith("spec.containers[0].resources.limits: Required value: Limit must be set for "
                              "non overcommitable resources")


def test_negative_gpu_limit_is_rejected():
    u = only(verdict(pod("p", pod_spec(container(limits={"nvidia.com/gpu": -1})))))
    assert 'Invalid value: "-1": must be greater than or equal to 0' in u.message


def test_cpu_request_above_its_limit_is_rejected():
    u = only(verdict(pod("p", pod_spec(container(limits={"cpu": "1"}, requests={"cpu": "2"})))))
    assert u.message.endswith('requests: Invalid value: "2": must be less than or equal to cpu limit of 1')


def test_two_errors_are_listed_in_brackets_like_the_api_server():
    spec = pod_spec(container(limits={"nvidia.com/gpu": "1.5", "example.com/fpga": "0.5"}))
    u = only(verdict(pod("p", spec)))
    assert u.message.startswith('Pod "p" is invalid: [spec.containers[0].resources.limits[example.com/fpga]')


@pytest.mark.parametrize("gpus", [pytest.param(1, id="int"), pytest.param(1.0, id="float from pulumi"),
                                  pytest.param("1", id="string")])
def test_limits_only_whole_gpu_is_accepted(gpus):
    assert verdict(pod("p", pod_spec(container(limits={"nvidia.com/gpu": gpus})))).fits


def test_equal_request_and_limit_is_accepted():
    assert verdict(pod("p", pod_spec(container(limits={"nvidia.com/gpu": 1}, requests={"nvidia.com/gpu": "1"})))).fits


def test_fractional_cpu_is_accepted():
    assert verdict(pod("p", pod_spec(container(limits={"cpu": "500m", "nvidia.com/gpu": 1})))).fits
