"""The GitHub workflows are valid (GitHub's own workflow schema, vendored by check-jsonschema)."""

from __future__ import annotations

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
    preview = wf["jobs"]["pulumi-preview"]
    action = next(s for s in preview["steps"] if s.get("uses", "").startswith("pulumi/actions@"))
    assert action["with"]["comment-on-pr"] is True and action["with"]["policyPacks"] == "./policies"
    assert action["if"] == "steps.creds.outputs.present == 'true'"
