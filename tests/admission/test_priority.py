"""Priority admission: a named PriorityClass must exist (where the classes are known); globalDefault."""

from tests.admission.objects import admitted, container, deployment, in_ns, pod, pod_spec, priority_class

GPU = "nvidia.com/gpu"


def spec(**extra):
    return pod_spec(container(limits={GPU: 1}), **extra)


def test_a_class_that_does_not_exist_forbids_every_pod():
    result = admitted(priority_class("high", 1000), deployment("d", 3, spec(priorityClassName="hihg")))
    [r] = result.rejections
    assert (r.refused, r.by, r.source) == (3, "PriorityClass/hihg", "Priority")
    assert r.message == 'pods "d-<pod-template-hash>-" is forbidden: no PriorityClass with name hihg was found'
    assert result.workloads[0].replicas == 0


def test_system_classes_always_exist():
    result = admitted(priority_class("high", 1000), pod("p", spec(priorityClassName="system-node-critical")))
    assert result.rejections == []


def test_without_any_priority_class_given_a_named_class_is_taken_on_trust():
    d = deployment("d", 2, spec(priorityClassName="anything"))
    result = admitted(d)
    assert result.rejections == [] and result.workloads[0].spec is d["spec"]["template"]["spec"]


def test_a_priority_value_that_differs_from_the_class_is_forbidden():
    result = admitted(priority_class("high", 1000), in_ns(pod("p", spec(priorityClassName="high", priority=5))))
    assert result.rejections[0].reason == ("the integer value of priority (5) must not be provided in pod spec; "
                                           "priority admission controller computed 1000 from the given "
                                           "PriorityClass name")


def test_known_classes_leave_workloads_that_name_an_existing_one_untouched():
    d = deployment("d", 2, spec(priorityClassName="high"))
    result = admitted(priority_class("high", 1000), priority_class("low", 1, default=True), d)
    assert result.rejections == [] and result.workloads[0].spec is d["spec"]["template"]["spec"]
