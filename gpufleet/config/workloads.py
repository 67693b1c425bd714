"""`gpufleet:workloads`: inference services, notebooks and batch jobs (a list, told apart by `kind`)."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field

from gpufleet.config._base import Model
from gpufleet.config.model import ModelSpec

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class GpuRequest(Model):
    """What GPU a workload's container gets."""

    count: int = Field(default=1, ge=1)
    """Whole GPUs, shared GPUs or MIG instances per pod (an integer: the API server rejects fractions)."""
    shared: bool = False
    """Take a share of a GPU from the node pool's sharing profile (time-slicing or MPS)."""
    profile: str | None = None
    """MIG profile, e.g. 1g.5gb, on a pool with a MIG geometry."""
    memory_mib: int | None = Field(default=None, ge=1, alias="memoryMiB")
    """GPU memory the workload expects to use, in MiB; checked against what it will get."""
    visible_devices: str | None = None
    """platform-managed mode only: GPU indices the platform exposes (NVIDIA_VISIBLE_DEVICES), with no
    resource request (Azure Stack Edge MPS)."""


class Toleration(Model):
    key: str | None = None
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None


class Port(Model):
    port: int = Field(ge=1, le=65535)
    name: str | None = Field(default=None, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=15)
    protocol: Literal["TCP", "UDP"] = "TCP"
    target_port: int | None = Field(default=None, ge=1, le=65535)
    """Container port; defaults to `port`."""


class Probe(Model):
    """An HTTP GET probe when `path` is set, else a TCP probe on the port."""

    port: int = Field(ge=1, le=65535)
    path: str | None = None
    initial_delay_seconds: int = Field(default=0, ge=0)
    period_seconds: int = Field(default=10, ge=1)


class Probes(Model):
    readiness: Probe | None = None
    liveness: Probe | None = None


class ServiceExposure(Model):
    """How the workload is reached."""

    type: Literal["LoadBalancer", "ClusterIP", "NodePort"] = "LoadBalancer"
    source_ranges: list[str] = Field(default_factory=list)
    """CIDRs allowed through the LoadBalancer (loadBalancerSourceRanges)."""
    public: bool = False
    """Allow a LoadBalancer with no source ranges, reachable from anywhere. Must be explicit."""
    annotations: dict[str, str] = Field(default_factory=dict)


class ContainerResources(Model):
    """CPU and memory requests (= limits for memory)."""

    cpu: str | None = None
    memory: str | None = None


class _Workload(Model):
    name: str = Field(pattern=DNS_LABEL, max_length=63)
    namespace: str = Field(default="default", pattern=DNS_LABEL, max_length=63)
    image: str
    """Container image with a pinned tag or digest (never `latest`)."""
    node_pool: str | None = None
    """Node pool the workload runs on: it selects the pool's nodes and tolerates its taints."""
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    gpu: GpuRequest | None = None
    model: ModelSpec | None = None
    """The model served (inference engines): its GPU memory need replaces gpu.memoryMiB (docs/model-memory.md)."""
    env: dict[str, str] = Field(default_factory=dict)
    command: list[str] | None = None
    args: list[str] | None = None
    resources: ContainerResources = Field(default_factory=ContainerResources)
    image_pull_secrets: list[str] = Field(default_factory=list)
    """Names of existing docker-registry Secrets in the namespace (references only, never credentials)."""


class InferenceService(_Workload):
    """A Deployment behind a Service (LoadBalancer by default). No ports: no Service."""

    kind: Literal["inference"]
    replicas: int = Field(default=1, ge=0)
    ports: list[Port] = Field(default_factory=list)
    probes: Probes = Field(default_factory=Probes)
    service: ServiceExposure = Field(default_factory=ServiceExposure)


class Notebook(_Workload):
    """A Jupyter notebook server; its token comes from a secret stack config key."""

    kind: Literal["notebook"]
    port: int = Field(default=8888, ge=1, le=65535)
    token_config_key: str = "notebookToken"
    """Stack config key holding the token (`pulumi config set --secret <key> ...`)."""
    service: ServiceExposure = Field(default_factory=ServiceExposure)


class BatchJob(_Workload):
    """A Kubernetes Job."""

    kind: Literal["job"]
    completions: int = Field(default=1, ge=1)
    parallelism: int = Field(default=1, ge=1)
    backoff_limit: int = Field(default=2, ge=0)
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0)


Workload = Annotated[Union[InferenceService, Notebook, BatchJob], Field(discriminator="kind")]
WORKLOAD_KINDS = ("inference", "notebook", "job")
