"""Checks across sections of a StackConfig whose fields are each valid: references, MIG, sharing, GPU
requests, exposure. Every issue names its YAML path, the bad value and what is allowed."""

from __future__ import annotations

from gpufleet.config._paths import yaml_path
from gpufleet.config.aks_rules import check_aks
from gpufleet.config.dra_prerequisite_rules import check_dra_prerequisites, dra_prerequisite_warnings
from gpufleet.config.dra_rules import check_dra
from gpufleet.config.node_pools import NodePool
from gpufleet.config.platform_rules import check_platform, platform_warnings
from gpufleet.config.sharing_rules import check_sharing_facts, sharing_warnings
from gpufleet.config.stack import BUILTIN_GEOMETRIES, StackConfig
from gpufleet.config.version_rules import check_versions, version_warnings
from gpufleet.config.workload_rules import check_workload
from gpufleet.errors import ConfigIssue
from gpufleet.k8s_names import label_value_errors
from gpufleet.nvidia.mig_profiles import TABLES, check_geometry
from gpufleet.nvidia.products import PRODUCTS, GpuProduct, find_product

_p = yaml_path



def validate_references(cfg: StackConfig) -> list[ConfigIssue]:
    """Checks across sections, on a config whose fields are each valid. Returns every problem found."""
    issues: list[ConfigIssue] = []
    issues += _check_device_plugin(cfg)
    issues += _check_node_pools(cfg)
    issues += _check_node_names(cfg)
    issues += _check_workloads(cfg)
    issues += check_dra(cfg)
    if cfg.cluster.aks is not None:
        issues += check_aks(cfg, cfg.cluster.aks)
    issues += check_versions(cfg)
    issues += check_sharing_facts(cfg)
    issues += check_dra_prerequisites(cfg)
    issues += check_platform(cfg)
    return issues


def fact_warnings(cfg: StackConfig) -> list[ConfigIssue]:
    """What NVIDIA's facts say may go wrong on the cluster but the config cannot settle (outside a validated
    range, near an approximate floor, depending on the workload): warnings, never errors."""
    return [*version_warnings(cfg), *sharing_warnings(cfg), *dra_prerequisite_warnings(cfg),
            *platform_warnings(cfg)]


def _check_device_plugin(cfg: StackConfig) -> list[ConfigIssue]:
    issues = []
    dp = cfg.device_plugin
    names = sorted(dp.sharing_profiles)
    if dp.default_sharing is not None and dp.default_sharing not in dp.sharing_profiles:
        issues.append(ConfigIssue(_p("devicePlugin", "defaultSharing"),
                                  f"'{dp.default_sharing}' is not a sharing profile; allowed: "
                                  f"{', '.join(names) or '(none defined)'}"))
    for pname, prof in dp.sharing_profiles.items():
        if prof.strategy == "mps" and dp.mig_strategy == "mixed":
            issues.append(ConfigIssue(_p("devicePlugin", "sharingProfiles", pname, "strategy"),
                                      "'mps' cannot be used with migStrategy 'mixed' (the device plugin refuses: "
                                      "using --mig-strategy=mixed is not supported with MPS); use timeSlicing"))
        for i, res in enumerate(prof.resources or []):
            ok = res.name == "nvidia.com/gpu" or (res.name.startswith("nvidia.com/mig-")
                                                  and dp.mig_strategy == "mixed" and prof.strategy == "timeSlicing")
            if not ok:
                issues.append(ConfigIssue(_p("devicePlugin", "sharingProfiles", pname, "resources", i, "name"),
                                          f"'{res.name}' cannot be shared here; allowed: nvidia.com/gpu, or "
                                          "nvidia.com/mig-<profile> with timeSlicing under migStrategy mixed"))
    for gname, groups in cfg.mig.geometries.items():
        for i, group in enumerate(groups):
            if not group.mig_enabled and group.mig_devices:
                issues.append(ConfigIssue(_p("mig", "geometries", gname, i, "mig-devices"),
                                          "must be empty when mig-enabled is false"))
    if cfg.mig.default not in BUILTIN_GEOMETRIES and cfg.mig.default not in cfg.mig.geometries:
        issues.append(ConfigIssue(_p("mig", "default"), f"'{cfg.mig.default}' is not a geometry; allowed: "
                                  + ", ".join([*BUILTIN_GEOMETRIES, *sorted(cfg.mig.geometries)])))
    return issues


