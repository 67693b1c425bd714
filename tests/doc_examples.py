"""The shell examples of README.md and docs/*.md as the tests read them: fenced blocks, and in the shell ones
(```sh, ```bash, ```console, or a bare fence holding `$ ` prompts) each command with its trailing comment and
the output shown under it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
PROMPT = "$ "


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
    blocks, fence, start, lang, body = [], None, 0, "", []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if fence is None:
            m = FENCE.match(line)
            if m:
                fence, lang, start, body = m.group(1), m.group(2), n, []
        elif line.strip() == fence:
            blocks.append(Block(str(path.relative_to(ROOT)), start, lang, tuple(body)))
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
            pending = command[:-1] + " "
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
