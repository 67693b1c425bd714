"""The README and docs/ point only at things that exist: relative links resolve to files in the repository,
Markdown files they name are in it, and every `--stack NAME` is a shipped stack or a `<placeholder>`."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
NAMED_MD = re.compile(r"(?<![\w/.:-])([\w-]+(?:/[\w-]+)*\.md)\b")
OUTPUT_ARG = re.compile(r"--(?:out|summary)[= ]+\S+")
STACK_ARG = re.compile(r"--stack[= ]+([^\s`|\])]+)")
PLACEHOLDER = re.compile(r"<[\w-]+>")


def markdown_in_repo() -> set[str]:
    """Paths (from the root) and base names of the repository's Markdown files, skipping hidden and build dirs."""
    found: set[str] = set()
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("build", "node_modules", "__pycache__")]
        for f in files:
            if f.endswith(".md"):
                found |= {f, str((Path(top) / f).relative_to(ROOT))}
    return found


def shipped_stacks() -> set[str]:
    return {p.name[len("Pulumi."):-len(".yaml")] for p in ROOT.glob("Pulumi.*.yaml")}


def relative_links(text: str) -> list[str]:
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def test_link_and_stack_checks_see_what_they_are_meant_to():
    text = "see [a](docs/x.md#y), [b](https://e.org/z.md) and [c](#top); `gpufleet plan --stack nope` [--stack dev]"
    assert relative_links(text) == ["docs/x.md#y"]
    assert STACK_ARG.findall(text) == ["nope", "dev"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file_in_the_repository(doc: Path):
    broken = [t for t in relative_links(doc.read_text())
              if not (doc.parent / t.split("#", 1)[0]).resolve().is_file()
              or not (doc.parent / t.split("#", 1)[0]).resolve().is_relative_to(ROOT)]
    assert broken == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_markdown_file_named_is_in_the_repository(doc: Path):
    in_repo = markdown_in_repo()
    text = OUTPUT_ARG.sub("", doc.read_text())  # a file a command is told to write is an output, not a reference
    missing = [name for name in NAMED_MD.findall(text) if name not in in_repo]
    assert missing == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_stack_named_on_a_command_line_is_shipped_or_a_placeholder(doc: Path):
    stacks = shipped_stacks()
    unknown = [s for s in STACK_ARG.findall(doc.read_text()) if s not in stacks and not PLACEHOLDER.fullmatch(s)]
    assert unknown == [], f"shipped stacks: {sorted(stacks)}"
