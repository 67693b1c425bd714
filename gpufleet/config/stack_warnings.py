"""Warnings about the GPU stack on the cluster that the config alone cannot settle: the container runtime
GPU containers get, and pool taints that a component gpufleet does not deploy must tolerate. Each names
what happens on the cluster, what to verify there, and the fix. Where gpufleet deploys the component itself
it renders the fix instead (gpufleet.render.tolerations, gpufleet.render.workloads.runtime_class_name)."""

from __future__ import annotations

from gpufleet.config._paths import yaml_path as _p
from gpufleet.config.node_pools import NodePool, Taint
from gpufleet.config.stack import StackConfig
from gpufleet.errors import ConfigIssue

#: Only these effects keep a pod off a node.
_FILTERING = ("NoSchedule", "NoExecute")
_NFD_LABEL = "feature.node.kubernetes.io/pci-10de.present"


def stack_warnings(cfg: StackConfig) -> list[ConfigIssue]:
    return [*_runtime_warnings(cfg), *_config_source_warnings(cfg), *_unowned_taint_warnings(cfg)]


#: MicroK8s keeps a template the toolkit must edit and the file containerd is started with, which the
#: toolkit must read (NVIDIA's MicroK8s instructions: CONTAINERD_CONFIG the template, RUNTIME_CONFIG_SOURCE
#: file= the generated config).
_MICROK8S_TEMPLATE = "containerd-template.toml"


def _config_source_warnings(cfg: StackConfig) -> list[ConfigIssue]:
    """Where the toolkit reads containerd's current config from (RUNTIME_CONFIG_SOURCE) against where the
    distribution keeps it: a mismatch makes the toolkit write a config containerd never loads, or one that
    drops the distribution's own settings."""
    op, rt = cfg.operator, cfg.cluster.runtime
    if cfg.mode != "operator" or not op.toolkit.enabled:
        return []
    out = []
    env = dict((e["name"], e["value"]) for e in rt.toolkit_env())
    config, source = env.get("CONTAINERD_CONFIG", ""), env.get("RUNTIME_CONFIG_SOURCE")
    if rt.preset == "microk8s" and (not config.endswith(_MICROK8S_TEMPLATE) or not (source or "").startswith("file=")):
        path = (_p("cluster", "runtime", "configPath") if not config.endswith(_MICROK8S_TEMPLATE)
                else _p("cluster", "runtime", "configSource"))
        out.append(ConfigIssue(path, (
            f"MicroK8s regenerates containerd's config from {_MICROK8S_TEMPLATE} on every restart: with "
            f"CONTAINERD_CONFIG {config or '(unset)'} and RUNTIME_CONFIG_SOURCE {source or '(unset)'} the toolkit "
            "edits a file that is overwritten, or reads a config containerd does not run, so the nvidia runtime "
            "disappears at the next restart and GPU pods fail with 'no runtime for \"nvidia\"'; fix: leave "
            "cluster.runtime.configPath and configSource at the microk8s preset's (the template, and "
            "file=/var/snap/microk8s/current/args/containerd.toml)")))
    if cfg.cluster.aks is not None and source is None:
        out.append(ConfigIssue(_p("cluster", "runtime", "configSource"), (
            "AKS node images run containerd 2.x with a version-2 config on disk; a toolkit that reads the config "
            "through `containerd config dump` (RUNTIME_CONFIG_SOURCE unset: command first) writes a drop-in of "
            "another config version, and containerd can fail to start on the GPU nodes (NVIDIA/aicr#1688); "
            "verify on a GPU node that containerd stays up after the toolkit pod runs (systemctl status "
            "containerd); fix: cluster.runtime.configSource: file")))
    return out


