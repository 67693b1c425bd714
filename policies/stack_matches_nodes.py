"""stack-matches-nodes: the stack fits the nodes it will run on (checked when node facts are given).

With `nodesFile` (`gpufleet plan --nodes FILE`) or `kubeconfig`, the stack config is checked against the
real nodes, labels the stack itself sets counting as present:
- the distribution the GPU nodes run (kubeletVersion `+k3s` / `+rke2` / `+k0s`, MicroK8s labels) against
  `cluster.runtime.preset` (operator mode, toolkit on, no path overrides);
- the labels the GPU stack's own pods select GPU nodes by (policies/_placement.py);
- `nvidia.com/gpu.product` values in workloads' node selectors against what the nodes carry;
- each pool's `gpu.product` against the product its member nodes report.
Without node facts nothing is checked here; `gpufleet plan` prints that it was not.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from gpufleet.nvidia.products import find_product
from gpufleet.nvidia.runtime_presets import distribution_of
from policies import _placement as placement
from policies._common import POD_SPEC_PATHS, RELEASE_TYPE, STACK_CONFIG_PROPERTIES, dig, each_known, pod_spec
from policies._node_facts import (
    NODE_FACTS_PROPERTIES,
    PRODUCT_LABEL,
    CapacityUnavailable,
    base_product,
    gpu_nodes,
    load_nodes,
    names,
    observed_product,
    planned_labels,
    planned_product,
    pool_members,
    product_key,
    runs_gfd,
    shows_gpu,
    stack_for_nodes,
    views,
)
from policies.runtime_paths import problems as path_problems


def _distribution_evidence(node) -> str:
    n = node.node
    if n.kubelet_version and distribution_of(n.kubelet_version, "", {}) != "containerd":
        return f"kubeletVersion {n.kubelet_version}"
    return f"containerRuntimeVersion {n.container_runtime}" if n.container_runtime else "its labels"


def runtime_problems(cfg, where: str, gpu) -> list[str]:
    runtime = cfg.cluster.runtime
    if cfg.mode != "operator" or not cfg.operator.toolkit.enabled or runtime.socket or runtime.config_path:
        return []  # no toolkit from gpufleet, or paths the user set by hand
    by_distro: dict[str, list] = {}
    for node, _ in gpu:
        if node.node.kubelet_version or node.node.container_runtime:  # an NVML-only entry says nothing
            distro = distribution_of(node.node.kubelet_version, node.node.container_runtime, node.node.labels)
            if distro is not None and distro != runtime.preset:
                by_distro.setdefault(distro, []).append(node)
    out = []
    env = {e["name"]: e["value"] for e in runtime.toolkit_env()}
    for distro, nodes in sorted(by_distro.items()):
        wrong = path_problems(distro, env)
        if wrong:
            out.append(f"{where}: gpufleet:cluster.runtime.preset is {runtime.preset}, but node(s) {names(nodes)} run "
                       f"{distro} ({_distribution_evidence(nodes[0])}): {'; '.join(wrong)}. The container toolkit "
                       f"then configures a containerd that {distro} does not run, so the nvidia runtime is never "
                       f"registered in {distro}'s containerd and every GPU pod on these nodes fails to start (no "
                       f"runtime for \"nvidia\" is configured). Expected cluster.runtime.preset: {distro}.")
    return out


def placement_problems(cfg, where: str, gpu, release_values: dict[str, dict]) -> list[str]:
    found = placement.component(cfg, release_values)
    if found is None:
        return []
    what, terms, node_selector, own_nfd = found
    missing = [(n, pool) for n, pool in gpu
               if not placement.selects(placement.nfd_planned(n.labels) if own_nfd else n.labels, node_selector, terms)]
    if not missing:
        return []
    wanted = placement.describe_terms(terms)
    if node_selector:
        wanted = f"{', '.join(f'{k}={v}' for k, v in node_selector.items())} and one of: {wanted}"
    qualified = sorted({k for n, _ in missing for k in placement.class_qualified_nfd(n.labels)} - {
        e["key"] for term in terms for e in term})
    hint = f" (they carry NFD's class-qualified {', '.join(qualified)}, which it does not select)" if qualified else ""
    if cfg.mode == "operator":
        fix = "NFD running with its PCI labels on these nodes, or gpufleet:operator.nfd: true"
        effect = "they advertise no GPU and every GPU pod aimed at them stays Pending"
    elif cfg.uses_dra():
        pools = sorted({f"gpufleet:nodePools[{cfg.node_pools.index(p)}].nodes" for _, p in missing if p is not None})
        fix = ("NFD's PCI labels or nvidia.com/gpu.present=true on these nodes" + (
            f"; list them in {', '.join(pools)} and gpufleet labels them nvidia.com/gpu.present=true" if pools else ""))
        effect = "no ResourceSlice is published for their GPUs and every claim on them stays Pending"
    else:
        fix = "gpufleet:devicePlugin.nfd: true (its NFD labels pci-10de), or nvidia.com/gpu.present=true on these nodes"
        effect = "they advertise no GPU and every GPU pod aimed at them stays Pending"
    return [f"{where}: {what} on node(s) {names(n for n, _ in missing)}: they carry none of {wanted}{hint}, so "
            f"{effect}. Expected {fix}."]


def _carried_products(cfg, nodes, gpu) -> tuple[dict[str, list], dict[str, list]] | None:
    """(product label value -> nodes carrying it now, value -> nodes that will once the stack applies); None
    when a GPU node's product is unknown (no GFD label, no NVML facts), so a selector cannot be judged."""
    pools = {n.name: p for n, p in gpu}
    now: dict[str, list] = {}
    later: dict[str, list] = {}
    for n in nodes:
        product = observed_product(n.node)
        if product is None:
            if n.name in pools or shows_gpu(n.node):  # GFD will label it: with what, nothing here says
                return None
            continue
        current = n.node.labels.get(PRODUCT_LABEL)
        if current:
            now.setdefault(current, []).append(n)
        if runs_gfd(cfg):
            planned = planned_product(cfg, pools[n.name], base_product(product)) if pools.get(n.name) else product
            if planned != current:
                later.setdefault(planned, []).append(n)
    return now, later


