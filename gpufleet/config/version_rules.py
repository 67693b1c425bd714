"""Checks of a StackConfig's versions against NVIDIA's support facts: the driver the operator installs
against the pools' GPUs (architecture, product) and the DRA driver's needs, and the operator release
against the cluster's Kubernetes version. Errors where the stack cannot work; warnings where it leaves
what NVIDIA validated. Each names the YAML path, the bad value, what happens on the cluster and the fix."""

from __future__ import annotations

from gpufleet.config._paths import yaml_path as _p
from gpufleet.config.stack import StackConfig
from gpufleet.errors import ConfigIssue
from gpufleet.nvidia import dra_prerequisites as dra_req
from gpufleet.nvidia import operator_support as support
from gpufleet.nvidia.architectures import driver_branch, driver_version
from gpufleet.nvidia.node_platforms import KUBERNETES_FLOORS
from gpufleet.nvidia.products import find_product
from gpufleet.nvidia.versions import DEVICE_PLUGIN_VERSION, DRA_DRIVER_VERSION, DRIVER_VERSION, GPU_OPERATOR_VERSION

_DRIVER = _p("operator", "driver", "version")
_CHART = _p("operator", "chartVersion")


def check_versions(cfg: StackConfig) -> list[ConfigIssue]:
    return [*_driver_vs_gpus(cfg), *_dra_driver_branch(cfg), *_operator_vs_kubernetes(cfg, errors=True),
            *_below_chart_floor(cfg)]


def _below_chart_floor(cfg: StackConfig) -> list[ConfigIssue]:
    """A cluster older than the chart's `kubeVersion` (Helm refuses the install); the DRA driver's floor is
    below resource.k8s.io/v1's 1.34, which dra_rules refuses already."""
    charts = {"operator": "gpu-operator", "standalone": None if cfg.uses_dra() else "nvidia-device-plugin"}
    chart = charts.get(cfg.mode)
    floor = KUBERNETES_FLOORS.get(chart) if chart else None
    cluster = _kubernetes(cfg)
    if floor is None or cluster is None or cluster[0][:2] >= floor.minimum:
        return []
    (major, minor, _), path, shown = cluster
    return [ConfigIssue(path, (
        f"{shown} is older than {support.minor_text(floor.minimum)}, the oldest Kubernetes {chart} supports "
        f"({floor.source}): Helm refuses the install and no GPU component is deployed; fix: upgrade the "
        "cluster "
        f"to {support.minor_text(floor.minimum)} or later and set the version here"))]


def version_warnings(cfg: StackConfig) -> list[ConfigIssue]:
    return [*_driver_vs_operator(cfg), *_operator_vs_kubernetes(cfg, errors=False), *_dra_kubernetes_patch(cfg),
            *_unwritten_chart_versions(cfg)]


def _unwritten_chart_versions(cfg: StackConfig) -> list[ConfigIssue]:
    """A chart version other than the one gpufleet writes values for: Helm ignores a key the chart does not
    know, so a renamed or moved setting does not apply, and nothing says so."""
    charts = []
    if cfg.mode == "operator":
        charts.append((_CHART, "gpu-operator", cfg.operator.chart_version, GPU_OPERATOR_VERSION))
    elif cfg.mode == "standalone":
        if cfg.gpu_allocation == "devicePlugin":
            charts.append((_p("devicePlugin", "chartVersion"), "nvidia-device-plugin",
                           cfg.device_plugin.chart_version, DEVICE_PLUGIN_VERSION))
        else:
            charts.append((_p("draDriver", "chartVersion"), "dra-driver-nvidia-gpu", cfg.dra_driver.chart_version,
                           DRA_DRIVER_VERSION))
    return [ConfigIssue(path, (
        f"gpufleet writes its values for {chart} {pinned} (every key checked against that chart); {chart} "
        f"'{version}' may name or nest them differently, and Helm ignores a key a chart does not know, so a "
        f"setting such as the toolkit's containerd paths or the DaemonSets' tolerations may silently not apply "
        f"on the cluster; fix: chartVersion {pinned}, or render '{version}' with `gpufleet charts` and "
        f"`helm template` and compare before deploying"))
        for path, chart, version, pinned in charts if version.lstrip("v") != pinned.lstrip("v")]