def _check_node_pools(cfg: StackConfig) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    seen: set[str] = set()
    for i, pool in enumerate(cfg.node_pools):
        if pool.name in seen:
            issues.append(ConfigIssue(_p("nodePools", i, "name"), f"'{pool.name}' is used by another node pool"))
        seen.add(pool.name)
        product = find_product(pool.gpu.product)
        if product is None:
            issues.append(ConfigIssue(_p("nodePools", i, "gpu", "product"),
                                      f"'{pool.gpu.product}' is not a known GPU product; "
                                      f"allowed: {', '.join(PRODUCTS)}"))
        elif pool.gpu.count > product.max_gpus_per_node:
            issues.append(ConfigIssue(_pool_p(cfg, i, "gpu", "count"),
                                      f"{pool.gpu.count} {product.key} GPUs in one node; no server holds more than "
                                      f"{product.max_gpus_per_node}; allowed: 1 to {product.max_gpus_per_node} "
                                      "(count the nodes with `nodes` or `count`)"))
        if pool.sharing is not None and pool.sharing not in cfg.device_plugin.sharing_profiles:
            profiles = ", ".join(sorted(cfg.device_plugin.sharing_profiles)) or "(none defined)"
            issues.append(ConfigIssue(_pool_p(cfg, i, "sharing"), f"'{pool.sharing}' is not a sharing profile; "
                                      f"allowed: {profiles}"))
        if (pool.sharing or pool.mig_geometry) and not pool.nodes and not _labels_applied_elsewhere(cfg, pool):
            issues.append(ConfigIssue(_p("nodePools", i, "nodes"),
                                      "list the pool's node names: gpufleet labels them with "
                                      "nvidia.com/device-plugin.config / nvidia.com/mig.config"))
        if pool.mig_geometry is not None:
            issues += _check_pool_geometry(cfg, i, pool, product)
        if pool.autoscaling is not None:
            issues += _check_pool_autoscaling(i, pool)
        sharing = cfg.sharing_of_pool(pool)
        if sharing is not None and product is not None:
            issues += _check_pool_sharing(cfg, i, pool, product, sharing)
    return issues


def _check_pool_autoscaling(i: int, pool: NodePool) -> list[ConfigIssue]:
    """An autoscaled pool's nodes now (the listed `nodes`, else `count`) lie within its bounds, and `count`
    says the same as the list when both are given."""
    assert pool.autoscaling is not None
    low, high = pool.autoscaling.min, pool.autoscaling.max
    allowed = f"allowed: {low} to {high} (autoscaling.min to autoscaling.max)"
    issues = []
    if pool.nodes and pool.count is not None and pool.count != len(pool.nodes):
        issues.append(ConfigIssue(_p("nodePools", i, "count"), f"{pool.count} while `nodes` lists {len(pool.nodes)}: "
                                  "with autoscaling the listed nodes are the nodes the pool has now; allowed: "
                                  f"{len(pool.nodes)}, or no count"))
    key, now = ("nodes", len(pool.nodes)) if pool.nodes else ("count", pool.count)
    if now is not None:
        if now > high:
            issues.append(ConfigIssue(_p("nodePools", i, key), f"{now} node(s) now is above autoscaling.max {high}: "
                                      f"the autoscaler never grows the pool past max; {allowed}"))
        elif now < low:
            issues.append(ConfigIssue(_p("nodePools", i, key), f"{now} node(s) now is below autoscaling.min {low}: "
                                      f"the autoscaler keeps at least min nodes; {allowed}"))
    return issues


