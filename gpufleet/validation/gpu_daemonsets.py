"""The GPU stack's DaemonSets against the GPU nodes: a DaemonSet the controller places on none of them (its
nodeSelector and required node affinity match no GPU node, and nothing in the checked stack writes the labels
it asks for), NVIDIA's driver container on nodes that cannot run it or already run a host driver, NVIDIA's
device plugin without runtimeClassName where nvidia is not the default runtime, and where a GPU stack
release's own node pods may go (the charts' affinity, gpufleet.nvidia.stack_placement). Shared by the pack
(node-platform) and `gpufleet check --nodes`; see gpufleet.validation.node_platform for the rest."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from gpufleet.nvidia import node_platforms as facts
from gpufleet.nvidia import stack_placement as placement
from gpufleet.taints import tolerates_any
from gpufleet.validation.gpu_requests import is_list
from gpufleet.validation.node_platform import (
    DEVICE_PLUGIN,
    ERROR,
    OPERATOR,
    WARNING,
    Finding,
    NodeFacts,
    Release,
    grouped_by,
    host_driver_evidence,
    names,
    nvidia_not_default,
    shown_os,
    why_not_default,
)


def _required_terms(spec: Mapping) -> list[list[Mapping]]:
    affinity = got if isinstance(got := spec.get("affinity"), Mapping) else {}
    node = got if isinstance(got := affinity.get("nodeAffinity"), Mapping) else {}
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
    (re.compile(r"^feature\.node\.kubernetes\.io/"),
     "Node Feature Discovery (operator.nfd / devicePlugin.nfd)"),
    (re.compile(r"^nvidia\.com/gpu\.deploy\."), "the gpu-operator (once NFD labels the node)"),
    (re.compile(r"^nvidia\.com/gpu\.present$"), "the gpu-operator, or gpufleet for a pool's listed nodes"),
    (re.compile(r"^nvidia\.com/"), "GPU feature discovery (operator, or devicePlugin.gfd)"),
)


def _writer(key: str) -> str:
    return next((who for pattern, who in LABEL_WRITERS if pattern.match(key)), "nobody in this stack")


NFD_FAMILY = "feature.node.kubernetes.io/"
GFD_FAMILY = "nvidia.com/"  # GFD's labels; not nvidia.com/gpu.present nor the operator's gpu.deploy.* ones
OPERATOR_FAMILY = "nvidia.com/*"  # the operator writes gpu.present and gpu.deploy.*, and runs GFD


def label_families(releases: Iterable[Release], images: Iterable[str],
                   planned: Iterable[str] = ()) -> frozenset[str]:
    """The families of node labels the checked GPU stack writes once deployed: a release of it (the operator
    runs NFD unless nfd.enabled is false, labels the GPU nodes it finds and runs GFD; the device plugin chart
    runs GFD with gfd.enabled and NFD with nfd.enabled, or with GFD when that is unset), or a DaemonSet
    running NFD's or GFD's image. `planned`: label keys the stack itself sets on nodes (gpufleet's
    NodePatches on a pool's listed nodes), as `=<key>`."""
    out = {"=" + key for key in planned}
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
    if "=" + key in families:
        return True
    if key.startswith(NFD_FAMILY):
        return NFD_FAMILY in families
    if key.startswith("nvidia.com/"):
        operator_only = key == "nvidia.com/gpu.present" or key.startswith("nvidia.com/gpu.deploy.")
        return OPERATOR_FAMILY in families or (GFD_FAMILY in families and not operator_only)
    return False


def _well_formed(spec: Mapping) -> bool:
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = (node.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(node, Mapping)
                else None)
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    return (isinstance(spec.get("nodeSelector") or {}, Mapping) and isinstance(affinity or {}, Mapping)
            and isinstance(node or {}, Mapping) and isinstance(required or {}, Mapping)
            and is_list(terms or []) and all(isinstance(t, Mapping) for t in terms or [])
            and all(is_list(t.get("matchExpressions") or []) for t in terms or []))


def _to_write(spec: Mapping, families: frozenset[str]) -> dict[str, str]:
    """The labels a selector asks for that the checked stack writes (with the value asked for)."""
    selector = got if isinstance(got := spec.get("nodeSelector"), Mapping) else {}
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


def daemonset_findings(subject: str, spec: Any, gpu: Sequence[NodeFacts],
                       selects: Callable[[Any, NodeFacts], bool],
                       families: frozenset[str] = frozenset()) -> list[Finding]:
    """A DaemonSet that selects GPU nodes by their labels (NVIDIA, NFD or GKE ones) but whose selector matches
    none of the GPU nodes: the DaemonSet controller creates no pod at all, not even a Pending one. `selects`:
    whether a pod spec's nodeSelector and required node affinity match a node
    (gpufleet.scheduler.daemonsets.selects_node, the scheduler's own terms). `families`: label_families of
    the GPU stack checked with it; a selector on labels it will write is not judged before they exist."""
    if not isinstance(spec, Mapping) or not gpu or not _well_formed(spec):
        return []  # the API server refuses a malformed selector; that is its validation's to report
    selector = spec["nodeSelector"] if isinstance(spec.get("nodeSelector"), Mapping) else {}
    keys = {str(k) for k in selector} | {str(e.get("key")) for t in _required_terms(spec) for e in t}
    gpu_keys = sorted(k for k in keys if _GPU_LABEL.match(k))
    placed = [n for n in gpu if selects(spec, n)]
    if placed or not gpu_keys:
        return [*(_untolerated_taints(subject, spec, placed) if gpu_keys else []),
                *_plugin_runtime_class(subject, spec, placed), *_driver_daemonset(subject, spec, placed)]
    labelled = _once_labelled(spec, gpu, selects, families)
    if labelled:  # the stack checked with it writes those labels once it runs
        return _untolerated_taints(subject, spec, labelled)
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
        f"{'; '.join(problems) or 'its terms exclude them'}. The DaemonSet controller creates no pod on "
        "them, not even a Pending one, so the nodes advertise no GPU (or publish no ResourceSlice) and "
        "every GPU pod aimed at them stays Pending. Expected the labels written on the GPU nodes (run what "
        "writes them), or a selector the nodes match."))]


