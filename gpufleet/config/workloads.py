"""`gpufleet:workloads`: inference services, notebooks and batch jobs (a list, told apart by `kind`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from gpufleet.config._base import Model
from gpufleet.config.dra import GpuClaim
from gpufleet.config.k8s_types import (
    AnnotationKey,
    Cidr,
    DnsLabel,
    EnvName,
    ImageReference,
    LabelKey,
    LabelValue,
    Namespace,
    PortName,
    SecretName,
    TaintKey,
    TaintValue,
)
from gpufleet.config.model import ModelSpec
from gpufleet.k8s_names import INT32_MAX


class GpuRequest(Model):
    """What GPU a workload's container gets."""

    count: int = Field(default=1, ge=1, le=INT32_MAX)
    """Whole GPUs, shared GPUs or MIG instances per pod (an integer: the API server rejects fractions)."""
    shared: bool = False
    """Take a share of a GPU from the node pool's sharing profile (time-slicing or MPS)."""
    profile: str | None = None
    """MIG profile, e.g. 1g.5gb, on a pool with a MIG geometry."""
    memory_mib: int | None = Field(default=None, ge=1, le=INT32_MAX, alias="memoryMiB")
    """GPU memory the workload expects to use, in MiB; checked against what it will get."""
    visible_devices: str | None = None
    """platform-managed mode only: GPU indices the platform exposes (NVIDIA_VISIBLE_DEVICES), with no
    resource request (Azure Stack Edge MPS)."""
    claim: GpuClaim | None = None
    """gpuAllocation dra: the devices each pod claims (a ResourceClaimTemplate). Excludes count/shared/profile."""
    shared_claim: DnsLabel | None = None
    """gpuAllocation dra: the name of a `gpufleet:claims` entry the pods share (one ResourceClaim)."""

    def uses_dra(self) -> bool:
        return self.claim is not None or self.shared_claim is not None


class Toleration(Model):
    """A pod toleration (as in the pod spec)."""

    key: TaintKey | None = None
    operator: Literal["Exists", "Equal"] = "Equal"
    value: TaintValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None

    @model_validator(mode="after")
    def _operator_rules(self):
        """The API server's toleration rules: no key means every taint (operator Exists); Exists has no value."""
        if not self.key and self.operator != "Exists":
            raise ValueError("operator must be Exists when `key` is empty, which means \"match all values and all "
                             "keys\"")
        if self.operator == "Exists" and self.value:
            raise ValueError(f"value must be empty when `operator` is 'Exists'; got {self.value!r}")
        return self


class Port(Model):
    port: int = Field(ge=1, le=65535)
    name: PortName | None = None
    """Port name (IANA service name); defaults to port-<port>."""
    protocol: Literal["TCP", "UDP"] = "TCP"
    target_port: int | None = Field(default=None, ge=1, le=65535)
    """Container port; defaults to `port`."""


class Probe(Model):
    """An HTTP GET probe when `path` is set, else a TCP probe on the port."""

    port: int = Field(ge=1, le=65535)
    path: str | None = None
    initial_delay_seconds: int = Field(default=0, ge=0, le=INT32_MAX)
    period_seconds: int = Field(default=10, ge=1, le=INT32_MAX)


class Probes(Model):
    readiness: Probe | None = None
    liveness: Probe | None = None


class ServiceExposure(Model):
    """How the workload is reached."""

    type: Literal["LoadBalancer", "ClusterIP", "NodePort"] = "LoadBalancer"
    source_ranges: list[Cidr] = Field(default_factory=list)
    """CIDRs allowed through the LoadBalancer (loadBalancerSourceRanges)."""
    public: bool = False
    """Allow a LoadBalancer with no source ranges, reachable from anywhere. Must be explicit."""
    annotations: dict[AnnotationKey, str] = Field(default_factory=dict)


#: A Pulumi config key name (the part after `gpufleet:`).
CONFIG_KEY = r"^[A-Za-z][A-Za-z0-9_-]*$"


