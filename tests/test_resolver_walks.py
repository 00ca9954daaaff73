"""The resolver's walks over a function (frontend/resolve.py): ``local_names`` and ``reserve_helpers`` as loops
over a stack of the code nodes find what the ``Visitor`` walks they replace found.

Every function normalized while a sample of the golden corpora is written (the user's and those srcjax wrote) is
read again by the ``Visitor`` walks kept here as the reference: the same local names; and ``reserve_helpers`` asks
the same questions in the same order (each name looked up, each name chain's static value) and reserves the same
values in the same order (a helper's name is given in the order met: ``cube``, ``cube_1``). The default tier reads
a fixed sample; the thorough tier reads them all.
"""

from __future__ import annotations

import zlib
from typing import Any

import libcst as cst
import numpy as np
import pytest

from srcjax.core import UnknownFunctionError
from srcjax.frontend import resolve
from srcjax.frontend.names import Visitor, target_names
from tests.golden import cases, render
from tests.tiers import THOROUGH

_CASES = [c for c in cases() if THOROUGH or zlib.crc32(c[0].encode()) % 40 == 11]


def _local_names(fdef: cst.FunctionDef) -> set[str]:
    """``local_names`` as a ``Visitor`` walk (before the stack loop)."""
    names: set[str] = set()
    p = fdef.params
    for prm in list(p.params) + list(p.posonly_params) + list(p.kwonly_params):
        names.add(prm.name.value)
    if isinstance(p.star_arg, cst.Param):
        names.add(p.star_arg.name.value)
    if p.star_kwarg is not None:
        names.add(p.star_kwarg.name.value)
    _LocalNames(fdef, names).walk(fdef)
    return names


class _LocalNames(Visitor):
    def __init__(self, fdef: cst.FunctionDef, names: set[str]) -> None:
        self.fdef, self.names = fdef, names

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.names.update(target_names(node.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.names.update(target_names(node.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.names.update(target_names(node.target))

    def visit_For(self, node: cst.For) -> None:
        self.names.update(target_names(node.target))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node is not self.fdef:
            self.names.add(node.name.value)
            self.names.update(_local_names(node))
        return node is self.fdef

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.names.update(prm.name.value for prm in node.params.params)


class _ReserveHelpers(Visitor):
    """``reserve_helpers`` as a ``Visitor`` walk (before the stack loop; the names looked up after the walk, those a
    comprehension's ``for`` binds left out)."""

    def __init__(self, norm: Any) -> None:
        self.norm = norm
        self.seen: set[str] = set()
        self.met: list[tuple[str | None, Any]] = []
        self.comp: set[str] = set()

    def reserve(self, body: cst.CSTNode) -> None:
        self.walk(body)
        for name, v in self.met:
            if name is None:
                self.norm._reserve(v)
            elif name not in self.comp:
                found, v = self.norm.lookup(name)
                if found:
                    self.norm._reserve(v)

    def visit_Name(self, n: cst.Name) -> None:
        if n.value in self.seen:
            return
        self.seen.add(n.value)
        if n.value in self.norm.bindings:
            self.met.append((None, self.norm.bindings[n.value]))
        elif n.value not in self.norm.locals:
            self.met.append((n.value, None))

    def visit_CompFor(self, n: cst.CompFor) -> None:
        self.comp.update(target_names(n.target))

    def visit_Attribute(self, n: cst.Attribute) -> bool:
        try:
            ok, v = self.norm.static_value(n)
        except UnknownFunctionError:
            ok = False
        if ok:
            self.met.append((None, v))
            return False
        self.walk(n.value)
        return False

    def visit_Arg(self, n: cst.Arg) -> bool:
        self.walk(n.value)
        return False


def _questions(norm: Any, reserve: Any) -> list[tuple[str, Any]]:
    """What ``reserve(norm)`` asks and reserves, in order (nothing reserved for real)."""
    asked: list[tuple[str, Any]] = []
    lookup, static_value = norm.lookup, norm.static_value

    def looked_up(name: str) -> Any:
        asked.append(("lookup", name))
        return lookup(name)

    def static(node: Any) -> Any:
        asked.append(("static", id(node)))
        return static_value(node)

    norm.lookup, norm.static_value = looked_up, static
    norm._reserve = lambda v: asked.append(("reserve", id(v)))
    norm._static.clear()  # (static values are remembered per node: each walk asks afresh)
    try:
        reserve(norm)
    finally:
        del norm.lookup, norm.static_value, norm._reserve
    return asked


@pytest.mark.parametrize("name,fn,transform", _CASES, ids=[c[0] for c in _CASES])
def test_the_resolver_s_walks_find_what_the_visitor_walks_found(name, fn, transform, monkeypatch) -> None:
    reserve_helpers = resolve.Resolver.reserve_helpers

    def checked(self: Any, fdef: cst.FunctionDef) -> None:
        assert resolve.local_names(fdef) == _local_names(fdef), fdef.name.value
        got = _questions(self, lambda norm: reserve_helpers(norm, fdef))
        assert got == _questions(self, lambda norm: _ReserveHelpers(norm).reserve(fdef.body)), fdef.name.value
        reserve_helpers(self, fdef)

    monkeypatch.setattr(resolve.Resolver, "reserve_helpers", checked)
    render(fn, transform)


def test_a_nested_def_s_locals_and_a_lambda_s_parameters_are_local() -> None:
    fdef = cst.ensure_type(cst.parse_module(
        "def f(a, *b, c, **d):\n"
        "    e, (g, *h) = a\n"
        "    i: int = 1\n"
        "    j += 1\n"
        "    for k in b:\n"
        "        pass\n"
        "    def m(n):\n"
        "        o = n\n"
        "        return o\n"
        "    p = lambda q, r: q + r\n"
        "    return [s for s in a]\n").body[0], cst.FunctionDef)
    want = {"a", "b", "c", "d", "e", "g", "h", "i", "j", "k", "m", "n", "o", "p", "q", "r"}
    assert resolve.local_names(fdef) == _local_names(fdef) == want


def k(x):
    return x * 100.0


def _comprehension_k(x):
    return np.sum(np.stack([x * k for k in range(3)])) + sum(np.sin(x * k) for k in range(2))


def test_a_comprehension_s_variable_is_not_a_module_function_of_its_name() -> None:
    """``[x * k for k in range(3)]`` in a module with a function ``k``: the comprehension's ``k`` (the printed
    source showed ``def k`` as a helper, for every transformation)."""
    import srcjax

    x = np.array([0.5, 2.0])
    for t in (srcjax.jit, srcjax.grad, srcjax.vmap):
        text = srcjax.source(t(_comprehension_k))
        assert "def k(" not in text and "mul = x * 100.0" not in text, text
    np.testing.assert_allclose(np.asarray(srcjax.jit(_comprehension_k)(x)), _comprehension_k(x), rtol=1e-12)
