"""Every config rule: the YAML path it reports and its message (kueue-style table of cases)."""

from __future__ import annotations

import copy

import pytest

from gpufleet.config.loading import parse_sections
from gpufleet.errors import ConfigError

T4_POOL = {"name": "edge", "nodes": ["n0"], "gpu": {"product": "Tesla-T4", "count": 1}}
A100_POOL = {"name": "a100", "nodes": ["n1"], "gpu": {"product": "A100-PCIE-40GB", "count": 1}}
MIG7 = {"all-1g.5gb": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}]}


def infer(**over) -> dict:
    w = {"kind": "inference", "name": "svc", "image": "nvcr.io/nvidia/tritonserver:24.08-py3",
         "ports": [{"port": 8000}], "service": {"type": "LoadBalancer", "sourceRanges": ["10.0.0.0/8"]}}
    w.update(over)
    return w


def base() -> dict:
    return {"mode": "operator", "nodePools": [copy.deepcopy(T4_POOL)], "workloads": [infer(nodePool="edge", gpu={"count": 1})]}


def errors_of(sections: dict) -> list[str]:
    with pytest.raises(ConfigError) as exc:
        parse_sections(sections, "Pulumi.t.yaml")
    return [f"{i.path}: {i.message}" for i in exc.value.issues]


def with_(mutate) -> dict:
    s = base()
    mutate(s)
    return s


