"""Every config rule: the YAML path it reports and its message (kueue-style table of cases)."""

from __future__ import annotations

import copy

import pytest

from gpufleet.config.loading import parse_sections
from tests.conftest import config_errors as errors_of

T4_POOL = {"name": "edge", "nodes": ["n0"], "gpu": {"product": "Tesla-T4", "count": 1}}
A100_POOL = {"name": "a100", "nodes": ["n1"], "gpu": {"product": "A100-PCIE-40GB", "count": 1}}
MIG7 = {"all-1g.5gb": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}]}


def infer(**over) -> dict:
    w = {"kind": "inference", "name": "svc", "image": "nvcr.io/nvidia/tritonserver:24.08-py3",
         "ports": [{"port": 8000}], "service": {"type": "LoadBalancer", "sourceRanges": ["10.0.0.0/8"]}}
    w.update(over)
    return w


def base() -> dict:
    return {"mode": "operator", "nodePools": [copy.deepcopy(T4_POOL)],
            "workloads": [infer(nodePool="edge", gpu={"count": 1})]}


def with_(mutate) -> dict:
    s = base()
    mutate(s)
    return s


CASES = [
    pytest.param(lambda s: s.update(mode="operatr"), "gpufleet:mode", "'operator', 'standalone' or 'platform-managed'",
                 id="unknown mode"),
    pytest.param(lambda s: s.update(bogus=1), "gpufleet:bogus", "unknown key; allowed: version, mode",
                 id="unknown top-level key"),
    pytest.param(lambda s: s.update(version="v2"), "gpufleet:version", "'v1alpha1'", id="unsupported config version"),
    pytest.param(lambda s: s.update(cluster={"runtime": {"preset": "docker"}}), "gpufleet:cluster.runtime.preset",
                 "'containerd', 'k3s', 'rke2', 'k0s' or 'microk8s'", id="unknown runtime preset"),
    pytest.param(lambda s: s.update(devicePlugin={"migStrategy": "dual"}), "gpufleet:devicePlugin.migStrategy",
                 "'none', 'single' or 'mixed'", id="unknown mig strategy"),
    pytest.param(lambda s: s["workloads"][0].update(replica=2), "gpufleet:workloads[0].replica",
                 "unknown key 'replica' (did you mean 'replicas'?); allowed: name, namespace",
                 id="misspelt workload key lists allowed keys"),
    pytest.param(lambda s: s["workloads"][0].update(kind="daemon"), "gpufleet:workloads[0]",
                 "allowed: inference, notebook, job", id="unknown workload kind"),
    pytest.param(lambda s: s["workloads"][0]["gpu"].update(count=0.5), "gpufleet:workloads[0].gpu.count",
                 "valid integer", id="fractional gpu count"),
    pytest.param(lambda s: s.update(devicePlugin={"sharingProfiles": {"ts": {"strategy": "timeSlicing",
                                                                             "replicas": 1}}}),
                 "gpufleet:devicePlugin.sharingProfiles.ts.replicas", "greater than or equal to 2",
                 id="replicas below 2"),
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
    pytest.param(lambda s: s["workloads"].append(infer(gpu={"count": 1}, nodePool="edge")),
                 "gpufleet:workloads[1].name",
                 "'svc' is used twice in namespace 'default'", id="duplicate workload"),
    pytest.param(lambda s: s["workloads"][0].update(image="nginx"), "gpufleet:workloads[0].image",
                 "'nginx' is not pinned", id="image without tag"),
    pytest.param(lambda s: s["workloads"][0].update(image="nginx:latest"), "gpufleet:workloads[0].image",
                 "'nginx:latest' is not pinned", id="image latest"),
    pytest.param(lambda s: s["workloads"][0].update(service={"type": "LoadBalancer"}), "gpufleet:workloads[0].service",
                 "a LoadBalancer without sourceRanges is reachable from anywhere",
                 id="public load balancer not allowed"),
    pytest.param(lambda s: s["workloads"][0]["gpu"].update(visibleDevices="0"),
                 "gpufleet:workloads[0].gpu.visibleDevices",
                 "bypasses the device plugin's accounting", id="visible devices outside platform-managed"),
    pytest.param(lambda s: s["workloads"][0]["gpu"].update(shared=True), "gpufleet:workloads[0].gpu.shared",
                 "node pool 'edge' has no sharing profile", id="shared request on unshared pool"),
    pytest.param(lambda s: (s.update(devicePlugin={"sharingProfiles": {"ts": {"strategy": "timeSlicing",
                                                                              "replicas": 4}}}),
                            s["nodePools"][0].update(sharing="ts")),
                 "gpufleet:workloads[0].gpu.shared", "shares its GPUs (profile 'ts')",
                 id="whole gpu request on shared pool"),
    pytest.param(lambda s: (s.update(devicePlugin={"sharingProfiles": {"m": {"strategy": "mps", "replicas": 4}}}),
                            s["nodePools"][0].update(sharing="m"),
                            s["workloads"][0]["gpu"].update(shared=True, count=2)),
                 "gpufleet:workloads[0].gpu.count", "UnexpectedAdmissionError", id="mps request above one"),
    pytest.param(lambda s: (s.update(devicePlugin={"sharingProfiles": {"m": {"strategy": "mps", "replicas": 64}}}),
                            s["nodePools"][0].update(sharing="m"), s["workloads"][0]["gpu"].update(shared=True)),
                 "gpufleet:devicePlugin.sharingProfiles.m.replicas",
                 "64 MPS replicas on Tesla-T4 (compute capability 7.5); allowed: 2 to 48",
                 id="mps replicas above cap"),
    pytest.param(lambda s: s.update(devicePlugin={"migStrategy": "mixed",
                                                  "sharingProfiles": {"m": {"strategy": "mps", "replicas": 2}}}),
                 "gpufleet:devicePlugin.sharingProfiles.m.strategy", "not supported with MPS",
                 id="mps with mixed strategy"),
    pytest.param(lambda s: s.update(devicePlugin={"sharingProfiles": {"t": {"strategy": "timeSlicing", "replicas": 2,
                 "resources": [{"name": "nvidia.com/mig-1g.5gb", "replicas": 2}]}}}),
                 "gpufleet:devicePlugin.sharingProfiles.t.resources[0].name", "cannot be shared here",
                 id="mig resource shared without mixed"),
    pytest.param(lambda s: s.update(mig={"default": "nope"}), "gpufleet:mig.default", "'nope' is not a geometry",
                 id="unknown default geometry"),
    pytest.param(lambda s: s["nodePools"][0].update(migGeometry="nope"), "gpufleet:nodePools[0].migGeometry",
                 "'nope' is not a geometry; allowed: all-disabled", id="pool geometry undefined"),
    pytest.param(lambda s: (s.update(mig={"geometries": MIG7}, devicePlugin={"migStrategy": "single"}),
                            s["nodePools"][0].update(migGeometry="all-1g.5gb")),
                 "gpufleet:nodePools[0].migGeometry", "Tesla-T4 GPUs are not MIG-capable",
                 id="mig on a gpu without mig"),
    pytest.param(lambda s: (s.update(mig={"geometries": {"g": [{"devices": "all", "mig-enabled": True,
                                                                "mig-devices": {"1g.6gb": 1}}]}},
                                     devicePlugin={"migStrategy": "mixed"}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="g")]), s.update(workloads=[])),
                 "gpufleet:mig.geometries.g[0].mig-devices", "'1g.6gb' is not a MIG profile of A100-40GB GPUs",
                 id="unknown mig profile"),
    pytest.param(lambda s: (s.update(mig={"geometries": {"g": [{"devices": "all", "mig-enabled": True,
                                                                "mig-devices": {"1g.5gb": 8}}]}},
                                     devicePlugin={"migStrategy": "mixed"}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="g")]), s.update(workloads=[])),
                 "gpufleet:mig.geometries.g[0].mig-devices", "8 instances requested, at most 7",
                 id="mig count above maximum"),
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
    pytest.param(lambda s: (s.update(mig={"geometries": {"g": [{"devices": "all", "mig-enabled": False,
                                                                "mig-devices": {"1g.5gb": 1}}]}})),
                 "gpufleet:mig.geometries.g[0].mig-devices", "must be empty when mig-enabled is false",
                 id="mig devices with mig off"),
    pytest.param(lambda s: (s.update(mig={"geometries": {"bal": [{"devices": "all", "mig-enabled": True,
                                                                   "mig-devices": {"1g.5gb": 2, "2g.10gb": 1,
                                                                                   "3g.20gb": 1}}]}},
                                     devicePlugin={"migStrategy": "single"}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="bal")]), s.update(workloads=[])),
                 "gpufleet:nodePools[0].migGeometry", "migStrategy 'single' needs one uniform geometry",
                 id="single strategy with mixed geometry"),
    pytest.param(lambda s: (s.update(mig={"geometries": MIG7}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="all-1g.5gb")]), s.update(workloads=[])),
                 "gpufleet:nodePools[0].migGeometry", "devicePlugin.migStrategy is 'none'",
                 id="mig geometry under strategy none"),
    pytest.param(lambda s: (s.update(mig={"geometries": MIG7}, devicePlugin={"migStrategy": "mixed",
                            "sharingProfiles": {"m": {"strategy": "mps", "replicas": 2}}}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="all-1g.5gb", sharing="m")]),
                            s.update(workloads=[])),
                 "gpufleet:nodePools[0].sharing", "does not support MPS on MIG devices", id="mps on mig pool"),
    pytest.param(lambda s: (s.update(mig={"geometries": MIG7}, devicePlugin={"migStrategy": "mixed"}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="all-1g.5gb")]),
                            s.update(workloads=[infer(nodePool="a100", gpu={"profile": "2g.10gb"})])),
                 "gpufleet:workloads[0].gpu.profile", "'2g.10gb' is not in the MIG geometry of node pool 'a100'",
                 id="profile not in pool geometry"),
    pytest.param(lambda s: s["workloads"][0]["gpu"].update(profile="1g.5gb"), "gpufleet:workloads[0].gpu.profile",
                 "node pool 'edge' has no MIG geometry", id="profile on pool without mig"),
    pytest.param(lambda s: (s.update(mig={"geometries": MIG7}, devicePlugin={"migStrategy": "mixed"}),
                            s.update(nodePools=[dict(A100_POOL, migGeometry="all-1g.5gb")]),
                            s.update(workloads=[infer(nodePool="a100", gpu={"count": 1})])),
                 "gpufleet:workloads[0].gpu.profile", "name the profile this workload wants",
                 id="whole gpu on mig pool"),
    pytest.param(lambda s: (s.update(devicePlugin={"sharingProfiles": {"ts": {"strategy": "timeSlicing",
                                                                              "replicas": 2}}}),
                            s["nodePools"][0].update(sharing="ts", nodes=[])),
                 "gpufleet:nodePools[0].nodes", "list the pool's node names", id="labelled pool without node names"),
    # Names the API server would refuse, in its own words.
    pytest.param(lambda s: s["workloads"][0].update(namespace="My_NS"), "gpufleet:workloads[0].namespace",
                 "not a valid namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric "
                 "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
                 "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'); got \"My_NS\"",
                 id="workload namespace not an RFC 1123 label"),
    pytest.param(lambda s: s.update(operator={"namespace": "../../x"}), "gpufleet:operator.namespace",
                 "not a valid namespace name: a lowercase RFC 1123 label", id="operator namespace with a path"),
    pytest.param(lambda s: s.update(devicePlugin={"namespace": "x" * 64}), "gpufleet:devicePlugin.namespace",
                 "must be no more than 63 characters", id="device plugin namespace too long"),
    pytest.param(lambda s: s["workloads"][0].update(name="1-svc"), "gpufleet:workloads[0].name",
                 "'1-svc' also names the workload's Service, which must be a DNS-1035 label",
                 id="service name starts with a digit"),
    pytest.param(lambda s: s["workloads"][0].update(name="svc.v2"), "gpufleet:workloads[0].name",
                 "must not contain dots", id="workload name with a dot"),
    pytest.param(lambda s: s["nodePools"][0].update(nodes=["Node_0"]), "gpufleet:nodePools[0].nodes[0]",
                 "not a valid node name: a lowercase RFC 1123 subdomain", id="node name not a subdomain"),
    pytest.param(lambda s: s["nodePools"][0].update(nodes=["n" * 64 + ".example.com"]),
                 "gpufleet:nodePools[0].nodes[0]",
                 "becomes the nodeSelector value kubernetes.io/hostname",
                 id="single node name too long for a label value"),
    pytest.param(lambda s: s["nodePools"][0].update(labels={"team/a/b": "x"}), "gpufleet:nodePools[0].labels.team/a/b",
                 "not a valid label key: a qualified name must consist of", id="label key with two slashes"),
    pytest.param(lambda s: s["nodePools"][0].update(labels={"team": "a b"}), "gpufleet:nodePools[0].labels.team",
                 "not a valid label value: a valid label must be an empty string", id="label value with a space"),
    pytest.param(lambda s: s["nodePools"][0].update(taints=[{"key": "sku gpu", "value": "x", "effect": "NoSchedule"}]),
                 "gpufleet:nodePools[0].taints[0].key", "not a valid taint key", id="taint key with a space"),
    pytest.param(lambda s: s["nodePools"][0].update(taints=[{"key": "sku", "value": "x" * 64}]),
                 "gpufleet:nodePools[0].taints[0].value", "not a valid taint value: must be no more than 63",
                 id="taint value too long"),
    pytest.param(lambda s: s["nodePools"][0].update(taints=[{"key": "sku", "effect": "NoRun"}]),
                 "gpufleet:nodePools[0].taints[0].effect", "'NoSchedule', 'PreferNoSchedule' or 'NoExecute'",
                 id="taint effect unknown"),
    pytest.param(lambda s: s["workloads"][0].update(nodeSelector={"nvidia.com/gpu.product": "Tesla T4"}),
                 "gpufleet:workloads[0].nodeSelector.nvidia.com/gpu.product", "not a valid label value",
                 id="node selector value with a space"),
    pytest.param(lambda s: s["workloads"][0].update(tolerations=[{"operator": "Equal", "value": "x"}]),
                 "gpufleet:workloads[0].tolerations[0]", "operator must be Exists when `key` is empty",
                 id="toleration without key"),
    pytest.param(lambda s: s["workloads"][0].update(tolerations=[{"key": "sku", "operator": "Exists", "value": "gpu"}]),
                 "gpufleet:workloads[0].tolerations[0]", "value must be empty when `operator` is 'Exists'",
                 id="exists toleration with value"),
    pytest.param(lambda s: s["workloads"][0].update(env={"1ST": "x"}), "gpufleet:workloads[0].env.1ST",
                 "not a valid environment variable name: a valid environment variable name must consist of alphabetic "
                 "characters, digits, '_', '-', or '.', and must not start with a digit",
                 id="env name starts with a digit"),
    pytest.param(lambda s: s["workloads"][0].update(ports=[{"port": 8000, "name": "Http"}]),
                 "gpufleet:workloads[0].ports[0].name",
                 "not a valid port name: must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                 id="port name uppercase"),
    pytest.param(lambda s: s["workloads"][0].update(imagePullSecrets=["Reg Creds"]),
                 "gpufleet:workloads[0].imagePullSecrets[0]",
                 "not a valid Secret name", id="pull secret name invalid"),
    pytest.param(lambda s: s["workloads"][0]["service"].update(annotations={"a/b/c": "x"}),
                 "gpufleet:workloads[0].service.annotations.a/b/c", "not a valid annotation key",
                 id="annotation key invalid"),
    pytest.param(lambda s: s.update(devicePlugin={"sharingProfiles": {"T4 MPS": {"strategy": "mps", "replicas": 2}}}),
                 "gpufleet:devicePlugin.sharingProfiles.T4 MPS", "not a valid sharing profile name",
                 id="sharing profile name not a label value"),
    pytest.param(lambda s: s.update(mig={"geometries": {"x" * 64: [{"devices": "all", "mig-enabled": False}]}}),
                 "gpufleet:mig.geometries." + "x" * 64, "not a valid MIG geometry name: must be no more than 63",
                 id="geometry name too long"),
    pytest.param(lambda s: s.update(cluster={"runtime": {"runtimeClass": "NVIDIA"}}),
                 "gpufleet:cluster.runtime.runtimeClass",
                 "not a valid object name", id="runtime class name invalid"),
    # Counts within real bounds.
    pytest.param(lambda s: s["nodePools"][0]["gpu"].update(count=64), "gpufleet:nodePools[0].gpu.count",
                 "64 Tesla-T4 GPUs in one node; no server holds more than 20; allowed: 1 to 20",
                 id="t4 box with 64 gpus"),
    pytest.param(lambda s: s.update(nodePools=[dict(A100_POOL, gpu={"product": "NVIDIA-A100-SXM4-80GB", "count": 16})],
                                    workloads=[]),
                 "gpufleet:nodePools[0].gpu.count", "allowed: 1 to 8", id="sxm board with 16 gpus"),
    pytest.param(lambda s: s["workloads"][0].update(replicas=2**31), "gpufleet:workloads[0].replicas",
                 "less than or equal to 2147483647", id="replicas beyond int32"),
    pytest.param(lambda s: s["workloads"][0].update(replicas=-1), "gpufleet:workloads[0].replicas",
                 "greater than or equal to 0", id="negative replicas"),
    pytest.param(lambda s: s["workloads"].append({"kind": "job", "name": "j", "image": "a:1", "parallelism": 2**40}),
                 "gpufleet:workloads[1].parallelism", "less than or equal to 2147483647",
                 id="parallelism beyond int32"),
    pytest.param(lambda s: s["workloads"].append({"kind": "job", "name": "j", "image": "a:1", "completions": 10**30}),
                 "gpufleet:workloads[1].completions", "less than or equal to 2147483647",
                 id="completions beyond int32"),
    pytest.param(lambda s: s["workloads"][0].update(ports=[{"port": 0}]), "gpufleet:workloads[0].ports[0].port",
                 "greater than or equal to 1", id="port zero"),
    pytest.param(lambda s: s["workloads"][0].update(ports=[{"port": 65536}]), "gpufleet:workloads[0].ports[0].port",
                 "less than or equal to 65535", id="port above 65535"),
    # Nodes once; ports and their names unique.
    pytest.param(lambda s: s["nodePools"][0].update(nodes=["n0", "n0"]), "gpufleet:nodePools[0].nodes[1]",
                 "'n0' is already listed earlier in this pool (nodePools[0].nodes[0])",
                 id="node listed twice in a pool"),
    pytest.param(lambda s: s["nodePools"].append(dict(T4_POOL, name="other")), "gpufleet:nodePools[1].nodes[0]",
                 "'n0' is already listed in node pool 'edge' (nodePools[0].nodes[0])", id="node in two pools"),
    pytest.param(lambda s: s["workloads"][0].update(ports=[{"port": 80}, {"port": 80, "targetPort": 81}]),
                 "gpufleet:workloads[0].ports[1].port", "service port 80/TCP is already used by ports[0]",
                 id="service port twice"),
    pytest.param(lambda s: s["workloads"][0].update(ports=[{"port": 80}, {"port": 81, "targetPort": 80}]),
                 "gpufleet:workloads[0].ports[1].targetPort", "container port 80/TCP is already used by ports[0]",
                 id="container port twice"),
    pytest.param(lambda s: s["workloads"][0].update(ports=[{"port": 80, "name": "port-81"}, {"port": 81}]),
                 "gpufleet:workloads[0].ports[1].name",
                 "'port-81' (the default name of port 81) is already the name of ports[0]",
                 id="default port name clashes"),
    # Image references.
    pytest.param(lambda s: s["workloads"][0].update(image="nvcr.io/nvidia/Triton:24.08"), "gpufleet:workloads[0].image",
                 "not a valid image reference: repository name must be lowercase", id="image with uppercase path"),
    pytest.param(lambda s: s["workloads"][0].update(image="triton:24.08 "), "gpufleet:workloads[0].image",
                 "not a valid image reference: invalid reference format", id="image with a space"),
    pytest.param(lambda s: s["workloads"][0].update(image="triton@sha256:1234"), "gpufleet:workloads[0].image",
                 "invalid reference format", id="digest too short"),
    # Who can reach a LoadBalancer.
    pytest.param(lambda s: s["workloads"][0]["service"].update(sourceRanges=["10.0.0.0/33"]),
                 "gpufleet:workloads[0].service.sourceRanges[0]", "not a valid CIDR", id="source range not a cidr"),
    pytest.param(lambda s: s["workloads"][0]["service"].update(sourceRanges=["0.0.0.0/0"]),
                 "gpufleet:workloads[0].service.sourceRanges", "together cover every address of an IP family",
                 id="source range everything"),
    pytest.param(lambda s: s["workloads"][0]["service"].update(sourceRanges=["0.0.0.0/1", "128.0.0.0/1"]),
                 "gpufleet:workloads[0].service.sourceRanges", "reachable from anywhere",
                 id="source ranges whose union is everything"),
    pytest.param(lambda s: s["workloads"][0]["service"].update(sourceRanges=["10.0.0.0/8", "::/0"]),
                 "gpufleet:workloads[0].service.sourceRanges", "set public: true to allow it",
                 id="source ranges all of ipv6"),
    pytest.param(lambda s: s["workloads"][0].update(service={"annotations": {
                     "service.beta.kubernetes.io/load-balancer-source-ranges": "0.0.0.0/0"}}),
                 "gpufleet:workloads[0].service.annotations.service.beta.kubernetes.io/load-balancer-source-ranges",
                 "['0.0.0.0/0'] together cover every address", id="source ranges annotation everything"),
    pytest.param(lambda s: s["workloads"][0]["service"].update(annotations={
                     "service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/8, office"}),
                 "gpufleet:workloads[0].service.annotations.service.beta.kubernetes.io/load-balancer-source-ranges",
                 "'10.0.0.0/8, office' holds 'office', not CIDRs", id="source ranges annotation not cidrs"),
    pytest.param(lambda s: s.update(devicePlugin={"sharingProfiles": {"ts": {"strategy": "timeSlicing",
                                                                             "replicas": 2**31}}}),
                 "gpufleet:devicePlugin.sharingProfiles.ts.replicas", "less than or equal to 2147483647",
                 id="sharing replicas beyond int32"),
    pytest.param(lambda s: s.update(mig={"geometries": {"g": [{"devices": [-1], "mig-enabled": False}]}}),
                 "gpufleet:mig.geometries.g[0].devices[0]", "greater than or equal to 0",
                 id="negative gpu index in geometry"),
    # Secrets never as literals.
    pytest.param(lambda s: s["workloads"][0].update(env={"HF_TOKEN": "hf_abc"}), "gpufleet:workloads[0].env.HF_TOKEN",
                 "HF_TOKEN looks like a credential", id="literal token in env"),
    pytest.param(lambda s: s["workloads"][0].update(env={"AWS_SECRET_ACCESS_KEY": "x"}),
                 "gpufleet:workloads[0].env.AWS_SECRET_ACCESS_KEY",
                 "allowed: AWS_SECRET_ACCESS_KEY: {secretConfigKey: awsSecretAccessKey} with `pulumi config set "
                 "--secret "
                 "awsSecretAccessKey <value>`", id="literal secret key in env names the fix"),
    pytest.param(lambda s: s["workloads"][0].update(env={"HF_TOKEN": {"secretConfigKey": "hf token"}}),
                 "gpufleet:workloads[0].env.HF_TOKEN.secretConfigKey", "String should match pattern",
                 id="secret config key invalid"),
    pytest.param(lambda s: s["workloads"][0].update(env={"HF_TOKEN": {"secretConfigKey": "workloads"}}),
                 "gpufleet:workloads[0].env.HF_TOKEN.secretConfigKey", "'workloads' is a gpufleet config section",
                 id="secret config key is a section"),
    pytest.param(lambda s: s["workloads"][0].update(env={"HF_TOKEN": {"secretKey": "hf"}}),
                 "gpufleet:workloads[0].env.HF_TOKEN.secretKey", "unknown key 'secretKey'; allowed: secretConfigKey",
                 id="secret env misspelt"),
    pytest.param(lambda s: s["workloads"][0].update(env={"LEVEL": 3}), "gpufleet:workloads[0].env.LEVEL",
                 "Input should be a valid string; got 3", id="env value not a string"),
    # One spelling of keys.
    pytest.param(lambda s: s["workloads"][0].update(node_pool="edge"), "gpufleet:workloads[0].node_pool",
                 "unknown key 'node_pool' (did you mean 'nodePool'?)", id="snake case key refused with a hint"),
    pytest.param(lambda s: s.update(mig={"geometries": {"g": [{"devices": "all", "mig_enabled": False}]}}),
                 "gpufleet:mig.geometries.g[0].mig_enabled", "unknown key 'mig_enabled' (did you mean 'mig-enabled'?); "
                 "allowed: devices, device-filter, mig-enabled, mig-devices", id="mig-parted keys are kebab case"),
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
    assert {"gpufleet:workloads[0].image", "gpufleet:workloads[0].nodePool",
            "gpufleet:nodePools[0].gpu.product"} <= paths


def test_names_the_api_server_accepts_pass():
    sections = with_(lambda s: (
        s["workloads"][0].update(namespace="team-1", env={"LOG_LEVEL": "info", "my.env-name": "x",
                                                          "HF_TOKEN": {"secretConfigKey": "hfToken"}},
                                 nodeSelector={"nvidia.com/gpu.product": "Tesla-T4"},
                                 tolerations=[{"operator": "Exists"}, {"key": "sku", "operator": "Exists"}],
                                 imagePullSecrets=["reg.creds"], ports=[{"port": 80, "name": "http"}, {"port": 81}]),
        s["workloads"][0]["service"].update(
            sourceRanges=["10.0.0.1/8", "2001:db8::/32"],
            annotations={"service.beta.kubernetes.io/azure-load-balancer-internal": "true"}),
        s["nodePools"][0].update(nodes=["node-0.example.com"], labels={"example.com/Team_A": "ml.research"},
                                 taints=[{"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"}]),
        s.update(operator={"namespace": "gpu-operator"}, devicePlugin={"namespace": "nvidia"}),
    ))
    cfg = parse_sections(sections, "Pulumi.t.yaml")
    assert cfg.workloads[0].secret_env() == {"HF_TOKEN": "hfToken"}
    assert cfg.secret_config_keys() == ["hfToken"]


def test_a_host_with_the_most_gpus_its_product_allows_passes():
    sections = with_(lambda s: (s["nodePools"][0]["gpu"].update(count=20),
                                s["nodePools"].append({"name": "dgx", "nodes": ["dgx-0"],
                                                       "gpu": {"product": "NVIDIA-H100-80GB-HBM3", "count": 8}})))
    assert [p.gpu.count for p in parse_sections(sections, "Pulumi.t.yaml").node_pools] == [20, 8]


def test_source_ranges_in_the_annotation_restrict_a_load_balancer():
    sections = with_(lambda s: s["workloads"][0].update(service={"annotations": {
        "service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/8,192.168.0.0/16"}}))
    assert parse_sections(sections, "Pulumi.t.yaml").workloads[0].service.source_ranges == []


def test_public_load_balancer_passes_when_explicit():
    sections = with_(lambda s: s["workloads"][0].update(service={"sourceRanges": ["0.0.0.0/0"], "public": True}))
    assert parse_sections(sections, "Pulumi.t.yaml").workloads[0].service.public


def test_int32_maximum_is_accepted():
    sections = with_(lambda s: s["workloads"][0].update(replicas=2**31 - 1))
    assert parse_sections(sections, "Pulumi.t.yaml").workloads[0].replicas == 2**31 - 1


def test_unpinned_and_latest_images_are_refused_but_tags_and_digests_pass():
    for image in ("nginx:1.27", "nginx@sha256:" + "a" * 64, "localhost:5000/nginx:1.27"):
        assert parse_sections(with_(lambda s, image=image: s["workloads"][0].update(image=image)), "Pulumi.t.yaml")
    for image in ("localhost:5000/nginx", "nginx:latest"):
        refused = errors_of(with_(lambda s, image=image: s["workloads"][0].update(image=image)))
        assert any("is not pinned" in e for e in refused)


def test_a_broken_workload_does_not_hide_the_rules_over_everything_else():
    """One mistyped workload used to hide every node-pool and reference problem until it was fixed."""
    s = base()
    s["nodePools"][0]["nodes"] = ["n0", "n0"]
    s["workloads"] = [infer(name="ok", nodePool="edge", gpu={"count": 1}),
                      infer(name="broken", namespace="../../x", nodePool="edge", gpu={"count": 1}),
                      infer(name="lost", nodePool="nowhere", gpu={"count": 1})]
    errors = errors_of(s)
    assert any(e.startswith("gpufleet:workloads[1].namespace: not a valid namespace name") for e in errors)
    assert any(e.startswith("gpufleet:nodePools[0].nodes[1]: 'n0' is already listed") for e in errors)
    # the rule ran without workloads[1]; its finding about the third workload keeps that workload's index
    assert any(e.startswith("gpufleet:workloads[2].nodePool:") and "'nowhere' is not a node pool" in e
               for e in errors), errors


def test_rules_wait_when_a_section_other_than_workloads_is_broken():
    s = base()
    s["mode"] = "operatr"
    s["nodePools"][0]["nodes"] = ["n0", "n0"]
    errors = errors_of(s)
    assert [e.split(":")[1] for e in errors] == ["mode"]  # pools are checked once the mode is fixed
