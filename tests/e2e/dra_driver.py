"""What NVIDIA's DRA driver puts in a cluster, for tests whose KWOK nodes run no driver: the DeviceClasses of
the chart gpufleet pins (as `helm template` renders them) and the ResourceSlices the driver publishes for the
stack's nodes (gpufleet's planned slices). With both, the real resourceclaim controller and scheduler
allocate the stack's claims as they would on GPU nodes."""

from __future__ import annotations

from pathlib import Path

from gpufleet.capacity.stack import planned_resource_slices
from gpufleet.config.stack import StackConfig
from gpufleet.nvidia import versions
from tests.e2e.cluster import Api
from tests.e2e.workloads import collection

DRA_API = ("--api-versions", "resource.k8s.io/v1/DeviceClass", "--api-versions", "resource.k8s.io/v1")


def driver_device_classes(work: Path) -> list[dict]:
    """The DeviceClasses of the pinned DRA driver chart (skips the test when its archive is absent)."""
    from tests.upstream.upstream_charts import chart_archive, helm_template

    archive = chart_archive(versions.DRA_DRIVER_CHART, versions.DRA_DRIVER_VERSION)
    work.mkdir(parents=True, exist_ok=True)
    values = {"gpuResourcesEnabledOverride": True}  # the chart refuses GPUs beside a device plugin otherwise
    objects = helm_template(archive, "dra", "nvidia-dra-driver-gpu", values, work, *DRA_API)
    return [o for o in objects if o["kind"] == "DeviceClass"]


def publish_driver_devices(api: Api, device_classes: list[dict], cfg: StackConfig) -> None:
    """Create the driver's DeviceClasses and the stack's planned ResourceSlices, as the driver would."""
    for obj in [*device_classes, *planned_resource_slices(cfg)]:
        api.ok("POST", collection(obj["kind"], None), obj)