CASES = [
    pytest.param(lambda s: s.update(mode="operatr"), "gpufleet:mode", "'operator', 'standalone' or 'platform-managed'", id="unknown mode"),
    pytest.param(lambda s: s.update(bogus=1), "gpufleet:bogus", "unknown key; allowed: version, mode", id="unknown top-level key"),
    pytest.param(lambda s: s.update(version="v2"), "gpufleet:version", "'v1alpha1'", id="unsupported config version"),
    pytest.param(lambda s: s.update(cluster={"runtime": {"preset": "docker"}}), "gpufleet:cluster.runtime.preset",
                 "'containerd', 'k3s', 'rke2' or 'microk8s'", id="unknown runtime preset"),
    pytest.param(lambda s: s.update(devicePlugin={"migStrategy": "dual"}), "gpufleet:devicePlugin.migStrategy",
                 "'none', 'single' or 'mixed'", id="unknown mig strategy"),
    pytest.param(lambda s: s["workloads"][0].update(replica=2), "gpufleet:workloads[0].replica",
                 "unknown key 'replica'; allowed: name, namespace", id="misspelt workload key lists allowed keys"),
    pytest.param(lambda s: s["workloads"][0].update(kind="daemon"), "gpufleet:workloads[0]",
                 "allowed: inference, notebook, job", id="unknown workload kind"),
    pytest.param(lambda s: s["workloads"][0]["gpu"].update(count=0.5), "gpufleet:workloads[0].gpu.count",
                 "valid integer", id="fractional gpu count"),
    pytest.param(lambda s: s.update(devicePlugin={"sharingProfiles": {"ts": {"strategy": "timeSlicing", "replicas": 1}}}),
                 "gpufleet:devicePlugin.sharingProfiles.ts.replicas", "greater than or equal to 2", id="replicas below 2"),
    pytest.param(lambda s: s.update(devicePlugin={"defaultSharing": "nope"}), "gpufleet:devicePlugin.defaultSharing",
                 "'nope' is not a sharing profile", id="default sharing profile undefined"),
    pytest.param(lambda s: s["nodePools"][0].update(sharing="nope"), "gpufleet:nodePools[0].sharing",
                 "'nope' is not a sharing profile", id="pool sharing profile undefined"),
    pytest.param(lambda s: s["nodePools"].append(copy.deepcopy(T4_POOL)), "gpufleet:nodePools[1].name",
                 "'edge' is used by another node pool", id="duplicate pool name"),
    pytest.param(lambda s: s["nodePools"][0]["gpu"].update(product="Tesla-T5"), "gpufleet:nodePools[0].gpu.product",
                 "'Tesla-T5' is not a known GPU product; allowed: Tesla-T4", id="unknown gpu product"),
    pytest.param(lambda s: s["workloads"][0].update(nodePool="gone"), "gpufleet:workloads[0].nodePool",
                 "'gone' is not a node pool; allowed: edge", id="workload pool undefined"),
    pytest.param(lambda s: s["workloads"].append(infer(gpu={"count": 1}, nodePool="edge")), "gpufleet:workloads[1].name",
                 "'svc' is used twice in namespace 'default'", id="duplicate workload"),
    pytest.param(lambda s: s["workloads"][0].update(image="nginx"), "gpufleet:workloads[0].image",
                 "'nginx' is not pinned", id="image without tag"),
    pytest.param(lambda s: s["workloads"][0].update(image="nginx:latest"), "gpufleet:workloads[0].image",
                 "'nginx:latest' is not pinned", id="image latest"),
    pytest.param(lambda s: s["workloads"][0].update(service={"type": "LoadBalancer"}), "gpufleet:workloads[0].service",
                 "a LoadBalancer without sourceRanges is reachable from anywhere", id="public load balancer not allowed"),
    pytest.param(lambda s: s["workloads"][0]["gpu"].update(visibleDevices="0"), "gpufleet:workloads[0].gpu.visibleDevices",
                 "bypasses the device plugin's accounting", id="visible devices outside platform-managed"),
    pytest.param(lambda s: s["workloads"][0]["gpu"].update(shared=True), "gpufleet:workloads[0].gpu.shared",
                 "node pool 'edge' has no sharing profile", id="shared request on unshared pool"),
    pytest.param(lambda s: (s.update(devicePlugin={"sharingProfiles": {"ts": {"strategy": "timeSlicing", "replicas": 4}}}),
                            s["nodePools"][0].update(sharing="ts")),
                 "gpufleet:workloads[0].gpu.shared", "shares its GPUs (profile 'ts')", id="whole gpu request on shared pool"),
    pytest.param(lambda s: (s.update(devicePlugin={"sharingProfiles": {"m": {"strategy": "mps", "replicas": 4}}}),
                            s["nodePools"][0].update(sharing="m"), s["workloads"][0]["gpu"].update(shared=True, count=2)),
                 "gpufleet:workloads[0].gpu.count", "UnexpectedAdmissionError", id="mps request above one"),
    pytest.param(lambda s: (s.update(devicePlugin={"sharingProfiles": {"m": {"strategy": "mps", "replicas": 64}}}),
                            s["nodePools"][0].update(sharing="m"), s["workloads"][0]["gpu"].update(shared=True)),
                 "gpufleet:devicePlugin.sharingProfiles.m.replicas", "64 MPS replicas on Tesla-T4 (compute capability 7.5); allowed: 2 to 48",
                 id="mps replicas above cap"),
    pytest.param(lambda s: s.update(devicePlugin={"migStrategy": "mixed", "sharingProfiles": {"m": {"strategy": "mps", "replicas": 2}}}),
                 "gpufleet:devicePlugin.sharingProfiles.m.strategy", "not supported with MPS", id="mps with mixed strategy"),
    pytest.param(lambda s: s.update(devicePlugin={"sharingProfiles": {"t": {"strategy": "timeSlicing", "replicas": 2,
                 "resources": [{"name": "nvidia.com/mig-1g.5gb", "replicas": 2}]}}}),
                 "gpufleet:devicePlugin.sharingProfiles.t.resources[0].name", "cannot be shared here", id="mig resource shared without mixed"),
    pytest.param(lambda s: s.update(mig={"default": "nope"}), "gpufleet:mig.default", "'nope' is not a geometry", id="unknown default geometry"),
    pytest.param(lambda s: s["nodePools"][0].update(migGeometry="nope"), "gpufleet:nodePools[0].migGeometry",
                 "'nope' is not a geometry; allowed: all-disabled", id="pool geometry undefined"),
    pytest.param(lambda s: (s.update(mig={"geometries": MIG7}, devicePlugin={"migStrategy": "single"}),
                            s["nodePools"][0].update(migGeometry="all-1g.5gb")),
                 "gpufleet:nodePools[0].migGeometry", "Tesla-T4 GPUs are not MIG-capable", id="mig on a gpu without mig"),
    pytest.param(lambda s: (s.update(mig={"geometries": {"g": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.6gb": 1}}]}},
                                     devicePlugin={"migStrategy": "mixed"}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="g")]), s.update(workloads=[])),
                 "gpufleet:mig.geometries.g[0].mig-devices", "'1g.6gb' is not a MIG profile of A100-40GB GPUs", id="unknown mig profile"),
    pytest.param(lambda s: (s.update(mig={"geometries": {"g": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 8}}]}},
                                     devicePlugin={"migStrategy": "mixed"}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="g")]), s.update(workloads=[])),
                 "gpufleet:mig.geometries.g[0].mig-devices", "8 instances requested, at most 7", id="mig count above maximum"),
    pytest.param(lambda s: (s.update(mig={"geometries": {"g": [{"devices": "all", "mig-enabled": True,
                                                                 "mig-devices": {"2g.10gb": 3, "1g.5gb": 2}}]}},
                                     devicePlugin={"migStrategy": "mixed"}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="g")]), s.update(workloads=[])),
                 "gpufleet:mig.geometries.g[0].mig-devices", "8 compute slices", id="mig compute slices exceeded"),
    pytest.param(lambda s: (s.update(mig={"geometries": {"g": [{"devices": "all", "mig-enabled": True,
                                                                 "mig-devices": {"1g.10gb": 4, "1g.5gb": 1}}]}},
                                     devicePlugin={"migStrategy": "mixed"}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="g")]), s.update(workloads=[])),
                 "gpufleet:mig.geometries.g[0].mig-devices", "cannot be placed together", id="mig placements overlap"),
    pytest.param(lambda s: (s.update(mig={"geometries": {"g": [{"devices": "all", "mig-enabled": False, "mig-devices": {"1g.5gb": 1}}]}})),
                 "gpufleet:mig.geometries.g[0].mig-devices", "must be empty when mig-enabled is false", id="mig devices with mig off"),
    pytest.param(lambda s: (s.update(mig={"geometries": {"bal": [{"devices": "all", "mig-enabled": True,
                                                                   "mig-devices": {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}}]}},
                                     devicePlugin={"migStrategy": "single"}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="bal")]), s.update(workloads=[])),
                 "gpufleet:nodePools[0].migGeometry", "migStrategy 'single' needs one uniform geometry", id="single strategy with mixed geometry"),
    pytest.param(lambda s: (s.update(mig={"geometries": MIG7}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="all-1g.5gb")]), s.update(workloads=[])),
                 "gpufleet:nodePools[0].migGeometry", "devicePlugin.migStrategy is 'none'", id="mig geometry under strategy none"),
    pytest.param(lambda s: (s.update(mig={"geometries": MIG7}, devicePlugin={"migStrategy": "mixed",
                            "sharingProfiles": {"m": {"strategy": "mps", "replicas": 2}}}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="all-1g.5gb", sharing="m")]), s.update(workloads=[])),
                 "gpufleet:nodePools[0].sharing", "does not support MPS on MIG devices", id="mps on mig pool"),
    pytest.param(lambda s: (s.update(mig={"geometries": MIG7}, devicePlugin={"migStrategy": "mixed"}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="all-1g.5gb")]),
                            s.update(workloads=[infer(nodePool="a100", gpu={"profile": "2g.10gb"})])),
                 "gpufleet:workloads[0].gpu.profile", "'2g.10gb' is not in the MIG geometry of node pool 'a100'", id="profile not in pool geometry"),
    pytest.param(lambda s: s["workloads"][0]["gpu"].update(profile="1g.5gb"), "gpufleet:workloads[0].gpu.profile",
                 "node pool 'edge' has no MIG geometry", id="profile on pool without mig"),
    pytest.param(lambda s: (s.update(mig={"geometries": MIG7}, devicePlugin={"migStrategy": "mixed"}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="all-1g.5gb")]),
                            s.update(workloads=[infer(nodePool="a100", gpu={"count": 1})])),
                 "gpufleet:workloads[0].gpu.profile", "name the profile this workload wants", id="whole gpu on mig pool"),
    pytest.param(lambda s: (s.update(devicePlugin={"sharingProfiles": {"ts": {"strategy": "timeSlicing", "replicas": 2}}}),
                            s["nodePools"][0].update(sharing="ts", nodes=[])),
                 "gpufleet:nodePools[0].nodes", "list the pool's node names", id="labelled pool without node names"),
]


