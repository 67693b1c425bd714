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
from pulumi.runtime.proto import (
    engine_pb2,
    engine_pb2_grpc,
    provider_pb2,
    provider_pb2_grpc,
    resource_pb2,
    resource_pb2_grpc,
)

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

    def reset(self, project: str, stack: str) -> RecordingMonitor:
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
    assert set(inputs) == {"stackFile", "configYaml", "config", "secrets"}
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
    assert set(state["namespaces"]) >= set(cfg.namespace_names())
    assert set(state["capacity"]) == {p.name for p in cfg.node_pools}
    # What the pools advertise in total is what check's planned nodes advertise (none in a DRA stack).
    from gpufleet.capacity.stack import capacity_from_stack, node_names

    for pool in cfg.node_pools:
        names = set(node_names(pool))
        summed: dict[str, int] = {}
        for node in capacity_from_stack(cfg):
            if node.name in names:
                for res, n in node.allocatable.items():
                    if "/" in res:
                        summed[res] = summed.get(res, 0) + int(n)
        assert state["capacity"][pool.name] == summed, pool.name


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


# --- the typed `config` input: the stack config sections as schema types --------------------------------

def _type(schema: dict, prop: dict) -> dict:
    """The `types` entry a property (or its array items / map values) refers to."""
    ref = prop.get("$ref") or prop.get("items", {}).get("$ref") or prop["additionalProperties"]["$ref"]
    assert ref.startswith("#/types/"), ref
    return schema["types"][ref.removeprefix("#/types/")]


def _said(description: str | None) -> str:
    return " ".join((description or "").split())


def _stack_sections(stack: str) -> dict:
    doc = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {k.removeprefix("gpufleet:"): v for k, v in doc.items() if k.startswith("gpufleet:")}


