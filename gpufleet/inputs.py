"""Reading an input file the user names on the command line: `-` is standard input, as kubectl reads it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

#: The file name that stands for standard input.
STDIN = "-"
_read: tuple[object, str] | None = None  # (the stream, its text): standard input is read once
_TEMPLATE = re.compile(r"\{\{.*?\}\}", re.S)


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


def template_hint(text: str) -> str:
    """What to add to the error of a file that does not parse when it is a Helm chart's template (it holds
    `{{ }}` actions), not the YAML the chart renders; else nothing."""
    if _TEMPLATE.search(text) is None:
        return ""
    return ("; it looks like a Helm template (it holds {{ }}): render it first with `helm template RELEASE "
            "CHART` and give gpufleet the output (- reads it from a pipe)")