@pytest.mark.parametrize("mutate, path, message", CASES)
def test_config_rule_reports_path_and_message(mutate, path, message):
    errors = errors_of(with_(mutate))
    assert any(e.startswith(f"{path}: ") and message in e for e in errors), errors


def test_valid_base_config_has_no_errors():
    cfg = parse_sections(base(), "Pulumi.t.yaml")
    assert cfg.workloads[0].gpu.count == 1


def test_all_field_errors_are_reported_together():
    sections = with_(lambda s: (s.update(mode="x"), s["workloads"][0].update(replica=2),
                                s["nodePools"][0]["gpu"].update(count=0)))
    paths = {e.split(": ")[0] for e in errors_of(sections)}
    assert {"gpufleet:mode", "gpufleet:workloads[0].replica", "gpufleet:nodePools[0].gpu.count"} <= paths


def test_error_names_the_bad_value():
    (err,) = [e for e in errors_of(with_(lambda s: s.update(mode="operatr"))) if "mode" in e]
    assert '"operatr"' in err


def test_cross_section_errors_are_reported_together():
    sections = with_(lambda s: (s["workloads"][0].update(image="nginx", nodePool="gone"),
                                s["nodePools"][0]["gpu"].update(product="Tesla-T5")))
    paths = {e.split(": ")[0] for e in errors_of(sections)}
    assert {"gpufleet:workloads[0].image", "gpufleet:workloads[0].nodePool", "gpufleet:nodePools[0].gpu.product"} <= paths
