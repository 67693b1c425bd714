"""resource.k8s.io/v1 objects of a DRA stack: a ResourceClaimTemplate per workload with `gpu.claim`, a
ResourceClaim per named claim, and the pod fields that reference them. Shorthands become CEL selectors."""

from __future__ import annotations

import json
from typing import Any

from gpufleet.config.dra import DeviceChoice, GpuClaim, NamedClaim
from gpufleet.config.stack import StackConfig
from gpufleet.nvidia import dra
from gpufleet.render.labels import standard_labels

API_VERSION = "resource.k8s.io/v1"
#: Name of the claim in the pod (spec.resourceClaims[].name) and of its one request.
POD_CLAIM = "gpu"
REQUEST = "gpu"


def template_name(workload_name: str) -> str:
    return f"{workload_name}-gpu"


def _cel_string(text: str) -> str:
    """A CEL string literal holding `text` exactly. JSON's escapes are CEL's, except that CEL has no
    surrogate pairs, so characters outside ASCII stay as they are."""
    return json.dumps(text, ensure_ascii=False)


def selectors(choice: DeviceChoice) -> list[str]:
    """CEL selectors of a device choice: the shorthands first, then the raw ones."""
    domain = _cel_string(dra.GPU_DRIVER)
    out = []
    if choice.product is not None:
        out.append(f"device.attributes[{domain}].productName == {_cel_string(choice.product)}")
    if choice.profile is not None:
        out.append(f"device.attributes[{domain}].profile == {_cel_string(choice.profile)}")
    if choice.min_memory is not None:
        out.append(f"device.capacity[{domain}].memory.compareTo(quantity({_cel_string(choice.min_memory)})) >= 0")
    return out + list(choice.selectors)


def _exact(choice: DeviceChoice) -> dict[str, Any]:
    req: dict[str, Any] = {"deviceClassName": choice.device_class, "allocationMode": choice.allocation_mode}
    if choice.allocation_mode == "ExactCount":
        req["count"] = choice.count or 1
    sel = selectors(choice)
    if sel:
        req["selectors"] = [{"cel": {"expression": e}} for e in sel]
    return req


def _sharing_config(claim: NamedClaim) -> list[dict[str, Any]]:
    if claim.sharing is None:
        return []
    classes = [a.device_class for a in claim.first_available] or [claim.device_class]
    sharing: dict[str, Any] = {"strategy": claim.sharing.strategy}
    if claim.sharing.strategy == "MPS":
        mps = {k: v for k, v in (("defaultActiveThreadPercentage", claim.sharing.default_active_thread_percentage),
                                 ("defaultPinnedDeviceMemoryLimit", claim.sharing.default_pinned_device_memory_limit))
               if v is not None}
        if mps:
            sharing["mpsConfig"] = mps
    else:
        sharing["timeSlicingConfig"] = {"interval": claim.sharing.interval or "Default"}
    kind = dra.OPAQUE_CONFIG_KIND.get(classes[0], "GpuConfig")
    return [{"requests": [REQUEST], "opaque": {"driver": dra.GPU_DRIVER, "parameters": {
        "apiVersion": dra.OPAQUE_API_VERSION, "kind": kind, "sharing": sharing}}}]


def claim_spec(claim: GpuClaim) -> dict[str, Any]:
    """The ResourceClaimSpec: one request named `gpu`, its constraint and (named claims) the sharing config."""
    if claim.first_available:
        request: dict[str, Any] = {"name": REQUEST, "firstAvailable": [
            {"name": f"alt-{j}", **_exact(alt)} for j, alt in enumerate(claim.first_available)]}
    else:
        request = {"name": REQUEST, "exactly": _exact(claim)}
    devices: dict[str, Any] = {"requests": [request]}
    if claim.same_attribute is not None:
        devices["constraints"] = [{"requests": [REQUEST], "matchAttribute": claim.same_attribute}]
    config = _sharing_config(claim) if isinstance(claim, NamedClaim) else []
    if config:
        devices["config"] = config
    return {"devices": devices}


def claim_template(w, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The workload's ResourceClaimTemplate ([] without gpu.claim)."""
    if w.gpu is None or w.gpu.claim is None:
        return []
    return [{"apiVersion": API_VERSION, "kind": "ResourceClaimTemplate",
             "metadata": {"name": template_name(w.name), "namespace": w.namespace, "labels": labels},
             "spec": {"spec": claim_spec(w.gpu.claim)}}]


def named_claims(cfg: StackConfig, managed_by: str = "pulumi") -> list[dict[str, Any]]:
    """One ResourceClaim per `gpufleet:claims` entry."""
    return [{"apiVersion": API_VERSION, "kind": "ResourceClaim",
             "metadata": {"name": c.name, "namespace": c.namespace,
                          "labels": standard_labels(c.name, "gpu-claim", managed_by)},
             "spec": claim_spec(c)} for c in cfg.claims]


def pod_claims(w) -> list[dict[str, str]]:
    """spec.resourceClaims of the workload's pods ([] without a claim)."""
    if w.gpu is None or not w.gpu.uses_dra():
        return []
    if w.gpu.claim is not None:
        return [{"name": POD_CLAIM, "resourceClaimTemplateName": template_name(w.name)}]
    return [{"name": POD_CLAIM, "resourceClaimName": w.gpu.shared_claim}]


def container_claims(w) -> list[dict[str, str]]:
    """containers[].resources.claims of the workload's container."""
    return [{"name": POD_CLAIM}] if pod_claims(w) else []