def _selector_source(cfg, meta: dict) -> str:
    for i, w in enumerate(cfg.workloads):
        if w.name == meta.get("name") and w.namespace == (meta.get("namespace") or "default"):
            if PRODUCT_LABEL in w.node_selector:
                return f" (gpufleet:workloads[{i}].nodeSelector)"
            for j, pool in enumerate(cfg.node_pools):
                if pool.name == w.node_pool and PRODUCT_LABEL in pool.node_selector:
                    return f" (gpufleet:nodePools[{j}].nodeSelector)"
    return ""


def _closest(wanted: str, values) -> str | None:
    """The one carried value that names the same GPU differently (NVIDIA- prefix, -SHARED suffix, case)."""
    found = {v for v in values if product_key(v) == product_key(wanted)}
    return found.pop() if len(found) == 1 else None


def selector_problems(cfg, nodes, gpu, resources, report) -> None:
    carried = _carried_products(cfg, nodes, gpu)
    if carried is None or not (carried[0] or carried[1]):
        return
    now, later = carried
    shown = "; ".join(f"{v} ({names(ns, 3)})" for v, ns in sorted(now.items())) or "none"
    if later:
        shown += "; once this stack applies, " + "; ".join(f"{v} ({names(ns, 3)})" for v, ns in sorted(later.items()))

    def check(r) -> None:
        if r.resource_type not in POD_SPEC_PATHS:
            return
        wanted = (dig(pod_spec(r.resource_type, r.props), "nodeSelector") or {}).get(PRODUCT_LABEL)
        if wanted is None or str(wanted) in now or str(wanted) in later:
            return
        meta = dig(r.props, "metadata") or {}
        kind = r.resource_type.rsplit(":", 1)[-1]
        closest = _closest(str(wanted), [*now, *later])
        expected = f"{PRODUCT_LABEL}: {closest}, the name GFD gives this GPU" if closest else "a value a node carries"
        report(f"{kind} {meta.get('namespace') or 'default'}/{meta.get('name') or r.name} selects "
               f"{PRODUCT_LABEL}={wanted}{_selector_source(cfg, meta)}, but no node has it; the nodes carry "
               f"{shown}. Its pods stay Pending (node(s) didn't match Pod's node affinity/selector). "
               f"Expected {expected}.", r.urn)

    each_known(resources, check)


def pool_product_problems(cfg, where: str, nodes) -> list[str]:
    out = []
    for j, pool in enumerate(cfg.node_pools):
        declared = find_product(pool.gpu.product)
        want = declared.label if declared else pool.gpu.product
        other: dict[str, list] = {}
        for n in pool_members(pool, nodes) or ():
            product = observed_product(n.node)
            if product is not None and product_key(product) != product_key(want):
                other.setdefault(base_product(product), []).append(n)
        for product, members in sorted(other.items()):
            mig = (f"; MIG geometry {pool.mig_geometry}, made for {want}, fails to apply there (mig-manager sets "
                   "nvidia.com/mig.config.state=failed)" if pool.mig_geometry else "")
            out.append(f"{where}: gpufleet:nodePools[{j}] ({pool.name}) declares gpu.product {want}, but its node(s) "
                       f"{names(members)} carry {PRODUCT_LABEL}={product}: what gpufleet plans for the pool (capacity, "
                       f"memory budgets, sharing, selectors) is for a GPU these nodes do not have, so workloads that "
                       f"fit the plan may stay Pending or run out of GPU memory{mig}. Expected "
                       f"nodePools[{j}].gpu.product: {product}, or those nodes in a pool of their own.")
    return out


def validate(args: StackValidationArgs, report_violation) -> None:
    found_stack = stack_for_nodes(args)
    if found_stack is None:
        return
    config, ref, cfg = found_stack
    try:
        found, labelled = load_nodes(config, ref)
    except CapacityUnavailable as e:
        report_violation(f"Cannot check the stack against the nodes: {e}; expected a readable nodesFile or kubeconfig.")
        return
    where = f"Pulumi.{ref.stack}.yaml"
    nodes = views(found, planned_labels(args.resources))
    gpu = gpu_nodes(cfg, nodes)
    releases: dict[str, dict] = {}
    each_known([r for r in args.resources if r.resource_type == RELEASE_TYPE],
               lambda r: releases.setdefault(str(r.props.get("chart")), dict(r.props.get("values") or {})))
    messages = runtime_problems(cfg, where, gpu) + pool_product_problems(cfg, where, nodes)
    if labelled:
        messages += placement_problems(cfg, where, gpu, releases)
    for message in messages:
        report_violation(message)
    selector_problems(cfg, nodes, gpu, args.resources, report_violation)


POLICY = StackValidationPolicy(
    name="stack-matches-nodes",
    description="The stack's runtime preset, GPU stack placement, product selectors and pool products match the "
                "real nodes.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={**STACK_CONFIG_PROPERTIES, **NODE_FACTS_PROPERTIES}),
    validate=validate,
)
