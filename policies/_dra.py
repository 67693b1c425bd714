"""What the planned resources say about DRA: which releases and CRs run the device plugin, the DRA GPU
plugin, a ClusterPolicy or a GPUCluster; the DRA driver's feature gates and DeviceClasses; the declared
DeviceClasses; and every ResourceClaim / ResourceClaimTemplate spec. Read from what is deployed (chart
values with each chart's defaults), not from gpufleet's config, so hand-written stacks are covered."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpufleet.nvidia import dra
from policies._common import RELEASE_TYPE, dig, each_known

CLUSTER_POLICY_TYPE = "kubernetes:nvidia.com/v1:ClusterPolicy"
GPU_CLUSTER_TYPE = "kubernetes:nvidia.com/v1alpha1:GPUCluster"
DEVICE_CLASS_TYPE = "kubernetes:resource.k8s.io/v1:DeviceClass"
CLAIM_TYPE = "kubernetes:resource.k8s.io/v1:ResourceClaim"
TEMPLATE_TYPE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"


@dataclass(frozen=True)
class Source:
    where: str
    urn: str
    node_selector: dict = field(default_factory=dict)


@dataclass(frozen=True)
class DraDriver:
    where: str
    urn: str
    gates: dict[str, bool]
    classes: frozenset[str]
    node_selector: dict = field(default_factory=dict)


@dataclass
class DraFacts:
    cluster_policies: list[Source] = field(default_factory=list)
    gpu_clusters: list[Source] = field(default_factory=list)
    device_plugins: list[Source] = field(default_factory=list)
    drivers: list[DraDriver] = field(default_factory=list)
    declared_classes: set[str] = field(default_factory=set)
    claims: list[tuple[str, str, dict]] = field(default_factory=list)
    """(what, urn, ResourceClaimSpec) of every claim and claim template."""

    def classes(self) -> set[str]:
        return self.declared_classes.union(*(d.classes for d in self.drivers))


def _on(value: Any, default: bool) -> bool:
    return default if value is None else bool(value)


def _classes(gpus: bool, compute_domains: bool) -> frozenset[str]:
    return frozenset([*(dra.GPU_DEVICE_CLASSES if gpus else ()),
                      *(dra.COMPUTE_DOMAIN_DEVICE_CLASSES if compute_domains else ())])


def _release(r, facts: DraFacts) -> None:
    props = r.props
    chart, values = str(props.get("chart") or ""), props.get("values") or {}
    where = f"release {props.get('name') or r.name} ({chart})"
    if chart.endswith("gpu-operator"):
        if _on(dig(values, "clusterPolicy", "deployCR"), True):
            facts.cluster_policies.append(Source(where, r.urn))
            if _on(dig(values, "devicePlugin", "enabled"), True):
                facts.device_plugins.append(Source(where, r.urn))
        if _on(dig(values, "gpuCluster", "deployCR"), False):
            facts.gpu_clusters.append(Source(where, r.urn))
            facts.drivers.append(DraDriver(where, r.urn,
                                           dra.effective_gates(dict(dig(values, "draDriver", "featureGates") or {})),
                                           _classes(True, _on(dig(values, "draDriver", "computeDomains", "enabled"),
                                                              True))))
    elif chart.endswith("nvidia-device-plugin"):
        facts.device_plugins.append(Source(where, r.urn, dict(values.get("nodeSelector") or {})))
    elif chart.endswith("dra-driver-nvidia-gpu"):
        gpus = _on(dig(values, "resources", "gpus", "enabled"), True)
        classes = _classes(gpus, _on(dig(values, "resources", "computeDomains", "enabled"), True))
        if gpus or classes:
            facts.drivers.append(DraDriver(where, r.urn, dra.effective_gates(dict(values.get("featureGates") or {})),
                                           classes, dict(dig(values, "kubeletPlugin", "nodeSelector") or {})))


def dra_facts(resources) -> DraFacts:
    facts = DraFacts()

    def visit(r) -> None:
        meta = r.props.get("metadata") or {}
        what = f"{r.resource_type.rsplit(':', 1)[1]} {meta.get('namespace') or 'default'}/{meta.get('name') or r.name}"
        if r.resource_type == RELEASE_TYPE:
            _release(r, facts)
        elif r.resource_type == CLUSTER_POLICY_TYPE:
            facts.cluster_policies.append(Source(f"ClusterPolicy {meta.get('name') or r.name}", r.urn))
        elif r.resource_type == GPU_CLUSTER_TYPE:
            facts.gpu_clusters.append(Source(f"GPUCluster {meta.get('name') or r.name}", r.urn))
        elif r.resource_type == DEVICE_CLASS_TYPE:
            facts.declared_classes.add(str(meta.get("name") or r.name))
        elif r.resource_type == CLAIM_TYPE:
            facts.claims.append((what, r.urn, dict(r.props.get("spec") or {})))
        elif r.resource_type == TEMPLATE_TYPE:
            facts.claims.append((what, r.urn, dict(dig(r.props, "spec", "spec") or {})))

    each_known(resources, visit)
    return facts


def device_requests(spec: dict) -> list[tuple[str, str]]:
    """(request name, deviceClassName) of every request and firstAvailable alternative of a claim spec."""
    out = []
    for req in dig(spec, "devices", "requests") or []:
        name = req.get("name")
        if req.get("exactly"):
            out.append((name, req["exactly"].get("deviceClassName")))
        for sub in req.get("firstAvailable") or []:
            out.append((f"{name}/{sub.get('name')}", sub.get("deviceClassName")))
    return out
