"""Which allowed key a misspelt one was meant to be (a config key, a YAML path's key in the stack file)."""

from __future__ import annotations


def did_you_mean(key: str, allowed: list[str]) -> str | None:
    """The allowed key `key` is most likely a misspelling of: the same letters in another case or with `_` or
    `-` (node_pool, nodepools -> nodePools), else the one nearest by edit distance when it is near and no
    other is as near (sharng -> sharing)."""
    squashed = _squash(key)
    same = [a for a in allowed if a != key and _squash(a) == squashed]
    if same:
        return same[0]
    near = sorted((_edit_distance(squashed, _squash(a)), a) for a in allowed if a != key)
    limit = max(1, len(squashed) // 4)  # one edit in a short key, two in an 8-letter one
    if near and near[0][0] <= limit and (len(near) == 1 or near[1][0] > near[0][0]):
        return near[0][1]
    return None


def _squash(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


def _edit_distance(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and swaps of two neighbouring letters that turn `a` into `b`."""
    before, row = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (ca != cb))
            if before is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        before, row = row, current
    return row[-1]
