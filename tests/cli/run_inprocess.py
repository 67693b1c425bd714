"""Run the gpufleet entry point in this process and capture what a user sees (tests only).

Unlike the `cli` fixture this needs no pytest fixture, so hypothesis can call it once per example. An
exception other than SystemExit escapes: that is a crash, which is what the property tests look for.
"""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from unittest import mock


@dataclass
class Outcome:
    code: int
    out: str
    err: str


class _Terminal(io.StringIO):
    """Standard output that says it is a terminal (its width comes from COLUMNS)."""

    def isatty(self) -> bool:
        return True


def run(*args: object, terminal: bool = False) -> Outcome:
    """`terminal`: standard output is a terminal, not a pipe (set TERM=dumb too, for no colour codes)."""
    from gpufleet.cli import main

    out, err = (_Terminal() if terminal else io.StringIO()), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err), mock.patch.object(sys, "argv", ["gpufleet", *map(str, args)]):
        try:
            main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return Outcome(code, out.getvalue(), err.getvalue())
