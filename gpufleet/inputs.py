"""Reading an input file the user names on the command line: `-` is standard input, as kubectl reads it."""

from __future__ import annotations

import sys
from pathlib import Path

#: The file name that stands for standard input.
STDIN = "-"
_read: tuple[object, str] | None = None  # (the stream, its text): standard input is read once


def is_stdin(path: Path | str) -> bool:
    return str(path) == STDIN


def read_text(path: Path | str) -> str:
    """The file's text, or standard input's for `-` (read once: every `-` of one run gets the same text).
    Raises what Path.read_text raises (OSError, UnicodeDecodeError)."""
    global _read
    if not is_stdin(path):
        return Path(path).read_text()
    if _read is None or _read[0] is not sys.stdin:
        _read = (sys.stdin, sys.stdin.read())
    return _read[1]
