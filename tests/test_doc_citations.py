"""Comments and docstrings cite only what a clone has: a `.md` file they name is in the repository (by its path
from the root or from the citing file's folder), or is named with the upstream repository that holds it
(`owner/repo path.md`, `owner/repo@version path.md`, `path.md of owner/repo`). A reference sheet kept outside the
repository cannot be followed by a reader of a clone, so citing one fails here."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from tests.conftest import ROOT

SKIP_DIRS = {".git", ".venv", "build", "node_modules", "__pycache__", ".hypothesis", ".pytest_cache"}
_REPO = r"[A-Za-z0-9][\w.-]*/[\w.-]*[\w]"
_PATH = r"[\w][\w./-]*\.md\b"
_CITED = re.compile(rf"(?:https?://\S*|{_PATH})")
_UPSTREAM = re.compile(rf"{_REPO}(?:@\S+|,? v?\d[\w.-]*)?,? ({_PATH})|({_PATH}),? (?:of|in) {_REPO}")


def _prose(source: str) -> list[str]:
    """The module's docstrings, and its comments with consecutive comment lines joined."""
    texts = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc:
                texts.append(doc)
    block: list[str] = []
    last = -2
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        if tok.start[0] != last + 1 and block:
            texts.append(" ".join(block))
            block = []
        block.append(tok.string.lstrip("#:").strip())
        last = tok.start[0]
    if block:
        texts.append(" ".join(block))
    return [" ".join(t.split()) for t in texts]


def unresolved(text: str, folder: Path) -> list[str]:
    """The `.md` files a piece of prose cites that a clone cannot open."""
    upstream = {m.group(1) or m.group(2) for m in _UPSTREAM.finditer(text)}
    out = []
    for match in _CITED.finditer(text):
        cited = match.group(0).rstrip(".")
        if cited.startswith("http") or cited in upstream or not cited.endswith(".md"):
            continue
        if not ((ROOT / cited).is_file() or (folder / cited).is_file()):
            out.append(cited)
    return out


def _python_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if not SKIP_DIRS & set(p.relative_to(ROOT).parts))


def test_a_reference_sheet_outside_the_repository_is_caught():
    folder = ROOT / "gpufleet" / "scheduling"
    assert unresolved("The structured allocator (dra.md 3.5-3.9).", folder) == ["dra.md"]
    assert unresolved("Filters (scheduling-rules.md 1.4), see docs/dra.md.", folder) == ["scheduling-rules.md"]
    assert unresolved("(k3s-io/docs docs/advanced.md; NVIDIA/nvidia-container-toolkit CHANGELOG.md, v1.17.4)",
                      folder) == []
    assert unresolved("docs/runtime.md of k0sproject/k0s", folder) == []


def test_comments_and_docstrings_cite_only_files_a_clone_has():
    missing = [f"{path.relative_to(ROOT)}: {cited}" for path in _python_files()
               for text in _prose(path.read_text()) for cited in unresolved(text, path.parent)]
    assert missing == [], "cite docs/ or the upstream repository and version instead of:\n" + "\n".join(missing)
