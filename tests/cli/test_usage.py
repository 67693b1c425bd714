"""Usage mistakes, help and crashes, as a user meets them at the real entry point: the usage line and one
sentence with exit 2 for every command, help that lists each option, never a Python traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpufleet.cli import COMMANDS, INTERNAL_ERROR_EXIT, load_command

ROOT = Path(__file__).resolve().parents[2]

#: Per command: arguments that lack a required argument or an option's value.
MISSING = {
    "plan": ["--stack"],
    "schema": ["--config-only", "extra"],
    "check": ["--nodes", "nodes.json", "--stack"],
    "discover": ["--nvml"],
    "charts": ["--stack", "dev"],
    "validate": ["--kube-version"],
    "report": ["--stack", "dev", "--out"],
    "memory": ["models/llama-3.1-8b", "--gpu"],
    "headroom": ["--probe"],
}


def gpufleet(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", *args],
                          cwd=cwd, env=environ, capture_output=True, text=True, timeout=120)


def assert_usage_error(result: subprocess.CompletedProcess, command: str) -> str:
    """Exit 2, nothing on stdout, the command's usage line and exactly one `Error:` sentence on stderr."""
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(f"Usage: gpufleet {command}".rstrip()), result.stderr
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1 and errors[0] == lines[-1], result.stderr
    return errors[0]


def test_every_registered_command_has_a_usage_case():
    assert set(MISSING) == set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_unknown_option_prints_usage_and_one_sentence(command):
    error = assert_usage_error(gpufleet(command, "--no-such-option"), command)
    assert error.startswith("Error: No such option: --no-such-option")