def _once_labelled(spec: Mapping, gpu: Sequence[NodeFacts], selects: Callable[[Any, NodeFacts], bool],
                   families: frozenset[str]) -> list[NodeFacts]:
    """The GPU nodes the selector matches once the checked stack has written the labels it writes."""
    return [n for n in gpu if families and selects(spec, _Labelled(n, _to_write(spec, families)))]


def release_taint_findings(release: Release, gpu: Sequence[NodeFacts],
                           selects: Callable[[Any, NodeFacts], bool],
                           families: frozenset[str]) -> list[Finding]:
    """Only the taint rule on a release's GPU node pods (release_placement): for the pack, whose
    stack-matches-nodes judges the same placement's labels."""
    spec = release_placement(release)
    placed = [n for n in gpu if selects(spec, n)] or _once_labelled(spec, gpu, selects, families)
    return _untolerated_taints(release.subject, spec, placed)


#: Taints the DaemonSet controller tolerates on every DaemonSet pod itself (AddOrUpdateDaemonPodTolerations,
#: k8s.io/kubernetes v1.34 pkg/controller/daemon/util): the node-condition taints and cordoning; and
#: network-unavailable for a pod on the host's network.
_DAEMON_TOLERATED = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
                               "node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure",
                               "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable"})
_HOST_NETWORK_TOLERATED = "node.kubernetes.io/network-unavailable"
_FILTERING = ("NoSchedule", "NoExecute")


def _untolerated_taints(subject: str, spec: Mapping, placed: list) -> list[Finding]:
    """A GPU DaemonSet whose selector matches GPU nodes that carry a NoSchedule or NoExecute taint its pods do
    not tolerate: the DaemonSet controller leaves those nodes out (no pod, not even a Pending one)."""
    given = spec.get("tolerations")
    tolerations = [t for t in given if isinstance(t, Mapping)] if is_list(given) else []
    own = _DAEMON_TOLERATED | ({_HOST_NETWORK_TOLERATED} if spec.get("hostNetwork") is True else set())
    missed: dict[str, list] = {}
    for n in placed:
        for t in getattr(n, "taints", ()) or ():
            if t.effect in _FILTERING and t.key not in own \
                    and not tolerates_any(tolerations, t.key, t.value, t.effect):
                missed.setdefault(f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}",
                                  []).append(n)
    return [Finding(ERROR, subject, (
        f"does not tolerate the taint {taint} of GPU node(s) {names(nodes)}, which its selector matches: "
        "the DaemonSet controller creates no pod on them, not even a Pending one, so those nodes advertise "
        "no GPU (or publish no ResourceSlice) and every GPU pod aimed at them stays Pending. Expected a "
        f"toleration of {taint} in its tolerations (for a gpufleet stack: the taint in the node pool's "
        "taints, and gpufleet adds it to the GPU stack's tolerations), or the taint off those nodes."))
        for taint, nodes in sorted(missed.items())]


_DRIVER_IMAGE = re.compile(r"(^|/)nvidia/driver[:@]")


