"""What every stack command checks first: that --project-dir is a Pulumi project, and which directories an
`--out` must never replace."""

from __future__ import annotations

from pathlib import Path

from gpufleet.errors import InputError

PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml")


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
