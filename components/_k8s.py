"""Turn a rendered manifest (plain dict) into the matching typed pulumi_kubernetes resource."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

_KINDS = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
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


def child_opts(parent: pulumi.Resource, provider: pulumi.ProviderResource | None,
               depends_on: list[pulumi.Resource] | None = None) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=depends_on or [])
