"""gpufleet's own mig-manager (standalone mode) is shaped like the one the gpu-operator deploys
(assets/state-mig-manager): privileged, host PID and IPC, host /sys and / mounted, on nodes labelled
nvidia.com/gpu.deploy.mig-manager=true, with its GPU-clients file and the MIG config from ConfigMaps."""

from __future__ import annotations

import yaml

from gpufleet.config.loading import load_stack
from gpufleet.render import gpu_stack as r
from gpufleet.render.labels import MIG_CONFIGMAP
from gpufleet.render.mig_manager import mig_manager_objects
from tests.conftest import ROOT


def objects(namespace="nvidia-device-plugin", clients_namespace=None) -> dict[str, dict]:
    return {o["kind"] + "/" + o["metadata"]["name"]: o for o in mig_manager_objects(namespace, clients_namespace)}


def pod_spec() -> dict:
    return objects()["DaemonSet/nvidia-mig-manager"]["spec"]["template"]["spec"]


def test_runs_privileged_with_host_pid_and_ipc_on_nodes_labelled_for_mig_manager():
    spec = pod_spec()
    assert spec["hostPID"] is True and spec["hostIPC"] is True
    assert spec["nodeSelector"] == {"nvidia.com/gpu.deploy.mig-manager": "true"}
    assert spec["containers"][0]["securityContext"] == {"privileged": True}
    assert spec["priorityClassName"] == "system-node-critical"


def test_mounts_host_sys_and_root_and_reads_both_configmaps_where_its_env_points():
    spec = pod_spec()
    (container,) = spec["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["host-sys"]["hostPath"]["path"] == "/sys" and mounts["host-sys"]["mountPath"] == "/sys"
    assert volumes["host-root"]["hostPath"]["path"] == "/"
    assert mounts["host-root"]["mountPath"] == env["HOST_ROOT_MOUNT"]
    assert mounts["host-root"]["mountPropagation"] == "HostToContainer"
    for var, volume, configmap, key in (("CONFIG_FILE", "mig-parted-config", MIG_CONFIGMAP, "config.yaml"),
                                        ("GPU_CLIENTS_FILE", "gpu-clients", "gpufleet-mig-gpu-clients",
                                         "clients.yaml")):
        assert env[var] == f"{mounts[volume]['mountPath']}/{key}"
        assert volumes[volume]["configMap"]["name"] == configmap


def test_gpu_clients_configmap_is_mig_parteds_v1_format_with_host_services():
    cm = objects()["ConfigMap/gpufleet-mig-gpu-clients"]
    doc = yaml.safe_load(cm["data"]["clients.yaml"])
    assert doc["version"] == "v1"
    assert "nvidia-dcgm.service" in doc["systemd-services"] and "nvsm.service" in doc["systemd-services"]


def test_sets_the_env_upstream_sets_and_a_host_installed_drivers_paths():
    (container,) = pod_spec()["containers"]
    env = {e["name"]: e for e in container["env"]}
    for name, path in (("NODE_NAME", "spec.nodeName"), ("POD_NAME", "metadata.name"),
                       ("POD_NAMESPACE", "metadata.namespace")):
        assert env[name]["valueFrom"]["fieldRef"]["fieldPath"] == path
    assert env["WITH_REBOOT"]["value"] == "false"
    assert env["WITH_SHUTDOWN_HOST_GPU_CLIENTS"]["value"] == "true"
    assert (env["NVIDIA_DRIVER_ROOT"]["value"], env["DRIVER_ROOT_CTR_PATH"]["value"]) == ("/", "/host")


def test_looks_for_gpu_clients_in_the_namespace_it_is_given():
    (container,) = objects("mig", "plugins")["DaemonSet/nvidia-mig-manager"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["DEFAULT_GPU_CLIENTS_NAMESPACE"] == "plugins"


def test_may_list_pods_everywhere_but_delete_them_and_write_configmaps_only_in_its_namespace():
    objs = objects("gpu")
    cluster = {v for rule in objs["ClusterRole/nvidia-mig-manager"]["rules"] if "pods" in rule["resources"]
               for v in rule["verbs"]}
    role = objs["Role/nvidia-mig-manager"]
    assert cluster == {"list"} and role["metadata"]["namespace"] == "gpu"
    assert {"delete"} <= {v for rule in role["rules"] if "pods" in rule["resources"] for v in rule["verbs"]}
    assert objs["RoleBinding/nvidia-mig-manager"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "nvidia-mig-manager", "namespace": "gpu"}]


def test_mig_stack_labels_its_node_for_mig_manager_plugin_and_gfd_and_operator_stacks_do_not():
    mig = load_stack("mig", ROOT).config
    assert r.node_labels(mig)["a100-node-0"] == {
        "nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
        "nvidia.com/gpu.deploy.mig-manager": "true", "nvidia.com/mig.config": "all-1g.5gb"}
    dev = load_stack("dev", ROOT).config  # the operator sets its own deploy labels
    assert not any(k.startswith("nvidia.com/gpu.deploy.") for labels in r.node_labels(dev).values() for k in labels)
