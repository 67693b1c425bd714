"""docs/architecture.md draws the check's folders: every module of the packages it draws is in the drawing,
and every path the drawing names exists, so the picture cannot drift from the code."""

from __future__ import annotations

import re

from tests.conftest import ROOT

DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("gpufleet/manifests", "gpufleet/admission", "gpufleet/scheduler", "gpufleet/autoscaler",
            "gpufleet/scheduling")


def _drawing() -> list[str]:
    text = DOC.read_text()
    block = text[text.index("## The folders"):text.index("## How a pod goes through it")]
    return block.split("```")[1].splitlines()


def _drawn_paths() -> set[str]:
    """Each line's names (before the description), joined to the folders above it by indentation."""
    paths: set[str] = set()
    stack: list[tuple[int, str]] = []
    for line in _drawing():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        names = line.strip().split("   ")[0]
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else ""
        found = re.findall(r"[\w./]+(?:\.py|/)", names)
        for name in found:
            path = name if name.startswith("gpufleet/") else parent + name
            paths.add(path)
        folders = [n for n in found if n.endswith("/")]
        if len(folders) == 1 and len(found) == 1:
            stack.append((indent, folders[0] if folders[0].startswith("gpufleet/") else parent + folders[0]))
    return paths


def test_every_path_the_drawing_names_exists():
    missing = sorted(p for p in _drawn_paths() if not (ROOT / p).exists())
    assert missing == []


def test_every_module_of_the_drawn_packages_is_drawn():
    drawn = _drawn_paths()
    modules = {str(p.relative_to(ROOT)) for package in PACKAGES for p in (ROOT / package).rglob("*.py")}
    # A module is drawn by its own name, or by its folder where the folder is drawn as a whole (no module of
    # it named on its own, as the plugin folders are).
    whole = {f for f in drawn if f.endswith("/") and not any(d != f and d.startswith(f) for d in drawn)}
    undrawn = sorted(m for m in modules
                     if m not in drawn and not m.endswith("__init__.py")
                     and not any(m.startswith(f) for f in whole))
    assert undrawn == []