def test_schema_types_the_config_input_as_the_stack_config_sections(schema):
    from gpufleet.config.stack import SECTION_KEYS, StackConfig

    config = schema["resources"][TOKEN]["inputProperties"]["config"]
    assert config["$ref"] == "#/types/gpufleet:index:StackConfig" and config["plain"] is True
    assert "`gpufleet:` section" in config["description"]
    root = _type(schema, config)
    assert set(root["properties"]) == set(SECTION_KEYS)  # every top-level section of the stack file
    # descriptions come from the pydantic models: spot checks, section by section
    for key, field in StackConfig.model_fields.items():
        alias = field.alias or key
        if field.description:
            assert root["properties"][alias]["description"].startswith(_said(field.description)), alias
    mode = root["properties"]["mode"]["description"]
    assert "One of: `operator`, `standalone`, `platform-managed`." in mode
    props = root["properties"]
    defaults = StackConfig()
    for section, model in (("cluster", type(defaults.cluster)), ("operator", type(defaults.operator)),
                           ("devicePlugin", type(StackConfig().device_plugin))):
        typ = _type(schema, props[section])
        assert typ["description"] == _said(model.__doc__) or typ["description"] == _said(
            model.model_json_schema().get("description")), section
        for key, field in model.model_fields.items():
            if field.description:
                said = typ["properties"][field.alias or key]["description"]
                assert said.startswith(_said(field.description))
    pool = _type(schema, props["nodePools"])
    assert props["nodePools"]["type"] == "array"
    assert {"name", "nodes", "gpu"} <= set(pool["properties"])
    workload = _type(schema, props["workloads"])
    assert {"kind", "name", "namespace", "image", "gpu", "model", "env"} <= set(workload["properties"])
    for kind in ("`inference`", "`notebook`", "`job`"):
        assert kind in workload["properties"]["kind"]["description"]
    group = schema["types"]["gpufleet:index:MigDeviceGroup"]["properties"]
    assert {"devices", "migEnabled", "migDevices", "deviceFilter"} <= set(group)  # names every SDK can spell
    assert group["migEnabled"]["description"].startswith("`mig-enabled` in the stack file.")
    # every reference resolves, every description is one line, every level is plain, every name an identifier
    import re
    names = [k for t in schema["types"].values() for k in t["properties"]]
    assert all(re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", k) for k in names)

    def walk(prop):
        ref = prop.get("$ref", "")
        assert not ref.startswith("#/types/") or ref.removeprefix("#/types/") in schema["types"], ref
        assert prop.get("plain") is True, prop
        assert "\n" not in prop.get("description", "")
        for sub in (prop.get("items"), prop.get("additionalProperties")):
            if isinstance(sub, dict):
                walk(sub)
    for token, typ in schema["types"].items():
        assert token.startswith("gpufleet:index:") and typ["type"] == "object"
        for prop in typ["properties"].values():
            walk(prop)


def _camel_mig_keys(sections: dict) -> dict:
    """mig-parted's hyphenated keys as the schema names them (`mig-enabled` -> `migEnabled`)."""
    def camel(key):
        head, *rest = key.split("-")
        return head + "".join(w[:1].upper() + w[1:] for w in rest)
    out = json.loads(json.dumps(sections))
    for groups in out.get("mig", {}).get("geometries", {}).values():
        groups[:] = [{camel(k): v for k, v in g.items()} for g in groups]
    return out


@pytest.mark.parametrize("stack,spelling",
                         [("dev", dict), ("dra", dict), ("mig", dict), ("mig", _camel_mig_keys)])
def test_typed_config_input_registers_what_the_stack_file_registers(plugin, engine, stack, spelling):
    keys = load_stack(stack, ROOT).config.secret_config_keys()
    secrets = {k: "[secret]" for k in keys}
    from_file, file_response = _construct(plugin, engine, stack, {
        "stackFile": str(ROOT / f"Pulumi.{stack}.yaml"), "secrets": secrets})
    config = spelling(_stack_sections(stack))
    assert spelling is dict or "migEnabled" in json.dumps(config)
    from_typed, typed_response = _construct(plugin, engine, stack, {"config": config, "secrets": secrets})
    assert _tree(from_typed.registrations) == _tree(from_file.registrations)
    got = {(r["type"], r["name"]): r["inputs"] for r in from_typed.registrations}
    assert got == {(r["type"], r["name"]): r["inputs"] for r in from_file.registrations}
    def state(response):  # unknowns (a preview's LoadBalancer addresses) compare by identity: name them
        props = rpc.deserialize_properties(response.state, keep_unknowns=True)
        return {k: "<unknown>" if type(v).__name__ == "Unknown" else v for k, v in props.items()}
    assert state(typed_response) == state(file_response)


def test_a_bad_typed_config_comes_back_as_gpufleets_message(plugin, engine):
    config = {"mode": "operatr",
              "workloads": [{"kind": "inference", "name": "a", "namespace": "n", "image": "x:1",
                             "gpu": {"count": 0.5}}]}
    with pytest.raises(grpc.RpcError) as exc:
        _construct(plugin, engine, "bad", {"config": config})
    err = exc.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    lines = err.details().splitlines()
    assert ("config: gpufleet:mode: Input should be 'operator', 'standalone' or 'platform-managed'; "
            "got \"operatr\"") in lines
    assert all(line.startswith("config: ") for line in lines), lines
    with pytest.raises(ConfigError) as own:  # exactly what gpufleet itself says about this config
        parse_sections(config, "config")
    assert err.details() == str(own.value)
    assert "Traceback" not in err.details()


def test_typed_config_with_another_config_input_is_an_error(plugin, engine):
    for inputs in ({"config": {"mode": "operator"}, "configYaml": "mode: operator\n"},
                   {"config": {"mode": "operator"}, "stackFile": str(ROOT / "Pulumi.dev.yaml")}):
        with pytest.raises(grpc.RpcError) as exc:
            _construct(plugin, engine, "x", inputs)
        assert exc.value.details().startswith("GpuStack: give exactly one of stackFile"), exc.value.details()
        assert "config (the gpufleet: section as a typed object)" in exc.value.details()


def test_the_readme_typed_config_example_is_a_valid_config_of_the_served_types(schema):
    import re

    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Use from other languages"):]
    ts = re.search(r"```typescript\n(.*?)```", section, re.S).group(1)
    call = ts.split("new gpufleet.GpuStack(", 1)[1].split(");", 1)[0]
    assert "config: config" in call
    declared = r"const config: gpufleet\.types\.input\.StackConfigArgs = (\{.*?\n\});"
    literal = re.search(declared, ts, re.S).group(1)
    as_yaml = re.sub(r"(\w+):", r"\1: ", literal)  # the TypeScript object literal is YAML flow style
    config = yaml.safe_load(as_yaml)
    root = schema["types"]["gpufleet:index:StackConfig"]
    assert set(config) <= set(root["properties"])
    known = {key for typ in schema["types"].values() for key in typ["properties"]}

    def keys(value):
        if isinstance(value, dict):
            for k, v in value.items():
                yield k
                yield from keys(v)
        elif isinstance(value, list):
            for v in value:
                yield from keys(v)
    assert set(keys(config)) <= known
    parse_sections(config, "README.md")  # a valid config: raises on any problem
    assert "`stackFile`, `configYaml` and `config`" in " ".join(section.split())


def test_a_typed_config_that_is_not_a_mapping_or_not_known(plugin, engine):
    not_mapping = "config: config: must be a mapping of gpufleet config sections, got list"
    cases = (([{"mode": "operator"}], not_mapping),
             ({"mode": "operator", "cluster": {"context": rpc.UNKNOWN}},
              "config: gpufleet:cluster.context: must be a plain value known when GpuStack is constructed"),
             ({"mode": "operator", "cluster": {"context": {rpc._special_sig_key: rpc._special_secret_sig,
                                                           "value": "lab"}}},
              "config: config: must be a plain object known when GpuStack is constructed, not an Output (no "
              "secret"))  # the SDK turns an object holding a secret into one secret Output
    for config, message in cases:
        with pytest.raises(grpc.RpcError) as exc:
            _construct(plugin, engine, "x", {"config": config})
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert exc.value.details().startswith(message), exc.value.details()
        assert "\n" not in exc.value.details() and "Traceback" not in exc.value.details()
