"""What the scheduler's CEL compiler refuses before a selector runs, and the calls cel-python spells otherwise.

The scheduler compiles a selector with cel-go's type checker against the DRA environment
(k8s.io/dynamic-resource-allocation v0.34 cel/compile.go): `device.capacity[domain][id]` is a
`kubernetes.Quantity`, `quantity(...)` and `semver(...)` make a Quantity and a Semver, and
`device.attributes[domain][id]` is `dyn`. A Quantity or a Semver has no overload of `<`, `+`, `size` or of
the string functions: they compare only with their own methods (`compareTo`, `isGreaterThan`, ...). cel-python
checks no types, so without this it would compare them as the strings they are written as. `check` refuses
what the checker refuses, in cel-go's words: `ERROR: <input>:1:42: found no matching overload for '_>_'
applied to '(kubernetes.Quantity, kubernetes.Quantity)'`, with the expression and a caret under the spot.

`rewrite` turns what cel-python parses but does not evaluate into what it does: `sets.contains(a, b)` (a
namespaced function) becomes a call of the function named `sets.contains`, and `cel.bind(x, init, expr)` (a
macro of cel-go's bindings library) `[init].map(x, expr)[0]`.
"""

from __future__ import annotations

import lark

from gpufleet.scheduler.plugins.dynamicresources.cel_library import NAMESPACES, NOT_EMULATED

QUANTITY, SEMVER, DYN = "kubernetes.Quantity", "kubernetes.Semver", "dyn"
_TYPED = (QUANTITY, SEMVER)
#: The methods each type has, with the operand types each accepts (a tuple per overload).
_METHODS: dict[str, dict[str, tuple[tuple[str, ...], ...]]] = {
    QUANTITY: {"compareTo": ((QUANTITY,),), "isGreaterThan": ((QUANTITY,),), "isLessThan": ((QUANTITY,),),
               "add": ((QUANTITY,), ("int",)), "sub": ((QUANTITY,), ("int",)), "asInteger": ((),),
               "asApproximateFloat": ((),), "isInteger": ((),), "sign": ((),)},
    SEMVER: {"compareTo": ((SEMVER,),), "isGreaterThan": ((SEMVER,),), "isLessThan": ((SEMVER,),),
             "major": ((),), "minor": ((),), "patch": ((),)},
}
_RESULTS = {"compareTo": "int", "isGreaterThan": "bool", "isLessThan": "bool", "asInteger": "int",
            "asApproximateFloat": "double", "isInteger": "bool", "sign": "int", "major": "int", "minor": "int",
            "patch": "int"}
_BINARY = {"relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
           "relation_eq": "_==_", "relation_ne": "_!=_", "relation_in": "@in", "addition_add": "_+_",
           "addition_sub": "_-_", "multiplication_mul": "_*_", "multiplication_div": "_/_",
           "multiplication_mod": "_%_"}
_LITERALS = {"INT_LIT": "int", "UINT_LIT": "uint", "FLOAT_LIT": "double", "STRING_LIT": "string",
             "MLSTRING_LIT": "string", "BYTES_LIT": "bytes", "BOOL_LIT": "bool", "NULL_LIT": "null_type"}
#: Types known before the selector runs (the others are dyn): an operator between two of them must have an
#: overload for exactly those.
_CONCRETE = frozenset({QUANTITY, SEMVER, "int", "uint", "double", "string", "bytes", "bool", "null_type", "list",
                       "map"})
_NUMBERS = frozenset({"int", "uint", "double"})
#: Macros over a list or map: one variable; cel-go's two-variable forms are not emulated.
_MACROS = {"all", "exists", "exists_one", "map", "filter"}


class TypeCheckError(Exception):
    """A selector the compiler refuses; the text is cel-go's (`ERROR: <input>:L:C: ...` and the snippet)."""


def rewrite(tree: lark.Tree) -> lark.Tree:
    """The tree with namespaced calls and `cel.bind` in forms cel-python evaluates (in place; returned)."""
    for node in list(tree.iter_subtrees()):
        for i, child in enumerate(node.children):
            if isinstance(child, lark.Tree) and child.data == "member_dot_arg":
                node.children[i] = _rewritten(child)
    return tree


