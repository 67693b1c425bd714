"""Turn a rendered manifest (plain dict) into the matching typed pulumi_kubernetes resource."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpufleet.render.workloads import env_secret_name

_KINDS = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "ResourceQuota"): k8s.core.v1.ResourceQuota,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("apps/v1", "DaemonSet"): k8s.apps.v1.DaemonSet,
    ("batch/v1", "Job"): k8s.batch.v1.Job,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("resource.k8s.io/v1", "ResourceClaim"): k8s.resource.v1.ResourceClaim,
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): k8s.resource.v1.ResourceClaimTemplate,
}
_BODY_FIELDS = ("spec", "data", "string_data", "type", "rules", "role_ref", "subjects")
_WIRE = {"string_data": "stringData", "role_ref": "roleRef"}


def from_manifest(name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions, **overrides: Any):
    """Create the typed resource for `manifest`; keyword overrides (e.g. string_data) win over the dict."""
    cls = _KINDS[(manifest["apiVersion"], manifest["kind"])]
    kwargs: dict[str, Any] = {"metadata": manifest["metadata"]}
    for field in _BODY_FIELDS:
        wire = _WIRE.get(field, field)
        if wire in manifest:
            kwargs[field] = manifest[wire]
    kwargs.update(overrides)
    return cls(name, opts=opts, **kwargs)


def env_secret(name: str, manifests: list[dict[str, Any]], values: Mapping[str, pulumi.Input[str]],
               opts: pulumi.ResourceOptions):
    """The workload's env Secret (gpufleet.render.workloads.env_secret) holding `values` (env var name ->
    value), each made a Pulumi secret; None when the workload reads no env value from a secret."""
    workload = next(m for m in manifests if m["kind"] in ("Deployment", "Job"))
    wanted = env_secret_name(workload["metadata"]["name"])
    manifest = next((m for m in manifests if m["kind"] == "Secret" and m["metadata"]["name"] == wanted), None)
    if manifest is None:
        return None
    data = {key: pulumi.Output.secret(value) for key, value in sorted(values.items())}
    return from_manifest(f"{name}-env", manifest, opts, string_data=data)


def is_env_secret(manifest: dict[str, Any], manifests: list[dict[str, Any]]) -> bool:
    workload = next(m for m in manifests if m["kind"] in ("Deployment", "Job"))
    return (manifest["kind"] == "Secret"
            and manifest["metadata"]["name"] == env_secret_name(workload["metadata"]["name"]))


def claim_template(name: str, manifests: list[dict[str, Any]], opts: pulumi.ResourceOptions):
    """The workload's ResourceClaimTemplate (gpufleet.render.claims.claim_template); None without one."""
    manifest = next((m for m in manifests if m["kind"] == "ResourceClaimTemplate"), None)
    return from_manifest(f"{name}-claim-template", manifest, opts) if manifest is not None else None


def child_opts(parent: pulumi.Resource, provider: pulumi.ProviderResource | None,
               depends_on: list[pulumi.Resource] | None = None) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=depends_on or [])
