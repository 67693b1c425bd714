"""The CEL libraries the scheduler compiles DRA selectors with, beyond the standard definitions cel-python has.

Read at k8s.io/apiserver v0.34 `pkg/cel/environment/base.go` (the environment every stored expression gets:
the DRA plugin compiles with `StoredExpressions`) and the libraries it names:
- cel-go `ext.Strings` version 2: `charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`,
  `split`, `substring`, `trim`, `join`, `strings.quote`;
- `library.Regex`: `find`, `findAll`;
- `library.Lists`: `isSorted`, `sum`, `max` (`min` is cel-python's own), `indexOf`, `lastIndexOf` on lists;
- cel-go `ext.Sets`: `sets.contains`, `sets.equivalent`, `sets.intersects`;
- cel-go `ext.Lists` version 3, without its optional results and `sortBy`: `lists.range`, `slice`, `flatten`,
  `distinct`, `reverse`, `sort`;
- cel-go `ext.Bindings`: `cel.bind(name, init, expr)` (rewritten by cel_checker into a one-element `map`).

Not emulated, and named as such when a selector calls them: the URL, IP, CIDR and format libraries, optional
values (`.?`, `orValue`), two-variable comprehensions, `sortBy`, `first`/`last`, `strings.format`.
A function refusing its operands raises ValueError with cel-go's words (`index out of range: 9`), or
TypeError for an operand of another type (`no such overload`).
"""

from __future__ import annotations

import re
from typing import Any

from celpy import celtypes

#: Calls written `namespace.function(...)`: the namespaces the environment declares.
NAMESPACES = frozenset({"sets", "strings", "lists", "cel"})
#: What the Kubernetes environment declares that gpufleet does not evaluate.
NOT_EMULATED = frozenset({
    "url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery", "ip", "isIP",
    "cidr", "isCIDR", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
    "isGlobalUnicast", "containsIP", "containsCIDR", "masked", "prefixLength", "format", "validate",
    "orValue", "hasValue", "value", "optMap", "optFlatMap", "or", "transformList", "transformMap",
    "transformMapEntry", "sortBy", "first", "last", "existsOne", "strings.format", "optional.of",
    "optional.none", "optional.ofNonZeroValue"})


def _text(value: Any) -> str:
    if not isinstance(value, celtypes.StringType) or type(value) is not celtypes.StringType:
        raise TypeError("no such overload")
    return str(value)


def _int(value: Any) -> int:
    if not isinstance(value, celtypes.IntType):
        raise TypeError("no such overload")
    return int(value)


def _list(value: Any) -> list:
    if not isinstance(value, celtypes.ListType):
        raise TypeError("no such overload")
    return list(value)


def _char_at(s: Any, i: Any) -> celtypes.StringType:
    text, index = _text(s), _int(i)
    if index < 0 or index > len(text):
        raise ValueError(f"index out of range: {index}")
    return celtypes.StringType(text[index:index + 1])


def _index_of(s: Any, sub: Any, offset: Any = None) -> celtypes.IntType:
    if isinstance(s, celtypes.ListType):
        return _list_index(s, sub, last=False)
    text, part = _text(s), _text(sub)
    start = 0 if offset is None else _int(offset)
    if start < 0 or start > len(text):
        raise ValueError(f"index out of range: {start}")
    return celtypes.IntType(text.find(part, start))


def _last_index_of(s: Any, sub: Any, offset: Any = None) -> celtypes.IntType:
    if isinstance(s, celtypes.ListType):
        return _list_index(s, sub, last=True)
    text, part = _text(s), _text(sub)
    end = len(text) if offset is None else _int(offset)
    if end < 0 or end > len(text):
        raise ValueError(f"index out of range: {end}")
    return celtypes.IntType(text.rfind(part, 0, end + len(part)))


def _list_index(items: Any, value: Any, last: bool) -> celtypes.IntType:
    found = [i for i, v in enumerate(_list(items)) if type(v) is type(value) and v == value]
    return celtypes.IntType((found[-1] if last else found[0]) if found else -1)


def _ascii(s: Any, upper: bool) -> celtypes.StringType:
    table = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ") if upper else \
        str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
    return celtypes.StringType(_text(s).translate(table))


def _replace(s: Any, old: Any, new: Any, n: Any = None) -> celtypes.StringType:
    count = -1 if n is None else _int(n)
    return celtypes.StringType(_text(s).replace(_text(old), _text(new), count if count >= 0 else -1))


