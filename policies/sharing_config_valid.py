"""sharing-config-valid: device-plugin sharing configs the plugin accepts, on the MIG setup they meet.

Reads what is deployed, not gpufleet's own config, so hand-written configs are covered: device-plugin
config documents (`version: v1`) in ConfigMaps and in chart values (gpu-operator
`devicePlugin.config.data`, nvidia-device-plugin `config.map`), the MIG strategy of the releases and
of the documents' `flags`, and the mig-parted geometries in ConfigMaps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from gpufleet.nvidia.products import find_product
from policies._common import CONFIGMAP_TYPE, RELEASE_TYPE, STACK_CONFIG_PROPERTIES, dig, each_known, stack_config_for
from policies.mig_geometry_valid import mig_parted_documents

MPS_MAX_REPLICAS = 48  # compute capability >= 7.5 (mps/device.go maxClients); 16 below


def _doc(text: Any) -> Mapping | None:
    if isinstance(text, Mapping):
        return text if text.get("version") == "v1" else None
    if not isinstance(text, str):
        return None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if isinstance(doc, dict) and doc.get("version") == "v1" and ("sharing" in doc or "flags" in doc) \
            and "mig-configs" not in doc:
        return doc
    return None


def _collect(resources) -> tuple[list, list, list]:
    """(device-plugin docs as (where, name, doc, urn), release MIG strategies,
    MIG geometries (where, name, groups, urn))."""
    docs, strategies, geometries = [], [], []

    def visit(r) -> None:
        if r.resource_type == CONFIGMAP_TYPE:
            cm = (r.props.get("metadata") or {}).get("name") or r.name
            for key, text in (r.props.get("data") or {}).items():
                doc = _doc(text)
                if doc is not None:
                    docs.append((f"ConfigMap {cm} key {key}", key, doc, r.urn))
            for key, doc in mig_parted_documents(r.props):
                for name, groups in doc["mig-configs"].items():
                    geometries.append((f"ConfigMap {cm} {key} mig-configs.{name}", name, groups or [], r.urn))
        elif r.resource_type == RELEASE_TYPE:
            values = r.props.get("values") or {}
            rel = r.props.get("name") or r.name
            strategy = dig(values, "mig", "strategy") or values.get("migStrategy")
            if strategy:
                strategies.append((f"release {rel}", strategy))
            embedded = {**(dig(values, "devicePlugin", "config", "data") or {}), **(dig(values, "config", "map") or {})}
            for key, text in embedded.items():
                doc = _doc(text)
                if doc is not None:
                    docs.append((f"release {rel} config {key}", key, doc, r.urn))

    each_known(resources, visit)
    return docs, strategies, geometries


def _mig_enabled(geometries) -> bool:
    return any(g.get("mig-enabled") and any(float(v) > 0 for v in (g.get("mig-devices") or {}).values())
               for _, _, groups, _ in geometries for g in groups)


def validate(args: StackValidationArgs, report_violation) -> None:
    docs, strategies, geometries = _collect(args.resources)
    cfg = stack_config_for(args)
    release_strategy = next((s for _, s in strategies), None)
    for where, name, doc, urn in docs:
        sharing = doc.get("sharing") or {}
        strategy = dig(doc, "flags", "migStrategy") or release_strategy or "none"
        if sharing.get("timeSlicing") and sharing.get("mps"):
            report_violation(f"{where} sets both sharing.timeSlicing and sharing.mps; expected one of them "
                             "(they are mutually exclusive and MPS silently wins).", urn)
        for method in ("timeSlicing", "mps"):
            block = sharing.get(method)
            if not block:
                continue
            for i, res in enumerate(block.get("resources") or []):
                replicas = float(res.get("replicas") or 0)
                rname = res.get("name")
                at = f"{where} sharing.{method}.resources[{i}]"
                if replicas < 2:
                    report_violation(f"{at} has replicas {replicas:g}; expected at least 2 (the device plugin "
                                     "refuses: number of replicas must be >= 2).", urn)
                if method == "mps":
                    cap = MPS_MAX_REPLICAS
                    if cfg is not None:
                        products = [find_product(p.gpu.product) for p in cfg.node_pools
                                    if (p.sharing or cfg.device_plugin.default_sharing) == name]
                        cap = min([p.mps_max_clients for p in products if p] or [cap])
                    if replicas > cap:
                        report_violation(f"{at} has {replicas:g} MPS replicas; expected at most {cap} (maximum "
                                         "allowed replicas exceeded).", urn)
                    if rname != "nvidia.com/gpu":
                        report_violation(f"{at} shares '{rname}' with MPS; expected nvidia.com/gpu (MPS shares "
                                         "only full GPUs).", urn)
                elif isinstance(rname, str) and rname.startswith("nvidia.com/mig-") and strategy != "mixed":
                    report_violation(f"{at} time-slices '{rname}' under MIG strategy '{strategy}'; expected "
                                     "migStrategy mixed (only it advertises nvidia.com/mig-<profile>).", urn)
        if sharing.get("mps"):
            pools_with_mig = [p.name for p in cfg.node_pools if cfg is not None
                              and (p.sharing or cfg.device_plugin.default_sharing) == name
                              and cfg.mig_profiles_of_pool(p)] if cfg is not None else []
            if strategy == "mixed" or (strategy == "single" and _mig_enabled(geometries)) or pools_with_mig:
                report_violation(f"{where} uses MPS with MIG (strategy '{strategy}'"
                                 f"{', node pools ' + ', '.join(pools_with_mig) if pools_with_mig else ''}); expected "
                                 "time-slicing on MIG devices (MPS is not supported for MIG devices).", urn)
    strategies_set = {s for _, s in strategies} | {dig(d, "flags", "migStrategy") for _, _, d, _ in docs} - {None}
    if "single" in strategies_set:
        for where, _name, groups, urn in geometries:
            enabled = [g for g in groups if g.get("mig-enabled")]
            if not enabled:
                continue
            profiles = {p for g in enabled for p, n in (g.get("mig-devices") or {}).items() if float(n) > 0}
            covers_all = len(enabled) == len(groups) and all(g.get("devices") == "all" for g in enabled)
            if len(profiles) > 1 or not covers_all:
                report_violation(f"{where} mixes {sorted(profiles) if len(profiles) > 1 else 'MIG on and off'} on one "
                                 "node under MIG strategy single; expected one profile on every GPU of a node (else "
                                 "the plugin marks the node MIG-INVALID), or strategy mixed.", urn)


POLICY = StackValidationPolicy(
    name="sharing-config-valid",
    description="Device plugin sharing configs use one method, at least 2 replicas, MPS only on whole GPUs within its "
                "limit, and a MIG strategy their geometries satisfy.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={**STACK_CONFIG_PROPERTIES}),
    validate=validate,
)
