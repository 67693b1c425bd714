"""The gpufleet command line: this module only registers commands; each lives in its own module.

Commands are registered by name and imported only when they run or show their own help, so
`gpufleet --help` and each command load only what that command needs (no Pulumi for `check`, no
Kubernetes schemas for `plan`).

Exit codes: 0 success, 1 the checked thing failed (a mandatory policy, a workload that will not fit,
invalid manifests), 2 a usage mistake or unusable input (bare `gpufleet` prints the help and exits 2),
70 an internal error (set GPUFLEET_DEBUG=1 for the traceback), 130 interrupted.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, MutableMapping

from gpufleet.gc_pause import collector_paused

# Start-up makes tens of thousands of objects (typer, and numpy with the engine when a command loads) and no
# garbage: the cyclic collector walking them while they are made frees nothing and costs a twentieth of a
# one-pod check. It is paused for those imports, and what they made is left out of later collections.
with collector_paused(freeze=True):
    import typer
    import typer.core
    import typer.main

from gpufleet.errors import GpufleetError

#: Exit status for a bug in gpufleet (BSD sysexits' EX_SOFTWARE): not 1 (check failed), not 2 (bad input).
INTERNAL_ERROR_EXIT = 70
DEBUG_ENV = "GPUFLEET_DEBUG"
PROG = "gpufleet"

#: name -> (module defining `command`, one-line help shown by `gpufleet --help`).
COMMANDS: dict[str, tuple[str, str]] = {
    "plan": ("gpufleet.cli.plan",
             "Run the Pulumi program under the mock engine and print a preview."),
    "schema": ("gpufleet.cli.schema",
               "Print the JSON Schema of Pulumi.<stack>.yaml's `gpufleet:` config."),
    "check": ("gpufleet.cli.check",
              "Check that every GPU workload in MANIFESTS will be accepted, pass the pack's workload rules, and be "
              "scheduled."),
    "discover": ("gpufleet.cli.discover",
                 "Write the capacity model (nodes, allocatable, bound pods, GPU facts) as JSON."),
    "charts": ("gpufleet.cli.charts",
               "Generate the stack's Helm chart, the NVIDIA chart values and Argo CD / Flux manifests."),
    "validate": ("gpufleet.cli.validate",
                 "Validate manifests strictly: the schemas (unknown fields, unknown kinds and removed APIs are "
                 "errors)."),
    "headroom": ("gpufleet.cli.headroom",
                 "How many more of a pod fit, one after another, as kube-scheduler would place them."),
    "memory": ("gpufleet.cli.memory",
               "Show what vLLM takes on one GPU for a checkpoint and its flags, and whether it starts."),
    "report": ("gpufleet.cli.report",
               "Draw which pod lands on which node, GPU, MIG slice or share, what stays free and what pends."),
}


def _with_context(parse_args):
    """Wrap parse_args so every usage error carries its command (typer's parser omits it for an option given
    no value, which would drop the usage line)."""

    def parse(self, ctx, args):
        try:
            return parse_args(self, ctx, args)
        except typer.TyperException as e:
            if hasattr(e, "ctx") and e.ctx is None:
                e.ctx, e.cmd = ctx, self
            raise

    return parse


def usage_metavar(param) -> str:
    """An argument as a usage line names it: `NAME` when required, `[NAME]` when not, `...` after either when it
    takes several (typer writes a required one `{NAME}` and drops the dots of a metavar). A metavar that already
    spells its brackets or dots is kept as written."""
    name = param.metavar or (param.name or "").upper()
    if any(c in name for c in "[]{}") or name.endswith("..."):
        return name
    name += "..." if param.nargs != 1 else ""
    return name if param.required else f"[{name}]"


class Command(typer.core.TyperCommand):
    parse_args = _with_context(typer.core.TyperCommand.parse_args)

    def collect_usage_pieces(self, ctx) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            is_argument = param.param_type_name == "argument"
            pieces += [usage_metavar(param)] if is_argument else param.get_usage_pieces(ctx)
        return pieces


def load_command(name: str):
    """The click command for `name`, built from its module's `command` function (imports the module)."""
    with collector_paused(freeze=True):
        module = importlib.import_module(COMMANDS[name][0])
    single = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    single.command(name, cls=Command)(module.command)
    cmd = typer.main.get_command(single)
    cmd.name = name
    return cmd


class _LazyCommands(MutableMapping):
    """The group's name -> command table; a command's module is imported on first lookup."""

    def __init__(self) -> None:
        self._loaded: dict = {}

    def __getitem__(self, name: str):
        if name not in COMMANDS:
            raise KeyError(name)
        if name not in self._loaded:
            self._loaded[name] = load_command(name)
        return self._loaded[name]

    def __setitem__(self, name: str, cmd) -> None:
        self._loaded[name] = cmd

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS


class LazyGroup(typer.core.TyperGroup):
    """A group whose commands are imported when used; its own help lists them without importing any."""

    parse_args = _with_context(typer.core.TyperGroup.parse_args)

    def __init__(self, **attrs) -> None:
        super().__init__(**attrs)
        self.commands = _LazyCommands()

    def format_commands(self, ctx, formatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, short) in COMMANDS.items()])


app = typer.Typer(cls=LazyGroup, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None)


@app.callback()
def _root() -> None:
    """Declare the NVIDIA GPU stack and GPU services as code; check them before deploying."""


def _internal_error(e: BaseException) -> None:
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        import traceback

        traceback.print_exception(e)
    else:
        detail = str(e).splitlines()[0] if str(e) else ""
        print(f"internal error: {type(e).__name__}{': ' + detail if detail else ''} (please report; "
              f"{DEBUG_ENV}=1 shows the traceback)", file=sys.stderr)
    sys.exit(INTERNAL_ERROR_EXIT)


def main() -> None:
    """Console entry point: expected failures become their exit code and a message, never a traceback."""
    try:
        code = app(standalone_mode=False, prog_name=PROG)
    except GpufleetError as e:
        print(str(e), file=sys.stderr)
        sys.exit(e.exit_code)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        sys.exit(130)
    except typer.TyperException as e:  # typer's own click: usage errors (exit 2) and file errors
        show = getattr(e, "show", None)
        if show is None:
            print(f"Error: {e.format_message()}", file=sys.stderr)
        else:
            show()
        sys.exit(getattr(e, "exit_code", 2))
    except Exception as e:  # noqa: BLE001 - the last line of defence: no traceback for users
        _internal_error(e)
    sys.exit(code or 0)
