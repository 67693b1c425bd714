"""The GPU stack against the nodes it lands on: their operating system, container runtime and kubelet
version, and the DaemonSets that must run on every GPU node. Decided here for the policy pack (with node
facts, `gpufleet plan --nodes`) and for `gpufleet check --nodes` alike, so both say the same words.

The stack is read from its Helm release (chart, version, values: the pack's Release resource or the
`HelmRelease` record that `plan --out` writes), so no stack config is needed; `Setting` names each value as
the reader knows it (the chart value, or the gpufleet config key that sets it). Nodes are any objects with
`name`, `labels`, `allocatable`, `container_runtime`, `kubelet_version` and `os_image` (gpufleet's capacity
model). Facts and their sources: gpufleet.nvidia.node_platforms.

A finding is an error where the stack cannot work on those nodes, a warning where it may.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from gpufleet.nvidia import node_platforms as facts
from gpufleet.nvidia import stack_placement as placement
from gpufleet.nvidia.operator_support import RELEASES, minor_text, operator_version
from gpufleet.validation.gpu_requests import is_list

ERROR, WARNING = "error", "warning"
OPERATOR, DEVICE_PLUGIN, DRA_DRIVER = "gpu-operator", "nvidia-device-plugin", "dra-driver-nvidia-gpu"
GPU_CHARTS = (OPERATOR, DEVICE_PLUGIN, DRA_DRIVER)


class NodeFacts(Protocol):
    name: str
    labels: dict[str, str]
    allocatable: dict[str, int]
    container_runtime: str
    kubelet_version: str
    os_image: str


@dataclass(frozen=True)
class Finding:
    level: str
    subject: str
    """What the finding is about, e.g. `HelmRelease gpu-operator/gpu-operator` or `DaemonSet kube-system/x`."""
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
    values = doc.get("values") if isinstance(doc.get("values"), Mapping) else {}
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
    return (any(k.startswith("nvidia.com/gpu") for k in labels) or any(_NFD_NVIDIA_PCI.match(k) for k in labels)
            or any(k in labels and (v is None or labels[k].lower() == v) for k, v in CLOUD_GPU_LABELS.items())
            or any(k.startswith("nvidia.com/") for k in node.allocatable or {})
            or bool(getattr(node, "gpus", None) and node.gpus.gpus))


def names(nodes: Iterable[NodeFacts], limit: int = 4) -> str:
    listed = sorted(n.name for n in nodes)
    more = f" and {len(listed) - limit} more" if len(listed) > limit else ""
    return ", ".join(listed[:limit]) + more


def _by(nodes: Iterable[NodeFacts], key: Callable[[NodeFacts], Any]) -> dict[Any, list[NodeFacts]]:
    out: dict[Any, list[NodeFacts]] = {}
    for n in nodes:
        k = key(n)
        if k is not None:
            out.setdefault(k, []).append(n)
    return out


def _shown_os(n: NodeFacts) -> str:
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
    """Why this node runs a host driver, or None when nothing says so (or the operator's driver runs there)."""
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


def host_driver_message(gpu: list[NodeFacts], setting: str, version: str, namespace: str) -> str | None:
    """The operator's driver container enabled (`setting`) while every GPU node already runs a host driver: the
    pinned driver runs nowhere, and where k8s-driver-manager misses the host's driver the driver pod stays in
    Init. None when some GPU node needs the driver container (or says nothing): then it is right. Advisory:
    whether the operator detects each host driver is only known on the cluster."""
    evidence = {n.name: host_driver_evidence(n) for n in gpu}
    if not gpu or any(e is None for e in evidence.values()):
        return None
    shown = "; ".join(f"{name} ({why})" for name, why in sorted(evidence.items())[:4])
    more = f" and {len(evidence) - 4} more" if len(evidence) > 4 else ""
    return (
        f"{setting} is true (driver.version {version}), but every GPU node of the stack already runs a host NVIDIA "
        f"driver: {shown}{more}. The operator runs its driver container only where k8s-driver-manager does not "
        f"find the host driver, so driver {version} runs on none of these nodes; where detection fails, the "
        "driver pod tries to unload modules in use and stays in Init:CrashLoopBackOff, and the toolkit, device "
        f"plugin and validator wait behind it. Verify that no nvidia-driver-daemonset pod runs on {names(gpu)} "
        f"(kubectl -n {namespace} get pods -o wide); expected {setting}: false, so the operator uses the host "
        "driver.")


def host_driver_findings(release: Release, nodes: list[NodeFacts]) -> list[Finding]:
    """host_driver_message for a gpu-operator release record (check --nodes; the pack's is preinstalled-driver)."""
    gpu = [n for n in nodes if shows_gpu(n)]
    if not release.runs_driver_container:
        return []
    version = str(release.value("driver.version") or "(the chart's pin)")
    message = host_driver_message(gpu, release.setting("driver.enabled"), version, "gpu-operator")
    return [Finding(WARNING, release.subject, message)] if message else []


# ---- 1. the node's operating system --------------------------------------------------------------------

def os_findings(release: Release, gpu: list[NodeFacts]) -> list[Finding]:
    out = []
    by_os = _by(gpu, lambda n: facts.node_os(n.os_image, n.labels))
    for os_, nodes in sorted(by_os.items(), key=lambda kv: kv[0].key):
        first = nodes[0]
        if release.runs_driver_container and os_.driver_container != "supported":
            level = ERROR if os_.driver_container == "impossible" else WARNING
            verdict = ("cannot run there" if level == ERROR else
                       "is not validated there; verify that a driver image for it exists (driver.repository) "
                       "and that the driver pod gets ready")
            out.append(Finding(level, release.subject, (
                f"{release.setting('driver.enabled')} is true, but node(s) {names(nodes)} run {os_.name} "
                f"({_shown_os(first)}): the operator's driver container {verdict}: {os_.why}. Until the driver "
                f"pod is ready the toolkit, device plugin and validator wait behind it and the nodes advertise "
                f"no nvidia.com/gpu. Expected {release.setting('driver.enabled')}: false (use the driver "
                f"{os_.name} provides" + (f", under {os_.driver_root}" if os_.driver_root else "") + ").")))
        root = _driver_root(release)
        if os_.driver_root and root is not None and root[1].rstrip("/") != os_.driver_root:
            out.append(Finding(ERROR, release.subject, (
                f"node(s) {names(nodes)} run {os_.name} ({_shown_os(first)}), whose driver lives under "
                f"{os_.driver_root}, but {release.setting(root[0])} is {root[1]}: "
                f"{'the toolkit and validator find' if release.chart == OPERATOR else 'its plugin finds'} no "
                "driver there (no NVML, no nvidia-smi), so the nodes advertise no GPU. Expected "
                f"{release.setting(root[0])}: {os_.driver_root} (gpufleet does not set it: on such nodes use "
                "mode platform-managed with the platform's own device plugin, or a node image whose driver the "
                "stack can install, e.g. Ubuntu).")))
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
    """(value path, where the release looks for a host's driver); None where its own driver container serves."""
    if release.chart == OPERATOR:
        if release.runs_driver_container:
            return None
        return "hostPaths.driverInstallDir", str(release.value("hostPaths.driverInstallDir") or "/run/nvidia/driver")
    return "nvidiaDriverRoot", str(release.value("nvidiaDriverRoot") or "/")


def _second_plugin(release: Release, nodes: list[NodeFacts], who: str) -> str:
    return (f"this release deploys NVIDIA's device plugin on node(s) {names(nodes)}, where {who}. Two plugins "
            "register nvidia.com/gpu with the kubelet, each registration replacing the other, so the advertised "
            "GPUs and the sharing or MIG settings follow whichever plugin registered last. Verify which plugin "
            "serves the nodes (kubectl describe node: nvidia.com/gpu capacity). Expected one plugin: "
            f"{release.setting('devicePlugin.enabled')}: false (the node's own plugin serves the GPUs), or "
            "switch the node's plugin off (GKE: the node label "
            f"{facts.GKE_NO_DEVICE_PLUGIN_LABEL}=true).")


# ---- 2. the container runtime ------------------------------------------------------------------------

def runtime_findings(release: Release, gpu: list[NodeFacts], pools: dict[str, list[NodeFacts]]) -> list[Finding]:
    out = []
    groups = pools or ({"": gpu} if gpu else {})
    for pool, members in groups.items():
        by_runtime = _by(members, lambda n: (facts.runtime_of(n.container_runtime) or (None,))[0])
        if len(by_runtime) > 1:
            shown = "; ".join(f"{rt} on {names(ns)}" for rt, ns in sorted(by_runtime.items()))
            where = f"node pool '{pool}'" if pool else "the GPU nodes"
            if release.runs_toolkit:
                level, effect = ERROR, (
                    "the operator configures the container toolkit for one runtime (containerd when any GPU node "
                    "runs it), so on the other nodes the nvidia runtime is never registered and GPU pods fail "
                    "to start")
            else:
                level, effect = WARNING, (
                    "each runtime needs the nvidia runtime configured its own way on the host; verify it on a "
                    "node of each (crictl info / docker info)")
            out.append(Finding(level, release.subject, (
                f"{where} mixes container runtimes: {shown}; {effect}. Expected one container runtime on the "
                "GPU nodes of a pool (or the odd nodes in a pool of their own).")))
    env = release.toolkit_env()
    containerd_keys = sorted(k for k in env if k.startswith("CONTAINERD_"))
    other = {rt: ns for rt, ns in _by(gpu, lambda n: (facts.runtime_of(n.container_runtime) or (None,))[0]).items()
             if rt != "containerd"}
    if release.runs_toolkit and containerd_keys and other:
        for rt, nodes in sorted(other.items()):
            out.append(Finding(ERROR, release.subject, (
                f"{release.setting('toolkit.env')} sets {', '.join(containerd_keys)}, but node(s) {names(nodes)} "
                f"run {rt} ({nodes[0].container_runtime}): the toolkit takes those paths for {rt}'s config and "
                f"socket, so {rt} never learns the nvidia runtime and GPU pods there fail to start. Expected no "
                f"containerd settings for {rt} nodes (cluster.runtime preset containerd without configPath / "
                "socket overrides), or the containerd nodes in a stack of their own.")))
    operator = operator_version(release.version) if release.chart == OPERATOR else None
    toolkit = release.value("toolkit.version")
    if release.runs_toolkit and operator is not None and not facts.toolkit_reads_containerd_2(
            operator, str(toolkit) if toolkit else None):
        two = [n for n in gpu if _containerd_major(n) >= 2]
        if two:
            pinned = f"toolkit.version {toolkit}" if toolkit else f"the toolkit gpu-operator {release.version} pins"
            out.append(Finding(ERROR, release.subject, (
                f"node(s) {names(two)} run containerd 2.x ({two[0].container_runtime}), but {pinned} is older than "
                f"v{facts.show_version(facts.TOOLKIT_FIRST_CONTAINERD_2)}, the first container toolkit that writes "
                "containerd 2's config (version 3): the toolkit pod fails or writes a config containerd does not "
                "load, and GPU pods fail to start (no runtime for \"nvidia\" is configured). Expected "
                f"{release.setting('chartVersion')} v{facts.show_version(facts.OPERATOR_FIRST_CONTAINERD_2)} or "
                f"later (it pins toolkit v{facts.show_version(facts.TOOLKIT_FIRST_CONTAINERD_2)}).")))
    return out


def _containerd_major(n: NodeFacts) -> int:
    runtime = facts.runtime_of(n.container_runtime)
    return runtime[1][0] if runtime and runtime[0] == "containerd" and runtime[1] else 0


# ---- 3. the kubelet's version -------------------------------------------------------------------------

def version_findings(release: Release, gpu: list[NodeFacts]) -> list[Finding]:
    out = []
    floor = facts.KUBERNETES_FLOORS.get(release.chart)
    by_minor = _by(gpu, lambda n: _minor(n.kubelet_version))
    for minor, nodes in sorted(by_minor.items()):
        if floor is not None and minor < floor.minimum:
            out.append(Finding(ERROR, release.subject, (
                f"node(s) {names(nodes)} run Kubernetes {minor_text(minor)} (kubeletVersion "
                f"{nodes[0].kubelet_version}), below {minor_text(floor.minimum)}, the oldest Kubernetes "
                f"{release.chart} supports ({floor.source}): Helm refuses the install on such a cluster, and "
                f"its pods would not run on these kubelets. Expected Kubernetes {minor_text(floor.minimum)} or "
                "later on the GPU nodes.")))
            continue
        operator = operator_version(release.version) if release.chart == OPERATOR else None
        line = RELEASES.get(f"{operator[0]}.{operator[1]}") if operator else None
        if line is not None and not line.kubernetes[0] <= minor <= line.kubernetes[1]:
            fits = [f"{name}.x" for name, r in RELEASES.items() if r.kubernetes[0] <= minor <= r.kubernetes[1]]
            out.append(Finding(WARNING, release.subject, (
                f"node(s) {names(nodes)} run Kubernetes {minor_text(minor)} (kubeletVersion "
                f"{nodes[0].kubelet_version}); gpu-operator {release.version} was validated with "
                f"{minor_text(line.kubernetes[0])}-{minor_text(line.kubernetes[1])} (NVIDIA's platform support). "
                "It may work; verify it on a test cluster of that version. Expected a release validated for "
                f"Kubernetes {minor_text(minor)}" + (f" ({', '.join(fits)})" if fits else "") + ".")))
    return out


def _minor(kubelet_version: str) -> tuple[int, int] | None:
    version = facts.version_of(kubelet_version)
    return (version[0], version[1]) if version and len(version) >= 2 else None


# ---- 4. the runtime class where nvidia is not the default runtime --------------------------------------

def runtime_class_findings(release: Release, gpu: list[NodeFacts]) -> list[Finding]:
    """The standalone device plugin hands out GPUs through NVIDIA_VISIBLE_DEVICES, which only the nvidia
    runtime reads; on nodes whose nvidia runtime is not the default its pods (and GFD's) must name it."""
    if release.chart != DEVICE_PLUGIN or release.value("runtimeClassName"):
        return []
    not_default = [n for n in gpu if _nvidia_not_default(n)]
    if not not_default:
        return []
    return [Finding(ERROR, release.subject, (
        f"node(s) {names(not_default)} ({_why_not_default(not_default[0])}) register the nvidia runtime without "
        f"making it containerd's default, and {release.setting('runtimeClassName')} is unset: the device plugin "
        "and GFD pods run under runc, find no NVML and advertise no GPU. Expected "
        f"{release.setting('runtimeClassName')}: nvidia (gpufleet sets it with cluster.runtime.setAsDefault: "
        "false, or the k3s / rke2 preset), and the same runtimeClassName on the GPU workloads."))]


def _nvidia_not_default(n: NodeFacts) -> bool:
    os_ = facts.node_os(n.os_image, n.labels)
    return bool((os_ and os_.nvidia_default_runtime is False) or re.search(r"\+(k3s|rke2)", n.kubelet_version or ""))


def _why_not_default(n: NodeFacts) -> str:
    os_ = facts.node_os(n.os_image, n.labels)
    if os_ and os_.nvidia_default_runtime is False:
        return f"{os_.name}, {_shown_os(n)}"
    return f"kubeletVersion {n.kubelet_version}"


# ---- 6. a config file the distribution regenerates ----------------------------------------------------

def regenerated_config_findings(release: Release, gpu: list[NodeFacts]) -> list[Finding]:
    path = release.toolkit_env().get("CONTAINERD_CONFIG")
    if not release.runs_toolkit or not path:
        return []
    versions = [v for n in gpu if (rt := facts.runtime_of(n.container_runtime)) and (v := rt[1])]
    message = facts.regenerated_config_problem(path, max(versions) if versions else None)
    if message is None:
        return []
    return [Finding(ERROR, release.subject, f"{release.setting('toolkit.env')} CONTAINERD_CONFIG: {message}.")]


# ---- 5. a DaemonSet of the GPU stack that lands on no GPU node -----------------------------------------

def _required_terms(spec: Mapping) -> list[list[Mapping]]:
    affinity = spec.get("affinity") if isinstance(spec.get("affinity"), Mapping) else {}
    node = affinity.get("nodeAffinity") if isinstance(affinity.get("nodeAffinity"), Mapping) else {}
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not is_list(terms):
        return []
    return [[e for e in (t.get("matchExpressions") or []) if isinstance(e, Mapping)]
            for t in terms if isinstance(t, Mapping)]


_GPU_LABEL = re.compile(r"^(nvidia\.com/|feature\.node\.kubernetes\.io/(pci-|cpu-model\.vendor_id)|"
                        r"cloud\.google\.com/gke-accelerator)")
#: Who writes the labels a GPU DaemonSet selects nodes by.
LABEL_WRITERS = (
    (re.compile(r"^feature\.node\.kubernetes\.io/"), "Node Feature Discovery (operator.nfd / devicePlugin.nfd)"),
    (re.compile(r"^nvidia\.com/gpu\.deploy\."), "the gpu-operator (once NFD labels the node)"),
    (re.compile(r"^nvidia\.com/gpu\.present$"), "the gpu-operator, or gpufleet for a pool's listed nodes"),
    (re.compile(r"^nvidia\.com/"), "GPU feature discovery (operator, or devicePlugin.gfd)"),
)


def _writer(key: str) -> str:
    return next((who for pattern, who in LABEL_WRITERS if pattern.match(key)), "nobody in this stack")


NFD_FAMILY = "feature.node.kubernetes.io/"
GFD_FAMILY = "nvidia.com/"  # GFD's labels; not nvidia.com/gpu.present nor the operator's gpu.deploy.* ones
OPERATOR_FAMILY = "nvidia.com/*"  # the operator writes gpu.present and gpu.deploy.*, and runs GFD


def label_families(releases: Iterable[Release], images: Iterable[str]) -> frozenset[str]:
    """The families of node labels the checked GPU stack writes once deployed: a release of it (the operator
    runs NFD unless nfd.enabled is false, labels the GPU nodes it finds and runs GFD; the device plugin chart
    runs GFD with gfd.enabled and NFD with nfd.enabled, or with GFD when that is unset), or a DaemonSet running
    NFD's or GFD's image."""
    out = set()
    for r in releases:
        if r.chart == OPERATOR:
            out.add(OPERATOR_FAMILY)
            if r.enabled("nfd.enabled"):
                out.add(NFD_FAMILY)
        elif r.chart == DEVICE_PLUGIN:
            gfd = r.enabled("gfd.enabled", False)
            if gfd:
                out.add(GFD_FAMILY)
            if r.enabled("nfd.enabled", gfd):
                out.add(NFD_FAMILY)
    for image in images:
        if "node-feature-discovery" in image:
            out.add(NFD_FAMILY)
        if "gpu-feature-discovery" in image:
            out.add(GFD_FAMILY)
    return frozenset(out)


def _written(key: str, families: frozenset[str]) -> bool:
    if key.startswith(NFD_FAMILY):
        return NFD_FAMILY in families
    if key.startswith("nvidia.com/"):
        operator_only = key == "nvidia.com/gpu.present" or key.startswith("nvidia.com/gpu.deploy.")
        return OPERATOR_FAMILY in families or (GFD_FAMILY in families and not operator_only)
    return False


def _well_formed(spec: Mapping) -> bool:
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(node, Mapping) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    return (isinstance(spec.get("nodeSelector") or {}, Mapping) and isinstance(affinity or {}, Mapping)
            and isinstance(node or {}, Mapping) and isinstance(required or {}, Mapping)
            and is_list(terms or []) and all(isinstance(t, Mapping) for t in terms or [])
            and all(is_list(t.get("matchExpressions") or []) for t in terms or []))


def _to_write(spec: Mapping, families: frozenset[str]) -> dict[str, str]:
    """The labels a selector asks for that the checked stack writes (with the value asked for)."""
    selector = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), Mapping) else {}
    wanted = {str(k): str(v) for k, v in selector.items()}
    for term in _required_terms(spec):
        for e in term:
            values = e.get("values") if is_list(e.get("values")) else []
            if e.get("operator") == "In" and values:
                wanted.setdefault(str(e.get("key")), str(values[0]))
            elif e.get("operator") == "Exists":
                wanted.setdefault(str(e.get("key")), "true")
    return {k: v for k, v in wanted.items() if _written(k, families)}