class SecretEnv(Model):
    """An env value taken from a secret stack config key (`pulumi config set --secret <key> ...`)."""

    secret_config_key: str = Field(pattern=CONFIG_KEY, max_length=128)
    """The `gpufleet:` config key holding the value. It reaches the cluster as a Kubernetes Secret
    (`<workload>-env`), never as plain text."""


def _env_kind(value: Any) -> str:
    return "env-secret" if isinstance(value, (dict, SecretEnv)) else "env-literal"


#: An env value: a literal string, or `{secretConfigKey: <key>}`.
EnvValue = Annotated[Annotated[str, Tag("env-literal")] | Annotated[SecretEnv, Tag("env-secret")],
                     Discriminator(_env_kind)]


class ContainerResources(Model):
    """CPU and memory requests (= limits for memory)."""

    cpu: str | None = None
    memory: str | None = None


class _Workload(Model):
    name: DnsLabel
    """Name of the Deployment / Job (and Service): a lowercase RFC 1123 label; a DNS-1035 label (starting
    with a letter) when the workload gets a Service."""
    namespace: Namespace = "default"
    image: ImageReference
    """Container image with a pinned tag or digest (never `latest`)."""
    node_pool: str | None = None
    """Node pool the workload runs on: it selects the pool's nodes and tolerates its taints."""
    node_selector: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    gpu: GpuRequest | None = None
    model: ModelSpec | None = None
    """The model served (inference engines): its GPU memory need replaces gpu.memoryMiB (docs/model-memory.md)."""
    env: dict[EnvName, EnvValue] = Field(default_factory=dict)
    """Environment variables: a literal value, or `{secretConfigKey: <key>}` for a secret stack config key.
    Names that look like credentials (TOKEN, PASSWORD, SECRET, KEY, ...) must use secretConfigKey."""
    command: list[str] | None = None
    args: list[str] | None = None
    resources: ContainerResources = Field(default_factory=ContainerResources)
    image_pull_secrets: list[SecretName] = Field(default_factory=list)
    """Names of existing docker-registry Secrets in the namespace (references only, never credentials)."""

    def literal_env(self) -> dict[str, str]:
        return {k: v for k, v in self.env.items() if isinstance(v, str)}

    def secret_env(self) -> dict[str, str]:
        """Env var name -> the secret stack config key it is read from."""
        return {k: v.secret_config_key for k, v in self.env.items() if isinstance(v, SecretEnv)}

    def secret_config_keys(self) -> list[str]:
        """Secret stack config keys this workload reads (`pulumi up` needs each set)."""
        return sorted(set(self.secret_env().values()))


class InferenceService(_Workload):
    """A Deployment behind a Service (LoadBalancer by default). No ports: no Service."""

    kind: Literal["inference"]
    replicas: int = Field(default=1, ge=0, le=INT32_MAX)
    ports: list[Port] = Field(default_factory=list)
    probes: Probes = Field(default_factory=Probes)
    service: ServiceExposure = Field(default_factory=ServiceExposure)


class Notebook(_Workload):
    """A Jupyter notebook server; its token comes from a secret stack config key."""

    kind: Literal["notebook"]
    port: int = Field(default=8888, ge=1, le=65535)
    token_config_key: str = Field(default="notebookToken", pattern=CONFIG_KEY, max_length=128)
    """Stack config key holding the token (`pulumi config set --secret <key> ...`)."""

    def secret_config_keys(self) -> list[str]:
        return sorted({*super().secret_config_keys(), self.token_config_key})
    service: ServiceExposure = Field(default_factory=ServiceExposure)


class BatchJob(_Workload):
    """A Kubernetes Job."""

    kind: Literal["job"]
    completions: int = Field(default=1, ge=1, le=INT32_MAX)
    parallelism: int = Field(default=1, ge=1, le=INT32_MAX)
    backoff_limit: int = Field(default=2, ge=0, le=INT32_MAX)
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0, le=INT32_MAX)


Workload = Annotated[InferenceService | Notebook | BatchJob, Field(discriminator="kind")]
WORKLOAD_KINDS = ("inference", "notebook", "job")
