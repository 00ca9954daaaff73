"""The front end's checks by exact node type (no ``isinstance`` against libcst's classes, which goes through
ABCMeta: each class's first check of a type in a process walks its subclasses, ~500 checks of a new process's
first vmapped Newton call) mean what the ``isinstance`` checks meant: the classes named are final in libcst
(a libcst that subclasses one fails here), and a memo by the MRO agrees with ``issubclass`` for every node
class."""

from __future__ import annotations

import libcst as cst

from srcjax.frontend import list_methods, liveness, nested_defaults

_NODE_CLASSES = [c for c in vars(cst).values() if isinstance(c, type) and issubclass(c, cst.CSTNode)]


def test_the_classes_checked_by_exact_type_are_final():
    named = {*list_methods._TARGETED, *list_methods._NAMING, *liveness._COMPREHENSION_TYPES, cst.Assign,
             cst.AugAssign, cst.AddAssign, cst.Name, cst.FunctionDef, cst.Lambda, cst.IndentedBlock,
             cst.SimpleStatementLine}
    assert all(c.__subclasses__() == [] for c in named), [c for c in named if c.__subclasses__()]


def test_holders_of_defs_by_the_mro_as_by_issubclass():
    for c in _NODE_CLASSES:
        want = issubclass(c, nested_defaults._HOLDERS) and c is not cst.SimpleStatementLine
        assert nested_defaults._holds_defs(c) == want, c


def test_nested_defs_found_as_a_visitor_finds_them():
    text = """
def f(x, n=2):
    def g(a, b=1):
        def h(c=3):
            return c
        return a + b + h()
    if x > 0:
        def k(y=0):
            return y
    else:
        for i in range(3):
            def m(z=i):
                return z
    try:
        def p(q=1):
            return q
    except ValueError:
        def r(s=2):
            return s
    finally:
        pass
    while n:
        with open(x) as fh:
            def t(u=5):
                return u
    return g(x) + (lambda v=1: v)(2)
"""
    fdef = cst.parse_module(text).body[0]

    class Defs(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: list[str] = []

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.found.append(node.name.value)

    v = Defs()
    fdef.body.visit(v)
    assert [d.name.value for d in nested_defaults._nested_defs(fdef)] == v.found == ["g", "h", "k", "m", "p", "r", "t"]
