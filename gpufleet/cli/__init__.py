"""The gpufleet command line: this module only registers commands; each lives in its own module."""

from __future__ import annotations

import sys

import typer

from gpufleet.cli import charts, check, discover, plan, report, schema, validate
from gpufleet.errors import GpufleetError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Declare the NVIDIA GPU stack and GPU services as code; check them before deploying.")
app.command("plan")(plan.command)
app.command("schema")(schema.command)
app.command("check")(check.command)
app.command("discover")(discover.command)
app.command("charts")(charts.command)
app.command("validate")(validate.command)
app.command("report")(report.command)


def main() -> None:
    """Console entry point: expected failures become their exit code and a message, never a traceback."""
    try:
        code = app(standalone_mode=False)
    except GpufleetError as e:
        print(str(e), file=sys.stderr)
        sys.exit(e.exit_code)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        sys.exit(130)
    except Exception as e:  # click usage errors
        import click

        if isinstance(e, click.ClickException):
            e.show()
            sys.exit(2)
        raise
    sys.exit(code or 0)
