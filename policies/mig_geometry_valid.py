"""mig-geometry-valid: every MIG geometry in a mig-parted ConfigMap can be applied to the pool's GPUs.

The product comes from the stack's node pools that select the geometry (`migGeometry`), else from the
entry's `device-filter` PCI IDs; with neither, the geometry must fit at least one MIG-capable product.
"""

from __future__ import annotations

import yaml
from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy

from gpufleet.nvidia.mig_profiles import TABLES, check_geometry
from gpufleet.nvidia.products import PRODUCTS, find_product
from policies._common import CONFIGMAP_TYPE, STACK_CONFIG_PROPERTIES, stack_config_for


def mig_parted_documents(props) -> list[tuple[str, dict]]:
    """(key, document) for every mig-parted `version: v1` document in a ConfigMap's data."""
    docs = []
    for key, text in (props.get("data") or {}).items():
        if not isinstance(text, str) or "mig-configs" not in text:
            continue
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("mig-configs"), dict):
            docs.append((key, doc))
    return docs


def _products_by_filter(device_filter) -> list:
    ids = [device_filter] if isinstance(device_filter, str) else list(device_filter or [])
    wanted = {i.lower()[:6] for i in ids}  # 0x20B010DE -> 0x20b0
    return [p for p in PRODUCTS.values() if p.pci_device_id and p.pci_device_id.lower() in wanted]


def _candidates(cfg, name: str, group: dict) -> tuple[list, list[str]]:
    """(products to check against, their pool names) for one entry of geometry `name`."""
    if cfg is not None:
        pools = [p for p in cfg.node_pools if p.mig_geometry == name]
        products = [find_product(p.gpu.product) for p in pools]
        if pools:
            return [(p, pr) for p, pr in zip(pools, products, strict=True) if pr is not None], [p.name for p in pools]
    by_filter = _products_by_filter(group.get("device-filter"))
    return [(None, p) for p in by_filter], []


def validate(args: ResourceValidationArgs, report_violation) -> None:
    if args.resource_type != CONFIGMAP_TYPE:
        return
    docs = mig_parted_documents(args.props)
    if not docs:
        return
    cfg = stack_config_for(args)
    cm = (args.props.get("metadata") or {}).get("name") or args.name
    for key, doc in docs:
        for name, groups in doc["mig-configs"].items():
            for i, group in enumerate(groups or []):
                if not group.get("mig-enabled"):
                    if group.get("mig-devices"):
                        report_violation(f"ConfigMap {cm} {key} mig-configs.{name}[{i}]: mig-devices set while "
                                         "mig-enabled is false; expected no mig-devices.")
                    continue
                devices = {str(k): int(float(v)) for k, v in (group.get("mig-devices") or {}).items()}
                if not devices:
                    continue  # all-enabled: MIG mode on, no instances
                where = f"ConfigMap {cm} {key} mig-configs.{name}[{i}]"
                candidates, pools = _candidates(cfg, name, group)
                if candidates:
                    for pool, product in candidates:
                        if not product.mig_capable:
                            report_violation(f"{where}: node pool '{pool.name}' has {product.key} GPUs, which are "
                                             "not MIG-capable; expected MIG off there.")
                            continue
                        for problem in check_geometry(TABLES[product.mig_table], devices):
                            report_violation(f"{where}: {problem} ({product.key}"
                                             f"{', node pool ' + repr(pool.name) if pool else ''}); expected a "
                                             "geometry that fits one GPU of the product.")
                        ids = group.get("devices")
                        if pool is not None and isinstance(ids,
                                                           list) and any(int(float(d)) >= pool.gpu.count for d in ids):
                            report_violation(f"{where}: devices {ids} names a GPU index the {pool.gpu.count}-GPU nodes "
                                             f"of node pool '{pool.name}' lack.")
                elif not any(not check_geometry(t, devices) for t in TABLES.values()):
                    problems = {t.name: check_geometry(t, devices) for t in TABLES.values()}
                    best = min(problems.values(), key=len)
                    report_violation(f"{where}: {devices} fits no MIG-capable GPU (e.g. {best[0]}); expected profiles "
                                     "and counts of the pool's product.")


POLICY = ResourceValidationPolicy(
    name="mig-geometry-valid",
    description="MIG geometries use profiles of the pool's GPU product, in counts and placements that fit one GPU.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={**STACK_CONFIG_PROPERTIES}),
    validate=validate,
)