def _check_node_names(cfg: StackConfig) -> list[ConfigIssue]:
    """Each node in one pool, once: a node listed twice would count its GPUs twice."""
    issues: list[ConfigIssue] = []
    where: dict[str, tuple[int, int]] = {}
    for i, pool in enumerate(cfg.node_pools):
        for j, node in enumerate(pool.nodes):
            if node in where:
                pi, pj = where[node]
                place = "earlier in this pool" if pi == i else f"in node pool '{cfg.node_pools[pi].name}'"
                issues.append(ConfigIssue(_p("nodePools", i, "nodes", j),
                                          f"'{node}' is already listed {place} (nodePools[{pi}].nodes[{pj}]); a node "
                                          "belongs to one pool, once (its GPUs would be counted twice)"))
            else:
                where[node] = (i, j)
        if len(pool.nodes) == 1 and not pool.node_selector:
            problems = label_value_errors(pool.nodes[0])
            if problems:  # workloads select it with nodeSelector kubernetes.io/hostname=<node>
                issues.append(ConfigIssue(_p("nodePools", i, "nodes", 0),
                                          f"'{pool.nodes[0]}' becomes the nodeSelector value kubernetes.io/hostname of "
                                          f"the pool's workloads, which must be a label value: {'; '.join(problems)}"))
    return issues


def _labels_applied_elsewhere(cfg: StackConfig, pool: NodePool) -> bool:
    """Cluster back-ends that label nodes through the node pool itself: AKS pools get the sharing/MIG
    selection labels as agent pool `nodeLabels` (gpufleet.render.aks)."""
    return cfg.aks_pool(pool) is not None


def _pool_p(cfg: StackConfig, i: int, *rest: object) -> str:
    """YAML path of a node pool field; for a pool derived from cluster.aks.gpuPools, the AKS pool's field."""
    aks = cfg.aks_pool(cfg.node_pools[i])
    if aks is None:
        return _p("nodePools", i, *rest)
    rest = ("vmSize",) if rest[:1] == ("gpu",) else rest
    return _p("cluster", "aks", "gpuPools", aks[0], *rest)


def _check_pool_geometry(cfg: StackConfig, i: int, pool: NodePool, product: GpuProduct | None) -> list[ConfigIssue]:
    path = _pool_p(cfg, i, "migGeometry")
    groups = cfg.geometry(pool.mig_geometry)
    if groups is None:
        allowed = ", ".join([*BUILTIN_GEOMETRIES, *sorted(cfg.mig.geometries)])
        return [ConfigIssue(path, f"'{pool.mig_geometry}' is not a geometry; allowed: {allowed}")]
    enabled = [g for g in groups if g.mig_enabled]
    if not enabled:
        return []
    if product is None:
        return []
    if product.mig_table is None:  # not MIG-capable
        return [ConfigIssue(path, f"'{pool.mig_geometry}' enables MIG, but {product.key} GPUs are not MIG-capable")]
    issues = []
    table = TABLES[product.mig_table]
    gpath = _p("mig", "geometries", pool.mig_geometry)
    for j, group in enumerate(enabled):
        for problem in check_geometry(table, group.mig_devices):
            issues.append(ConfigIssue(f"{gpath}[{j}].mig-devices",
                                      f"{problem} (node pool '{pool.name}', {product.key})"))
        if group.devices != "all" and any(d >= pool.gpu.count for d in group.devices):
            issues.append(ConfigIssue(f"{gpath}[{j}].devices",
                                      f"{group.devices} names a GPU index the pool's {pool.gpu.count}-GPU nodes lack"))
    strategy = cfg.device_plugin.mig_strategy
    if strategy == "none":
        issues.append(ConfigIssue(path, f"'{pool.mig_geometry}' enables MIG but devicePlugin.migStrategy is 'none', "
                                  "so no MIG device is advertised; allowed: single, mixed"))
    if strategy == "single":
        profiles = {p for g in enabled for p, n in g.mig_devices.items() if n}
        covers_all = len(enabled) == len(groups) and all(g.devices == "all" for g in enabled)
        if len(profiles) > 1 or not covers_all:
            issues.append(ConfigIssue(path, f"migStrategy 'single' needs one uniform geometry on every GPU of a node; "
                                      f"'{pool.mig_geometry}' mixes {sorted(profiles) or 'MIG on and off'}; "
                                      "use one profile on all GPUs, or migStrategy 'mixed'"))
    return issues


