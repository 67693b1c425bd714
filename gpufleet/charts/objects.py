"""Which objects the stack's own chart holds, and which of their fields the chart's values control.

Pure: a StackConfig in, a list of `ChartObject` out. The manifests come from `gpufleet.render`, exactly
as `components.gpu_stack.GpuStack` creates them; the parity test holds the two together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpufleet.config.stack import StackConfig
from gpufleet.render import gpu_stack as r
from gpufleet.render.claims import named_claims
from gpufleet.render.mig_manager import mig_manager_objects
from gpufleet.render.tolerations import MIG_MANAGER, with_pool_taints
from gpufleet.render.workloads import (
    env_secret_name,
    gpu_quotas,
    namespace,
    notebook_token_secret_name,
    workload_objects,
)

#: values.yaml section per workload kind.
VALUES_SECTION = {"inference": "inference", "notebook": "notebooks", "job": "jobs"}
#: Path of the (only) container in a Deployment's or Job's manifest.
CONTAINER = ("spec", "template", "spec", "containers", 0)


@dataclass(frozen=True)
class ChartObject:
    """One template of the chart: a rendered manifest, when it is installed, and what values replace."""

    file: str
    """File name under templates/."""
    manifest: dict[str, Any]
    gate: str
    """Go-template condition; the object is rendered only when it holds."""
    prelude: tuple[str, ...] = ()
    """Go-template lines before the gate (variable bindings)."""
    substitutions: dict[tuple[Any, ...], str] = field(default_factory=dict)
    """Path in the manifest -> Go-template expression that replaces the value there."""


def workload_key(cfg: StackConfig, w) -> str:
    """The workload's key under its values section: its name, or name-namespace when the name repeats."""
    same = [x for x in cfg.workloads if x.name == w.name and x.kind == w.kind]
    return w.name if len(same) == 1 else f"{w.name}-{w.namespace}"


def _file(kind: str, name: str, namespace: str | None = None) -> str:
    suffix = f"-{namespace}" if namespace else ""
    return f"{name}{suffix}-{kind.lower()}.yaml"


def _workload_objects(cfg: StackConfig, w) -> list[ChartObject]:
    key = workload_key(cfg, w)
    section = VALUES_SECTION[w.kind]
    prelude = (f'{{{{- $w := index .Values.{section} "{key}" }}}}',)
    out = []
    for obj in workload_objects(cfg, w):
        if obj["kind"] == "Secret" and obj["metadata"]["name"] == env_secret_name(w.name):
            continue  # secret env values never live in the chart: the user creates this Secret (NOTES.txt)
        subs: dict[tuple[Any, ...], str] = {}
        gate = "$w.enabled"
        if obj["kind"] in ("Deployment", "Job"):
            subs[(*CONTAINER, "image")] = "{{ $w.image | quote }}"
        if obj["kind"] == "Deployment" and w.kind == "inference":
            subs[("spec", "replicas")] = "{{ $w.replicas }}"
        if obj["kind"] == "Secret":
            # The token never lives in the chart: it comes from values at install time, else the user
            # creates this Secret (docs/charts.md); the Deployment references it by name either way.
            gate = "and $w.enabled $w.token"
            obj = {**obj, "stringData": {"token": None}}
            subs[("stringData", "token")] = "{{ $w.token | quote }}"
        name = obj["metadata"]["name"]
        dup = len([x for x in cfg.workloads if x.name == w.name]) > 1
        out.append(ChartObject(_file(obj["kind"], name, w.namespace if dup else None), obj, gate, prelude, subs))
    return out


def chart_objects(cfg: StackConfig) -> list[ChartObject]:
    """The stack's own objects in the order GpuStack creates them (Helm sorts them by kind on install).

    Node labels are not in the chart: Pulumi patches Nodes server-side, but a Helm release owning Node
    objects would delete them on uninstall. NOTES.txt prints the `kubectl label` commands instead.
    """
    objs: list[ChartObject] = []
    seen_ns: set[str] = set()
    if cfg.mode != "platform-managed":
        ns = r.stack_namespace(cfg)
        seen_ns.add(ns)
        objs.append(ChartObject(_file("Namespace", ns), namespace(ns), ".Values.namespaces.create"))
        sharing = r.sharing_configmap(cfg)
        if sharing is not None:
            objs.append(ChartObject(_file("ConfigMap", sharing["metadata"]["name"]), sharing,
                                    ".Values.sharingConfig.create"))
        mig = r.mig_configmap(cfg)
        if mig is not None:
            objs.append(ChartObject(_file("ConfigMap", mig["metadata"]["name"]), mig, ".Values.migConfig.create"))
            if cfg.mode == "standalone":
                for m in mig_manager_objects(ns, tolerations=with_pool_taints(MIG_MANAGER, cfg)):
                    objs.append(ChartObject(_file(m["kind"], m["metadata"]["name"]), m, ".Values.migManager.create"))
    for ns in cfg.namespace_names():
        if ns not in seen_ns:
            objs.append(ChartObject(_file("Namespace", ns), namespace(ns), ".Values.namespaces.create"))
    for quota in gpu_quotas(cfg):
        objs.append(ChartObject(_file("ResourceQuota", quota["metadata"]["name"], quota["metadata"]["namespace"]),
                                quota, ".Values.namespaces.create"))
    for claim in named_claims(cfg):
        objs.append(ChartObject(_file("ResourceClaim", claim["metadata"]["name"], claim["metadata"]["namespace"]),
                                claim, ".Values.claims.create"))
    for w in cfg.workloads:
        objs += _workload_objects(cfg, w)
    return objs


def env_secrets(cfg: StackConfig) -> list[dict[str, Any]]:
    """Per workload with secret env values: the Secret its pods read them from, which the user creates."""
    return [{"section": VALUES_SECTION[w.kind], "key": workload_key(cfg, w), "name": w.name,
             "namespace": w.namespace, "secret": env_secret_name(w.name),
             "keys": sorted(w.secret_env()), "config_keys": [w.secret_env()[k] for k in sorted(w.secret_env())]}
            for w in cfg.workloads if w.secret_env()]


def token_secret_names(cfg: StackConfig) -> list[tuple[str, str]]:
    """(namespace, Secret name) of every notebook's token Secret."""
    return [(w.namespace, notebook_token_secret_name(w)) for w in cfg.workloads if w.kind == "notebook"]
