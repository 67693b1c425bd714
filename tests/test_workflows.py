"""The GitHub workflows are valid (GitHub's own workflow schema, vendored by check-jsonschema)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
CHECK_JSONSCHEMA = Path(sys.executable).parent / "check-jsonschema"


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[w.name for w in WORKFLOWS])
def test_workflow_matches_github_workflow_schema(workflow):
    result = subprocess.run([str(CHECK_JSONSCHEMA), "--builtin-schema", "vendor.github-workflows", str(workflow)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_action_is_pinned_to_a_version():
    for workflow in WORKFLOWS:
        for job in yaml.safe_load(workflow.read_text())["jobs"].values():
            for step in job.get("steps", []):
                if "uses" in step:
                    ref = step["uses"].partition("@")[2]
                    assert ref.count(".") == 2 or len(ref) == 40, f"{workflow.name}: {step['uses']} is not pinned"


def test_pull_request_workflow_comments_without_credentials_and_previews_with_them():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "pull-request.yaml").read_text())
    assert wf["jobs"]["plan-diff"]["permissions"]["pull-requests"] == "write"
    assert "secrets" not in yaml.safe_dump(wf["jobs"]["plan-diff"])
    job = wf["jobs"]["stack-preview"]
    present = "steps.creds.outputs.present == 'true'"
    # The CLI is installed only where the credentials are (the script previews offline without it) ...
    install = next(s for s in job["steps"] if s.get("uses", "").startswith("pulumi/actions@"))
    assert install["if"] == present and "command" not in install.get("with", {})
    # ... and the step that previews is the script, whichever engine it finds.
    step = next(s for s in job["steps"] if s.get("id") == "preview")
    (preview,) = [c for c in shell_commands(step["run"]) if any(w.endswith("scripts/stack-preview") for w in c)]
    assert preview[:2] == ["head/.venv/bin/python", "head/scripts/stack-preview"] and "if" not in step
    assert step["run"].startswith("set +e\n")
    assert job["steps"][-1]["if"] == "steps.preview.outputs.status != '0'"


# --- the commands the workflows run exist: scripts, gpufleet commands and options, make targets --------

SCRIPT_PATH = re.compile(r"^(?:[\w.-]+/)*scripts/[\w.-]+$")
SHELL_OPERATORS = set("();<>|&")


def shell_commands(script: str) -> list[list[str]]:
    """The simple commands of a `run:` script: words split like the shell does, cut at ; && || | ( )."""
    commands: list[list[str]] = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words: list[str] = []
        for token in lexer:
            if set(token) <= SHELL_OPERATORS:
                commands.append(words)
                words = []
            else:
                words.append(token)
        commands.append(words)
    return [c for c in commands if c]


def long_options(help_text: str) -> set[str]:
    """The --options a --help lists (the option column only, not options quoted in descriptions)."""
    options: set[str] = set()
    for line in help_text.splitlines():
        line = line.strip(" │|*")  # rich's box and its "required" star
        if line.startswith("-"):
            options |= set(re.findall(r"--[A-Za-z0-9][\w-]*", re.split(r"\s{2,}", line)[0]))
    return options


def help_of(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300", "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run([sys.executable, *argv, "--help"], capture_output=True, text=True, cwd=ROOT, env=env)


def make_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z0-9_.-]+):", (ROOT / "Makefile").read_text(), re.MULTILINE))


def make_goals(args: list[str]) -> list[str]:
    """The targets of `make ARGS` (options, their values and VAR=value assignments left out)."""
    goals, rest = [], iter(args)
    for arg in rest:
        if arg in ("-C", "-f", "-j", "-o", "-W", "-I"):
            next(rest, None)
        elif not arg.startswith("-") and "=" not in arg:
            goals.append(arg)
    return goals


def reference_problems(script: str, checkouts: tuple[str, ...] = ()) -> list[str]:
    """What in `script` names a repository script, gpufleet command, option or make target that does not exist.
    `checkouts` are the directories the job checks this repository out into (`with: path:`)."""
    problems = []
    gpufleet = ["-c", "from gpufleet.cli import main; main()"]
    for words in shell_commands(script):
        for i, word in enumerate(words):
            options = [w.partition("=")[0] for w in words[i + 1:] if w.startswith("--")]
            if Path(word).name == "gpufleet":
                sub = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("-") else None
                result = help_of(*gpufleet, *([sub] if sub else []))
                if result.returncode != 0:
                    problems.append(f"gpufleet {sub}: no such command")
                    continue
                listed = long_options(result.stdout)
                problems += [f"gpufleet {sub}: no option {o}" for o in options if o not in listed]
            elif SCRIPT_PATH.search(word):
                rel = next((word[len(c) + 1:] for c in checkouts if word.startswith(c + "/")), word)
                if not (ROOT / rel).is_file():
                    problems.append(f"{word}: no such file {rel} in the repository")
                    continue
                listed = long_options(help_of(str(ROOT / rel)).stdout)
                problems += [f"{rel}: no option {o}" for o in options if o not in listed]
            elif word == "make" and i == 0:
                problems += [f"make {t}: no such target in the Makefile" for t in make_goals(words[1:])
                             if t not in make_targets()]
    return problems


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[w.name for w in WORKFLOWS])
def test_workflow_commands_name_scripts_commands_options_and_targets_that_exist(workflow):
    problems = []
    for name, job in yaml.safe_load(workflow.read_text())["jobs"].items():
        checkouts = tuple(s["with"]["path"] for s in job.get("steps", [])
                          if s.get("uses", "").startswith("actions/checkout@") and "path" in s.get("with", {}))
        for step in job.get("steps", []):
            if "run" in step:
                problems += [f"{workflow.name}: job {name}: {p}"
                             for p in reference_problems(step["run"], checkouts)]
    assert problems == []


def test_pull_request_workflow_runs_the_preview_script_and_fails_on_its_exit_status():
    job = yaml.safe_load((ROOT / ".github" / "workflows" / "pull-request.yaml").read_text())["jobs"]["plan-diff"]
    plan = next(s for s in job["steps"] if s.get("id") == "plan")
    (preview,) = [c for c in shell_commands(plan["run"]) if any(w.endswith("scripts/pr-preview") for w in c)]
    assert preview[:2] == ["head/.venv/bin/python", "head/scripts/pr-preview"]
    assert preview[2:] == ["--base", "base", "--head", "head", "--out", "comment.md", "--reports", "reports"]
    assert plan["run"].startswith("set +e\n")  # the status is kept, not fatal before the comment is posted
    comment = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/github-script@"))
    assert "readFileSync('comment.md'" in comment["with"]["script"]
    fail = job["steps"][-1]
    assert fail["if"] == "steps.plan.outputs.status != '0'" and "exit 1" in fail["run"]


def test_reference_check_catches_commands_options_scripts_and_targets_that_do_not_exist():
    old_workflow = '(cd head && .venv/bin/gpufleet check --stak "$stack") >> comment.md 2>&1 || status=1'
    assert reference_problems(old_workflow) == ["gpufleet check: no option --stak"]
    assert reference_problems("gpufleet plann --stack dev") == ["gpufleet plann: no such command"]
    assert reference_problems("gpufleet plan --stack dev --out=x --no-policies") == []
    assert reference_problems("head/.venv/bin/python head/scripts/pr-preview --base b --stack dev", ("head",)) == \
        ["scripts/pr-preview: no option --stack"]
    assert reference_problems("python scripts/pr-review --base b") == \
        ["scripts/pr-review: no such file scripts/pr-review in the repository"]
    assert reference_problems("make -C head setpu\nmake test") == ["make setpu: no such target in the Makefile"]


def test_pull_request_workflow_uploads_the_fleet_maps_the_preview_draws():
    job = yaml.safe_load((ROOT / ".github" / "workflows" / "pull-request.yaml").read_text())["jobs"]["plan-diff"]
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["path"] == "reports/*.html"
    names = [s.get("name", "") for s in job["steps"]]
    assert names.index(upload["name"]) < len(names) - 1  # before the step that fails the job
