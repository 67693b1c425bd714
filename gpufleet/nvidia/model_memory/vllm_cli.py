"""How `vllm serve` reads its command line: which flags a release has, and the names its parser accepts.

vLLM refuses an argument it does not know: argparse exits with `vllm serve: error: unrecognized
arguments: ...`, or `ambiguous option: --x could match --x-a, --x-b` for a shortening of several flags. So
a flag gpufleet does not model is not ignored blindly: it must be one of the release's flags
(`vllm_flags.json`, read from the release's wheel, see its `about`), else it is a problem naming the
nearest flag.

The parser is vLLM's FlexibleArgumentParser (vllm/utils/__init__.py in 0.11.0, vllm/utils/argparse_utils.py
in 0.33.0), an argparse.ArgumentParser that keeps argparse's `allow_abbrev=True`:
- a `--flag` may be shortened to any prefix that starts only one flag (`--max-model 8192` is
  `--max-model-len 8192`); a short option takes its value attached (`-tp2` is not `-tp 2`, `-q` is);
- underscores in a `--flag`'s name become dashes (`--max_model_len`), up to the first `.` or `=`;
- `--flag=value` is `--flag value`; `--flag.key value` is a key of the JSON flag `--flag`;
- `-O3`, `-O=3` and `-O 3` set the optimization level.
A token that does not start with `-`, or that is a negative number, is a value or the model tag.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_FACTS = Path(__file__).with_name("vllm_flags.json")
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
#: What starts a vLLM server in a container's command: `vllm serve ...` or the OpenAI server module.
_SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.cli.main")


@lru_cache(maxsize=1)
def releases() -> dict[str, frozenset[str]]:
    """Release ("0.11.0") -> the option strings its `vllm serve` accepts."""
    doc = json.loads(_FACTS.read_text())
    return {name: frozenset(entry["options"]) for name, entry in doc["releases"].items()}


def options_for(version: tuple[int, int] | None) -> tuple[str, frozenset[str]]:
    """(what to call the release in a message, its flags). A release gpufleet has the flags of is checked
    against them alone; any other (or none) against every flag of those releases: a flag is refused only when
    no release gpufleet knows has it."""
    known = releases()
    for name, options in known.items():
        if version is not None and tuple(int(p) for p in name.split(".")[:2]) == tuple(version[:2]):
            return f"vLLM {name}", options
    union = frozenset().union(*known.values())
    return f"any vLLM release gpufleet knows ({', '.join(known)})", union


@dataclass(frozen=True)
class Token:
    """One option of a command line as the parser resolves it."""

    index: int
    written: str
    """The option as written, without an attached value."""
    flag: str | None
    """The release's option it is (after underscores, shortening); None when it is none of them."""
    inline: str | None
    """A value attached with `=` (or to a short option)."""
    problem: str | None = None


def server_arguments(argv: list[str]) -> list[str] | None:
    """The arguments vLLM's parser gets from a container's command line (command, then args): all of them when
    they start with a flag or a model tag (the image's entrypoint is the server), those after `vllm serve` or
    `python -m <the OpenAI server module>`; None when another program runs first (a shell, a script)."""
    if not argv:
        return []
    first = argv[0]
    program = first.rsplit("/", 1)[-1]
    if program == "vllm":
        return argv[2:] if argv[1:2] == ["serve"] else None
    if re.fullmatch(r"python[0-9.]*", program):
        return argv[3:] if argv[1:2] == ["-m"] and argv[2:3] and argv[2] in _SERVER_MODULES else None
    if first.startswith(("/", "./")) or program in ("sh", "bash", "dash", "zsh", "ash", "env", "exec"):
        return None
    return list(argv)


def _normal(token: str) -> tuple[str, str | None]:
    """(option name, value attached with `=`), with FlexibleArgumentParser's underscores-to-dashes."""
    name, sep, value = token.partition("=")
    if token.startswith("--"):
        head, dot, rest = name.partition(".")
        name = head.replace("_", "-") + dot + rest
    return name, (value if sep else None)


def resolve(token: str, options: frozenset[str], label: str) -> Token:
    """What the parser makes of one option token (argparse's `_parse_optional`, allow_abbrev on)."""
    name, inline = _normal(token)
    if name.startswith("-O") and name != "-O" and not name.startswith("--") and (
            "-O" in options or "--optimization-level" in options):
        return Token(0, name, "-O", token[3:] if token[2:3] == "=" else token[2:])
    if name == "-O" and "--optimization-level" in options:  # `-O 3`
        return Token(0, name, "--optimization-level", inline)
    json_key = name.startswith("--") and "." in name
    base = name.split(".", 1)[0] if json_key else name
    if base in options:
        return Token(0, name, base, inline)
    if not base.startswith("--") and len(base) > 2 and base[:2] in options:
        return Token(0, name, base[:2], base[2:] if inline is None else f"{base[2:]}={inline}")
    matches = sorted(o for o in options
                     if o.startswith(base) and (base.startswith("--") or not o.startswith("--")))
    if len(matches) == 1:
        return Token(0, name, matches[0], inline)
    if matches:
        return Token(0, name, None, inline, f"{name}: {label} refuses it: 'ambiguous option: {base} could "
                                            f"match {', '.join(matches)}'; write the whole flag")
    elsewhere = [release for release, flags in releases().items() if base in flags]
    near = difflib.get_close_matches(base, sorted(options), n=1, cutoff=0.6)
    hint = (f" (a flag of vLLM {', '.join(elsewhere)})" if elsewhere else "") + (
        f"; did you mean {near[0]}?" if near else "; see `vllm serve --help=all`")
    return Token(0, name, None, inline, f"{name}: no such flag in {label}, which refuses it: 'unrecognized "
                                        f"arguments: {name}'{hint}")


def options_in(args: list[str], label: str, options: frozenset[str]) -> list[Token]:
    """Every option token of a server's arguments, resolved; values and the model tag are skipped (a
    negative number or a token with a space is a value, `--` ends the options)."""
    out = []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if not arg.startswith("-") or arg == "-" or _NEGATIVE_NUMBER.match(arg) or " " in arg:
            continue
        t = resolve(arg, options, label)
        out.append(Token(i, t.written, t.flag, t.inline, t.problem))
    return out
