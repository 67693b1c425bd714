"""The component plugin (provider/): started as the engine starts a Python plugin, spoken to over the
provider gRPC protocol with the SDK's own stubs; no Pulumi CLI.

- GetSchema: the package name and version, the GpuStack token, every input and output with its type and
  description.
- Construct against a recording resource monitor (a small gRPC server playing the engine's ResourceMonitor
  and Engine services): the child resources registered equal those `gpufleet plan` records for the same
  stack file (types, names, parents and inputs).
- A bad config comes back as gpufleet's one-line-per-problem message, with no traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import tomllib
from concurrent import futures

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.proto import (engine_pb2, engine_pb2_grpc, provider_pb2, provider_pb2_grpc, resource_pb2,
                                  resource_pb2_grpc)

from gpufleet.config.loading import load_stack, parse_sections
from gpufleet.errors import ConfigError
from gpufleet.planning.engine import STACK_TYPE, run_program
from gpufleet.render.gpu_stack import mig_configmap, sharing_configmap, stack_namespace
from tests.conftest import ROOT

PLUGIN_DIR = ROOT / "provider"
TOKEN = "gpufleet:index:GpuStack"
START_TIMEOUT_S = 60


class RecordingEngine(engine_pb2_grpc.EngineServicer):
    def __init__(self):
        self.logs: list[str] = []

    def Log(self, request, context):
        self.logs.append(request.message)
        return empty_pb2.Empty()

    def GetRootResource(self, request, context):
        return engine_pb2.GetRootResourceResponse(urn="")

    def SetRootResource(self, request, context):
        return engine_pb2.SetRootResourceResponse()


class RecordingMonitor(resource_pb2_grpc.ResourceMonitorServicer):
    """The engine's side of RegisterResource: URNs as the engine builds them, inputs echoed as outputs (a
    preview), every registration recorded as (type, name, parent URN, inputs)."""

    FEATURES = {"secrets", "resourceReferences"}
    #: The features `gpufleet plan`'s mock monitor declares, so that both serialize inputs alike.
    DEPLOYMENT_INFO = pulumi_mocks.MockMonitor.GetDeploymentInfo(None, None)

    def __init__(self, project: str, stack: str):
        self.reset(project, stack)

    def reset(self, project: str, stack: str) -> "RecordingMonitor":
        self.project, self.stack = project, stack
        self.registrations: list[dict] = []
        self.outputs: dict[str, dict] = {}
        return self

    def GetDeploymentInfo(self, request, context):
        return self.DEPLOYMENT_INFO

    def SupportsFeature(self, request, context):
        return resource_pb2.SupportsFeatureResponse(hasSupport=request.id in self.FEATURES)

    def _urn(self, type_: str, name: str, parent: str) -> str:
        qualified = f"{parent.split('::')[2]}${type_}" if parent else type_
        return f"urn:pulumi:{self.stack}::{self.project}::{qualified}::{name}"

    def RegisterResource(self, request, context):
        urn = self._urn(request.type, request.name, request.parent)
        self.registrations.append({
            "type": request.type, "name": request.name, "parent": request.parent or None, "urn": urn,
            "custom": request.custom,
            "inputs": rpc.deserialize_properties(request.object, keep_unknowns=True)})
        return resource_pb2.RegisterResourceResponse(
            urn=urn, id=f"{request.name}-id" if request.custom else "", object=request.object)

    def RegisterResourceOutputs(self, request, context):
        self.outputs[request.urn] = rpc.deserialize_properties(request.outputs, keep_unknowns=True)
        return empty_pb2.Empty()

    def Invoke(self, request, context):
        return resource_pb2.InvokeResponse(**{"return": struct_pb2.Struct()})

    def RegisterPackage(self, request, context):
        return resource_pb2.RegisterPackageResponse(ref=f"{request.name}-{request.version}")


class Plugin:
    """`python provider <engine address>` (what the Python language host runs for a plugin), connected."""

    def __init__(self, engine_address: str):
        self.stderr = tempfile.TemporaryFile(mode="w+")  # a file, so a chatty plugin never blocks on a pipe
        self.proc = subprocess.Popen([sys.executable, str(PLUGIN_DIR), engine_address], cwd=PLUGIN_DIR,
                                     stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        port = self.proc.stdout.readline().strip()
        if not port.isdigit():
            self.close()
            raise AssertionError(f"plugin printed {port!r}, not a port; stderr:\n{self.stderr_text}")
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(self.channel).result(timeout=START_TIMEOUT_S)
        self.stub = provider_pb2_grpc.ResourceProviderStub(self.channel)

    def close(self):
        self.channel.close()
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()

    @property
    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()


@pytest.fixture(scope="module")
def engine():
    """A recording engine + monitor on one gRPC server; `engine.reset(stack)` clears the recording."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    log = RecordingEngine()
    monitor = RecordingMonitor("gpufleet", "dev")
    engine_pb2_grpc.add_EngineServicer_to_server(log, server)
    resource_pb2_grpc.add_ResourceMonitorServicer_to_server(monitor, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()

    class Engine:
        address = f"127.0.0.1:{port}"
        logs = log.logs

        @staticmethod
        def reset(stack: str) -> RecordingMonitor:
            return monitor.reset("gpufleet", stack)

    yield Engine
    server.stop(None)


@pytest.fixture(scope="module")
def plugin(engine):
    p = Plugin(engine.address)
    yield p
    p.close()


@pytest.fixture(scope="module")
def schema(plugin) -> dict:
    return json.loads(plugin.stub.GetSchema(provider_pb2.GetSchemaRequest(version=0)).schema)


def test_plugin_manifest_names_a_python_runtime():
    manifest = yaml.safe_load((PLUGIN_DIR / "PulumiPlugin.yaml").read_text())
    assert set(manifest) == {"runtime"}  # all PulumiPlugin.yaml holds; name and version come from the schema
    assert manifest["runtime"]["name"] == "python"
    assert (PLUGIN_DIR / "__main__.py").is_file()
    assert not (ROOT / "PulumiPlugin.yaml").exists(), "the repository root stays the Pulumi project"


def test_schema_names_the_package_and_its_version(plugin, schema):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert schema["name"] == "gpufleet"
    assert schema["version"] == version
    info = plugin.stub.GetPluginInfo(empty_pb2.Empty())
    assert info.version == version


def test_schema_exposes_gpu_stack_with_typed_documented_inputs(schema):
    assert next(iter(schema["resources"])) == TOKEN  # GpuStack first, then the smaller components
    assert set(schema["resources"]) == {TOKEN, *PART_TOKENS}
    res = schema["resources"][TOKEN]
    assert res["isComponent"] is True
    assert res["description"].startswith("The NVIDIA GPU stack and its GPU workloads on Kubernetes")
    inputs = res["inputProperties"]
    assert set(inputs) == {"stackFile", "configYaml", "secrets"}
    assert inputs["stackFile"]["type"] == "string" and inputs["stackFile"]["plain"] is True
    assert inputs["configYaml"]["type"] == "string" and inputs["configYaml"]["plain"] is True
    assert inputs["secrets"]["type"] == "object"
    assert inputs["secrets"]["additionalProperties"]["type"] == "string"
    assert "plain" not in inputs["secrets"]  # secrets may be Outputs (e.g. from another stack or a vault)
    assert "Pulumi.<stack>.yaml" in inputs["stackFile"]["description"]
    assert "`gpufleet:` section" in inputs["configYaml"]["description"]
    assert "Pulumi secrets" in inputs["secrets"]["description"]
    # exactly one of stackFile / configYaml is needed, so neither is required by the schema
    assert res["requiredInputs"] == []
    for prop in inputs.values():
        assert "\n" not in prop["description"] and "  " not in prop["description"]


def test_schema_lists_the_outputs_a_user_needs(schema):
    res = schema["resources"][TOKEN]
    out = res["properties"]
    assert set(out) == {"namespaces", "releaseNames", "endpoints", "capacity"}
    assert sorted(res["required"]) == sorted(out)
    assert out["namespaces"]["type"] == "array" and out["namespaces"]["items"]["type"] == "string"
    assert out["releaseNames"]["type"] == "object"
    assert out["releaseNames"]["additionalProperties"]["type"] == "string"
    assert out["endpoints"]["additionalProperties"]["type"] == "string"
    cap = out["capacity"]["additionalProperties"]
    assert cap["type"] == "object" and cap["additionalProperties"]["type"] == "integer"
    for prop in out.values():
        assert prop["description"] and "\n" not in prop["description"]


def _construct(plugin: Plugin, engine, stack: str, inputs: dict, secrets: list[str] = (), token: str = TOKEN,
               name: str | None = None):
    struct = struct_pb2.Struct()
    struct.update(inputs)
    monitor = engine.reset(stack)
    request = provider_pb2.ConstructRequest(
        project="gpufleet", stack=stack, dryRun=True, monitorEndpoint=engine.address, type=token,
        name=name or stack, inputs=struct)
    return monitor, plugin.stub.Construct(request, timeout=120)


def _tree(registrations: list[dict]) -> list[tuple]:
    """(type, name, parent's type and name) of each registration below the stack resource."""
    by_urn = {r["urn"]: r for r in registrations}
    out = []
    for r in registrations:
        if r["type"] == STACK_TYPE:
            continue
        parent = by_urn.get(r["parent"])
        parent_key = (parent["type"], parent["name"]) if parent and parent["type"] != STACK_TYPE else None
        out.append((r["type"], r["name"], parent_key))
    return sorted(out)


@pytest.mark.parametrize("stack", ["dev", "mig", "dra"])
def test_construct_registers_what_plan_registers(plugin, engine, stack):
    loaded = load_stack(stack, ROOT)
    plan = run_program(loaded)
    planned = [{"type": r.type, "name": r.name, "parent": r.parent, "urn": r.urn, "inputs": r.inputs}
               for r in plan.resources]
    keys = loaded.config.secret_config_keys()
    monitor, response = _construct(plugin, engine, stack, {
        "stackFile": str(ROOT / f"Pulumi.{stack}.yaml"),
        "secrets": {k: "[secret]" for k in keys}})
    assert response.urn == f"urn:pulumi:{stack}::gpufleet::{TOKEN}::{stack}"
    assert _tree(monitor.registrations) == _tree(planned)
    got = {(r["type"], r["name"]): r["inputs"] for r in monitor.registrations}
    want = {(r["type"], r["name"]): r["inputs"] for r in planned if r["type"] != STACK_TYPE}
    assert got == want

    state = rpc.deserialize_properties(response.state, keep_unknowns=True)
    cfg = loaded.config
    assert set(state["namespaces"]) >= set(cfg.namespaces())
    assert set(state["capacity"]) == {p.name for p in cfg.node_pools}


def test_construct_outputs_for_dev(plugin, engine):
    _, response = _construct(plugin, engine, "dev", {
        "stackFile": str(ROOT / "Pulumi.dev.yaml"), "secrets": {"notebookToken": "t"}})
    state = rpc.deserialize_properties(response.state, keep_unknowns=True)
    assert state["namespaces"][0] == load_stack("dev", ROOT).config.operator.namespace
    assert "myasetest1" in state["namespaces"]
    assert state["releaseNames"] == {"gpuOperator": "gpu-operator"}
    assert state["capacity"] and all(isinstance(v, dict) for v in state["capacity"].values())


def test_config_yaml_input_plans_like_the_stack_file(plugin, engine):
    doc = yaml.safe_load((ROOT / "Pulumi.mig.yaml").read_text())["config"]
    text = yaml.safe_dump({k: v for k, v in doc.items() if k.startswith("gpufleet:")})
    from_text, _ = _construct(plugin, engine, "mig", {"configYaml": text})
    from_file, _ = _construct(plugin, engine, "mig", {"stackFile": str(ROOT / "Pulumi.mig.yaml")})
    assert _tree(from_text.registrations) == _tree(from_file.registrations)


def test_a_bad_config_comes_back_as_gpufleets_message(plugin, engine):
    text = ("mode: operatr\n"
            "workloads:\n  - {kind: inference, name: a, namespace: n, image: 'x:1', gpu: {count: 0.5}}\n")
    with pytest.raises(grpc.RpcError) as exc:
        _construct(plugin, engine, "bad", {"configYaml": text})
    err = exc.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    lines = err.details().splitlines()
    assert ("configYaml: gpufleet:mode: Input should be 'operator', 'standalone' or 'platform-managed'; "
            "got \"operatr\"") in lines
    assert all(line.startswith("configYaml: ") for line in lines), lines
    with pytest.raises(ConfigError) as own:  # exactly what gpufleet itself says about this config
        parse_sections(yaml.safe_load(text), "configYaml")
    assert err.details() == str(own.value)
    assert "Traceback" not in err.details() and "File \"" not in err.details()


def test_a_missing_stack_file_comes_back_as_gpufleets_message(plugin, engine, tmp_path):
    with pytest.raises(grpc.RpcError) as exc:
        _construct(plugin, engine, "none", {"stackFile": str(tmp_path / "Pulumi.none.yaml")})
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert exc.value.details() == f"{tmp_path / 'Pulumi.none.yaml'}: no such stack file; stacks here: (none)"


def test_neither_or_both_config_inputs_is_an_error(plugin, engine):
    for inputs in ({}, {"stackFile": str(ROOT / "Pulumi.dev.yaml"), "configYaml": "mode: operator\n"}):
        with pytest.raises(grpc.RpcError) as exc:
            _construct(plugin, engine, "x", inputs)
        assert exc.value.details().startswith("GpuStack: give exactly one of stackFile")


def test_secret_values_stay_secret(plugin, engine):
    """A secret sent by the caller (wire form: the SDK's secret signature) reaches the notebook's Secret as
    a secret, as `pulumi config set --secret notebookToken` does for the Python program."""
    def secret(value):
        return {rpc._special_sig_key: rpc._special_secret_sig, "value": value}

    monitor, _ = _construct(plugin, engine, "dev", {
        "stackFile": str(ROOT / "Pulumi.dev.yaml"), "secrets": {"notebookToken": secret("tok")}})
    plan = run_program(load_stack("dev", ROOT))
    key = ("kubernetes:core/v1:Secret", "dev-myasetest1-tf-notebook-token")
    got = {(r["type"], r["name"]): r["inputs"] for r in monitor.registrations}
    assert got[key]["stringData"] == secret({"token": "tok"})
    assert plan.get(*key).inputs["stringData"] == secret({"token": "[secret]"})
    others = {k: v for k, v in got.items() if k != key}
    assert others == {(r.type, r.name): r.inputs for r in plan.resources
                      if r.type != STACK_TYPE and (r.type, r.name) != key}


def test_config_yaml_that_is_not_yaml_or_not_a_mapping(plugin, engine):
    not_mapping = "configYaml: config: must be a mapping of gpufleet config sections, got list"
    not_yaml = "configYaml: line 2: not valid YAML: "
    for text, message in (("mode: [operator\n", not_yaml), ("- operator\n", not_mapping)):
        with pytest.raises(grpc.RpcError) as exc:
            _construct(plugin, engine, "x", {"configYaml": text})
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert exc.value.details().startswith(message), exc.value.details()
        assert "\n" not in exc.value.details()


def test_the_readme_examples_use_only_what_the_schema_serves(schema):
    import re

    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Use from other languages"):]
    res = schema["resources"][TOKEN]
    inputs, outputs = set(res["inputProperties"]), set(res["properties"])
    ts = re.search(r"```typescript\n(.*?)```", section, re.S).group(1)
    assert "new gpufleet.GpuStack(" in ts
    used = set(re.findall(r"\b(\w+):", ts.split("new gpufleet.GpuStack(", 1)[1].split(");", 1)[0]))
    assert used - {"notebookToken"} <= inputs, used - inputs
    assert set(re.findall(r"gpus\.(\w+)", ts)) <= outputs
    yml = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    doc = yaml.safe_load(yml)
    assert doc["resources"]["gpus"]["type"] == TOKEN
    assert set(doc["resources"]["gpus"]["properties"]) <= inputs
    assert set(re.findall(r"\$\{gpus\.(\w+)\}", yml)) <= outputs
    from gpufleet.config.loading import parse_sections

    config = doc["resources"]["gpus"]["properties"]["configYaml"]
    parse_sections(yaml.safe_load(config), "README.md")  # a valid config: raises on any problem


# --- the smaller components, each alone: what GpuStack builds for it, from the same config inputs ---------

#: token -> (its outputs, the suffix GpuStack names it by: `<stack>-<suffix>`)
PARTS = {
    "gpufleet:index:GpuOperator": ({"releaseName", "namespace"}, "gpu-operator"),
    "gpufleet:index:DevicePlugin": ({"releaseName", "namespace"}, "device-plugin"),
    "gpufleet:index:SharingConfig": ({"configMapName", "namespace", "profiles"}, "sharing"),
    "gpufleet:index:MigGeometry": ({"configMapName", "namespace"}, "mig"),
}
PART_TOKENS = list(PARTS)


@pytest.mark.parametrize("token", PART_TOKENS)
def test_schema_exposes_the_smaller_components(schema, token):
    res = schema["resources"][token]
    gpu_stack = schema["resources"][TOKEN]
    assert res["isComponent"] is True
    assert res["description"] and "\n" not in res["description"]
    assert res["inputProperties"] == {k: gpu_stack["inputProperties"][k] for k in ("stackFile", "configYaml")}
    assert res["requiredInputs"] == []
    outputs, _ = PARTS[token]
    assert set(res["properties"]) == outputs
    assert sorted(res["required"]) == sorted(outputs)
    for key, prop in res["properties"].items():
        assert prop["description"] and "\n" not in prop["description"]
        assert prop["type"] == ("array" if key == "profiles" else "string")


def _subtree(registrations: list[dict], type_: str, name: str) -> dict[tuple, tuple]:
    """(type, name) -> (parent's type and name, inputs) of the component `type_`/`name` and every resource
    below it; the component's own parent is left out (GpuStack there, the stack here)."""
    by_urn = {r["urn"]: r for r in registrations}
    root = next(r for r in registrations if (r["type"], r["name"]) == (type_, name))

    def below(r):
        while r is not None and r is not root:
            r = by_urn.get(r["parent"])
        return r is root

    out = {}
    for r in registrations:
        if below(r):
            parent = by_urn[r["parent"]] if r is not root else None
            out[(r["type"], r["name"])] = ((parent["type"], parent["name"]) if parent else None, r["inputs"])
    return out


@pytest.mark.parametrize("stack,token", [
    ("dev", "gpufleet:index:GpuOperator"), ("dev", "gpufleet:index:SharingConfig"),
    ("dra", "gpufleet:index:GpuOperator"),
    ("mig", "gpufleet:index:DevicePlugin"), ("mig", "gpufleet:index:MigGeometry"),
])
def test_a_smaller_component_registers_what_gpu_stack_registers_for_it(plugin, engine, stack, token):
    cfg = load_stack(stack, ROOT).config
    stack_file = str(ROOT / f"Pulumi.{stack}.yaml")
    whole, _ = _construct(plugin, engine, stack, {
        "stackFile": stack_file, "secrets": {k: "[secret]" for k in cfg.secret_config_keys()}})
    name = f"{stack}-{PARTS[token][1]}"
    want = _subtree(whole.registrations, token, name)
    assert len(want) > 1  # the component and what it holds
    alone, response = _construct(plugin, engine, stack, {"stackFile": stack_file}, token=token, name=name)
    assert response.urn == f"urn:pulumi:{stack}::gpufleet::{token}::{name}"
    assert _subtree(alone.registrations, token, name) == want

    state = rpc.deserialize_properties(response.state, keep_unknowns=True)
    assert set(state) == PARTS[token][0]
    assert state["namespace"] == stack_namespace(cfg)
    if "releaseName" in state:
        assert state["releaseName"] == {"gpufleet:index:GpuOperator": "gpu-operator",
                                        "gpufleet:index:DevicePlugin": "nvidia-device-plugin"}[token]
    if token == "gpufleet:index:SharingConfig":
        assert state["profiles"] == sorted(sharing_configmap(cfg)["data"])
        assert state["configMapName"] == sharing_configmap(cfg)["metadata"]["name"]
    if token == "gpufleet:index:MigGeometry":
        assert state["configMapName"] == mig_configmap(cfg)["metadata"]["name"]


POOL = "nodePools:\n  - {name: t4, nodes: [t4-0], gpu: {product: Tesla-T4, count: 1}}\n"


@pytest.mark.parametrize("token,config,message", [
    ("gpufleet:index:GpuOperator", "mode: standalone\n" + POOL,
     'configYaml: gpufleet:mode: GpuOperator needs mode operator ('),
    ("gpufleet:index:DevicePlugin", "mode: operator\n" + POOL,
     'configYaml: gpufleet:mode: DevicePlugin needs mode standalone ('),
    ("gpufleet:index:DevicePlugin", "mode: standalone\ngpuAllocation: dra\n" + POOL,
     "configYaml: gpufleet:gpuAllocation: DevicePlugin needs gpuAllocation devicePlugin ("),
    ("gpufleet:index:SharingConfig", "mode: operator\n" + POOL,
     "configYaml: gpufleet:devicePlugin.sharingProfiles: SharingConfig needs at least one sharing profile"),
    ("gpufleet:index:SharingConfig", "mode: platform-managed\n" + POOL,
     "configYaml: gpufleet:mode: SharingConfig needs mode operator or standalone ("),
    ("gpufleet:index:MigGeometry", "mode: operator\n" + POOL,
     "configYaml: gpufleet:mig.geometries: MigGeometry needs a MIG geometry"),
])
def test_a_smaller_component_that_does_not_apply_says_why(plugin, engine, token, config, message):
    parse_sections(yaml.safe_load(config), "configYaml")  # a valid config: only the component does not apply
    with pytest.raises(grpc.RpcError) as exc:
        _construct(plugin, engine, "x", {"configYaml": config}, token=token, name="x")
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = exc.value.details()
    assert details.startswith(message), details
    assert "\n" not in details and "Traceback" not in details
    assert "; got " in details or "none declared" in details


def test_a_smaller_component_names_itself_when_config_inputs_are_wrong(plugin, engine):
    with pytest.raises(grpc.RpcError) as exc:
        _construct(plugin, engine, "x", {}, token="gpufleet:index:MigGeometry", name="x")
    assert exc.value.details().startswith("MigGeometry: give exactly one of stackFile")


def test_a_smaller_component_reports_a_bad_stack_file_as_its_source(plugin, engine):
    with pytest.raises(grpc.RpcError) as exc:  # dev is an operator stack: no standalone device plugin
        _construct(plugin, engine, "dev", {"stackFile": str(ROOT / "Pulumi.dev.yaml")},
                   token="gpufleet:index:DevicePlugin", name="dev-device-plugin")
    assert exc.value.details() == ('Pulumi.dev.yaml: gpufleet:mode: DevicePlugin needs mode standalone (the '
                                   'gpu-operator runs its own device plugin); got "operator"')


def test_the_readme_names_each_smaller_component_with_its_inputs_and_outputs(schema):
    readme = (ROOT / "README.md").read_text()
    section = " ".join(readme[readme.index("## Use from other languages"):].split())
    for token, res in schema["resources"].items():
        if token == TOKEN:
            continue
        assert f"`{token}`" in section, token
        said = section[section.index(f"`{token}`"):].split(";")[0]
        for output in res["properties"]:
            assert f"`{output}`" in said, (token, output)
    assert "`stackFile` or `configYaml`" in section
