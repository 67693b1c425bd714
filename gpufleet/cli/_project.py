"""What every stack command checks first: that --project-dir is a Pulumi project, and which directories an
`--out` must never replace."""

from __future__ import annotations

import re
from pathlib import Path

from gpufleet.errors import InputError

PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml")
#: A stack file's name: Pulumi.<stack>.yaml.
STACK_FILE = re.compile(r"Pulumi\.(.+)\.yaml")


def require_project(project_dir: Path) -> None:
    """Raise InputError (exit 2) saying how to point at a project when `project_dir` holds no Pulumi.yaml."""
    if not project_dir.is_dir():
        raise InputError(f"--project-dir {project_dir}: no such directory; pass the directory holding Pulumi.yaml")
    if not any((project_dir / name).is_file() for name in PROJECT_FILES):
        raise InputError(f"no Pulumi.yaml in {project_dir.resolve()}: run gpufleet in the project directory "
                         "or pass --project-dir DIR")


def protected_dirs(project_dir: Path) -> dict[str, Path]:
    """Directories an output directory must not be or contain (they hold the user's own files)."""
    return {"project directory": project_dir, "current directory": Path.cwd()}


def stack_and_project(stack: str, project_dir: Path) -> tuple[str, Path]:
    """The stack name and project directory that `--stack` and `--project-dir` mean. `--stack` names a stack
    (dev); its file's name or path (Pulumi.dev.yaml, infra/Pulumi.dev.yaml) names the same stack, in the
    file's directory. InputError, saying what to type, when that directory is not --project-dir."""
    path = Path(stack)
    match = STACK_FILE.fullmatch(path.name)
    if match is None:
        return stack, project_dir
    name, folder = match.group(1), path.parent
    if folder == Path(".") or folder.resolve() == project_dir.resolve():
        return name, project_dir
    if project_dir == Path("."):
        return name, folder
    raise InputError(f"--stack {stack} is a stack file outside --project-dir {project_dir}: give "
                     f"--stack {name} --project-dir {folder}")