def _installed_driver(cfg: StackConfig) -> tuple[str, int, str] | None:
    """(version, branch, how it is shown) of the driver the operator installs; None where the host's is used
    (driver.enabled false, standalone, platform-managed) or the version is no number (a digest)."""
    if cfg.mode != "operator" or not cfg.operator.driver.enabled:
        return None
    version = cfg.operator.driver.version
    branch = driver_branch(version)
    if branch is None:
        return None
    pinned = "" if "version" in cfg.operator.driver.model_fields_set else ", the default pin"
    return version, branch, f"'{version}' (R{branch}{pinned})"


def _pinned_release() -> support.OperatorRelease | None:
    """The support facts of the gpu-operator release gpufleet pins."""
    pinned = support.operator_version(GPU_OPERATOR_VERSION)
    return support.release_of(pinned) if pinned is not None else None


def _operator_drivers() -> tuple[str, ...]:
    release = _pinned_release()
    return release.drivers if release else ()


def _older_driver(version: str, than: str) -> bool:
    have, need = driver_version(version), driver_version(than)
    return have is not None and need is not None and have < need


def _driver_vs_gpus(cfg: StackConfig) -> list[ConfigIssue]:
    installed = _installed_driver(cfg)
    if installed is None:
        return []
    version, branch, shown = installed
    issues = []
    for pool in cfg.node_pools:
        product = find_product(pool.gpu.product)
        if product is None:
            continue
        arch = product.architecture
        cc = ".".join(map(str, product.compute_capability))
        where = f"node pool '{pool.name}' ({product.key}, {arch.name}, compute capability {cc})"
        if not arch.supports_branch(branch):
            assert arch.last_driver_branch is not None  # an architecture without a last branch supports every one
            issues.append(ConfigIssue(_DRIVER, (
                f"{shown} does not drive the GPUs of {where}: R{arch.last_driver_branch} is the last driver branch "
                f"for {arch.name} (NVIDIA's driver and architecture matrix). The driver pod on those nodes finds no "
                "GPU it supports and never gets ready, so the toolkit and device plugin stay in Init and the nodes "
                f"advertise no nvidia.com/gpu; fix: {_older_driver_fix(arch.last_driver_branch)}")))
        elif product.min_driver and _older_driver(version, product.min_driver):
            issues.append(ConfigIssue(_DRIVER, (
                f"{shown} is older than {product.min_driver}, the first driver gpu-operator's platform support "
                f"names for the GPUs of {where}; the driver pod finds no GPU it supports and the nodes advertise "
                f"no nvidia.com/gpu; fix: version {product.min_driver} or newer (the default {DRIVER_VERSION})")))
    return issues


def _older_driver_fix(last_branch: int) -> str:
    fitting = [d for d in _operator_drivers() if int(d.split(".")[0]) <= last_branch]
    if fitting:
        return (f"version {fitting[0]} (the newest driver up to R{last_branch} that gpu-operator "
                f"{GPU_OPERATOR_VERSION} lists), "
                f"or driver.enabled: false with an R{last_branch} (or older) driver installed on the hosts")
    return (f"driver.enabled: false with an R{last_branch} driver installed on the hosts (gpu-operator "
            f"{GPU_OPERATOR_VERSION} ships no R{last_branch} driver container)")


def _driver_vs_operator(cfg: StackConfig) -> list[ConfigIssue]:
    installed = _installed_driver(cfg)
    release = support.release_of(support.operator_version(cfg.operator.chart_version) or (0, 0, 0))
    if installed is None or release is None or not release.drivers:
        return []
    version, branch, shown = installed
    if branch in release.driver_branches:
        return []
    listed = ", ".join(f"R{b}" for b in release.driver_branches)
    return [ConfigIssue(_DRIVER, (
        f"{shown} is not a branch gpu-operator {cfg.operator.chart_version} was validated with ({listed}). The "
        f"operator supports the active data center production branches: verify that R{branch} is one (NVIDIA "
        f"Data Center Drivers, 'Supported Drivers and CUDA Toolkit Versions') and that a driver image tagged "
        f"{version} exists for your nodes' OS, else the driver pod fails with ImagePullBackOff; or use a listed "
        f"driver, e.g. {DRIVER_VERSION}"))]