def _driver_daemonset(subject: str, spec: Mapping, placed: Sequence[NodeFacts]) -> list[Finding]:
    """NVIDIA's driver container as a DaemonSet of its own, on nodes whose OS cannot run it (error), does not
    validate it (warning), or that already run a host driver (warning, as preinstalled-driver says)."""
    images = [str(c.get("image")) for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    if not any(_DRIVER_IMAGE.search(i) for i in images):
        return []
    out = []
    by_os = grouped_by(placed, lambda n: facts.node_os(n.os_image, n.labels))
    for os_, nodes in sorted(by_os.items(), key=lambda kv: kv[0].key):
        if os_.driver_container != "supported":
            out.append(Finding(ERROR if os_.driver_container == "impossible" else WARNING, subject, (
                f"runs NVIDIA's driver container on node(s) {names(nodes)}, which run {os_.name} "
                f"({shown_os(nodes[0])}): {os_.why}. Expected no driver container there (use the driver "
                f"{os_.name} provides" + (f", under {os_.driver_root}" if os_.driver_root else "") + ").")))
    hosts = {n.name: why for n in placed if (why := host_driver_evidence(n))}
    if hosts:
        shown = "; ".join(f"{name} ({why})" for name, why in sorted(hosts.items())[:4])
        out.append(Finding(WARNING, subject, (
            f"runs NVIDIA's driver container on node(s) that already run a host driver: {shown}. Where the "
            "host's modules are loaded the container cannot unload them and stays in Init:CrashLoopBackOff. "
            "Expected no driver container on those nodes (the host's driver serves them).")))
    return out


def _plugin_runtime_class(subject: str, spec: Mapping, placed: Sequence[NodeFacts]) -> list[Finding]:
    """NVIDIA's device plugin as a DaemonSet of its own (the static manifest, a rendered chart) on nodes whose
    nvidia runtime is not the default: without runtimeClassName (and without a CDI device list strategy) it
    runs under runc, finds no NVML and advertises no GPU."""
    not_default = [n for n in placed if nvidia_not_default(n)]
    if not not_default or spec.get("runtimeClassName"):
        return []
    for c in spec.get("containers") or []:
        if not isinstance(c, Mapping) or "k8s-device-plugin" not in str(c.get("image") or ""):
            continue
        items = got if is_list(got := c.get("env")) else []
        env = {str(e.get("name")): str(e.get("value")) for e in items if isinstance(e, Mapping)}
        if "cdi" in env.get("DEVICE_LIST_STRATEGY", ""):
            continue
        return [Finding(WARNING, subject, (
            f"runs NVIDIA's device plugin (container '{c.get('name')}') on node(s) {names(not_default)} "
            f"({why_not_default(not_default[0])}), whose nvidia runtime is not containerd's default unless "
            "told to, without runtimeClassName: there the plugin runs under runc, finds no NVML ('could not "
            "load NVML library') and the nodes advertise no GPU. Verify on a GPU node (crictl info: "
            "defaultRuntimeName). Expected spec.template.spec.runtimeClassName: nvidia (and the same on the GPU "
            "workloads), or DEVICE_LIST_STRATEGY cdi-cri with CDI enabled in containerd."))]
    return []


def release_placement(release: Release) -> dict:
    """Where the release's GPU node pods may go, as a pod spec's nodeSelector and required node affinity: the
    chart's defaults (gpufleet.nvidia.stack_placement) or the values that override them. The operator finds
    GPU nodes by NFD's PCI labels before it deploys anything there."""
    if release.chart == OPERATOR:
        return {"affinity": placement.as_affinity(placement.OPERATOR_GPU_NODE_LABELS),
                "tolerations": _tolerations(release, "daemonsets.", placement.OPERATOR_DAEMONSET_TOLERATIONS)}
    plugin = release.chart == DEVICE_PLUGIN
    base = "" if plugin else "kubeletPlugin."
    default = placement.DEVICE_PLUGIN_AFFINITY if plugin else placement.DRA_KUBELET_PLUGIN_AFFINITY
    affinity, selector = release.value(base + "affinity"), release.value(base + "nodeSelector")
    if not isinstance(affinity, Mapping) or not affinity:
        affinity = placement.as_affinity(default)
    return {"affinity": affinity,
            "nodeSelector": selector if isinstance(selector, Mapping) else {},
            "tolerations": _tolerations(release, base, placement.DEVICE_PLUGIN_TOLERATIONS if plugin
                                        else placement.DRA_KUBELET_PLUGIN_TOLERATIONS)}


def _tolerations(release: Release, base: str, default: tuple) -> list:
    """The tolerations the release's node pods get: its values' list (which replaces the chart's), else the
    chart's default."""
    given = release.value(base + "tolerations")
    return list(given) if is_list(given) else [dict(t) for t in default]
