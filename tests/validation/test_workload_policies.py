"""The pack's workload rules on a plain manifest (what `gpufleet check` runs): where the pod spec is, which
facts of the planned setup change the answer, and what is never judged."""

from __future__ import annotations

import pytest

from gpufleet.validation.gpu_requests import DevicePluginFacts
from gpufleet.validation.workload_policies import WorkloadFacts, workload_findings

PINNING = {"name": "c", "image": "x:1", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "0"}]}
DRIVER = [{"name": "drv", "hostPath": {"path": "/run/nvidia/driver/usr/lib"}}]


def cronjob(spec: dict, annotations: dict | None = None) -> dict:
    template = {"spec": spec, **({"metadata": {"annotations": annotations}} if annotations else {})}
    return {"kind": "CronJob", "metadata": {"name": "nightly", "namespace": "ml"},
            "spec": {"jobTemplate": {"spec": {"template": template}}}}


NO_FACTS = WorkloadFacts()


def texts(obj, facts: WorkloadFacts = NO_FACTS) -> list[str]:
    return [f.text for f in workload_findings(obj, facts)]


def test_a_cronjobs_pod_template_is_judged():
    assert texts(cronjob({"containers": [PINNING], "volumes": DRIVER})) == [
        "[no-visible-devices-bypass] CronJob ml/nightly: container 'c' sets NVIDIA_VISIBLE_DEVICES=0 without a GPU "
        "resource request, bypassing the device plugin's accounting; expected a nvidia.com/* resource limit "
        "instead (pinning devices is allowed only in platform-managed mode).",
        "[no-driver-hostpath] CronJob ml/nightly mounts the host's NVIDIA driver files (volume 'drv', hostPath "
        "/run/nvidia/driver/usr/lib); expected no driver hostPath: request a GPU and let the container toolkit "
        "inject the driver matching the node."]


def test_a_cdi_annotation_on_the_pod_template_is_a_bypass_and_one_on_the_controller_is_not():
    obj = cronjob({"containers": [{"name": "c", "image": "x:1"}]}, {"cdi.k8s.io/gpu": "nvidia.com/gpu=all"})
    [finding] = texts(obj)
    assert "annotation cdi.k8s.io/gpu=nvidia.com/gpu=all injects GPUs through CDI" in finding
    obj = cronjob({"containers": [{"name": "c", "image": "x:1"}]})
    obj["metadata"]["annotations"] = {"cdi.k8s.io/gpu": "nvidia.com/gpu=all"}
    assert texts(obj) == []


def test_a_pods_own_annotations_are_its_template():
    pod = {"kind": "Pod", "metadata": {"name": "p", "annotations": {"cdi.k8s.io/x": "nvidia.com/gpu=0"}},
           "spec": {"containers": [{"name": "c", "image": "x:1"}]}}
    [finding] = texts(pod)
    assert finding.startswith("[no-visible-devices-bypass] Pod p: annotation cdi.k8s.io/x=nvidia.com/gpu=0")


def test_platform_managed_mode_allows_pinning_but_never_a_driver_mount():
    found = texts(cronjob({"containers": [PINNING], "volumes": DRIVER}), WorkloadFacts(platform_managed=True))
    assert [f.split("]")[0] for f in found] == ["[no-driver-hostpath"]


def test_allowed_host_paths_cover_everything_below_them():
    assert texts(cronjob({"containers": [], "volumes": DRIVER}),
                 WorkloadFacts(allowed_host_paths=("/run/nvidia/",))) == []


@pytest.mark.parametrize("devices, says", [
    pytest.param(DevicePluginFacts(), None, id="unknown setup: any MIG profile of NVIDIA's tables"),
    pytest.param(DevicePluginFacts(mig_strategy="single"), "exists only under the mixed MIG strategy", id="single"),
    pytest.param(DevicePluginFacts(mig_strategy="mixed", mig_profiles=frozenset({"1g.10gb"})),
                 "names no planned MIG profile; expected one of: nvidia.com/mig-1g.10gb", id="other profile"),
    pytest.param(DevicePluginFacts(mig_strategy="single", advertised=frozenset({"nvidia.com/mig-3g.40gb"})), None,
                 id="advertised by a node"),
])
def test_mig_resource_names_are_judged_against_the_known_setup(devices, says):
    spec = {"containers": [{"name": "c", "image": "x:1", "resources": {"limits": {"nvidia.com/mig-3g.40gb": 1}}}]}
    found = texts(cronjob(spec), WorkloadFacts(devices=devices))
    if says is None:
        assert found == []
    else:
        [finding] = found
        assert finding.startswith("[gpu-request-shape] CronJob ml/nightly container 'c': 'nvidia.com/mig-3g.40gb' ")
        assert says in finding


def test_quantities_are_left_to_the_api_server_checks():
    spec = {"containers": [{"name": "c", "image": "x:1",
                            "resources": {"limits": {"nvidia.com/gpu": "0.5"}, "requests": {"nvidia.com/gpu": 2}}}]}
    assert texts(cronjob(spec)) == []


@pytest.mark.parametrize("obj", [
    {"kind": "Service", "spec": {"containers": [PINNING]}},
    {"kind": ["Pod"], "spec": {"containers": [PINNING]}},
    {"kind": "Pod", "spec": "containers"},
    {"kind": "Pod", "metadata": 3, "spec": {"containers": [3, PINNING["env"], {"env": {"a": 1}}], "volumes": 7}},
    "Pod",
])
def test_what_is_no_workload_or_no_pod_spec_gives_no_finding(obj):
    assert texts(obj) == []