class _Labelled:
    """A node as it will be once the checked stack has written its labels."""

    def __init__(self, node: NodeFacts, written: dict[str, str]):
        self._node, self.labels = node, {**node.labels, **written}

    def __getattr__(self, name: str):
        return getattr(self._node, name)


def daemonset_findings(subject: str, spec: Any, gpu: list[NodeFacts],
                       selects: Callable[[Mapping, NodeFacts], bool],
                       families: frozenset[str] = frozenset()) -> list[Finding]:
    """A DaemonSet that selects GPU nodes by their labels (NVIDIA, NFD or GKE ones) but whose selector matches
    none of the GPU nodes: the DaemonSet controller creates no pod at all, not even a Pending one. `selects`:
    whether a pod spec's nodeSelector and required node affinity match a node
    (gpufleet.scheduling.daemonsets.selects_node, the scheduler's own terms). `families`: label_families of
    the GPU stack checked with it; a selector on labels it will write is not judged before they exist."""
    if not isinstance(spec, Mapping) or not gpu or not _well_formed(spec):
        return []  # the API server refuses a malformed selector; that is its validation's to report
    selector = spec["nodeSelector"] if isinstance(spec.get("nodeSelector"), Mapping) else {}
    keys = {str(k) for k in selector} | {str(e.get("key")) for t in _required_terms(spec) for e in t}
    gpu_keys = sorted(k for k in keys if _GPU_LABEL.match(k))
    placed = [n for n in gpu if selects(spec, n)]
    if placed or not gpu_keys:
        return [*_plugin_runtime_class(subject, spec, placed), *_driver_daemonset(subject, spec, placed)]
    if families and any(selects(spec, _Labelled(n, _to_write(spec, families))) for n in gpu):
        return []  # the stack checked with it writes those labels once it runs
    wanted = ", ".join(f"{k}={v}" for k, v in selector.items()) or "its required node affinity"
    problems = []
    for k in gpu_keys:
        carried = sorted({n.labels[k] for n in gpu if k in n.labels})
        if not carried:
            problems.append(f"they lack {k} (written by {_writer(k)})")
        elif k in selector and str(selector[k]) not in carried:
            problems.append(f"{k} is {', '.join(carried)} there, not {selector[k]}")
    return [Finding(ERROR, subject, (
        f"selects {wanted}, which none of the GPU nodes ({names(gpu)}) matches: "
        f"{'; '.join(problems) or 'its terms exclude them'}. The "
        "DaemonSet controller creates no pod on them, not even a Pending one, so the nodes advertise no GPU "
        "(or publish no ResourceSlice) and every GPU pod aimed at them stays Pending. Expected the labels "
        "written on the GPU nodes (run what writes them), or a selector the nodes match."))]


