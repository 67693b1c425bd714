"""Manifests of the sample GPU services: inference Deployments + Services, notebooks, batch Jobs."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from gpufleet.config.stack import StackConfig
from gpufleet.config.workload_rules import default_port_name
from gpufleet.config.workloads import BatchJob, InferenceService, Notebook, Probe, ServiceExposure
from gpufleet.nvidia.sharing import workload_resource
from gpufleet.render.claims import claim_template, container_claims, pod_claims
from gpufleet.render.labels import (
    EXPECTED_GPU_MEMORY_ANNOTATION,
    MODEL_MEMORY_ANNOTATION,
    selector_labels,
    standard_labels,
)

COMPONENT = {"inference": "inference", "notebook": "notebook", "job": "batch"}


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "gpufleet"}}}


GPU_QUOTA_NAME = "gpufleet-gpu-quota"


def gpu_quotas(cfg: StackConfig) -> list[dict[str, Any]]:
    """The ResourceQuota of each namespace with a `gpuQuota` (extended resources count only as requests.*)."""
    return [{"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": GPU_QUOTA_NAME, "namespace": ns, "labels": {"app.kubernetes.io/part-of": "gpufleet"}},
             "spec": {"hard": {f"requests.{r}": str(n) for r, n in sorted(spec.gpu_quota.items())}}}
            for ns, spec in sorted(cfg.namespaces.items()) if spec.gpu_quota]


def gpu_resource(cfg: StackConfig, w) -> str | None:
    """The extended resource the workload's container requests (None: no GPU, or platform-pinned)."""
    if w.gpu is None or w.gpu.visible_devices is not None or w.gpu.uses_dra():
        return None
    pool = cfg.pool(w.node_pool)
    sharing = cfg.sharing_of_pool(pool) if pool else None
    rename = bool(sharing and sharing.rename_by_default)
    return workload_resource(cfg.device_plugin.mig_strategy, w.gpu.profile, w.gpu.shared, rename)


#: Distributions whose containerd registers the nvidia runtime it finds without making it the default
#: (k3s-io/docs docs/advanced.md, "NVIDIA Container Runtime Support": pods name the `nvidia` RuntimeClass;
#: RKE2 shares k3s's agent).
NOT_DEFAULT_PRESETS = ("k3s", "rke2")


def gpu_runtime_class(cfg: StackConfig) -> str | None:
    """The RuntimeClass GPU pods must name where the GPU stack hands out GPUs through NVIDIA_VISIBLE_DEVICES
    (which only the nvidia runtime acts on) and nvidia is not containerd's default runtime; None elsewhere.

    Operator mode: with CDI off and setAsDefault false; the operator creates the RuntimeClass (its
    `operator.runtimeClass` value, cluster.runtime.runtimeClass). Standalone device plugin (its default
    device list strategy is envvar): with setAsDefault false, or unset under the k3s / rke2 presets; the
    plugin's and GFD's pods name it too (the chart's `runtimeClassName`), and the RuntimeClass is the host's
    (k3s and RKE2 create `nvidia` for the runtime they detect)."""
    rt = cfg.cluster.runtime
    if cfg.mode == "operator":
        off = not cfg.operator.cdi and cfg.operator.nvidia_runtime_is_default(rt.set_as_default) is False
        return rt.runtime_class if off else None
    if cfg.mode == "standalone" and not cfg.uses_dra():
        off = rt.set_as_default is False or (rt.set_as_default is None and rt.preset in NOT_DEFAULT_PRESETS)
        return rt.runtime_class if off else None
    return None


def runtime_class_name(cfg: StackConfig, w) -> str | None:
    """The RuntimeClass a GPU workload's pods must name (gpu_runtime_class), or None: a pod without it runs
    under runc and sees no GPU."""
    return gpu_runtime_class(cfg) if gpu_resource(cfg, w) is not None else None


def _probe(p: Probe | None) -> dict[str, Any] | None:
    if p is None:
        return None
    action = {"httpGet": {"path": p.path, "port": p.port}} if p.path else {"tcpSocket": {"port": p.port}}
    return {**action, "initialDelaySeconds": p.initial_delay_seconds, "periodSeconds": p.period_seconds}


