"""The shell examples of README.md and docs/*.md as the tests read them: fenced blocks, and in the shell ones
(```sh, ```bash, ```console, or a bare fence holding `$ ` prompts) each command with its trailing comment and
the output shown under it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import termios
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
PROMPT = "$ "
ELLIPSIS = re.compile(r"\.\.\.|…")
#: Terminal control sequences: CSI (colours, cursor moves) and OSC (e.g. a query of the background colour).
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
#: The terminal the docs' output was shown in.
COLUMNS, LINES = 80, 50


@dataclass(frozen=True)
class Block:
    doc: str  # the Markdown file, relative to the repository
    line: int  # the opening fence's line
    lang: str
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def is_shell(self) -> bool:
        return self.lang in SHELL or (self.lang == "" and any(line.startswith(PROMPT) for line in self.lines))


@dataclass(frozen=True)
class Example:
    block: Block
    line: int  # the command's line in the doc
    command: str  # as written, without its trailing comment
    comment: str  # the trailing `# ...` comment's text, or ""
    shown: tuple[str, ...] = ()  # the output shown under a `$ ` prompt

    @property
    def where(self) -> str:
        return f"{self.block.doc}:{self.line}"


def fenced_blocks(path: Path) -> list[Block]:
    name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    blocks, fence, start, lang, body = [], None, 0, "", []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if fence is None:
            m = FENCE.match(line)
            if m:
                fence, lang, start, body = m.group(1), m.group(2), n, []
        elif line.strip() == fence:
            blocks.append(Block(name, start, lang, tuple(body)))
            fence = None
        else:
            body.append(line)
    return blocks


def split_comment(line: str) -> tuple[str, str]:
    """(command, comment): the comment starts at a `#` after a blank, outside quotes."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def examples_of(block: Block) -> list[Example]:
    """The commands of a shell block; with prompts, only the `$ ` lines, each with the lines under it."""
    if not block.is_shell:
        return []
    found: list[Example] = []
    prompted = any(line.startswith(PROMPT) for line in block.lines)
    pending = ""
    for n, line in enumerate(block.lines, block.line + 1):
        if prompted:
            if line.startswith(PROMPT):
                found.append(Example(block, n, *split_comment(line[len(PROMPT):])))
            elif found:
                last = found[-1]
                found[-1] = Example(block, last.line, last.command, last.comment, (*last.shown, line))
            continue
        command, comment = split_comment(pending + line.strip())
        if command.endswith("\\"):
            pending = command[:-1].rstrip() + " "
        elif command:
            found.append(Example(block, n, command, comment))
            pending = ""
    return found


def shell_examples(docs: list[Path] = DOCS) -> list[Example]:
    return [e for doc in docs for block in fenced_blocks(doc) for e in examples_of(block)]


def block_containing(doc: Path, text: str) -> Block:
    """The one shell block of `doc` that holds `text`."""
    (found,) = [b for b in fenced_blocks(doc) if b.is_shell and text in b.text]
    return found


# --- running them ------------------------------------------------------------------------------------------

def copy_working_tree(dest: Path) -> Path:
    """The project's files as this working tree has them (tracked and new, not ignored) copied to `dest`."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True, text=True).stdout.split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@dataclass(frozen=True)
class Ran:
    code: int  # 124: it ran past its time
    output: str  # standard output and error as a terminal showed them, without colour codes


def run_in_terminal(command: str, cwd: Path, env: dict[str, str], timeout: float = 120,
                    answers: dict[str, bytes] | None = None) -> Ran:
    """Run a shell command line with a terminal of COLUMNS x LINES as its standard output and error. With
    `answers` (a prompt's text -> the keys a person types at it), the terminal is its standard input too, and
    each prompt is answered once, when its text shows."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    proc = subprocess.Popen(["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=env,
                            stdin=slave if answers is not None else subprocess.DEVNULL, stdout=slave,
                            stderr=slave, start_new_session=True)
    os.close(slave)
    chunks, deadline, code = [], time.monotonic() + timeout, None
    waiting, recent = dict(answers or {}), b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                os.killpg(proc.pid, signal.SIGKILL)
                code = 124
                break
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal's last writer has gone
                break
            if not data:
                break
            chunks.append(data)
            if waiting:  # a prompt is looked for in what the terminal showed last
                recent = (recent + data)[-8192:]
                shown = ANSI.sub("", recent.decode("utf-8", "replace"))
                for prompt in [p for p in waiting if p in shown]:
                    os.write(master, waiting.pop(prompt))
    finally:
        os.close(master)
        returned = proc.wait()
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return Ran(returned if code is None else code, ANSI.sub("", text))


def collapse(text: str) -> str:
    return " ".join(text.split())


def missing_from(output: str, shown: list[str]) -> list[str]:
    """The shown lines that are not in the output, in order: each line is an excerpt of it (blanks and line
    breaks count as one blank; `...` stands for any text), and the lines come in the output's order."""
    text, at, missing = collapse(output), 0, []
    for line in shown:
        if not line.strip():
            continue
        pattern = ".*?".join(re.escape(collapse(part)) for part in ELLIPSIS.split(line))
        found = re.compile(pattern).search(text, at)
        if found is None:
            missing.append(line)
        else:
            at = found.end()
    return missing
