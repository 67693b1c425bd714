"""DRA selectors evaluate as in the Kubernetes CEL environment (a device as NVIDIA's driver publishes it)."""

from __future__ import annotations

import pytest

from gpufleet.scheduler.plugins.dynamicresources.cel import CelError, compile_selector, device_activation, evaluate

H100 = device_activation("gpu.nvidia.com", {
    "type": {"string": "gpu"}, "productName": {"string": "NVIDIA H100 80GB HBM3"},
    "driverVersion": {"version": "570.133.20"}, "cudaComputeCapability": {"version": "9.0.0"},
    "resource.kubernetes.io/pcieRoot": {"string": "pci0000:15"}, "numa": {"int": 1}, "mig": {"bool": False}},
    {"memory": {"value": "81559Mi"}})


def run(expression: str) -> bool:
    return evaluate(compile_selector(expression), H100)


@pytest.mark.parametrize("expression, expected", [
    ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'", True),
    ("device.attributes['gpu.nvidia.com']['productName'].startsWith('NVIDIA H100')", True),
    ("device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:15'", True),
    ("device.attributes['gpu.nvidia.com'].numa == 1 && !device.attributes['gpu.nvidia.com'].mig", True),
    ("device.attributes['example.com'].size() == 0", True),  # an unknown domain is an empty map
    ("has(device.attributes['gpu.nvidia.com'].uuid)", False),
    ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) < 0", True),  # 81559Mi < 80Gi
    ("device.capacity['gpu.nvidia.com'].memory == quantity('85520809984')", True),  # equal by value
    ("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))", True),
    ("quantity('1').add(2) == quantity('3') && quantity('1500m').sign() == 1", True),
    ("device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))", True),
    ("device.attributes['gpu.nvidia.com'].driverVersion == semver('570.133.20')", True),
    ("device.attributes['gpu.nvidia.com'].cudaComputeCapability.major() == 9", True),
    ("semver('v9', true) == semver('9.0.0')", True),
])
def test_selectors_read_devices_as_the_scheduler_does(expression, expected):
    assert run(expression) is expected


@pytest.mark.parametrize("expression, error", [
    ("device.attributes['gpu.nvidia.com'].memoryClock > 1", "no such key: memoryClock"),
    ("device.attributes['gpu.nvidia.com'].driverVersion == '570.133.20'", "no such overload"),  # use semver()
    ("quantity('1.5').asInteger() == 1", "cannot convert value to integer"),
    ("device.driver", "CEL result of type StringType could not be converted to bool"),
])
def test_runtime_errors_are_errors_not_false(expression, error):
    with pytest.raises(CelError, match=f"^{error}$"):
        run(expression)


def test_a_version_attribute_that_is_no_semver_is_an_error():
    with pytest.raises(CelError, match="^attribute driverVersion: parse semantic version: "):
        device_activation("gpu.nvidia.com", {"driverVersion": {"version": "570"}}, {})