def _runtime_warnings(cfg: StackConfig) -> list[ConfigIssue]:
    """With CDI off the device plugin hands a container its GPUs through NVIDIA_VISIBLE_DEVICES, which only
    the nvidia runtime acts on (operator mode: gpufleet knows the toolkit's settings)."""
    op, rt = cfg.operator, cfg.cluster.runtime
    if cfg.mode != "operator" or op.cdi:
        return []
    default = op.nvidia_runtime_is_default(rt.set_as_default)
    if default:
        path, cause = ((_p("cluster", "runtime", "setAsDefault"), "setAsDefault true with operator.cdi false")
                       if rt.set_as_default else
                       (_p("operator", "cdi"), "operator.cdi false with cluster.runtime.setAsDefault unset (the "
                        "toolkit then makes nvidia containerd's default runtime)"))
        return [ConfigIssue(path, f"{cause}: every container on a GPU node runs under the nvidia runtime, so one "
                            "whose image sets NVIDIA_VISIBLE_DEVICES=all (every CUDA base image does) sees every GPU "
                            "of the node without requesting one, outside the device plugin's accounting, and can "
                            "take memory from the pods the GPUs are allocated to; fix: operator.cdi: true (the "
                            "chart's default: runc stays the default and only pods that request GPUs get them), or "
                            f"cluster.runtime.setAsDefault: false (gpufleet's GPU workloads then name runtimeClassName "
                            f"{rt.runtime_class}; other GPU pods must name it too)")]
    if default is None and any(w.gpu is not None for w in cfg.workloads):
        return [ConfigIssue(_p("operator", "toolkit", "enabled"),
                            "false with operator.cdi false and cluster.runtime.setAsDefault unset: gpufleet cannot "
                            "tell whether nvidia is containerd's default runtime on the GPU nodes; if it is not, GPU "
                            "pods without runtimeClassName run under runc and see no GPU; if it is, any CUDA image "
                            "sees every GPU without a request. Verify on a GPU node (`crictl info` shows "
                            "defaultRuntimeName), then set setAsDefault to match (false: gpufleet names "
                            f"runtimeClassName {rt.runtime_class} on its GPU workloads), or use operator.cdi: true")]
    return []


def _unowned_taint_warnings(cfg: StackConfig) -> list[ConfigIssue]:
    """A tainted pool where GPU node daemons come from elsewhere (not gpufleet's release)."""
    owner = _external_owner(cfg)
    if owner is None:
        return []
    where, consequence, fix = owner
    return [ConfigIssue(_taint_path(cfg, i, pool, j),
                        f"'{_shown(taint)}' on node pool '{pool.name}': {where}, not gpufleet's, so gpufleet "
                        f"cannot add this toleration there; {consequence}: the nodes advertise no GPU and GPU "
                        "pods aimed at them stay Pending. Verify on the cluster that those DaemonSets tolerate it "
                        f"(kubectl get ds -A -o yaml: spec.template.spec.tolerations); fix: {fix}")
            for i, pool in enumerate(cfg.node_pools) for j, taint in enumerate(pool.taints)
            if taint.effect in _FILTERING]


def _external_owner(cfg: StackConfig) -> tuple[str, str, str] | None:
    """(who runs the GPU node daemons, what happens if they do not tolerate a taint, the fix) where gpufleet
    does not deploy them; None where it does (it renders the tolerations)."""
    nfd_misses = (f"if that NFD's worker does not tolerate it, it never runs on the pool's nodes and they get no "
                  f"{_NFD_LABEL} label, which")
    if cfg.mode == "platform-managed":
        return ("mode platform-managed: the GPU node daemons are the platform's",
                "if its driver, device plugin and feature discovery DaemonSets do not tolerate it, they never run "
                "on the pool's nodes", "add the toleration to the platform's GPU DaemonSets, or use mode operator "
                "or standalone (gpufleet then renders it)")
    if cfg.mode == "operator" and not cfg.operator.nfd:
        return ("operator.nfd false: the GPU nodes are labelled by the Node Feature Discovery already on the cluster",
                f"{nfd_misses} the operator needs before it deploys the driver, toolkit and device plugin there",
                "add the toleration to that NFD's worker.tolerations, or operator.nfd: true (gpufleet's NFD "
                "worker then tolerates it)")
    if cfg.mode == "standalone" and not cfg.uses_dra() and not cfg.device_plugin.nfd:
        return ("devicePlugin.nfd false: the GPU nodes are labelled by the Node Feature Discovery "
                "already on the cluster",
                f"{nfd_misses} the device plugin and GFD DaemonSets require (their node affinity)",
                "add the toleration to that NFD's worker.tolerations, or devicePlugin.nfd: true (gpufleet's NFD "
                "worker then tolerates it)")
    return None


def _taint_path(cfg: StackConfig, i: int, pool: NodePool, j: int) -> str:
    aks = cfg.aks_pool(pool)
    if aks is not None:
        return _p("cluster", "aks", "gpuPools", aks[0], "taints", j)
    return _p("nodePools", i, "taints", j)


def _shown(taint: Taint) -> str:
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"
