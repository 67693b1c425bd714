"""Hypothesis strategies that damage Kubernetes JSON/YAML the way people and tools do (tests only).

`mutated(doc)` picks a place in a decoded document and replaces, deletes or duplicates what is there;
`text_mutated(text)` cuts or splices the serialised text. Replacement values favour what breaks readers:
wrong JSON types, quantities that are not quantities, huge and negative numbers, markup, odd names.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

TRICKY_STRINGS = ["", "abc", "500m", "-1", "1e20", "0.5", "1Ki", "nan", "inf", "Bad_Name", "[bold]x[/bold]",
                  "a" * 300, "Node", "Pod", "List", "NodeList", "nvidia.com/gpu", "NoSchedule", "Always", "Exists",
                  "gpufleet.io/capacity/v2", "gpufleet.io/capacity/v1", "default", "kube-system", "Gt", "In",
                  "1.5", "99999999999999999999999", "\u00e9\u00e8", "x: y", "---", "{", "12Gi", "9e99999",
                  "a\rb", "x\ny", "\u2028", "\x00"]

scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from([0, 1, -1, 2**31, 2**63, 1e20, 0.5, -0.0]),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(TRICKY_STRINGS), st.text(max_size=12),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "name", "kind", "items", "spec", "1"]), inner,
                                                 max_size=3)), max_leaves=6)


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a document: the root, each key of each object, each item of each list."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths(v, prefix + (i,))
    return out


def _set(doc: Any, path: tuple, how: str, value: Any) -> Any:
    if not path:
        return value if how != "wrap" else [doc]
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "duplicate" and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
    elif how == "wrap":
        parent[last] = [parent[last]]
    else:
        parent[last] = value
    return doc


@st.composite
def mutated(draw, doc: Any, max_mutations: int = 3) -> Any:
    """The document with 1..max_mutations damages."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, max_mutations))):
        places = paths(doc)
        path = draw(st.sampled_from(places))
        how = draw(st.sampled_from(["replace", "replace", "replace", "delete", "duplicate", "wrap"]))
        if how == "delete" and not path:
            how = "replace"
        doc = _set(doc, path, how, draw(values) if how == "replace" else None)
    return doc


@st.composite
def text_mutated(draw, text: str) -> str:
    """The text cut short, or with a few characters spliced in."""
    if draw(st.booleans()):
        return text[: draw(st.integers(0, len(text)))]
    at = draw(st.integers(0, len(text)))
    return text[:at] + draw(st.sampled_from(["{", "]", ":", "\t", "- ", "\"", "\n  x: [", "\x00", "é"])) + text[at:]
