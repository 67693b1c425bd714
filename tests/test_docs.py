"""The README and docs/ point only at things that exist: relative links resolve to files in the repository,
Markdown files they name are in it, and every `--stack NAME` is a shipped stack or a `<placeholder>`. Their
shell examples run as they are written, and print what the docs show (tests/doc_examples.py reads them,
tests/doc_stand_ins.py gives them the reader's files)."""

from __future__ import annotations

import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from doc_examples import (
    COLUMNS,
    LINES,
    Example,
    Ran,
    copy_working_tree,
    examples_of,
    fenced_blocks,
    missing_from,
    run_in_terminal,
    shell_examples,
)
from doc_stand_ins import scenario_of
from helm_binary import helm_binary, helm_env

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


# --- the shell examples, run as written ---------------------------------------------------------------------

EXAMPLES = shell_examples()
#: Examples that cannot run here, by what they need: (a pattern searched in the command, why).
NOT_RUN = [
    (r"^kubectl ", "reads or changes a live cluster (kubectl)"),
    (r"^pulumi ", "needs the Pulumi CLI, a state backend and a cloud account"),
    (r"^(az |export ARM_)", "signs in to Azure"),
    (r"^make ", "a make target: it first creates .venv with pip from the network; the suite runs in that "
                ".venv, and this test plans build/plan-dev as `make plan` does"),
    (r"^\.venv/bin/python bench/", "a benchmark: minutes of CPU, run by hand"),
    (r"--nvml\b", "needs an NVIDIA GPU and its driver (NVML)"),
    (r"^gpufleet (check|discover|report|headroom)\b(?!.*--(nodes|stack)\b)",
     "reads a live cluster (no --nodes, no --stack)"),
]
#: Blocks another test runs whole: (text in the block, which test).
RUN_ELSEWHERE = [("scripts/pr-preview --base", "tests/test_pr_preview.py runs this block in a fresh clone"),
                 ("pulumi preview --policy-pack policies",
                  "tests/e2e/test_pulumi_up.py types this block in a terminal against the test cluster")]
#: Examples whose doc is out of date, until the section's owner brings it up to date: (doc, command) -> what
#: is wrong. Strict: once the example passes, its entry must go.
STALE: dict[tuple[str, str], str] = {}
RUNS_HERE = re.compile(r"^(gpufleet|helm) ")
UNLISTED = "neither run here nor listed in NOT_RUN with what it needs"
WRITES = re.compile(r"--(?:out|summary|reports|force)\b|>")
EXIT = re.compile(r"\bexit (\d+)\b:?\s*(.*)")
OPTIONAL = re.compile(r"\[([^\[\]]*)\]")


def why_not_run(example: Example) -> str | None:
    for text, why in RUN_ELSEWHERE:
        if text in example.block.text:
            return why
    for pattern, why in NOT_RUN:
        if re.search(pattern, example.command):
            return why
    return None if RUNS_HERE.match(example.command) else UNLISTED


def substituted(text: str, placeholders: dict[str, str]) -> str:
    for placeholder, value in placeholders.items():
        text = text.replace(placeholder, value)
    return text


def runnable(example: Example, placeholders: dict[str, str]) -> str:
    """The command as written, its placeholders given their stand-ins and its optional `[...]` parts given."""
    return OPTIONAL.sub(r"\1", substituted(example.command, placeholders))


