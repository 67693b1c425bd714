"""Run a CrossGuard policy pack over a plan the way `pulumi preview --policy-pack DIR` does.

The pack runs as its own process (`python -u -m pulumi.policy 127.0.0.1:0 DIR`, which prints the port
of its analyzer gRPC server on stdout and blocks). The client speaks the real analyzer protocol:
GetAnalyzerInfo, Configure (the pack config, merged with each policy's schema defaults, `all` and the
policy's own level, as the engine does), ConfigureStack, Analyze per resource (its inputs as properties)
and AnalyzeStack with every resource. The process is always terminated.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from gpufleet.errors import GpufleetError, InputError
from gpufleet.planning.pack_config import LEVELS, check_against_pack, read_pack_config

if TYPE_CHECKING:  # Pulumi loads only when a plan is analyzed, so the pack can start before it does
    from gpufleet.planning.engine import Plan

#: What the analyzer reads as "unknown during preview" (pulumi_policy.proxy.UNKNOWN_STRING_VALUE).
UNKNOWN_WIRE = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
START_TIMEOUT_SECONDS = 60.0
CALL_TIMEOUT_SECONDS = 120.0


class PolicyPackError(GpufleetError):
    """The policy pack could not be started or answered wrongly."""


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str
    urn: str
    message: str

    @property
    def resource(self) -> str:
        """`<type> <name>` from the URN, or `(stack)` for stack-wide findings."""
        if not self.urn:
            return "(stack)"
        head, _, name = self.urn.rpartition("::")
        return f"{head.rpartition('::')[2].rpartition('$')[2]} {name}"


@dataclass
class PolicyReport:
    pack: str
    policies: list[str] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    @property
    def mandatory(self) -> list[Violation]:
        return [v for v in self.violations if v.level in ("mandatory", "remediate")]


def load_pack_config(path: Path, project_dir: Path = Path(".")) -> dict[str, Any]:
    """A `--policy-pack-config` JSON file: {"all": level, "<policy>": level | {"enforcementLevel": ..., ...}},
    checked (PackConfigError, exit 2, on an unusable one)."""
    return read_pack_config(path, project_dir)


def default_pack_config_path(pack_dir: Path, stack: str) -> Path | None:
    """`<pack>/config.<stack>.json` when it exists."""
    path = pack_dir / f"config.{stack}.json"
    return path if path.is_file() else None


def default_pack_config(pack_dir: Path, stack: str, project_dir: Path = Path(".")) -> dict[str, Any]:
    """`<pack>/config.<stack>.json` when it exists, else {} (stack-aware policies then get the stack derived)."""
    path = default_pack_config_path(pack_dir, stack)
    return load_pack_config(path, project_dir) if path else {}


def _wire(value: Any) -> Any:
    """Plan inputs as analyzer properties: secrets stay marked (value masked), unknowns become the sentinel."""
    from pulumi.output import Unknown
    from pulumi.runtime.rpc import UNKNOWN

    from gpufleet.planning.engine import SECRET_SIG, SIG_KEY

    if isinstance(value, Unknown):
        return UNKNOWN_WIRE
    if isinstance(value, dict):
        if value.get(SIG_KEY) == SECRET_SIG:
            return {SIG_KEY: SECRET_SIG, "value": "[secret]"}
        return {k: _wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_wire(v) for v in value]
    if value is UNKNOWN or (isinstance(value, str) and value == UNKNOWN):
        return UNKNOWN_WIRE
    return value


def configure_request(info, pack_config: dict[str, Any], derived: dict[str, Any]):
    """The ConfigureAnalyzerRequest the engine would send: per policy, its level and properties
    (schema defaults < derived stack properties < the pack config file)."""
    from google.protobuf import json_format
    from pulumi.runtime import proto

    all_level = pack_config.get("all")
    request = proto.ConfigureAnalyzerRequest()
    for policy in info.policies:
        entry = pack_config.get(policy.name)
        props: dict[str, Any] = {}
        schema = json_format.MessageToDict(policy.configSchema.properties) if policy.configSchema else {}
        for key, prop in schema.items():
            if isinstance(prop, dict) and "default" in prop:
                props[key] = prop["default"]
        props.update({k: v for k, v in derived.items() if k in schema})
        level = None
        if isinstance(entry, str):
            level = entry
        elif isinstance(entry, dict):
            level = entry.get("enforcementLevel")
            props.update({k: v for k, v in entry.items() if k != "enforcementLevel"})
        if level is None and isinstance(all_level, str):
            level = all_level
        pc = proto.PolicyConfig()
        if level is None:
            pc.enforcementLevel = policy.enforcementLevel
        elif level in LEVELS:
            pc.enforcementLevel = getattr(proto, level.upper())
        else:
            raise InputError(f"policy pack config: '{policy.name}': enforcement level '{level}'; allowed: "
                             f"{', '.join(LEVELS)}")
        if props:
            pc.properties.update(props)
        request.policyConfig[policy.name].CopyFrom(pc)
    return request


def config_schemas(info) -> dict[str, dict[str, Any]]:
    """Policy name -> the `properties` of its config schema, from GetAnalyzerInfo."""
    from google.protobuf import json_format

    return {p.name: (json_format.MessageToDict(p.configSchema.properties) if p.configSchema else {})
            for p in info.policies}


class PolicyPackProcess:
    """`python -u -m pulumi.policy 127.0.0.1:0 <pack>` as a context manager yielding an AnalyzerStub."""

    def __init__(self, pack_dir: Path, cwd: Path, env: dict[str, str] | None = None):
        self.pack_dir, self.cwd, self.env = pack_dir, cwd, env or {}
        self.proc: subprocess.Popen | None = None
        self.channel = None
        self._stderr: IO[bytes] | None = None

    def start(self) -> PolicyPackProcess:
        """Spawn the pack (it imports and starts its server while the caller does other work)."""
        self._process()
        return self

    def _process(self) -> subprocess.Popen:
        """The pack's process, spawned on first use."""
        if self.proc is None:
            self._stderr = tempfile.TemporaryFile()
            self.proc = subprocess.Popen(
                [sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:0", str(self.pack_dir)],
                cwd=self.cwd, stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL,
                env={**os.environ, **self.env}, text=True)
        return self.proc

    def connect(self):
        """Wait for the pack's port and return an AnalyzerStub over a ready channel."""
        import grpc
        from pulumi.runtime.proto import analyzer_pb2_grpc

        proc = self._process()
        if self.channel is None:
            port = self._read_port(proc)
            self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
            grpc.channel_ready_future(self.channel).result(timeout=START_TIMEOUT_SECONDS)
        return analyzer_pb2_grpc.AnalyzerStub(self.channel)

    def __enter__(self):
        try:
            return self.connect()
        except BaseException:
            self.close()
            raise

    def _read_port(self, proc: subprocess.Popen) -> int:
        stdout = proc.stdout
        if stdout is None:  # spawned with stdout=PIPE, so only after close()
            raise PolicyPackError(f"policy pack {self.pack_dir} is closed")
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        try:
            line = lines.get(timeout=START_TIMEOUT_SECONDS)
        except queue.Empty:
            raise PolicyPackError(f"policy pack {self.pack_dir} printed no port within "
                                  f"{START_TIMEOUT_SECONDS:.0f}s") from None
        try:
            return int(line.strip())
        except ValueError:
            proc.wait(timeout=10) if proc.poll() is None else None
            raise PolicyPackError(f"policy pack {self.pack_dir} did not start: {self.stderr_tail() or line.strip()}") \
                from None

    def stderr_tail(self, chars: int = 2000) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-chars:].strip()

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel and end the process (terminate, then kill); safe to call more than once."""
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
            self.proc.stdout = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def pack_env(project: str, stack: str) -> dict[str, str]:
    """What the Pulumi CLI sets for a pack process during preview."""
    return {"PULUMI_PROJECT": project, "PULUMI_STACK": stack, "PULUMI_DRY_RUN": "true"}


def start_pack(pack_dir: Path, project_dir: Path, stack: str, project: str = "gpufleet") -> PolicyPackProcess:
    """Start the pack process now (its imports overlap the planning); pass it to analyze_plan later."""
    return PolicyPackProcess(pack_dir.resolve(), project_dir.resolve(), pack_env(project, stack)).start()


def check_config_against_pack(process: PolicyPackProcess, pack_config: dict[str, Any], config_source: str) -> None:
    """Ask the started pack which policies and settings it has and check the config against them
    (PackConfigError), so a bad name fails before anything is printed."""
    import grpc
    from google.protobuf import empty_pb2

    stub = process.connect()
    try:
        info = stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=CALL_TIMEOUT_SECONDS)
    except grpc.RpcError as e:
        raise PolicyPackError(f"policy pack {process.pack_dir}: {e.code().name}: {e.details()}\n"
                              f"{process.stderr_tail()}".strip()) from e
    check_against_pack(pack_config, config_source, config_schemas(info))


def analyze_plan(plan: Plan, pack_dir: Path, project_dir: Path, pack_config: dict[str, Any] | None = None,
                 process: PolicyPackProcess | None = None, config_source: str = "policy pack config") -> PolicyReport:
    """Run the pack (`process` when already started) over every resource of the plan; return the violations."""
    import grpc
    from google.protobuf import empty_pb2, struct_pb2
    from pulumi.runtime import proto

    from gpufleet.planning.engine import STACK_TYPE

    pack_dir, project_dir = pack_dir.resolve(), project_dir.resolve()
    derived = {"stack": plan.stack, "projectDir": str(project_dir)}
    resources = [r for r in plan.resources if r.type != STACK_TYPE]
    process = process or PolicyPackProcess(pack_dir, project_dir, pack_env(plan.project, plan.stack))
    with process as stub:
        try:
            info = stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=CALL_TIMEOUT_SECONDS)
            check_against_pack(pack_config or {}, config_source, config_schemas(info))
            stub.Configure(configure_request(info, pack_config or {}, derived), timeout=CALL_TIMEOUT_SECONDS)
            stub.ConfigureStack(proto.AnalyzerStackConfigureRequest(stack=plan.stack, project=plan.project,
                                                                    dry_run=True), timeout=CALL_TIMEOUT_SECONDS)
            report = PolicyReport(info.name, [p.name for p in info.policies])
            diagnostics = []
            stack_resources = []
            for r in resources:
                props = struct_pb2.Struct()
                props.update(_wire(r.inputs))
                answer = stub.Analyze(proto.AnalyzeRequest(type=r.type, properties=props, urn=r.urn, name=r.name),
                                      timeout=CALL_TIMEOUT_SECONDS)
                diagnostics += [(d, r.urn) for d in answer.diagnostics]
                stack_resources.append(proto.AnalyzerResource(type=r.type, properties=props, urn=r.urn, name=r.name,
                                                              parent=r.parent or ""))
            answer = stub.AnalyzeStack(proto.AnalyzeStackRequest(resources=stack_resources),
                                       timeout=CALL_TIMEOUT_SECONDS)
            diagnostics += [(d, "") for d in answer.diagnostics]
        except grpc.RpcError as e:
            raise PolicyPackError(f"policy pack {pack_dir}: {e.code().name}: {e.details()}\n"
                                  f"{process.stderr_tail()}".strip()) from e
    for d, analyzed in diagnostics:
        level = LEVELS[d.enforcementLevel] if d.enforcementLevel < len(LEVELS) else str(d.enforcementLevel)
        message = d.message  # the analyzer prefixes the policy's description
        if d.description and message.startswith(d.description + "\n"):
            message = message[len(d.description) + 1:]
        report.violations.append(Violation(d.policyName, level, d.urn or analyzed, message))
    return report
