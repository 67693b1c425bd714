"""Any env, volume, annotation or GPU request a workload may carry: `check` answers 0, 1 or 2, never a crash,
and on every input it accepts its policy findings are the pack's violations on the same object."""

from __future__ import annotations

import json

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies import no_driver_hostpath, no_visible_devices_bypass
from policies.tests.conftest import run_policy
from tests.cli.run_inprocess import run

ANY = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, width=16)
                   | st.sampled_from(["", "all", "x", "/usr/local/nvidia"]),
                   lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                       st.sampled_from(["name", "value", "valueFrom", "path", "hostPath", "type", "key"]), inner,
                       max_size=3), max_leaves=8)
ENV_VALUES = st.sampled_from(["all", "void", "none", "", " NONE ", "0", "0,1", "GPU-8d9c2f0e", "nvidia.com/gpu=all"])
ENV = st.fixed_dictionaries(
    {"name": st.sampled_from(["NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "x"])},
    optional={"value": ENV_VALUES | ANY,
              "valueFrom": st.just({"configMapKeyRef": {"name": "gpus", "key": "ids"}}) | ANY})
PATHS = st.sampled_from(["/usr/local/nvidia", "/usr/local/nvidia/lib64/", "/run/nvidia/mps", "/run/nvidia",
                         "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/bin/nvidia-smi", "/dev/nvidia0",
                         "/data", "/", "", "opt/nvidia", "/usr/lib64"]) | st.text(max_size=20)
VOLUME = st.fixed_dictionaries({"name": st.sampled_from(["a", "b", "c"])}, optional={
    "hostPath": st.fixed_dictionaries({}, optional={"path": PATHS | ANY, "type": st.sampled_from(["", "Directory"])})
    | ANY, "emptyDir": st.just({})})
LIMITS = st.dictionaries(st.sampled_from(["nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.5gb",
                                          "nvidia.com/mig-9g.99gb", "nvidia.com/a100", "nvidia.com/gpumem",
                                          "alpha.kubernetes.io/nvidia-gpu", "cpu"]),
                         st.sampled_from([1, 2, "1", "500m", -1, "abc"]) | ANY, max_size=2)
CONTAINER = st.fixed_dictionaries({"name": st.sampled_from(["c", "d"]), "image": st.just("x:1")}, optional={
    "env": st.lists(ENV | ANY, max_size=3) | ANY, "resources": st.fixed_dictionaries({}, optional={"limits": LIMITS})})
ANNOTATIONS = st.dictionaries(st.sampled_from(["cdi.k8s.io/gpu", "cdi.k8s.io/x", "other/y"]),
                              st.sampled_from(["nvidia.com/gpu=all", "nvidia.com/gpu=0", "vendor.com/x=1", ""]),
                              max_size=2)  # check refuses annotations that are no strings (exit 2)
NODES = {"kind": "List", "items": [
    {"metadata": {"name": f"n{i}"},
     "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "10", "nvidia.com/gpu": "2",
                                "nvidia.com/mig-1g.5gb": "7"}}} for i in range(2)]}
CHECKED_BY_BOTH = ("[no-visible-devices-bypass] ", "[no-driver-hostpath] ")


def typed_as_pulumi_sends_it(containers: list, volumes) -> bool:
    """Env values and volume names are strings, as the pack always gets them (check also reads other JSON
    values, which the pack would print as the analyzer's proxies or floats)."""
    envs = [e for c in containers if isinstance(c.get("env"), list) for e in c["env"] if isinstance(e, dict)]
    vols = [v for v in volumes if isinstance(v, dict)] if isinstance(volumes, list) else []
    return all(isinstance(e.get("value", ""), str) for e in envs) and all(isinstance(v.get("name", ""), str)
                                                                         for v in vols)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(containers=st.lists(CONTAINER, min_size=1, max_size=2), volumes=st.lists(VOLUME, max_size=3) | ANY,
       annotations=ANNOTATIONS, as_pod=st.booleans())
def test_any_env_or_volume_never_crashes_check_and_matches_the_pack(tmp_path, containers, volumes, annotations,
                                                                      as_pod):
    spec = {"containers": containers, "volumes": volumes}
    meta = {"name": "w", "namespace": "ml", "annotations": annotations}
    if as_pod:
        kind, obj = "kubernetes:core/v1:Pod", {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    else:
        kind, obj = "kubernetes:apps/v1:Deployment", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "ml"},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {**meta, "labels": {"a": "b"}}, "spec": spec}}}
    nodes, app = tmp_path / "nodes.json", tmp_path / "app.yaml"
    nodes.write_text(json.dumps(NODES))
    app.write_text(yaml.safe_dump(obj))
    out = run("check", "--json", "--nodes", nodes, app)
    assert out.code in (0, 1, 2), out
    assert "Traceback" not in out.err and "internal error" not in out.err
    if out.code == 2:
        assert out.err.strip() and all(str(app) in line for line in out.err.strip().splitlines())
        return
    result = json.loads(out.out)
    assert result["fits"] is (out.code == 0)
    found = [u["message"] for u in result["unschedulable"] if u["reason"] == "policy"]
    assert all(u["pending"] == 1 for u in result["unschedulable"] if u["reason"] == "policy")
    if not typed_as_pulumi_sends_it(containers, volumes):
        return
    resource = {"type": kind, "name": "w", "props": obj}
    pack = [f"[{p.name}] {m}" for p in (no_visible_devices_bypass.POLICY, no_driver_hostpath.POLICY)
            for m, _ in run_policy(p, [resource], {"platformManaged": False})]
    assert sorted(m for m in found if m.startswith(CHECKED_BY_BOTH)) == sorted(pack)