_DRIVER_IMAGE = re.compile(r"(^|/)nvidia/driver[:@]")


def _driver_daemonset(subject: str, spec: Mapping, placed: list[NodeFacts]) -> list[Finding]:
    """NVIDIA's driver container as a DaemonSet of its own, on nodes whose OS cannot run it (error), does not
    validate it (warning), or that already run a host driver (warning, as preinstalled-driver says)."""
    images = [str(c.get("image")) for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    if not any(_DRIVER_IMAGE.search(i) for i in images):
        return []
    out = []
    by_os = _by(placed, lambda n: facts.node_os(n.os_image, n.labels))
    for os_, nodes in sorted(by_os.items(), key=lambda kv: kv[0].key):
        if os_.driver_container != "supported":
            out.append(Finding(ERROR if os_.driver_container == "impossible" else WARNING, subject, (
                f"runs NVIDIA's driver container on node(s) {names(nodes)}, which run {os_.name} "
                f"({_shown_os(nodes[0])}): {os_.why}. Expected no driver container there (use the driver "
                f"{os_.name} provides" + (f", under {os_.driver_root}" if os_.driver_root else "") + ").")))
    hosts = {n.name: why for n in placed if (why := host_driver_evidence(n))}
    if hosts:
        shown = "; ".join(f"{name} ({why})" for name, why in sorted(hosts.items())[:4])
        out.append(Finding(WARNING, subject, (
            f"runs NVIDIA's driver container on node(s) that already run a host driver: {shown}. Where the "
            "host's modules are loaded the container cannot unload them and stays in Init:CrashLoopBackOff. "
            "Expected no driver container on those nodes (the host's driver serves them).")))
    return out


def _plugin_runtime_class(subject: str, spec: Mapping, placed: list[NodeFacts]) -> list[Finding]:
    """NVIDIA's device plugin as a DaemonSet of its own (the static manifest, a rendered chart) on nodes whose
    nvidia runtime is not the default: without runtimeClassName (and without a CDI device list strategy) it
    runs under runc, finds no NVML and advertises no GPU."""
    not_default = [n for n in placed if _nvidia_not_default(n)]
    if not not_default or spec.get("runtimeClassName"):
        return []
    for c in spec.get("containers") or []:
        if not isinstance(c, Mapping) or "k8s-device-plugin" not in str(c.get("image") or ""):
            continue
        env = {str(e.get("name")): str(e.get("value")) for e in (c.get("env") if is_list(c.get("env")) else [])
               if isinstance(e, Mapping)}
        if "cdi" in env.get("DEVICE_LIST_STRATEGY", ""):
            continue
        return [Finding(ERROR, subject, (
            f"runs NVIDIA's device plugin (container '{c.get('name')}') on node(s) {names(not_default)} "
            f"({_why_not_default(not_default[0])}), whose nvidia runtime is not containerd's default, without "
            "runtimeClassName: the plugin runs under runc, finds no NVML ('could not load NVML library') and "
            "the nodes advertise no GPU. Expected spec.template.spec.runtimeClassName: nvidia (and the same on "
            "the GPU workloads), or DEVICE_LIST_STRATEGY cdi-cri with CDI enabled in containerd."))]
    return []


def release_placement(release: Release) -> dict | None:
    """Where the release's GPU node pods may go, as a pod spec's nodeSelector and required node affinity: the
    chart's defaults (gpufleet.nvidia.stack_placement) or the values that override them. The operator finds
    GPU nodes by NFD's PCI labels before it deploys anything there."""
    if release.chart == OPERATOR:
        return {"affinity": placement.as_affinity(placement.OPERATOR_GPU_NODE_LABELS)}
    base = "" if release.chart == DEVICE_PLUGIN else "kubeletPlugin."
    default = (placement.DEVICE_PLUGIN_AFFINITY if release.chart == DEVICE_PLUGIN
               else placement.DRA_KUBELET_PLUGIN_AFFINITY)
    affinity, selector = release.value(base + "affinity"), release.value(base + "nodeSelector")
    return {"affinity": affinity if isinstance(affinity, Mapping) and affinity else placement.as_affinity(default),
            "nodeSelector": selector if isinstance(selector, Mapping) else {}}


# ---- everything, for one release ----------------------------------------------------------------------

def release_findings(release: Release, nodes: list[NodeFacts],
                     pools: dict[str, list[NodeFacts]] | None = None) -> list[Finding]:
    """Every node-platform finding of one GPU stack release on these nodes (the GPU nodes among them, or the
    pools' members where `pools` names them)."""
    members = [n for ns in (pools or {}).values() for n in ns]
    gpu = list({n.name: n for n in members}.values()) if members else [n for n in nodes if shows_gpu(n)]
    if not gpu:
        return []
    return [*os_findings(release, gpu), *runtime_findings(release, gpu, pools or {}),
            *version_findings(release, gpu), *runtime_class_findings(release, gpu),
            *regenerated_config_findings(release, gpu)]