def _kubernetes(cfg: StackConfig) -> tuple[tuple[int, int, int | None], str, str] | None:
    """(version, YAML path, how it is shown) of the cluster's Kubernetes: the AKS cluster's, where this stack
    creates one and says, else cluster.kubernetesVersion."""
    aks = cfg.cluster.aks
    if aks is not None and aks.kubernetes_version:
        text, path = aks.kubernetes_version, _p("cluster", "aks", "kubernetesVersion")
    else:
        text, path = cfg.cluster.kubernetes_version, _p("cluster", "kubernetesVersion")
    version = support.kubernetes_version(text)
    if version is None:
        return None
    default = "" if "kubernetes_version" in cfg.cluster.model_fields_set or path.endswith("aks.kubernetesVersion") \
        else ", the default: set it to the cluster's"
    return version, path, f"Kubernetes {text} ({path}{default})"


def _operator_vs_kubernetes(cfg: StackConfig, errors: bool) -> list[ConfigIssue]:
    operator = support.operator_version(cfg.operator.chart_version)
    cluster = _kubernetes(cfg)
    if cfg.mode != "operator" or operator is None or cluster is None:
        return []
    (major, minor, _), _, shown = cluster
    chart = cfg.operator.chart_version
    pinned = _pinned_release()
    removal = support.api_removal(operator, (major, minor))
    if removal is not None:
        return [ConfigIssue(_CHART, (
            f"'{chart}' creates {removal.what}, which Kubernetes {support.minor_text(removal.removed_in)} no longer "
            f"serves; on {shown} the Helm install fails (no matches for that kind) and no GPU component is "
            f"deployed; fix: chartVersion {GPU_OPERATOR_VERSION} (validated with Kubernetes "
            f"{_range(pinned)})"))] if errors else []
    release = support.release_of(operator)
    if errors or release is None:
        return []
    low, high = release.kubernetes
    if low <= (major, minor) <= high:
        return []
    fits = [f"{line}.x" for line, r in support.RELEASES.items() if r.kubernetes[0] <= (major, minor) <= r.kubernetes[1]]
    return [ConfigIssue(_CHART, (
        f"'{chart}' was validated with Kubernetes {_range(release)} (NVIDIA's platform support), not {shown}: "
        "outside that range the operator or its operands may rely on APIs the cluster does not serve the same way; "
        f"verify the release on a test cluster of that version, or use one validated for it"
        + (f" ({', '.join(fits)})" if fits else "")))]


def _range(release: support.OperatorRelease | None) -> str:
    if release is None:
        return "(unknown)"
    return f"{support.minor_text(release.kubernetes[0])}-{support.minor_text(release.kubernetes[1])}"


def _dra_driver_branch(cfg: StackConfig) -> list[ConfigIssue]:
    installed = _installed_driver(cfg)
    if not cfg.uses_dra() or installed is None or installed[1] >= dra_req.MIN_DRIVER_BRANCH:
        return []
    return [ConfigIssue(_DRIVER, (
        f"{installed[2]} is older than the R{dra_req.MIN_DRIVER_BRANCH} that gpuAllocation dra needs (gpu-operator "
        "DRA prerequisites): the GPUCluster's DRA kubelet plugin is not supported on it, so the nodes may publish "
        "no GPU ResourceSlices and every GPU claim stays Pending; fix: version "
        f"{DRIVER_VERSION} (the default) or another R{dra_req.MIN_DRIVER_BRANCH}+ driver"))]


def _dra_kubernetes_patch(cfg: StackConfig) -> list[ConfigIssue]:
    """gpu-operator's DRA workflow asks for 1.34.2 or later; a version written with its patch is compared."""
    cluster = _kubernetes(cfg)
    if not cfg.uses_dra() or cfg.mode != "operator" or cluster is None or cluster[0][2] is None:
        return []
    version, path, shown = cluster
    want = dra_req.OPERATOR_MIN_KUBERNETES
    if version >= want or version[:2] < dra_req.MIN_KUBERNETES:
        return []
    return [ConfigIssue(path, (
        f"{shown} is older than the {'.'.join(map(str, want))} gpu-operator's DRA workflow (GPUCluster) requires; "
        "earlier 1.34 patches are not supported for it; fix: upgrade the cluster to "
        f"{'.'.join(map(str, want))} or later and set the version here"))]
