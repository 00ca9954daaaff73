"""Resolver.reserve_helpers reads a built tree's names and attributes as its builder met them (issue #15).

A function's tree built from ``ast`` (``cst_functions``: the text srcjax writes, and the user's straight-line
functions) carries its body's variables and attributes in the tree's order (``BuiltNames.refs``); reserving the
helpers it names reads them instead of walking the tree. Every function normalized while a sample of the golden
corpora is written (the thorough tier: all of them) meets the same names and values, in the same order, both ways.
The names every assignment of which makes a list (``numpy_calls.list_names``) are found without a walk where a built
tree makes no list at all: the same set as the walk's, for the same functions.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest

from srcjax.frontend import numpy_calls, resolve
from srcjax.frontend.normalize import Normalizer
from srcjax.frontend.read import read_function
from tests.golden import cases, render
from tests.tiers import THOROUGH

_CASES = [c for c in cases() if THOROUGH or zlib.crc32(c[0].encode()) % 40 == 11]


def _key(met: list[tuple[Any, Any]]) -> list[tuple[Any, int]]:
    return [(name, id(v)) for name, v in met]


def _both(norm: Any, fdef: Any) -> tuple[Any, Any] | None:
    refs = norm.src.built_refs(fdef)
    if refs is None:
        return None
    walked, comp = norm._met_by_walk(fdef)
    assert not comp  # (no comprehension in a built tree)
    return _key(norm._met_in(refs)), _key(walked)


@pytest.mark.parametrize("name,fn,transform", _CASES, ids=[c[0] for c in _CASES])
def test_the_names_met_are_the_walk_s(name, fn, transform, monkeypatch) -> None:
    original = resolve.Resolver.reserve_helpers

    def checked(self: Any, fdef: Any) -> None:
        both = _both(self, fdef)
        if both is not None:
            assert both[0] == both[1], f"{self.src.name} of {name}"
        original(self, fdef)

    lists = numpy_calls.list_names

    def listed(norm: Any) -> set[str]:
        found = lists(norm)
        assert found == numpy_calls.list_names_in(norm.src.fdef.body), f"{norm.src.name} of {name}"
        return found

    monkeypatch.setattr(resolve.Resolver, "reserve_helpers", checked)
    monkeypatch.setattr(numpy_calls, "list_names", listed)
    render(fn, transform)


def _lists(a, b):
    c = [a, b]
    d = list(c)
    return np.stack(c) + np.stack(d) + a


def _no_lists(a, b):
    c = a[1:] * b[:-1]
    return np.sum(c) + a.shape[0]


def test_list_names_of_built_trees() -> None:
    for f, want in ((_lists, {"c", "d"}), (_no_lists, set())):
        src = read_function(f)
        assert src.built_names() is not None
        norm = Normalizer(src, lambda fn, avoid=(): fn.__name__)
        assert numpy_calls.list_names(norm) == want == numpy_calls.list_names_in(src.fdef.body)


def helper_f(v: Any) -> Any:
    return v * 2.0


def helper_g(v: Any) -> Any:
    return v.shape[0]


def helper_h(v: Any) -> Any:
    return v + 1.0


def _sample(x, y):
    a = np.sum(x) if y.shape[0] > helper_g(x) else helper_f(y).T
    b = np.linalg.norm(helper_h(x).T, axis=None) + x.T.shape[0]

    def inner(z, k=helper_h):
        return k(z) + np.tanh(helper_f(z))
    c = inner(a, k=helper_g) if True else None
    return a + b + c


def test_a_built_tree_is_not_walked(monkeypatch) -> None:
    """The tree of ``_sample`` is built from ``ast`` (a conditional expression, attribute chains with and without a
    static value, a nested def with a default): its refs meet what the walk meets, and reserving reads them."""
    src = read_function(_sample)
    assert src.built_refs(src.fdef) is not None
    norm = Normalizer(src, lambda fn, avoid=(): fn.__name__)
    both = _both(norm, src.fdef)
    assert both is not None and both[0] == both[1]
    met = norm._met_in(src.built_refs(src.fdef))  # type: ignore[arg-type]
    assert [n if n is not None else v for n, v in met] == [
        np.sum, "helper_g", "helper_f", np.linalg.norm, "helper_h", "None", np.tanh, "True"]

    def walked(self: Any, fdef: Any) -> Any:
        raise AssertionError("walked a built tree")

    monkeypatch.setattr(resolve.Resolver, "_met_by_walk", walked)
    Normalizer(src, lambda fn, avoid=(): fn.__name__).reserve_helpers(src.fdef)


def _walked(body: Any) -> list[Any]:
    """The names and attributes the reserving walk meets in ``body`` when no attribute has a static value (it goes
    into every attribute's value), in its order; less a nested def's name and its parameters' (names the function
    binds: never reserved, and not in refs)."""
    import libcst as cst

    from srcjax.frontend.names import NODE_CLASSES, REVERSED_GETTERS, reversed_getter

    out: list[Any] = []
    stack: list[Any] = [body]
    while stack:
        n = stack.pop()
        t = n.__class__
        if t is cst.Name:
            out.append(n)
            continue
        if t is cst.FunctionDef:
            stack += [n.body, n.params]
            continue
        if t is cst.Param:
            if n.default is not None:
                stack.append(n.default)
            continue
        if t is cst.Attribute or t is cst.Arg:
            if t is cst.Attribute:
                out.append(n)
            stack.append(n.value)
            continue
        getter, single = REVERSED_GETTERS[t] if t in REVERSED_GETTERS else reversed_getter(t)
        got = getter(n)
        for c in (got,) if single else got:
            if c.__class__ in NODE_CLASSES:
                stack.append(c)
            elif c.__class__ is tuple or c.__class__ is list:
                stack.extend(x for x in c[::-1] if x.__class__ in NODE_CLASSES)
    return out


def test_refs_are_the_walk_s_nodes_in_its_order() -> None:
    """For every text the builder builds (tests/test_cst_expressions.py's corpora), the refs are the nodes the walk
    meets, in its order, each attribute's ``k`` just after the names and attributes of its value."""
    import libcst as cst

    from srcjax.frontend.cst_functions import function_module
    from srcjax.frontend.read import _positions, parse_module
    from tests.test_cst_expressions import COMPOUND, CORPUS, FORMS, FUNCTIONS

    texts = FUNCTIONS + COMPOUND
    for e in CORPUS + FORMS:
        texts += [f"def f(a, b):\n    y = {e}\n    return y\n", f"def f(x):\n    x += {e}\n    assert {e}, 'm'\n"]
    built = 0
    for text in texts:
        try:
            module, _, names = function_module(text, parse_module, _positions)
        except cst.ParserSyntaxError:
            continue
        if names is None:
            continue
        built += 1
        refs = names.refs
        assert refs is not None
        nodes = [r[0] if r.__class__ is tuple else r for r in refs]
        walked = _walked(module.body[0].body)
        assert [id(n) for n in nodes] == [id(n) for n in walked], text
        for i, r in enumerate(refs):
            if r.__class__ is tuple:
                inside = {id(n) for n in _walked(r[0].value)}
                assert {id(n) for n in nodes[i + 1:r[1]]} == inside and all(id(n) not in inside for n in nodes[r[1]:])
    assert built > 300