def _rewritten(call: lark.Tree) -> lark.Tree:
    receiver, name = call.children[0], call.children[1]
    namespace = _bare_ident(receiver)
    if namespace is None or namespace not in NAMESPACES:
        return call
    args = call.children[2] if len(call.children) > 2 else lark.Tree("exprlist", list[lark.Tree]())
    if namespace == "cel" and str(name) == "bind" and isinstance(args, lark.Tree) and len(args.children) == 3:
        var, init, body = args.children
        listed = lark.Tree("member", [lark.Tree("primary", [lark.Tree("list_lit", [
            lark.Tree("exprlist", [init])])])])
        parts: list = [listed, lark.Token("IDENT", "map"), lark.Tree("exprlist", [var, body])]
        mapped = lark.Tree("member", [lark.Tree("member_dot_arg", parts)])
        zero = lark.Tree("expr", [lark.Tree("conditionalor", [lark.Tree("conditionaland", [lark.Tree(
            "relation", [lark.Tree("addition", [lark.Tree("multiplication", [lark.Tree("unary", [lark.Tree(
                "member", [lark.Tree("primary", [lark.Tree("literal", [lark.Token("INT_LIT", "0")])])])])])])])])])])
        return lark.Tree("member_index", [mapped, zero], call.meta)
    token = lark.Token("IDENT", f"{namespace}.{name}")
    return lark.Tree("primary", [lark.Tree("ident_arg", [token, args])], call.meta)


def _bare_ident(member: object) -> str | None:
    """`x` when the tree is just the identifier x."""
    node = member
    while isinstance(node, lark.Tree) and node.data in ("member", "primary") and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, lark.Tree) and node.data == "ident":
        return str(node.children[0])
    return None


def check(tree: lark.Tree, text: str) -> None:
    """TypeCheckError when the scheduler's compiler refuses the (rewritten) tree."""
    _Checker(text).type_of(tree)