@pytest.mark.parametrize("command", COMMANDS)
def test_missing_argument_or_option_value_prints_usage_and_one_sentence(command):
    error = assert_usage_error(gpufleet(command, *MISSING[command]), command)
    assert any(words in error for words in ("Missing", "requires an argument", "unexpected extra argument")), error


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help_lists_every_option(command):
    result = gpufleet(command, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Usage: gpufleet {command}")
    options = [opt for param in load_command(command).params for opt in param.opts if opt.startswith("--")]
    assert options and all(opt in result.stdout for opt in options)


def test_misspelt_option_suggests_the_right_one():
    error = assert_usage_error(gpufleet("plan", "--stak", "dev"), "plan")
    assert error == "Error: No such option: --stak (Possible options: --stack)"


def test_misspelt_command_suggests_the_right_one():
    error = assert_usage_error(gpufleet("plna"), "")
    assert error == "Error: No such command 'plna'. Did you mean 'plan'?"


def test_bare_gpufleet_prints_the_help_and_exits_2():
    result = gpufleet()
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("Usage: gpufleet [OPTIONS] COMMAND [ARGS]...")
    assert all(name in result.stderr for name in COMMANDS)


def test_top_level_help_lists_every_command_with_its_summary():
    result = gpufleet("--help")
    assert result.returncode == 0
    assert all(f"  {name}  " in result.stdout for name in COMMANDS)
    assert "Run the Pulumi program under the mock engine" in result.stdout


@pytest.mark.parametrize("name", COMMANDS)
def test_listed_summary_is_the_start_of_the_commands_own_help(name):
    """`gpufleet --help` does not import the commands; its summaries must not drift from their docstrings."""
    summary = COMMANDS[name][1].rstrip(".")
    assert " ".join(load_command(name).help.split()).startswith(summary)


def _modules_after(*args: str, top_level: bool = True) -> set[str]:
    """The modules a whole `gpufleet ARGS` process imported: top-level packages, or every module's full name."""
    name = "m.split('.')[0]" if top_level else "m"
    code = ("import sys; sys.argv = ['gpufleet', *sys.argv[1:]]\n"
            "from gpufleet.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"import json; print(json.dumps(sorted({{{name} for m in sys.modules}})), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    return set(json.loads(result.stderr.strip().splitlines()[-1]))


HEAVY = {"pulumi", "pulumi_kubernetes", "pulumi_policy", "kubernetes", "jsonschema", "kubernetes_validate",
         "grpc", "rich"}


def test_top_level_help_imports_no_heavy_library():
    assert _modules_after("--help") & HEAVY == set()


@pytest.mark.parametrize("command", ["plan", "charts", "discover", "schema"])
def test_command_help_imports_no_heavy_library(command):
    assert _modules_after(command, "--help") & HEAVY == set()


def test_usage_error_of_plan_imports_no_pulumi():
    assert "pulumi" not in _modules_after("plan", "--stak", "dev")


def test_unexpected_error_prints_one_line_and_exits_70(cli, monkeypatch):
    import gpufleet.config.schema

    def broken(**_):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(gpufleet.config.schema, "stack_file_schema", broken)
    monkeypatch.delenv("GPUFLEET_DEBUG", raising=False)
    result = cli("schema")
    assert result.code == INTERNAL_ERROR_EXIT not in (0, 1, 2)
    assert result.err.strip().splitlines() == [
        "internal error: RuntimeError: boom (please report; GPUFLEET_DEBUG=1 shows the traceback)"]
    assert "Traceback" not in result.err


def test_gpufleet_debug_shows_the_traceback_of_an_unexpected_error(cli, monkeypatch):
    import gpufleet.config.schema

    def broken(**_):
        raise RuntimeError("boom")

    monkeypatch.setattr(gpufleet.config.schema, "stack_file_schema", broken)
    monkeypatch.setenv("GPUFLEET_DEBUG", "1")
    result = cli("schema")
    assert result.code == INTERNAL_ERROR_EXIT
    assert "Traceback" in result.err and "RuntimeError: boom" in result.err


@pytest.mark.parametrize("command", ["plan", "charts"])
def test_stack_command_outside_a_project_says_how_to_point_at_one(command, tmp_path):
    result = gpufleet(command, "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (f"no Pulumi.yaml in {tmp_path.resolve()}: run gpufleet in the project "
                                     "directory or pass --project-dir DIR")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["plan", "charts"])
def test_missing_stack_file_names_the_stacks_that_exist(command, tmp_path):
    result = gpufleet(command, "--stack", "nope", "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "Pulumi.nope.yaml: no such stack file; stacks here:" in result.stderr
    assert "dev" in result.stderr and "greed" in result.stderr
    assert not (tmp_path / "out").exists()


#: The usage line of each command that takes arguments: several files are `NAME...`, optional ones bracketed.
USAGE = {
    "check": "Usage: gpufleet check [OPTIONS] [MANIFEST...]",
    "validate": "Usage: gpufleet validate [OPTIONS] PATH...",
    "headroom": "Usage: gpufleet headroom [OPTIONS] [MANIFEST...]",
    "report": "Usage: gpufleet report [OPTIONS] [MANIFEST...]",
}


@pytest.mark.parametrize("command", COMMANDS)
def test_usage_line_says_how_many_arguments_a_command_takes(command):
    from tests.cli.run_inprocess import run

    first = run(command, "--help").out.splitlines()[0]
    assert not set("{}") & set(first), first
    assert first == USAGE.get(command, first)
    if command == "memory":
        assert first.startswith("Usage: gpufleet memory [OPTIONS] MODEL"), first


def test_the_collector_runs_again_once_a_command_is_loaded():
    """Imports run with the cyclic collector paused (start-up speed); the command itself runs with it on, so a
    long check still frees cycles, and objects it makes are collected."""
    code = ("import gc, sys\n"
            "import gpufleet.cli as cli\n"
            "print(gc.isenabled(), file=sys.stderr)\n"
            "cli.load_command('check')\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 0, file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert result.stderr.split() == ["True", "True", "True"], result.stderr


def _gpufleet_modules_after(tmp_path: Path, manifest: str) -> set[str]:
    nodes, pod = tmp_path / "nodes.json", tmp_path / "pod.yaml"
    nodes.write_text(json.dumps({"kind": "List", "items": [{
        "kind": "Node", "metadata": {"name": "gpu-0"},
        "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "1"}}}]}))
    pod.write_text(manifest)
    return {m for m in _modules_after("check", "--nodes", str(nodes), str(pod), top_level=False)
            if m.startswith("gpufleet")}


PLAIN_POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x:1\n"
             "    resources: {limits: {nvidia.com/gpu: 1}}\n")


def test_a_check_where_every_priority_is_zero_loads_no_preemption(tmp_path):
    # No PriorityClass, no budget, no pod naming a class: nothing can preempt, and a one-pod check starts faster
    evaluator = {"gpufleet.scheduling.preempting", "gpufleet.scheduler.framework.preemption"}
    assert not evaluator & _gpufleet_modules_after(tmp_path, PLAIN_POD)
    with_class = PLAIN_POD.replace("spec:\n", "spec:\n  priorityClassName: system-cluster-critical\n")
    assert evaluator <= _gpufleet_modules_after(tmp_path, with_class)


def test_pods_without_affinity_or_spread_load_neither_plugins_filter(tmp_path):
    # the plugins stay in the profile; what they count with loads once some pod has such rules
    counting = {"gpufleet.scheduler.plugins.interpodaffinity.filtering",
                "gpufleet.scheduler.plugins.podtopologyspread.filtering"}
    assert not counting & _gpufleet_modules_after(tmp_path, PLAIN_POD)
    spread = PLAIN_POD.replace("spec:\n", "spec:\n  topologySpreadConstraints: [{maxSkew: 1, topologyKey: "
                               "kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}]\n  affinity: "
                               "{podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: "
                               "kubernetes.io/hostname, labelSelector: {matchLabels: {a: b}}}]}}\n")
    assert counting <= _gpufleet_modules_after(tmp_path, spread)


def test_pods_asking_for_no_mig_slice_load_no_mig_tables(tmp_path):
    assert "gpufleet.nvidia.mig_profiles" not in _gpufleet_modules_after(tmp_path, PLAIN_POD)
    mig = PLAIN_POD.replace("nvidia.com/gpu: 1", "nvidia.com/mig-1g.10gb: 1")
    assert "gpufleet.nvidia.mig_profiles" in _gpufleet_modules_after(tmp_path, mig)


def test_nodes_without_gpu_facts_load_no_discovery_types(tmp_path):
    # kubectl nodes carry no NVML facts: the types that hold them load only for a capacity file that has some
    assert "gpufleet.discovery.types" not in _gpufleet_modules_after(tmp_path, PLAIN_POD)
