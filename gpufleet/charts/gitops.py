"""Argo CD Applications and Flux HelmReleases that install the stack's chart and the upstream NVIDIA chart.

Pure: plain dicts. Upstream charts are pinned to the versions the stack config names (defaults in
gpufleet/nvidia/versions.py); their values are gpufleet.render's, the same Pulumi passes to its release.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufleet.config.stack import StackConfig
from gpufleet.nvidia import versions
from gpufleet.render import gpu_stack as r

ARGO_NAMESPACE = "argocd"
FLUX_NAMESPACE = "flux-system"
INTERVAL = "10m"


@dataclass(frozen=True)
class UpstreamRelease:
    """The NVIDIA chart the stack installs (gpu-operator, or nvidia-device-plugin in standalone mode)."""

    release: str
    chart: str
    version: str
    repo: str
    repo_name: str
    namespace: str
    values: dict[str, Any]


def upstream_release(cfg: StackConfig) -> UpstreamRelease | None:
    if cfg.mode == "operator":
        return UpstreamRelease("gpu-operator", versions.GPU_OPERATOR_CHART, cfg.operator.chart_version,
                               versions.GPU_OPERATOR_REPO, "nvidia", cfg.operator.namespace, r.operator_values(cfg))
    if cfg.mode == "standalone" and cfg.uses_dra():
        return UpstreamRelease("dra-driver-nvidia-gpu", versions.DRA_DRIVER_CHART, cfg.dra_driver.chart_version,
                               versions.DRA_DRIVER_REPO, "dra-driver-nvidia", cfg.dra_driver.namespace,
                               r.dra_driver_values(cfg))
    if cfg.mode == "standalone":
        return UpstreamRelease("nvidia-device-plugin", versions.DEVICE_PLUGIN_CHART, cfg.device_plugin.chart_version,
                               versions.DEVICE_PLUGIN_REPO, "nvdp", cfg.device_plugin.namespace,
                               r.device_plugin_values(cfg))
    return None


def git_root(start: Path) -> Path | None:
    """The work tree holding `start` (which need not exist yet): the nearest ancestor with a `.git` entry.

    `.git` may be a directory (a clone) or a file (a worktree or submodule); both mark a work tree root.
    """
    path = start.resolve()
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def repo_relative_path(out: Path, cwd: Path | None = None) -> str:
    """Where `out` lies inside its Git repository, POSIX-style: what Argo CD's `path` and Flux's chart path
    need, whatever the current directory. Outside any repository: relative to `cwd` (default: the current
    directory), the best guess at where it will be committed."""
    base = Path.cwd() if cwd is None else cwd
    target = (out if out.is_absolute() else base / out).resolve()
    root = git_root(target) or base.resolve()
    return Path(os.path.relpath(target, root)).as_posix().strip("/")


def _home_namespace(cfg: StackConfig) -> str:
    return r.stack_namespace(cfg) if cfg.mode != "platform-managed" else "default"


def argocd_applications(cfg: StackConfig, chart: str, chart_path: str, git_url: str,
                        revision: str) -> list[dict[str, Any]]:
    """The stack's chart (sync wave 0: ConfigMaps before the GPU stack reads them), then the NVIDIA chart."""
    apps = [_application(chart, "0", {"repoURL": git_url, "targetRevision": revision, "path": chart_path},
                         _home_namespace(cfg))]
    up = upstream_release(cfg)
    if up is not None:
        source = {"repoURL": up.repo, "chart": up.chart, "targetRevision": up.version,
                  "helm": {"releaseName": up.release, "valuesObject": up.values}}
        apps.append(_application(up.release, "1", source, up.namespace, ["ServerSideApply=true"]))
    return apps


def _application(name: str, wave: str, source: dict[str, Any], namespace: str,
                 options: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": ARGO_NAMESPACE,
                     "annotations": {"argocd.argoproj.io/sync-wave": wave}},
        "spec": {"project": "default", "source": source,
                 "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
                 "syncPolicy": {"automated": {"prune": True, "selfHeal": True},
                                "syncOptions": ["CreateNamespace=true", *options]}},
    }


def flux_sources(cfg: StackConfig, git_url: str, revision: str) -> list[dict[str, Any]]:
    """The GitRepository holding the generated chart and the HelmRepository of the NVIDIA chart."""
    out = [{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": "gpufleet", "namespace": FLUX_NAMESPACE},
            "spec": {"interval": INTERVAL, "url": git_url, "ref": {"branch": revision}}}]
    up = upstream_release(cfg)
    if up is not None:
        out.append({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
                    "metadata": {"name": up.repo_name, "namespace": FLUX_NAMESPACE},
                    "spec": {"interval": INTERVAL, "url": up.repo,
                             **({"type": "oci"} if up.repo.startswith("oci://") else {})}})
    return out


def flux_releases(cfg: StackConfig, chart: str, chart_path: str) -> list[dict[str, Any]]:
    """HelmReleases: the stack's chart, then the NVIDIA chart depending on it (its ConfigMaps come first)."""
    own = {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
           "metadata": {"name": chart, "namespace": FLUX_NAMESPACE},
           "spec": {"interval": INTERVAL, "releaseName": chart, "targetNamespace": _home_namespace(cfg),
                    "chart": {"spec": {"chart": f"./{chart_path}", "reconcileStrategy": "Revision",
                                       "sourceRef": {"kind": "GitRepository", "name": "gpufleet"}}}}}
    out = [own]
    up = upstream_release(cfg)
    if up is not None:
        out.append({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                    "metadata": {"name": up.release, "namespace": FLUX_NAMESPACE},
                    "spec": {"interval": INTERVAL, "releaseName": up.release, "targetNamespace": up.namespace,
                             "dependsOn": [{"name": chart}],
                             "install": {"createNamespace": True, "crds": "CreateReplace"},
                             "upgrade": {"crds": "CreateReplace"},
                             "chart": {"spec": {"chart": up.chart, "version": up.version,
                                                "sourceRef": {"kind": "HelmRepository", "name": up.repo_name}}},
                             "values": up.values}})
    return out