def _split(s: Any, sep: Any, n: Any = None) -> celtypes.ListType:
    text, by, limit = _text(s), _text(sep), -1 if n is None else _int(n)
    if limit == 0:
        return celtypes.ListType([])
    if by == "":  # each code point
        parts = list(text) if limit < 0 else [*list(text[:limit - 1]), text[limit - 1:]] if text else []
    else:
        parts = text.split(by, limit - 1 if limit > 0 else -1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _substring(s: Any, start: Any, end: Any = None) -> celtypes.StringType:
    text = _text(s)
    first, stop = _int(start), len(text) if end is None else _int(end)
    if first < 0 or first > len(text):
        raise ValueError(f"index out of range: {first}")
    if stop < 0 or stop > len(text):
        raise ValueError(f"index out of range: {stop}")
    if first > stop:
        raise ValueError(f"invalid substring range. start: {first}, end: {stop}")
    return celtypes.StringType(text[first:stop])


def _join(items: Any, sep: Any = None) -> celtypes.StringType:
    parts = [_text(v) for v in _list(items)]
    return celtypes.StringType(("" if sep is None else _text(sep)).join(parts))


def _quote(s: Any) -> celtypes.StringType:
    text = _text(s)
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r") \
        .replace("\t", "\\t").replace("\a", "\\a").replace("\b", "\\b").replace("\f", "\\f").replace("\v", "\\v")
    return celtypes.StringType(f'"{escaped}"')


def _regex(pattern: Any) -> re.Pattern:
    try:
        return re.compile(_text(pattern))
    except re.error as e:
        raise ValueError(f"error parsing regexp: {e}") from e


def _find(s: Any, pattern: Any) -> celtypes.StringType:
    m = _regex(pattern).search(_text(s))
    return celtypes.StringType(m.group(0) if m else "")


def _find_all(s: Any, pattern: Any, n: Any = None) -> celtypes.ListType:
    limit = -1 if n is None else _int(n)
    if limit == 0:
        return celtypes.ListType([])
    found = [m.group(0) for m in _regex(pattern).finditer(_text(s))]
    return celtypes.ListType([celtypes.StringType(f) for f in (found if limit < 0 else found[:limit])])


def _comparable(items: Any) -> list:
    values = _list(items)
    if values and len({type(v) for v in values}) > 1:
        raise TypeError("no such overload")
    return values


def _is_sorted(items: Any) -> celtypes.BoolType:
    values = _comparable(items)
    return celtypes.BoolType(all(a <= b for a, b in zip(values, values[1:], strict=False)))


def _sum(items: Any) -> Any:
    values = _comparable(items)
    if not values:
        return celtypes.IntType(0)
    total = values[0]
    for v in values[1:]:
        total = total + v
    return total


def _max(items: Any) -> Any:
    values = _comparable(items)
    if not values:
        raise ValueError("max(list) called on an empty list")
    return max(values)


def _sets(a: Any, b: Any, test) -> celtypes.BoolType:
    left, right = _list(a), _list(b)
    return celtypes.BoolType(test(left, right))


def _in(value: Any, items: list) -> bool:
    return any(value == v for v in items)


def _range(n: Any) -> celtypes.ListType:
    return celtypes.ListType([celtypes.IntType(i) for i in range(_int(n))])


def _slice(items: Any, start: Any, end: Any) -> celtypes.ListType:
    values, first, stop = _list(items), _int(start), _int(end)
    if first < 0 or stop < 0:
        raise ValueError(f"cannot slice({first}, {stop}), negative indexes not supported")
    if first > stop:
        raise ValueError(f"cannot slice({first}, {stop}), start index must be less than or equal to end index")
    if stop > len(values):
        raise ValueError(f"cannot slice({first}, {stop}), list is length {len(values)}")
    return celtypes.ListType(values[first:stop])


def _flatten(items: Any, depth: Any = None) -> celtypes.ListType:
    levels = 1 if depth is None else _int(depth)
    if levels < 0:
        raise ValueError("level must be non-negative")
    out: list = []
    for v in _list(items):
        if isinstance(v, celtypes.ListType) and levels > 0:
            out += _flatten(v, celtypes.IntType(levels - 1))
        else:
            out.append(v)
    return celtypes.ListType(out)


def _distinct(items: Any) -> celtypes.ListType:
    out: list = []
    for v in _list(items):
        if not any(type(v) is type(u) and v == u for u in out):
            out.append(v)
    return celtypes.ListType(out)


def _reverse(value: Any) -> Any:
    if isinstance(value, celtypes.ListType):
        return celtypes.ListType(list(reversed(value)))
    raise TypeError("no such overload")  # strings.reverse is version 3 of the strings library


def _sort(items: Any) -> celtypes.ListType:
    return celtypes.ListType(sorted(_comparable(items)))


def _size(value: Any) -> celtypes.IntType:
    if isinstance(value, celtypes.StringType):
        return celtypes.IntType(len(_text(value)))
    if not isinstance(value, (bytes, list, dict)):
        raise TypeError("no such overload")
    return celtypes.IntType(len(value))


LIBRARY: dict[str, Any] = {
    # the standard string functions and size(), over plain strings only: cel-python keeps a Quantity and a
    # Semver as strings, cel-go has no such overload for them
    "startsWith": lambda s, p: celtypes.BoolType(_text(s).startswith(_text(p))),
    "endsWith": lambda s, p: celtypes.BoolType(_text(s).endswith(_text(p))),
    "contains": lambda s, p: celtypes.BoolType(_text(p) in _text(s)),
    "matches": lambda s, p: celtypes.BoolType(_regex(p).search(_text(s)) is not None), "size": _size,
    "charAt": _char_at, "indexOf": _index_of, "lastIndexOf": _last_index_of,
    "lowerAscii": lambda s: _ascii(s, upper=False), "upperAscii": lambda s: _ascii(s, upper=True),
    "replace": _replace, "split": _split, "substring": _substring,
    "trim": lambda s: celtypes.StringType(_text(s).strip()), "join": _join, "strings.quote": _quote,
    "find": _find, "findAll": _find_all,
    "isSorted": _is_sorted, "sum": _sum, "max": _max,
    "sets.contains": lambda a, b: _sets(a, b, lambda x, y: all(_in(v, x) for v in y)),
    "sets.equivalent": lambda a, b: _sets(a, b, lambda x, y: all(_in(v, y) for v in x) and all(_in(v, x) for v in y)),
    "sets.intersects": lambda a, b: _sets(a, b, lambda x, y: any(_in(v, x) for v in y)),
    "lists.range": _range, "slice": _slice, "flatten": _flatten, "distinct": _distinct, "reverse": _reverse,
    "sort": _sort,
}