def _container(cfg: StackConfig, w, ports: list[dict[str, Any]],
               extra_env: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    c: dict[str, Any] = {"name": w.name, "image": w.image, "imagePullPolicy": "IfNotPresent"}
    if w.command:
        c["command"] = list(w.command)
    if w.args:
        c["args"] = list(w.args)
    if ports:
        c["ports"] = ports
    env = [{"name": k, "value": v} if isinstance(v, str) else
           {"name": k, "valueFrom": {"secretKeyRef": {"name": env_secret_name(w.name), "key": k}}}
           for k, v in sorted(w.env.items())]
    if w.gpu is not None and w.gpu.visible_devices is not None:
        env.append({"name": "NVIDIA_VISIBLE_DEVICES", "value": w.gpu.visible_devices})
    env += list(extra_env)
    if env:
        c["env"] = env
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    res = gpu_resource(cfg, w)
    if res is not None:
        limits[res] = str(w.gpu.count)
    if w.resources.cpu:
        requests["cpu"] = w.resources.cpu
    if w.resources.memory:
        requests["memory"] = w.resources.memory
        limits["memory"] = w.resources.memory
    claims = container_claims(w)
    if limits or requests or claims:
        c["resources"] = {k: v for k, v in (("limits", limits), ("requests", requests), ("claims", claims)) if v}
    return c


def _placement(cfg: StackConfig, w) -> dict[str, Any]:
    """nodeSelector / affinity / tolerations that aim the pod at its node pool."""
    spec: dict[str, Any] = {}
    selector = dict(w.node_selector)
    pool = cfg.pool(w.node_pool)
    tolerations = [t.model_dump(exclude_none=True) for t in w.tolerations]
    if pool is not None:
        if pool.node_selector:
            selector = {**pool.node_selector, **selector}
        elif len(pool.nodes) == 1:
            selector = {"kubernetes.io/hostname": pool.nodes[0], **selector}
        elif pool.nodes:
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": list(pool.nodes)}]}]}}}
        for taint in pool.taints:
            tol = {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
            if tol not in tolerations:
                tolerations.append(tol)
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    return spec


def _pod_template(cfg: StackConfig, w, labels: dict[str, str], container: dict[str, Any],
                  **spec_extra) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": labels}
    annotations = _model_annotations(w) if w.gpu is not None and w.model is not None else {}
    if w.gpu is not None and w.gpu.memory_mib is not None:
        annotations[EXPECTED_GPU_MEMORY_ANNOTATION] = str(w.gpu.memory_mib)
    if annotations:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {**spec_extra, **_placement(cfg, w)}
    if runtime_class_name(cfg, w) is not None:
        spec["runtimeClassName"] = runtime_class_name(cfg, w)
    spec["containers"] = [container]
    if pod_claims(w):
        spec["resourceClaims"] = pod_claims(w)
    if w.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": n} for n in w.image_pull_secrets]
    return {"metadata": meta, "spec": spec}


def _model_annotations(w) -> dict[str, str]:
    """The facts to recompute the engine's verdict on any node, and the least memory per pod it starts in
    (MiB: per GPU x the GPUs of one server)."""
    from gpufleet.config.model_serving import minimum_mib, served_model

    try:
        served = served_model(w.model, w.image, [*(w.command or []), *(w.args or [])])
    except (ValueError, TypeError, ZeroDivisionError):
        return {}  # the config rules report it; nothing is rendered for a stack with errors
    a = served.args
    need = minimum_mib(served) * a.tensor_parallel * a.pipeline_parallel * a.data_parallel
    doc = {**served.to_json(), "expectedMiB": need}
    facts = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return {EXPECTED_GPU_MEMORY_ANNOTATION: str(need), MODEL_MEMORY_ANNOTATION: facts}


def _service(w, labels: dict[str, str], ports: list[dict[str, Any]], svc: ServiceExposure) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": svc.type, "selector": selector_labels(w.name), "ports": ports}
    if svc.type == "LoadBalancer" and svc.source_ranges:
        spec["loadBalancerSourceRanges"] = list(svc.source_ranges)
    meta: dict[str, Any] = {"name": w.name, "namespace": w.namespace, "labels": labels}
    if svc.annotations:
        meta["annotations"] = dict(svc.annotations)
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def _port_name(port: int, name: str | None) -> str:
    return name or default_port_name(port)


def env_secret_name(workload_name: str) -> str:
    """The Secret holding a workload's secret env values (key = env var name)."""
    return f"{workload_name}-env"


def env_secret(w, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The workload's env Secret, without values (the component fills them as Pulumi secrets); [] when it
    takes no env value from a secret."""
    if not w.secret_env():
        return []
    return [{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
             "metadata": {"name": env_secret_name(w.name), "namespace": w.namespace, "labels": labels}}]


def inference_service(cfg: StackConfig, w: InferenceService, managed_by: str = "pulumi") -> list[dict[str, Any]]:
    """The Deployment and, when it has ports, its Service."""
    labels = standard_labels(w.name, COMPONENT[w.kind], managed_by)
    cports = [{"containerPort": p.target_port or p.port, "name": _port_name(p.port, p.name), "protocol": p.protocol}
              for p in w.ports]
    container = _container(cfg, w, cports)
    for key, probe in (("readinessProbe", w.probes.readiness), ("livenessProbe", w.probes.liveness)):
        if probe is not None:
            container[key] = _probe(probe)
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": w.name, "namespace": w.namespace, "labels": labels},
                  "spec": {"replicas": w.replicas, "selector": {"matchLabels": selector_labels(w.name)},
                           "template": _pod_template(cfg, w, labels, container)}}
    objs = [*env_secret(w, labels), *claim_template(w, labels), deployment]
    if w.ports:
        sports = [{"name": _port_name(p.port, p.name), "port": p.port, "targetPort": p.target_port or p.port,
                   "protocol": p.protocol} for p in w.ports]
        objs.append(_service(w, labels, sports, w.service))
    return objs


def notebook_token_secret_name(w: Notebook) -> str:
    return f"{w.name}-token"


def notebook(cfg: StackConfig, w: Notebook, managed_by: str = "pulumi") -> list[dict[str, Any]]:
    """The token Secret (without its value: the component fills it as a Pulumi secret), Deployment, Service."""
    labels = standard_labels(w.name, COMPONENT[w.kind], managed_by)
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
              "metadata": {"name": notebook_token_secret_name(w), "namespace": w.namespace, "labels": labels}}
    token_env = [{"name": "JUPYTER_TOKEN", "valueFrom": {"secretKeyRef": {
        "name": notebook_token_secret_name(w), "key": "token"}}}]
    container = _container(cfg, w, [{"containerPort": w.port, "name": "jupyter", "protocol": "TCP"}], token_env)
    container["readinessProbe"] = {"tcpSocket": {"port": w.port}, "initialDelaySeconds": 5, "periodSeconds": 10}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": w.name, "namespace": w.namespace, "labels": labels},
                  "spec": {"replicas": 1, "selector": {"matchLabels": selector_labels(w.name)},
                           "strategy": {"type": "Recreate"},
                           "template": _pod_template(cfg, w, labels, container)}}
    service = _service(w, labels, [{"name": "jupyter", "port": w.port, "targetPort": w.port, "protocol": "TCP"}],
                       w.service)
    return [secret, *env_secret(w, labels), *claim_template(w, labels), deployment, service]


def batch_job(cfg: StackConfig, w: BatchJob, managed_by: str = "pulumi") -> list[dict[str, Any]]:
    labels = standard_labels(w.name, COMPONENT[w.kind], managed_by)
    spec: dict[str, Any] = {"completions": w.completions, "parallelism": w.parallelism, "backoffLimit": w.backoff_limit}
    if w.ttl_seconds_after_finished is not None:
        spec["ttlSecondsAfterFinished"] = w.ttl_seconds_after_finished
    spec["template"] = _pod_template(cfg, w, labels, _container(cfg, w, []), restartPolicy="Never")
    return [*env_secret(w, labels), *claim_template(w, labels), {"apiVersion": "batch/v1", "kind": "Job",
                                     "metadata": {"name": w.name, "namespace": w.namespace, "labels": labels},
                                     "spec": spec}]


def workload_objects(cfg: StackConfig, w, managed_by: str = "pulumi") -> list[dict[str, Any]]:
    builders: dict[str, Callable[..., list[dict[str, Any]]]] = {
        "inference": inference_service, "notebook": notebook, "job": batch_job}
    return builders[w.kind](cfg, w, managed_by)
