"""Run the stack's Pulumi program in-process under Pulumi's mock engine (no CLI, no cluster, no cloud).

The program is the same `gpufleet.program.build` that `pulumi up` runs; the mock monitor records every
registration (type, name, parent, inputs) so the plan shows exactly what `pulumi up` would create.
"""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi.runtime
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc

from gpufleet.config.loading import NAMESPACE, SECRET_PLACEHOLDER, LoadedStack

SECRET_SIG = rpc._special_secret_sig  # "1b47061264138c4ac30d75fd1eb44270"
SIG_KEY = rpc._special_sig_key
STACK_TYPE = "pulumi:pulumi:Stack"

#: A kubeconfig for clusters that exist only in the plan (AKS credentials under the mock engine).
PLAN_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: planned
  cluster: {server: "https://planned.invalid:443"}
contexts:
- name: planned
  context: {cluster: planned, user: clusterUser}
current-context: planned
users:
- name: clusterUser
  user: {token: planned}
"""


def _aks_user_credentials(args: dict[str, Any]) -> dict[str, Any]:
    value = base64.b64encode(PLAN_KUBECONFIG.encode()).decode()
    return {"kubeconfigs": [{"name": "clusterUser", "value": value}]}


def _resource_group(args: dict[str, Any]) -> dict[str, Any]:
    name = args.get("resourceGroupName", "")
    return {"name": name, "location": "[existing group's location]",
            "id": f"/subscriptions/planned/resourceGroups/{name}"}


#: Invoke token -> function(args) -> result, for provider functions the program calls (e.g. AKS credentials).
INVOKES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "azure-native:containerservice:listManagedClusterUserCredentials": _aks_user_credentials,
    "azure-native:resources:getResourceGroup": _resource_group,
}


@dataclass
class PlannedResource:
    urn: str
    type: str
    name: str
    parent: str | None
    custom: bool
    inputs: dict[str, Any]
    #: URNs this resource waits for (depends_on and inputs from other resources).
    dependencies: list[str] = field(default_factory=list)
    #: The provider reference it is created with ("" for the default provider).
    provider: str = ""


@dataclass
class Plan:
    stack: str
    project: str
    resources: list[PlannedResource] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def by_type(self, type_: str) -> list[PlannedResource]:
        return [r for r in self.resources if r.type == type_]

    def get(self, type_: str, name: str) -> PlannedResource:
        matches = [r for r in self.resources if r.type == type_ and r.name == name]
        if not matches:
            raise KeyError(f"no {type_} named {name} in the plan")
        return matches[0]


#: Azure resources whose `name` output is one of their inputs (so planned names flow into later inputs).
_AZURE_NAME_INPUTS = {
    "azure-native:resources:ResourceGroup": "resourceGroupName",
    "azure-native:containerservice:ManagedCluster": "resourceName",
    "azure-native:containerservice:AgentPool": "agentPoolName",
}


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi_mocks.MockResourceArgs):
        outputs = dict(args.inputs)
        name_input = _AZURE_NAME_INPUTS.get(args.typ)
        if name_input is not None:
            outputs["name"] = args.inputs.get(name_input, args.name)
        return f"{args.name}-id", outputs

    def call(self, args: pulumi_mocks.MockCallArgs):
        handler = INVOKES.get(args.token)
        return handler(dict(args.args)) if handler else {}


class _RecordingMonitor(pulumi_mocks.MockMonitor):
    """The SDK's mock monitor, also recording each registration's parent and raw inputs.

    The SDK calls the monitor from its executor's worker threads, and the mock monitor runs an event loop in
    each; left to itself it creates one per thread and never closes it, and those loops, finalised at
    interpreter exit after their sockets, print "Exception ignored in BaseEventLoop.__del__". So each worker
    thread gets a loop created here, and close_loops() closes them once the program is done.
    """

    def __init__(self, mocks: pulumi.runtime.Mocks):
        super().__init__(mocks)
        self.registrations: list[PlannedResource] = []
        self._loops: list[asyncio.AbstractEventLoop] = []
        self._lock = threading.Lock()
        self._local = threading.local()

    def _thread_loop(self) -> None:
        if threading.current_thread() is threading.main_thread() or getattr(self._local, "loop", None):
            return
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._local.loop = loop
        with self._lock:
            self._loops.append(loop)

    def close_loops(self) -> None:
        with self._lock:
            loops, self._loops = self._loops, []
        for loop in loops:
            loop.close()

    def Invoke(self, request):
        self._thread_loop()
        return super().Invoke(request)

    def ReadResource(self, request):
        self._thread_loop()
        return super().ReadResource(request)

    def RegisterResource(self, request):
        self._thread_loop()
        response = super().RegisterResource(request)
        inputs = rpc.deserialize_properties(request.object, keep_unknowns=True) if request.type != STACK_TYPE else {}
        self.registrations.append(PlannedResource(
            urn=response.urn, type=request.type, name=request.name, parent=request.parent or None,
            custom=bool(request.custom), inputs=inputs, dependencies=list(request.dependencies),
            provider=request.provider))
        return response


def run_program(loaded: LoadedStack, program: Callable[[], Any] | None = None, preview: bool = True,
                project: str = "gpufleet") -> Plan:
    """Run `program` (default: gpufleet.program.build on the loaded config) under mocks; return the plan."""
    from gpufleet import program as gpufleet_program

    config = dict(loaded.pulumi_config)
    secret_keys = list(loaded.secret_keys)
    for key in loaded.config.secret_config_keys():  # missing secrets: plan with a placeholder (the loader warns)
        if f"{NAMESPACE}:{key}" not in config:
            config[f"{NAMESPACE}:{key}"] = SECRET_PLACEHOLDER
            secret_keys.append(f"{NAMESPACE}:{key}")
    monitor = _RecordingMonitor(_Mocks())

    def body():
        if program is not None:
            program()
        else:
            gpufleet_program.build(loaded.config)

    loop = asyncio.new_event_loop()  # this run's loop, set before any Output exists (set_mocks makes some)
    asyncio.set_event_loop(loop)
    try:
        pulumi.runtime.set_all_config(config, secret_keys)
        pulumi.runtime.settings.ROOT.set(None)
        pulumi.runtime.set_mocks(monitor.mocks, project=project, stack=loaded.name, preview=preview, monitor=monitor)
        pulumi_mocks.SETTINGS.rpc_manager.clear()
        pulumi_mocks.SETTINGS.outputs.clear()
        pulumi_mocks._sync_await(pulumi.runtime.stack.run_pulumi_func(body))
    finally:
        # Join the SDK's worker threads, then close every loop this run created (see _RecordingMonitor).
        loop.run_until_complete(loop.shutdown_default_executor())
        monitor.close_loops()
        asyncio.set_event_loop(None)
        loop.close()
    plan = Plan(stack=loaded.name, project=project, warnings=list(loaded.warnings))
    plan.resources = sorted(monitor.registrations, key=lambda r: r.urn)
    return plan
