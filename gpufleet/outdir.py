"""Output directories that are never destructive: what `plan --out` and `charts --out` write through.

gpufleet writes only into a directory that is absent, empty, or carries its marker file (`.gpufleet-output`,
JSON: the command and every file it wrote). On a re-run it replaces exactly the files the marker lists;
anything else there (a user's file, a symlink, a directory it did not create) stops the command with exit
2 naming what is in the way. A directory that is, or contains, the project or the current directory is
refused, as is a path naming a file.

Writing is atomic at the directory level: the whole tree is written into a fresh sibling directory, which
then takes the place of the old output (two renames), so a failure leaves the previous output intact and
no temporary files behind.

Bottom layer: imports only gpufleet.errors.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gpufleet.errors import InputError

MARKER = ".gpufleet-output"
MARKER_FORMAT = "gpufleet-output/v1"
#: How many paths an "in the way" error names before it only counts.
SHOWN = 5


class OutputDirError(InputError):
    """The output directory cannot be written without touching something gpufleet did not write."""


@dataclass(frozen=True)
class Marker:
    command: str
    files: tuple[str, ...]

    def to_text(self) -> str:
        return json.dumps({"format": MARKER_FORMAT, "command": self.command, "files": list(self.files)},
                          indent=2) + "\n"


def read_marker(out: Path) -> Marker | None:
    """The marker of a directory gpufleet wrote, or None when there is none; raises if it is unusable."""
    path = out / MARKER
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_symlink() or not path.is_file():
        raise OutputDirError(f"{path}: not a file gpufleet wrote (a symlink or directory); "
                             f"will not write into {out}")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        files = doc["files"]
        if doc.get("format") != MARKER_FORMAT or not all(isinstance(f, str) for f in files):
            raise ValueError("unknown format")
        return Marker(str(doc.get("command", "")), tuple(files))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise OutputDirError(f"{path}: not a gpufleet output marker ({e}); will not write into {out}") from e


def _entries(out: Path) -> tuple[list[str], list[str]]:
    """(files and other non-directories, directories) under `out`, relative, symlinks never followed."""
    files: list[str] = []
    dirs: list[str] = []
    for root, dirnames, filenames in os.walk(out, followlinks=False):
        base = Path(root).relative_to(out)
        for d in dirnames:
            rel = (base / d).as_posix()
            (files if (Path(root) / d).is_symlink() else dirs).append(rel)
        files += [(base / f).as_posix() for f in filenames]
    return sorted(files), sorted(dirs)


def in_the_way(out: Path) -> list[str]:
    """What in `out` gpufleet did not write there (relative paths): empty when it may replace the directory."""
    if not out.is_dir():
        return []
    marker = read_marker(out)
    ours = set(marker.files) if marker else set()
    files, dirs = _entries(out)
    ours_dirs = {p.as_posix() for rel in ours for p in Path(rel).parents if p != Path(".")}
    foreign = [f for f in files if f != MARKER and (f not in ours or (out / f).is_symlink())]
    holding = {p.as_posix() for f in foreign for p in Path(f).parents}
    return sorted(foreign) + [d for d in dirs if d not in ours_dirs and d not in holding]


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def check_target(out: Path, protected: dict[str, Path]) -> Path:
    """Refuse an output path that would clobber something; returns it absolute. `protected`: label -> dir."""
    if out.is_symlink():
        raise OutputDirError(f"{out}: is a symlink; pass the directory it points to "
                             "(gpufleet does not replace links)")
    target = Path(os.path.abspath(out))
    if target.exists() and not target.is_dir():
        raise OutputDirError(f"{out}: exists and is not a directory; choose a directory for the output")
    real = target.resolve()
    for label, directory in protected.items():
        if _inside(directory.resolve(), real):
            what = "is" if directory.resolve() == real else "contains"
            raise OutputDirError(f"--out {out}: {what} the {label} ({directory.resolve()}); "
                                 "choose a directory of its own, e.g. build/<name>")
    foreign = in_the_way(target)
    if foreign:
        shown = ", ".join(foreign[:SHOWN]) + (f" and {len(foreign) - SHOWN} more" if len(foreign) > SHOWN else "")
        raise OutputDirError(f"{out}: holds {len(foreign)} path(s) gpufleet did not write ({shown}); "
                             "choose an empty or new directory, or move them away")
    return target


def write_tree(out: Path, files: dict[str, str], command: str, protected: dict[str, Path]) -> list[Path]:
    """Write `files` (relative path -> text) as the whole content of `out`, plus the marker; returns the paths.

    Raises OutputDirError (exit 2) before writing anything when `out` is not safe to replace."""
    for rel in files:
        parts = Path(rel).parts
        if Path(rel).is_absolute() or ".." in parts or not parts or rel == MARKER:
            raise ValueError(f"output path {rel!r} is not a plain relative path")
    target = check_target(out, protected)
    try:
        _replace(target, files, command)
    except OSError as e:
        raise OutputDirError(f"{out}: cannot write the output ({e.strerror or e}); the previous content is "
                             "unchanged") from e
    return [out / rel for rel in sorted(files)]


def _replace(target: Path, files: dict[str, str], command: str) -> None:
    """Write the tree into a fresh sibling directory, then swap it in; clean up whatever happens."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    old: Path | None = None
    try:
        for rel, text in sorted(files.items()):
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        (staging / MARKER).write_text(Marker(command, tuple(sorted(files))).to_text(), encoding="utf-8")
        os.chmod(staging, 0o777 & ~_umask())
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.replace(target, old / "tree")
            try:
                os.replace(staging, target)
            except BaseException:
                os.replace(old / "tree", target)
                raise
        else:
            os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_own_file(path: Path, ours, what: str, force: bool = False) -> None:
    """Refuse (exit 2) to write `path` over anything but an earlier output of this command.

    `ours(existing_text)` says whether a file already at `path` is one; a directory, a symlink, or someone
    else's file is refused unless `force`.
    """
    if path.is_symlink() or path.is_dir():
        raise OutputDirError(f"{path}: is a {'symlink' if path.is_symlink() else 'directory'}; give a file name "
                             f"for the {what}")
    if path.exists() and not force:
        try:
            mine = ours(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            mine = False
        if not mine:
            raise OutputDirError(f"{path}: already exists and is not a {what} gpufleet wrote; choose another "
                                 "name, move it away, or pass --force to replace it")


def write_own_file(path: Path, text: str, ours, what: str, force: bool = False) -> None:
    """Write one output file (capacity.json, report.html) atomically, after `check_own_file`.

    The text goes to a temporary file beside `path` first, then is renamed over it: no reader sees half a
    file, and a failure leaves the old file and no temporary one.
    """
    check_own_file(path, ours, what, force)
    parent = path.parent if str(path.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
