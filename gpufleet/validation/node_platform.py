"""The GPU stack against the nodes it lands on: their operating system, container runtime and kubelet
version, and the DaemonSets that must run on every GPU node. Decided here for the policy pack (with node
facts, `gpufleet plan --nodes`) and for `gpufleet check --nodes` alike, so both say the same words.

DaemonSets (and where a release's own node pods may go) are gpufleet.validation.gpu_daemonsets'.

The stack is read from its Helm release (chart, version, values: the pack's Release resource or the
`HelmRelease` record that `plan --out` writes), so no stack config is needed; `Setting` names each value as
the reader knows it (the chart value, or the gpufleet config key that sets it). Nodes are any objects with
`name`, `labels`, `allocatable`, `container_runtime`, `kubelet_version` and `os_image` (gpufleet's capacity
model). Facts and their sources: gpufleet.nvidia.node_platforms.

A finding is an error where the stack cannot work on those nodes, a warning where it may.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpufleet.nvidia import node_platforms as facts
from gpufleet.nvidia.operator_support import RELEASES, minor_text, operator_version
from gpufleet.validation.gpu_requests import is_list

ERROR, WARNING = "error", "warning"
OPERATOR, DEVICE_PLUGIN, DRA_DRIVER = "gpu-operator", "nvidia-device-plugin", "dra-driver-nvidia-gpu"
GPU_CHARTS = (OPERATOR, DEVICE_PLUGIN, DRA_DRIVER)


class NodeFacts(Protocol):
    # read-only: the rules only read a node, and the policy pack's nodes compute these (labels plus planned ones)
    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> dict[str, str]: ...
    @property
    def allocatable(self) -> dict[str, int]: ...
    @property
    def container_runtime(self) -> str: ...
    @property
    def kubelet_version(self) -> str: ...
    @property
    def os_image(self) -> str: ...


@dataclass(frozen=True)
class Finding:
    level: str
    subject: str
    """What the finding is about: `HelmRelease gpu-operator/gpu-operator`, `DaemonSet kube-system/x`."""
    message: str


Setting = Callable[[str], str]
"""Chart value path (`driver.enabled`) -> how a message names it (`gpufleet:operator.driver.enabled`)."""


def chart_value(chart: str) -> Setting:
    return lambda path: f"{chart} value {path}"


@dataclass(frozen=True)
class Release:
    """A GPU stack Helm release as deployed: chart, version and the values given."""

    chart: str
    version: str
    values: Mapping[str, Any]
    subject: str
    setting: Setting = field(default=lambda path: path)

    def value(self, path: str, default: Any = None) -> Any:
        node: Any = self.values
        for key in path.split("."):
            if not isinstance(node, Mapping) or key not in node:
                return default
            node = node[key]
        return node

    def enabled(self, path: str, default: bool = True) -> bool:
        value = self.value(path, default)
        return value if isinstance(value, bool) else str(value).lower() == "true"

    def toolkit_env(self) -> dict[str, str]:
        env = self.value("toolkit.env", []) if self.chart == OPERATOR else []
        return {str(e.get("name")): str(e.get("value")) for e in (env if is_list(env) else [])
                if isinstance(e, Mapping)}

    @property
    def runs_driver_container(self) -> bool:
        return self.chart == OPERATOR and self.enabled("driver.enabled")

    @property
    def runs_toolkit(self) -> bool:
        return self.chart == OPERATOR and self.enabled("toolkit.enabled")

    @property
    def runs_device_plugin(self) -> bool:
        if self.chart == OPERATOR:
            return self.enabled("devicePlugin.enabled") and not self.enabled("gpuCluster.deployCR", False)
        return self.chart == DEVICE_PLUGIN and self.enabled("devicePlugin.enabled")


def release_of_record(doc: Any) -> Release | None:
    """A GPU stack release from a `HelmRelease` record of `plan --out` (kind, name, namespace, chart,
    version, values); None for anything else."""
    if not isinstance(doc, Mapping) or doc.get("kind") != "HelmRelease" or doc.get("chart") not in GPU_CHARTS:
        return None
    values = got if isinstance(got := doc.get("values"), Mapping) else {}
    chart = str(doc["chart"])
    subject = f"HelmRelease {doc.get('namespace') or 'default'}/{doc.get('name') or chart}"
    return Release(chart, str(doc.get("version") or ""), values, subject, chart_value(chart))


# ---- which nodes are GPU nodes -------------------------------------------------------------------------

_NFD_NVIDIA_PCI = re.compile(r"^feature\.node\.kubernetes\.io/pci-(?:\d{4}_)?10de\.present$")


#: Labels a cloud puts on its GPU nodes before any GPU software runs there: GKE, AKS, and Karpenter on EKS.
CLOUD_GPU_LABELS = {facts.GKE_ACCELERATOR_LABEL: None, "kubernetes.azure.com/accelerator": "nvidia",
                    "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia"}


def shows_gpu(node: NodeFacts) -> bool:
    """The node says it has NVIDIA GPUs: NVIDIA or NFD PCI labels, a cloud's GPU node label, nvidia.com
    resources, NVML facts."""
    labels = node.labels or {}
    return (any(k.startswith("nvidia.com/gpu") for k in labels)
            or any(_NFD_NVIDIA_PCI.match(k) for k in labels)
            or any(k in labels and (v is None or labels[k].lower() == v) for k, v in CLOUD_GPU_LABELS.items())
            or any(k.startswith("nvidia.com/") for k in node.allocatable or {})
            or bool((gpus := getattr(node, "gpus", None)) and gpus.gpus))


def names(nodes: Iterable[NodeFacts], limit: int = 4) -> str:
    listed = sorted(n.name for n in nodes)
    more = f" and {len(listed) - limit} more" if len(listed) > limit else ""
    return ", ".join(listed[:limit]) + more


def grouped_by(nodes: Iterable[NodeFacts], key: Callable[[NodeFacts], Any]) -> dict[Any, list[NodeFacts]]:
    out: dict[Any, list[NodeFacts]] = {}
    for n in nodes:
        k = key(n)
        if k is not None:
            out.setdefault(k, []).append(n)
    return out


def shown_os(n: NodeFacts) -> str:
    if n.os_image:
        return f"osImage '{n.os_image}'"
    named = {k: v for k, v in n.labels.items() if k in (facts.NFD_OS_LABEL, facts.GKE_OS_LABEL)}
    return ", ".join(f"{k}={v}" for k, v in named.items())


# ---- 9. a host driver ----------------------------------------------------------------------------------

DEPLOY_DRIVER_LABEL = "nvidia.com/gpu.deploy.driver"
#: GFD's driver version labels: the current names, then the ones older GFD releases wrote.
GFD_DRIVER_LABELS = ("nvidia.com/cuda.driver-version.full", "nvidia.com/cuda.driver-version.major",
                     "nvidia.com/cuda.driver.major")


def host_driver_evidence(node) -> str | None:
    """Why this node runs a host driver; None when nothing says so (or the operator's driver runs there)."""
    labels = node.labels
    deploy = labels.get(DEPLOY_DRIVER_LABEL)
    if deploy == "pre-installed":
        return f"label {DEPLOY_DRIVER_LABEL}=pre-installed"
    if deploy is not None:
        return None  # the operator's driver container serves it
    for key in GFD_DRIVER_LABELS:
        if labels.get(key):
            return f"GFD label {key}={labels[key]}, no operator-managed driver"
    gpus = getattr(node, "gpus", None)
    if gpus and gpus.driver_version:
        return f"NVML on the host reports driver {gpus.driver_version}"
    return None


def host_driver_message(gpu: Sequence[NodeFacts], setting: str, version: str, namespace: str) -> str | None:
    """The operator's driver container enabled (`setting`) while every GPU node already runs a host driver:
    the pinned driver runs nowhere, and where k8s-driver-manager misses the host's driver the driver pod
    stays in Init. None when some GPU node needs the driver container (or says nothing): then it is right.
    Advisory: whether the operator detects each host driver is only known on the cluster."""
    evidence = {n.name: host_driver_evidence(n) for n in gpu}
    if not gpu or any(e is None for e in evidence.values()):
        return None
    shown = "; ".join(f"{name} ({why})" for name, why in sorted(evidence.items())[:4])
    more = f" and {len(evidence) - 4} more" if len(evidence) > 4 else ""
    return (
        f"{setting} is true (driver.version {version}), but every GPU node of the stack already runs a host "
        f"NVIDIA driver: {shown}{more}. The operator runs its driver container only where k8s-driver-manager "
        f"does not find the host driver, so driver {version} runs on none of these nodes; where detection "
        "fails, the driver pod tries to unload modules in use and stays in Init:CrashLoopBackOff, and the "
        "toolkit, device plugin and validator wait behind it. Verify that no nvidia-driver-daemonset pod "
        f"runs on {names(gpu)} (kubectl -n {namespace} get pods -o wide); expected {setting}: false, so the "
        "operator uses the host driver.")


def host_driver_findings(release: Release, nodes: Sequence[NodeFacts]) -> list[Finding]:
    """host_driver_message for a gpu-operator release record (check --nodes; in the pack:
    preinstalled-driver)."""
    gpu = [n for n in nodes if shows_gpu(n)]
    if not release.runs_driver_container:
        return []
    version = str(release.value("driver.version") or "(the chart's pin)")
    message = host_driver_message(gpu, release.setting("driver.enabled"), version, "gpu-operator")
    return [Finding(WARNING, release.subject, message)] if message else []


# ---- 1. the node's operating system --------------------------------------------------------------------

def os_findings(release: Release, gpu: Sequence[NodeFacts]) -> list[Finding]:
    out = []
    by_os = grouped_by(gpu, lambda n: facts.node_os(n.os_image, n.labels))
    for os_, nodes in sorted(by_os.items(), key=lambda kv: kv[0].key):
        first = nodes[0]
        if release.runs_driver_container and os_.driver_container != "supported":
            level = ERROR if os_.driver_container == "impossible" else WARNING
            verdict = ("cannot run there" if level == ERROR else
                       "is not validated there; verify that a driver image for it exists (driver.repository) "
                       "and that the driver pod gets ready")
            out.append(Finding(level, release.subject, (
                f"{release.setting('driver.enabled')} is true, but node(s) {names(nodes)} run {os_.name} "
                f"({shown_os(first)}): the operator's driver container {verdict}: {os_.why}. Until the "
                "driver pod is ready the toolkit, device plugin and validator wait behind it and the nodes "
                f"advertise no nvidia.com/gpu. Expected {release.setting('driver.enabled')}: false (use the "
                "driver "
                f"{os_.name} provides" + (f", under {os_.driver_root}" if os_.driver_root else "") + ").")))
        root = _driver_root(release)
        if os_.driver_root and root is not None and root[1].rstrip("/") != os_.driver_root:
            out.append(Finding(ERROR, release.subject, (
                f"node(s) {names(nodes)} run {os_.name} ({shown_os(first)}), whose driver lives under "
                f"{os_.driver_root}, but {release.setting(root[0])} is {root[1]}: "
                f"{'the toolkit and validator find' if release.chart == OPERATOR else 'its plugin finds'} no "
                "driver there (no NVML, no nvidia-smi), so the nodes advertise no GPU. Expected "
                f"{release.setting(root[0])}: {os_.driver_root} (gpufleet does not set it: on such nodes use "
                "mode platform-managed with the platform's own device plugin, or a node image whose driver "
                "the stack can install, e.g. Ubuntu).")))
        if release.runs_toolkit and os_.own_toolkit:
            out.append(Finding(WARNING, release.subject, (
                f"{release.setting('toolkit.enabled')} is true, but node(s) {names(nodes)} run {os_.name} "
                f"({shown_os(first)}): {os_.own_toolkit}, so the operator's toolkit edits a config the OS "
                "rewrites and may fail or leave GPU pods without the nvidia runtime after a reboot. Verify the "
                "toolkit pod and a GPU pod on such a node; expected "
                f"{release.setting('toolkit.enabled')}: false (the OS's runtime serves the GPUs).")))
        if release.runs_device_plugin and os_.own_device_plugin:
            out.append(Finding(WARNING, release.subject, _second_plugin(release, nodes, f"{os_.name}: "
                                                                         f"{os_.own_device_plugin}")))
    gke = [n for n in gpu if facts.gke_device_plugin_runs(n.labels)]
    if release.runs_device_plugin and gke:
        out.append(Finding(WARNING, release.subject, _second_plugin(
            release, gke, f"GKE runs its own GPU device plugin DaemonSet on GPU nodes without the label "
                          f"{facts.GKE_NO_DEVICE_PLUGIN_LABEL}=true")))
    return out


def _driver_root(release: Release) -> tuple[str, str] | None:
    """(value path, where the release looks for a host's driver); None where its driver container serves."""
    if release.chart == OPERATOR:
        if release.runs_driver_container:
            return None
        path = "hostPaths.driverInstallDir"
        return path, str(release.value(path) or "/run/nvidia/driver")
    return "nvidiaDriverRoot", str(release.value("nvidiaDriverRoot") or "/")


def _second_plugin(release: Release, nodes: Sequence[NodeFacts], who: str) -> str:
    return (f"this release deploys NVIDIA's device plugin on node(s) {names(nodes)}, where {who}. Two "
            "plugins register nvidia.com/gpu with the kubelet, each registration replacing the other, so "
            "the advertised GPUs and the sharing or MIG settings follow whichever plugin registered last. "
            "Verify which plugin serves the nodes (kubectl describe node: nvidia.com/gpu capacity). "
            f"Expected one plugin: {release.setting('devicePlugin.enabled')}: false (the node's own plugin "
            "serves the GPUs), or switch the node's plugin off (GKE: the node label "
            f"{facts.GKE_NO_DEVICE_PLUGIN_LABEL}=true).")


# ---- 2. the container runtime ------------------------------------------------------------------------

def runtime_findings(release: Release, gpu: Sequence[NodeFacts],
                     pools: Mapping[str, Sequence[NodeFacts]]) -> list[Finding]:
    out = []
    # The operator picks one runtime for the whole cluster (state_manager.go getRuntime: containerd when any GPU
    # node runs it); where the hosts configure their runtimes, each pool is judged on its own.
    groups = {"": gpu} if release.runs_toolkit or not pools else pools
    for pool, members in groups.items():
        by_runtime = grouped_by(members, lambda n: (facts.runtime_of(n.container_runtime) or (None,))[0])
        if len(by_runtime) < 2:
            continue
        shown = "; ".join(f"{rt} on {names(ns)}" for rt, ns in sorted(by_runtime.items()))
        where = f"node pool '{pool}'" if pool else "the GPU nodes"
        if release.runs_toolkit:
            out.append(Finding(ERROR, release.subject, (
                f"{where} mix container runtimes: {shown}; the operator configures the container toolkit for "
                "one runtime for the whole cluster (containerd when any GPU node runs it), so on the other nodes "
                "the nvidia runtime is never registered and GPU pods fail to start. Expected one container "
                "runtime on every GPU node, or the toolkit off (operator.toolkit.enabled: false) with each "
                "host's runtime configured for nvidia.")))
        else:
            out.append(Finding(WARNING, release.subject, (
                f"{where} mixes container runtimes: {shown}; each needs the nvidia runtime configured its own "
                "way on the host; verify it on a node of each (crictl info / docker info). Expected one "
                "container runtime on the GPU nodes of a pool (or the odd nodes in a pool of their own).")))
    env = release.toolkit_env()
    containerd_keys = sorted(k for k in env if k.startswith("CONTAINERD_"))
    by_runtime = grouped_by(gpu, lambda n: (facts.runtime_of(n.container_runtime) or (None,))[0])
    other = {rt: ns for rt, ns in by_runtime.items()
             if rt != "containerd"}
    if release.runs_toolkit and containerd_keys and other:
        for rt, nodes in sorted(other.items()):
            out.append(Finding(ERROR, release.subject, (
                f"{release.setting('toolkit.env')} sets {', '.join(containerd_keys)}, but node(s) "
                f"{names(nodes)} run {rt} ({nodes[0].container_runtime}): the toolkit takes those paths for "
                f"{rt}'s config and socket, so {rt} never learns the nvidia runtime and GPU pods there fail "
                f"to start. Expected no containerd settings for {rt} nodes (cluster.runtime preset "
                "containerd without configPath / socket overrides), or the containerd nodes in a stack of "
                "their own.")))
    operator = operator_version(release.version) if release.chart == OPERATOR else None
    toolkit = release.value("toolkit.version")
    if release.runs_toolkit and operator is not None and not facts.toolkit_reads_containerd_2(
            operator, str(toolkit) if toolkit else None):
        two = [n for n in gpu if _containerd_major(n) >= 2]
        if two:
            pinned = (f"toolkit.version {toolkit}" if toolkit
                      else f"the toolkit gpu-operator {release.version} pins")
            out.append(Finding(ERROR, release.subject, (
                f"node(s) {names(two)} run containerd 2.x ({two[0].container_runtime}), but {pinned} is "
                f"older than v{facts.show_version(facts.TOOLKIT_FIRST_CONTAINERD_2)}, the first container "
                "toolkit that writes containerd 2's config (version 3): the toolkit pod fails or writes a "
                "config containerd does not load, and GPU pods fail to start (no runtime for \"nvidia\" is "
                f"configured). Expected {release.setting('chartVersion')} "
                f"v{facts.show_version(facts.OPERATOR_FIRST_CONTAINERD_2)} or later (it pins toolkit "
                f"v{facts.show_version(facts.TOOLKIT_FIRST_CONTAINERD_2)}).")))
    return out


def _containerd_major(n: NodeFacts) -> int:
    runtime = facts.runtime_of(n.container_runtime)
    return runtime[1][0] if runtime and runtime[0] == "containerd" and runtime[1] else 0


# ---- 3. the kubelet's version -------------------------------------------------------------------------

#: How many minors a kubelet may be older than its API server (Kubernetes version skew policy, since 1.28).
KUBELET_SKEW = 3


def version_findings(release: Release, gpu: Sequence[NodeFacts]) -> list[Finding]:
    out = []
    floor = facts.KUBERNETES_FLOORS.get(release.chart)
    by_minor = grouped_by(gpu, lambda n: _minor(n.kubelet_version))
    for minor, nodes in sorted(by_minor.items()):
        if floor is not None and minor < floor.minimum:
            # A kubelet may be up to KUBELET_SKEW minors older than the API server, whose version Helm checks:
            # further below the floor, the API server is below it too.
            certain = minor[0] == floor.minimum[0] and minor[1] + KUBELET_SKEW < floor.minimum[1]
            server = ("so the API server is too, and Helm refuses the install" if certain else
                      "Helm refuses the install if the API server is that old too (verify with kubectl version)")
            out.append(Finding(ERROR if certain else WARNING, release.subject, (
                f"node(s) {names(nodes)} run Kubernetes {minor_text(minor)} (kubeletVersion "
                f"{nodes[0].kubelet_version}), below {minor_text(floor.minimum)}, the oldest Kubernetes "
                f"{release.chart} supports ({floor.source}); {server}. Expected Kubernetes "
                f"{minor_text(floor.minimum)} or later.")))
            continue
        operator = operator_version(release.version) if release.chart == OPERATOR else None
        line = RELEASES.get(f"{operator[0]}.{operator[1]}") if operator else None
        if line is not None and not line.kubernetes[0] <= minor <= line.kubernetes[1]:
            fits = [f"{name}.x" for name, r in RELEASES.items()
                    if r.kubernetes[0] <= minor <= r.kubernetes[1]]
            out.append(Finding(WARNING, release.subject, (
                f"node(s) {names(nodes)} run Kubernetes {minor_text(minor)} (kubeletVersion "
                f"{nodes[0].kubelet_version}); gpu-operator {release.version} was validated with "
                f"{minor_text(line.kubernetes[0])}-{minor_text(line.kubernetes[1])} (NVIDIA's platform "
                "support). It may work; verify it on a test cluster of that version. Expected a release "
                "validated for "
                f"Kubernetes {minor_text(minor)}" + (f" ({', '.join(fits)})" if fits else "") + ".")))
    return out


def _minor(kubelet_version: str) -> tuple[int, int] | None:
    version = facts.version_of(kubelet_version)
    return (version[0], version[1]) if version and len(version) >= 2 else None


# ---- 4. the runtime class where nvidia is not the default runtime --------------------------------------

def runtime_class_findings(release: Release, gpu: Sequence[NodeFacts]) -> list[Finding]:
    """The standalone device plugin hands out GPUs through NVIDIA_VISIBLE_DEVICES, which only the nvidia
    runtime reads; on nodes whose nvidia runtime is not the default its pods (and GFD's) must name it."""
    if release.chart != DEVICE_PLUGIN or release.value("runtimeClassName"):
        return []
    not_default = [n for n in gpu if nvidia_not_default(n)]
    if not not_default:
        return []
    return [Finding(WARNING, release.subject, (
        f"node(s) {names(not_default)} ({why_not_default(not_default[0])}) register the nvidia runtime "
        f"without making it containerd's default unless told to, and {release.setting('runtimeClassName')} "
        "is unset: where nvidia is not the default the device plugin and GFD pods run under runc, find no "
        "NVML and advertise no GPU. Verify on a GPU node (crictl info: defaultRuntimeName). Expected "
        f"{release.setting('runtimeClassName')}: nvidia (gpufleet sets it with cluster.runtime.setAsDefault: "
        "false, or the k3s / rke2 preset), and the same runtimeClassName on the GPU workloads."))]


def nvidia_not_default(n: NodeFacts) -> bool:
    os_ = facts.node_os(n.os_image, n.labels)
    return bool((os_ and os_.nvidia_default_runtime is False)
                or re.search(r"\+(k3s|rke2)", n.kubelet_version or ""))


def why_not_default(n: NodeFacts) -> str:
    os_ = facts.node_os(n.os_image, n.labels)
    if os_ and os_.nvidia_default_runtime is False:
        return f"{os_.name}, {shown_os(n)}"
    return f"kubeletVersion {n.kubelet_version}"


# ---- 6. a config file the distribution regenerates ----------------------------------------------------

def regenerated_config_findings(release: Release, gpu: Sequence[NodeFacts]) -> list[Finding]:
    path = release.toolkit_env().get("CONTAINERD_CONFIG")
    if not release.runs_toolkit or not path:
        return []
    versions = [v for n in gpu if (rt := facts.runtime_of(n.container_runtime)) and (v := rt[1])]
    message = facts.regenerated_config_problem(path, max(versions) if versions else None)
    if message is None:
        return []
    setting = release.setting("toolkit.env")
    return [Finding(ERROR, release.subject, f"{setting} CONTAINERD_CONFIG: {message}.")]


# ---- everything, for one release ----------------------------------------------------------------------

def release_findings(release: Release, nodes: Sequence[NodeFacts],
                     pools: Mapping[str, Sequence[NodeFacts]] | None = None) -> list[Finding]:
    """Every node-platform finding of one GPU stack release on these nodes (the GPU nodes among them, or the
    pools' members where `pools` names them)."""
    members = [n for ns in (pools or {}).values() for n in ns]
    gpu = list({n.name: n for n in members}.values()) if members else [n for n in nodes if shows_gpu(n)]
    if not gpu:
        return []
    return [*os_findings(release, gpu), *runtime_findings(release, gpu, pools or {}),
            *version_findings(release, gpu), *runtime_class_findings(release, gpu),
            *regenerated_config_findings(release, gpu)]
