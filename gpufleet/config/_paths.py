"""YAML paths as users read them in error messages: gpufleet:workloads[1].gpu.profile."""

from __future__ import annotations

from gpufleet.errors import ConfigError, ConfigIssue

NAMESPACE = "gpufleet"


def yaml_path(*parts: object) -> str:
    """Render a config path: yaml_path('workloads', 1, 'gpu') -> gpufleet:workloads[1].gpu."""
    out = f"{NAMESPACE}:"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out.endswith(":"):
            out += str(part)
        else:
            out += f".{part}"
    return out


def printable(text: str) -> str:
    """`text` on one line: line breaks and other unprintable characters escaped (a key may hold any)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def config_error(source: str, issues: list[ConfigIssue]) -> ConfigError:
    """The ConfigError for `issues`, each rendered as exactly one printable line."""
    return ConfigError(source, [ConfigIssue(printable(i.path), printable(i.message), i.line) for i in issues])
