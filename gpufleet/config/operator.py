"""`gpufleet:operator`: the NVIDIA GPU operator release."""

from __future__ import annotations

from pydantic import Field

from gpufleet.config._base import Model
from gpufleet.config.k8s_types import Namespace
from gpufleet.nvidia import versions


class DriverConfig(Model):
    """The driver DaemonSet. Turn it off where drivers are preinstalled (AKS, Azure Stack Edge, DGX)."""

    enabled: bool = True
    """Install the driver with the operator. Defaults to true."""
    version: str = versions.DRIVER_VERSION
    """Driver version (pinned). Defaults to the chart's pin."""


class ToolkitConfig(Model):
    """The NVIDIA container toolkit DaemonSet."""

    enabled: bool = True
    """Install the toolkit with the operator; off when the host already configures the runtime."""


class DcgmExporterConfig(Model):
    """GPU metrics for Prometheus."""

    enabled: bool = True
    """Run the DCGM exporter. Defaults to true."""
    service_monitor: bool = False
    """Create a ServiceMonitor (needs the Prometheus Operator CRDs). Defaults to false."""


class ValidatorConfig(Model):
    """The operator's validator pods."""

    with_workload: bool = False
    """Run the CUDA validation workload, which needs a free GPU (fails on fully allocated nodes).
    Defaults to false."""


class OperatorConfig(Model):
    """The gpu-operator Helm release (used when `gpufleet:mode` is operator)."""

    chart_version: str = versions.GPU_OPERATOR_VERSION
    """gpu-operator chart version, with the leading v. Defaults to v26.7.0."""
    namespace: Namespace = "gpu-operator"
    """Namespace of the release."""
    driver: DriverConfig = Field(default_factory=DriverConfig)
    toolkit: ToolkitConfig = Field(default_factory=ToolkitConfig)
    dcgm_exporter: DcgmExporterConfig = Field(default_factory=DcgmExporterConfig)
    validator: ValidatorConfig = Field(default_factory=ValidatorConfig)
    nfd: bool = True
    """Deploy Node Feature Discovery with the operator; false where NFD already runs."""
    cdi: bool = True
    """Use CDI for device injection (the chart default since v25.10)."""
    timeout_seconds: int = Field(default=900, ge=60, le=86400)
    """How long `pulumi up` waits for the release to become ready (driver builds take minutes)."""

    def nvidia_runtime_is_default(self, set_as_default: bool | None) -> bool | None:
        """Whether nvidia is containerd's default runtime on the GPU nodes (`cluster.runtime.setAsDefault`).

        Unset, the toolkit this release deploys decides: with CDI on the operator passes it
        NVIDIA_RUNTIME_SET_AS_DEFAULT=false (gpu-operator controllers/object_controls.go,
        transformToolkitCtrForCDI); with CDI off it sets nothing and the toolkit's installer makes nvidia the
        default (its --set-as-default defaults to true; nvidia-container-toolkit cmd/nvidia-ctk-installer).
        None: the toolkit is off and setAsDefault unset, so the host's own config decides (unknown here).
        """
        if set_as_default is not None:
            return set_as_default
        if not self.toolkit.enabled:
            return None
        return not self.cdi