class _Checker:
    def __init__(self, text: str):
        self.text = text

    def fail(self, offset: int, message: str) -> None:
        """cel-go's error: the location (1-based line and column of `offset`) and the line with a caret."""
        before = self.text[:offset]
        line = before.count("\n") + 1
        start = before.rfind("\n") + 1
        column = offset - start + 1
        source = self.text.split("\n")[line - 1]
        raise TypeCheckError(f"ERROR: <input>:{line}:{column}: {message}\n | {source}\n | {'.' * (column - 1)}^")

    def type_of(self, node: object) -> str:
        if not isinstance(node, lark.Tree):
            return DYN
        kind = node.data
        children = node.children
        if kind == "expr" and len(children) == 3:
            condition = self.type_of(children[0])
            if condition in _CONCRETE and condition != "bool":
                self.fail(_start(children[0]), f"found no matching overload for '_?_:_' applied to "
                          f"'({_shown(condition)}, dyn, dyn)'")
            then, other = self.type_of(children[1]), self.type_of(children[2])
            return then if then == other else DYN
        if kind in ("conditionalor", "conditionaland") and len(children) == 2:
            a, b = self.type_of(children[0]), self.type_of(children[1])
            if any(t in _CONCRETE and t != "bool" for t in (a, b)):
                op = "_||_" if kind == "conditionalor" else "_&&_"
                after = self.text[_end(children[0]):]
                self.fail(_end(children[0]) + len(after) - len(after.lstrip()),
                          f"found no matching overload for '{op}' applied to '({_shown(a)}, {_shown(b)})'")
            return "bool"
        if kind in ("relation", "addition", "multiplication") and len(children) == 2:
            return self.binary(children[0], children[1])
        if kind == "unary" and len(children) == 2:
            return self.unary(children[0], children[1])
        if kind == "member_dot":
            return self.field(self.type_of(children[0]), str(children[1]))
        if kind == "member_index":
            return self.index(self.type_of(children[0]), children[1])
        if kind == "member_dot_arg":
            return self.method(node)
        if kind == "ident_arg":
            return self.function(node)
        if kind == "ident":
            return "device" if str(children[0]) == "device" else DYN
        if kind == "literal":
            token = children[0]
            return _LITERALS.get(token.type, DYN) if isinstance(token, lark.Token) else DYN
        if kind in ("list_lit", "map_lit", "member_object"):
            for child in children:
                self.type_of(child)
            return {"list_lit": "list", "map_lit": "map"}.get(kind, DYN)
        if len(children) == 1:  # expr, member, primary, paren_expr, ... pass their one child's type up
            return self.type_of(children[0])
        for child in children:
            self.type_of(child)
        return DYN

    def binary(self, op_node: lark.Tree, right: object) -> str:
        op = _BINARY.get(op_node.data, "")
        a, b = self.type_of(op_node.children[0]), self.type_of(right)
        if op in ("_==_", "_!=_"):
            if a in _CONCRETE and b in _CONCRETE and a != b and not (a in _NUMBERS and b in _NUMBERS) \
                    and "null_type" not in (a, b):
                self.fail(op_node.meta.end_pos - 2, f"found no matching overload for '{op}' applied to "
                          f"'({_shown(a)}, {_shown(b)})'")
            return "bool"
        if a in _TYPED or b in _TYPED or (op == "@in" and b in _CONCRETE and b not in ("list", "map")):
            width = 2 if op in ("_<=_", "_>=_", "@in") else 1
            self.fail(op_node.meta.end_pos - width, f"found no matching overload for '{op}' applied to "
                      f"'({_shown(a)}, {_shown(b)})'")
        if op_node.data.startswith("relation"):
            return "bool"
        return a if a == b and a in ("int", "uint", "double", "string") else DYN

    def unary(self, op_node: lark.Tree, operand: object) -> str:
        t = self.type_of(operand)
        if t in _TYPED or (op_node.data == "unary_not" and t in _CONCRETE and t != "bool"):
            op = "!_" if op_node.data == "unary_not" else "-_"
            self.fail(op_node.meta.start_pos, f"found no matching overload for '{op}' applied to '({_shown(t)})'")
        return "bool" if op_node.data == "unary_not" else t

    def field(self, t: str, name: str) -> str:
        if t == "device":
            return {"driver": "string", "attributes": "attributes", "capacity": "capacity"}.get(name, DYN)
        return self.index_type(t)

    def index(self, t: str, key: object) -> str:
        self.type_of(key)
        return self.index_type(t)

    @staticmethod
    def index_type(t: str) -> str:
        return {"attributes": "attributes_domain", "capacity": "capacity_domain",
                "capacity_domain": QUANTITY}.get(t, DYN)

    def arguments(self, node: lark.Tree, at: int) -> list[str]:
        args = node.children[at] if len(node.children) > at else None
        if not isinstance(args, lark.Tree):
            return []
        return [self.type_of(a) for a in args.children]

    def call_offset(self, name: object) -> int:
        """Where cel-go puts a call: its opening parenthesis."""
        end = getattr(name, "end_pos", None) or 0
        found = self.text.find("(", end)
        return found if found >= 0 else end

    def method(self, node: lark.Tree) -> str:
        name = node.children[1]
        method = str(name)
        if method in _MACROS:
            receiver = self.type_of(node.children[0])
            count = len(node.children[2].children) if len(node.children) > 2 and isinstance(
                node.children[2], lark.Tree) else 0
            if count != 2:
                self.fail(self.call_offset(name), f"{method}() with {count} arguments: the two-variable and "
                          "three-argument forms are not emulated by gpufleet")
            if receiver in _TYPED:
                self.fail(self.call_offset(name), f"found no matching overload for '{method}' applied to "
                          f"'{_shown(receiver)}.(dyn, dyn)'")
            return "list" if method in ("map", "filter") else "bool"
        receiver = self.type_of(node.children[0])
        args = self.arguments(node, 2)
        if method in NOT_EMULATED:
            self.fail(self.call_offset(name), f"{method}() is in the Kubernetes CEL environment but not emulated "
                      "by gpufleet")
        if receiver in _TYPED:
            overloads = _METHODS[receiver].get(method)
            if overloads is None or not any(len(o) == len(args) and all(
                    a in (want, DYN) for a, want in zip(args, o, strict=True)) for o in overloads):
                self.fail(self.call_offset(name), f"found no matching overload for '{method}' applied to "
                          f"'{_shown(receiver)}.({', '.join(map(_shown, args))})'")
            return QUANTITY if method in ("add", "sub") else _RESULTS.get(method, DYN)
        if receiver == "string" and any(a in _TYPED for a in args):
            self.fail(self.call_offset(name), f"found no matching overload for '{method}' applied to "
                      f"'string.({', '.join(map(_shown, args))})'")
        return DYN

    def function(self, node: lark.Tree) -> str:
        name = node.children[0]
        function = str(name)
        args = self.arguments(node, 1)
        if function in NOT_EMULATED:
            self.fail(self.call_offset(name), f"{function}() is in the Kubernetes CEL environment but not "
                      "emulated by gpufleet")
        if function == "quantity":
            return QUANTITY
        if function == "semver":
            return SEMVER
        if function in ("isQuantity", "isSemver"):
            return "bool"
        if function == "dyn":
            return DYN
        if any(a in _TYPED for a in args) and function != "type":
            self.fail(self.call_offset(name), f"found no matching overload for '{function}' applied to "
                      f"'({', '.join(map(_shown, args))})'")
        return "int" if function == "size" else DYN


def _start(node: object) -> int:
    return getattr(getattr(node, "meta", None), "start_pos", 0) or 0


def _end(node: object) -> int:
    return getattr(getattr(node, "meta", None), "end_pos", 0) or 0


def _shown(t: str) -> str:
    """A type as cel-go prints it."""
    return {"attributes": "map(string, map(string, dyn))", "capacity": "map(string, map(string, "
            "kubernetes.Quantity))", "attributes_domain": "map(string, dyn)",
            "capacity_domain": "map(string, kubernetes.Quantity)", "device": "kubernetes.DRADevice",
            "list": "list(dyn)", "map": "map(dyn, dyn)"}.get(t, t)
