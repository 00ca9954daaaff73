"""The fast tree queries of srcjax/frontend/names.py agree with libcst's own traversals.

``names_in`` and ``children`` walk dataclass fields instead of running a ``CSTVisitor``
(which rebuilds every node it passes); this checks them against the visitor they replace
on every function of the test corpora, on the normalized programs and on generated
derivatives: the same names, in the same order.
"""

from __future__ import annotations

import functools
import inspect
import textwrap
import types

import libcst as cst
import pytest
from libcst._nodes.base import CSTCodegenError

import srcjax
from srcjax.frontend import names as N
from tests import ad_programs, container_programs, corpus_helpers, corpus_programs


def _visitor_names(node: cst.CSTNode, *, skip_targets: bool = False) -> list[str]:
    """The libcst visitor names_in used to be (the reference)."""
    out: list[str] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            out.append(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            n.value.visit(self)
            return False

        def visit_AssignTarget(self, n: cst.AssignTarget) -> bool:
            return not skip_targets

        def visit_For(self, n: cst.For) -> bool:
            if not skip_targets:
                return True
            n.iter.visit(self)
            n.body.visit(self)
            if n.orelse is not None:
                n.orelse.visit(self)
            return False

    node.visit(V())
    return out


def _functions() -> list[types.FunctionType]:
    out = []
    for mod in (ad_programs, container_programs, corpus_helpers, corpus_programs):
        for v in vars(mod).values():
            if isinstance(v, types.FunctionType) and v.__module__ == mod.__name__:
                try:
                    inspect.getsource(v)
                except (OSError, TypeError):
                    continue
                out.append(v)
    return out


EXTRA = '''
def extra(x, *args, k=1, **kw):
    a = x if k else -x
    b = [t * 2 for t in args if t is not None]
    c = {u: v for u, v in kw.items()}
    d = (lambda z: z + a)(b)
    e = f"{a!r:>{k}}" + x.T.shape[0]
    for i, (p, *q) in enumerate(zip(b, c), start=k):
        a += p
        a: int = i
    else:
        del q
    while a < 3:
        a = a @ b; b[0] = a[1:2, ...]
    with open(x) as fh, g(y=a) as (m, n):
        pass
    try:
        raise E(a) from b
    except (E, F) as err:
        print(err, sep=a)
    finally:
        pass
    if (w := a) > 1:
        return not w, *b, {**c}
    return (yield a)
'''


@functools.cache
def _trees() -> list[cst.CSTNode]:
    """The trees the checks walk: made at the first test that needs them, not when the module is collected (every
    xdist worker collects every module: 1.6 CPU s each)."""
    trees: list[cst.CSTNode] = [cst.parse_module(EXTRA)]
    for fn in _functions():
        trees.append(cst.parse_module(textwrap.dedent(inspect.getsource(fn))))
        try:
            program = getattr(srcjax.compile(fn), "program", None)  # (None: a *args function, one per count)
        except srcjax.TranspileError:
            continue
        if program is not None:
            trees.extend(nf.fdef for nf in program.functions.values())
    return trees



@pytest.mark.parametrize("skip_targets", [False, True])
def test_names_in_matches_the_visitor(skip_targets):
    checked = 0
    for tree in _trees():
        nodes = [tree, *N.walk(tree)]
        for node in nodes:
            assert N.names_in(node, skip_targets=skip_targets) == _visitor_names(node, skip_targets=skip_targets)
            checked += 1
    assert checked > 10000


def test_children_match_libcst():
    for tree in _trees():
        for node in N.walk(tree):
            assert N.children(node) == list(node.children)
            code = [c for c in node.children if N.names_in(c) or isinstance(c, (cst.BaseStatement, cst.BaseSmallStatement))]
            assert [c for c in N.syntax_children(node) if c in code] == code


def test_names_in_derivatives():
    for fn in (ad_programs.mlp_loss, ad_programs.rosenbrock, ad_programs.branchy):
        text = srcjax.source(srcjax.grad(fn))
        tree = cst.parse_module(text)
        for node in N.walk(tree):
            for skip in (False, True):
                assert N.names_in(node, skip_targets=skip) == _visitor_names(node, skip_targets=skip)


def test_visitor_visits_like_libcst():
    """``Visitor`` calls visit_/leave_ hooks on code nodes in the order ``CSTVisitor`` does."""
    kinds = ("Name", "Attribute", "Call", "Arg", "SimpleStatementLine", "FunctionDef", "CompFor", "For", "If",
             "AssignTarget", "Subscript", "BinaryOperation", "IfExp", "Lambda", "Param")

    def recorder(base):
        log: list[tuple[str, int]] = []
        ns = {}
        for k in kinds:
            ns[f"visit_{k}"] = lambda self, n, k=k: log.append(("visit", id(n))) or (k != "Lambda")
            ns[f"leave_{k}"] = lambda self, n, k=k: log.append(("leave", id(n)))
        return type("R", (base,), ns), log

    for tree in _trees():
        ours, log1 = recorder(N.Visitor)
        ours().walk(tree)
        theirs, log2 = recorder(cst.CSTVisitor)
        tree.visit(theirs())
        assert log1 == log2


def test_positions_match_the_metadata_wrapper():
    from libcst.metadata import MetadataWrapper, PositionProvider

    from srcjax.frontend.read import _WHITESPACE, _positions

    for text in (EXTRA, EXTRA.replace("\n", "\r\n"), inspect.getsource(ad_programs), inspect.getsource(corpus_programs)):
        module = cst.parse_module(text)
        want = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        assert _positions(module) == {n: (r.start.line, r.start.column, r.end.line, r.end.column)
                                      for n, r in want.items()  # (kept as tuples: cheaper to make)
                                      if type(n) not in _WHITESPACE}  # (whitespace and comments: not recorded)


def test_renamed_matches_rename_names():
    mod = cst.Module(body=[])
    for tree in _trees():
        for node in N.walk(tree):
            if not isinstance(node, (cst.BaseStatement, cst.BaseSmallStatement, cst.Call)):
                continue
            found = N.names_in(node)
            mapping = {n: cst.parse_expression(f"({n} + 1)") for n in found[::2]}
            mapping.update({n: cst.Name(n + "_r") for n in found[1::2]})
            try:
                theirs = mod.code_for_node(node.visit(N.RenameNames(mapping)))
            except cst.CSTValidationError:  # an expression where only a name may stand (``except E as n``)
                continue
            ours = N.renamed(node, mapping)
            assert mod.code_for_node(ours) == theirs
            if not mapping:
                assert ours is node


def test_names_read_matches_names_in():
    """``names_read`` (Python's parser) gives the names ``names_in(..., skip_targets=True)`` gives."""
    texts = [EXTRA, "import a.b as c, d\nfrom e.f import g\nglobal h\nclass K(L):\n    m: M = n\n",
             "try:\n    pass\nexcept E as err:\n    lam = lambda p, *q, r=s, **t: (p, q)\n"]
    texts += [textwrap.dedent(inspect.getsource(fn)) for fn in _functions()]
    texts += [srcjax.source(srcjax.grad(fn)) for fn in (ad_programs.mlp_loss, ad_programs.rosenbrock,
                                                        ad_programs.branchy, ad_programs.long_loop)]
    for text in texts:
        assert N.names_read(text) == set(N.names_in(cst.parse_module(text), skip_targets=True)), text


def test_code_matches_code_for_node():
    mod = cst.Module(body=[])
    for tree in _trees():
        for node in N.walk(tree):
            try:
                theirs = mod.code_for_node(node)
            except CSTCodegenError:  # needs its parent (an annotation's default indicator)
                continue
            assert N.code(node) == theirs


def test_field_order_from_code_is_the_order_of_libcsts_source():
    """names._fields_of reads libcst's visit order from the string constants of each node type's
    ``_visit_and_replace_children`` (no ``inspect.getsource`` per type in a new process): the same order
    as reading its source, for every node type of the installed libcst."""
    import dataclasses

    from srcjax.frontend import names

    checked = 0
    for cls in names.NODE_CLASSES:
        try:
            dataclasses.fields(cls)
        except TypeError:  # (not a dataclass: an abstract base)
            continue
        assert names._fields_of(cls) == names._fields_from_source(cls), cls
        checked += 1
    assert checked > 100


def _preorder(node):
    out = [node]
    for c in N.syntax_children(node):
        out.extend(_preorder(c))
    return out


def test_walk_is_the_preorder_of_syntax_children():
    """``walk`` (fields read by one getter a node class) visits what a recursion over ``syntax_children`` does."""
    for tree in _trees()[:40]:
        got, want = list(N.walk(tree)), _preorder(tree)
        assert len(got) == len(want) and all(a is b for a, b in zip(got, want))


def test_body_bindings():
    """One walk of a body answers the closure passes' questions: values bound by `=`, names bound otherwise,
    nested defs by name (in order)."""
    fdef = cst.parse_module(textwrap.dedent("""
        def f(x):
            g = lambda t: t * x
            h = lambda t: t
            h = lambda t: t + 1
            k = lambda t: t
            k += 1
            for i in range(3):
                def inner(v):
                    return v
            def inner(v):
                return v + 1
            return [j for j in x]
        """)).body[0]
    b = N.body_bindings(fdef.body)
    assert b is N.body_bindings(fdef.body)
    assert [type(v).__name__ for v in b.values["g"]] == ["Lambda"] and len(b.values["h"]) == 2
    assert {"k", "i", "j"} <= b.rebound and "g" not in b.rebound and "h" not in b.rebound
    assert [N.code(d.body) for d in b.defs["inner"]] == [N.code(d.body) for d in N.walk(fdef.body)
                                                          if isinstance(d, cst.FunctionDef)]
    assert len(b.defs["inner"]) == 2 and "f" not in b.defs
