"""Where the commands print tables and long messages: to a terminal at its width, anywhere else in whole lines.

A pipe or a file has no width. rich would assume 80 columns there and fold names and messages mid-word,
which breaks `grep`; off a terminal every row and message is printed on one line, however long.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

#: The width that stands for "no limit" off a terminal (rich needs a number; no line is this long).
UNLIMITED = 1 << 16


def on_terminal() -> bool:
    """Whether standard output is a terminal (a reader with a width), not a pipe or a file."""
    isatty = getattr(sys.stdout, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def console() -> Console:
    """A rich Console for standard output: the terminal's width on a terminal, else no wrapping at all."""
    from rich.console import Console

    if on_terminal():
        return Console(highlight=False)
    return Console(highlight=False, soft_wrap=True, width=UNLIMITED)