def test_examples_are_read_as_a_reader_reads_them(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("```sh\n# a comment line\ngpufleet plan --stack dev   # exit 0: fine\n"
                   "gpufleet check --nodes n.json \\\n  app.yaml\n```\n\n"
                   "```\n$ gpufleet memory m --gpu 'a # b'\nline one\n  line ... two\n"
                   "$ kubectl get nodes\n```\n\n"
                   "```yaml\n$ not: shell\n```\n")
    found = [(e.line, e.command, e.comment, e.shown) for b in fenced_blocks(doc) for e in examples_of(b)]
    assert found == [(3, "gpufleet plan --stack dev", "exit 0: fine", ()),
                     (5, "gpufleet check --nodes n.json app.yaml", "", ()),
                     (9, "gpufleet memory m --gpu 'a # b'", "", ("line one", "  line ... two")),
                     (12, "kubectl get nodes", "", ())]
    assert missing_from("line one\nline X two\nmore", ["line one", "line ... two"]) == []
    assert missing_from("line X two\nline one", ["line one", "line ... two"]) == ["line ... two"]


def lane_of(example: Example) -> str:
    """Examples of one lane run in order in their own copy of the project: one per stand-in, and one per stack
    for the examples that read a stack (they need no stand-in), so that lanes can run side by side."""
    stack = re.search(r"--stack[= ](\S+)", example.command)
    return scenario_of(example).name + (f", stack {stack.group(1)}" if stack else "")


def run_lane(examples: list[Example], project: Path, env: dict[str, str]) -> dict[str, Ran]:
    copy_working_tree(project)
    scenario = scenario_of(examples[0])
    setup = scenario.make(project)
    if any("build/plan-dev" in e.command for e in examples):
        setup.insert(0, "gpufleet plan --stack dev --out build/plan-dev")  # what `make plan` plans
    for command in setup:
        made = run_in_terminal(command, project, env)
        assert made.code == 0, f"stand-ins {scenario.name}: {command}: {made.output}"
    results, once = {}, {}
    for example in examples:
        command = runnable(example, scenario.placeholders)
        if WRITES.search(command) or command not in once:
            once[command] = run_in_terminal(command, project, env)
        results[example.where] = once[command]
    return results


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict[str, Ran]:
    """Every example that runs here, in the docs' order within its lane (two lanes at a time); a command that
    writes nothing runs once for all the examples of its lane that show it."""
    env = {**os.environ, **helm_env(), "HOME": str(tmp_path_factory.mktemp("home")), "TERM": "dumb",
           "NO_COLOR": "1", "COLUMNS": str(COLUMNS), "LINES": str(LINES),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), str(helm_binary().parent),
                                    os.environ["PATH"]])}
    for name in ("PYTHONPATH", "GPUFLEET_DEBUG", "KUBECONFIG"):
        env.pop(name, None)
    lanes: dict[str, list[Example]] = {}
    for example in EXAMPLES:
        if why_not_run(example) is None:
            lanes.setdefault(lane_of(example), []).append(example)
    plans = sorted(lanes.values(), key=lambda lane: -sum("gpufleet plan" in e.command for e in lane))
    top = tmp_path_factory.mktemp("docs")
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = [pool.submit(run_lane, lane, top / f"lane-{i}", env) for i, lane in enumerate(plans)]
        return {where: result for future in done for where, result in future.result().items()}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.where)
def test_shell_example_runs_as_written_and_prints_what_the_doc_shows(example: Example, ran, request):
    """Each command of a shell block in README.md and docs/ runs here (in a copy of the project, with
    stand-ins for the reader's files) or is skipped with what it needs. It exits as its `# exit N` comment
    says (else 0 or 1: 2 would be a usage or input error), and the output shown under it is in what it
    prints."""
    why = why_not_run(example)
    if why == UNLISTED:
        pytest.fail(f"{example.where}: `{example.command}` is {UNLISTED}")
    if why is not None:
        pytest.skip(why)
    stale = STALE.get((example.block.doc, example.command))
    if stale:
        request.applymarker(pytest.mark.xfail(strict=True, reason=stale))
    result, scenario = ran[example.where], scenario_of(example)
    command = runnable(example, scenario.placeholders)
    said = f"{example.where}: `{command}` (stand-ins: {scenario.name}) printed:\n"
    assert "Traceback" not in result.output and result.code not in (70, 124), said + result.output
    exit_comment = EXIT.search(example.comment)
    if exit_comment:
        assert result.code == int(exit_comment.group(1)), said + result.output
        assert missing_from(result.output, [exit_comment.group(2)]) == [], said + result.output
    elif not example.shown:
        assert result.code in (0, 1), said + result.output
    shown = [substituted(line, scenario.placeholders) for line in example.shown]
    assert missing_from(result.output, shown) == [], said + result.output


def test_every_stale_entry_names_an_example_the_docs_still_hold():
    assert set(STALE) <= {(e.block.doc, e.command) for e in EXAMPLES}
