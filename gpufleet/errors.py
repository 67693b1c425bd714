"""gpufleet's error classes, by what the caller can do about them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in a stack config: where (YAML path), what was found, and what is allowed."""

    path: str
    message: str
    #: The line of the stack file the path points at, where it is known (file:line: path: message).
    line: int | None = None

    def render(self, source: str) -> str:
        where = f"{source}:{self.line}" if self.line else source
        return f"{where}: {self.path}: {self.message}"


class GpufleetError(Exception):
    """Base class: an expected failure that the CLI reports as one or more lines, never a traceback."""

    exit_code = 2


class ConfigError(GpufleetError):
    """The stack config is invalid; every problem is listed. Fix the file and run again."""

    def __init__(self, source: str, issues: list[ConfigIssue]):
        self.source = source
        self.issues = issues
        super().__init__("\n".join(i.render(source) for i in issues))


class InputError(GpufleetError):
    """An input file or option is unusable (missing, unreadable, wrong format)."""


class DiscoveryUnavailableError(GpufleetError):
    """A capacity source (NVML, the Kubernetes API) cannot be reached from here."""


def one_line(text: str) -> str:
    """`text` with line breaks and other control characters escaped (`\\r`, `\\x00`), so that an error line
    holding a user's value (a name with a newline) stays one line."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def yaml_problem(e: Exception) -> str:
    """A YAML parser's error on one line: `expected ',' or '}', but got ':' (line 5, column 6)` (PyYAML's own
    text spans several lines and names the file again)."""
    problem = getattr(e, "problem", None) or " ".join(str(e).split())
    mark = getattr(e, "problem_mark", None)
    return problem + (f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else "")