def _check_pool_sharing(cfg, i, pool, product, sharing) -> list[ConfigIssue]:
    issues = []
    name = pool.sharing or cfg.device_plugin.default_sharing
    path = _pool_p(cfg, i, "sharing") if pool.sharing else _p("devicePlugin", "defaultSharing")
    if sharing.strategy == "mps":
        if cfg.mig_profiles_of_pool(pool):
            issues.append(ConfigIssue(path, f"MPS profile '{name}' on a pool with MIG geometry '{pool.mig_geometry}': "
                                      "the device plugin does not support MPS on MIG devices; use timeSlicing"))
        cap = product.mps_max_clients
        if sharing.replicas > cap:
            issues.append(ConfigIssue(_p("devicePlugin", "sharingProfiles", name, "replicas"),
                                      f"{sharing.replicas} MPS replicas on {product.key} (compute capability "
                                      f"{product.compute_capability[0]}.{product.compute_capability[1]}); allowed: 2 "
                                      f"to {cap}"))
    return issues


def _check_workloads(cfg: StackConfig) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    seen: set[tuple[str, str]] = set()
    pools = [p.name for p in cfg.node_pools]
    for i, w in enumerate(cfg.workloads):
        key = (w.namespace, w.name)
        if key in seen:
            issues.append(ConfigIssue(_p("workloads", i, "name"),
                                      f"'{w.name}' is used twice in namespace '{w.namespace}'"))
        seen.add(key)
        issues += check_workload(i, w)
        pool = cfg.pool(w.node_pool)
        if w.node_pool is not None and pool is None:
            issues.append(ConfigIssue(_p("workloads", i, "nodePool"),
                                      f"'{w.node_pool}' is not a node pool; allowed: "
                                      f"{', '.join(pools) or '(none defined)'}"))
        if w.gpu is not None and not cfg.uses_dra() and not w.gpu.uses_dra():
            issues += _check_gpu_request(cfg, i, w, pool)
    return issues


def _check_gpu_request(cfg: StackConfig, i: int, w, pool: NodePool | None) -> list[ConfigIssue]:
    gpu = w.gpu
    path = _p("workloads", i, "gpu")
    issues = []
    if gpu.visible_devices is not None:
        if cfg.mode != "platform-managed":
            issues.append(ConfigIssue(f"{path}.visibleDevices",
                                      "pinning NVIDIA_VISIBLE_DEVICES bypasses the device plugin's accounting; allowed "
                                      "only in mode 'platform-managed' (request count/shared/profile instead)"))
        return issues
    if pool is None:
        return issues
    sharing = cfg.sharing_of_pool(pool)
    mig = cfg.mig_profiles_of_pool(pool)
    if gpu.profile is not None:
        if not mig:
            issues.append(ConfigIssue(f"{path}.profile", f"'{gpu.profile}' asks for a MIG instance, but node pool "
                                      f"'{pool.name}' has no MIG geometry"))
        elif gpu.profile not in mig:
            issues.append(ConfigIssue(f"{path}.profile",
                                      f"'{gpu.profile}' is not in the MIG geometry of node pool '{pool.name}' "
                                      f"('{pool.mig_geometry}'); allowed: {', '.join(sorted(mig))}"))
    elif mig and cfg.device_plugin.mig_strategy in ("single", "mixed"):
        issues.append(ConfigIssue(f"{path}.profile", f"node pool '{pool.name}' serves MIG instances "
                                  f"({', '.join(sorted(mig))}); name the profile this workload wants"))
    if gpu.shared and sharing is None:
        issues.append(ConfigIssue(f"{path}.shared", f"node pool '{pool.name}' has no sharing profile; set the pool's "
                                  "`sharing:` or devicePlugin.defaultSharing, or request whole GPUs"))
    if not gpu.shared and sharing is not None and gpu.profile is None:
        issues.append(ConfigIssue(f"{path}.shared", f"node pool '{pool.name}' shares its GPUs (profile "
                                  f"'{pool.sharing or cfg.device_plugin.default_sharing}'): a request there gets a "
                                  "share, not a whole GPU; set shared: true, or use a pool without sharing"))
    if gpu.shared and sharing is not None and gpu.count > 1 and sharing.effective_fail_requests_greater_than_one():
        issues.append(ConfigIssue(f"{path}.count", f"{gpu.count} shared GPUs per container: the device plugin fails "
                                  "such pods with UnexpectedAdmissionError (failRequestsGreaterThanOne); allowed: 1"))
    return issues

