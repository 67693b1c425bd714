"""What the oracle recording scripts share: the `--seeds` ranges they take and the digest of the generated
input files a fixture carries (the tests regenerate the files and compare)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def seeds(text: str) -> list[int]:
    """`0-23`, `5`, `0-3,9,12-14` -> the seeds, in the order given."""
    out: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        out += list(range(int(low), int(high or low) + 1))
    return out


def digest(paths) -> str:
    """sha256 of the files' bytes, concatenated in order."""
    return hashlib.sha256(b"".join(Path(p).read_bytes() for p in paths)).hexdigest()
