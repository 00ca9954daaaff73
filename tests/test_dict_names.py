"""The one answer to "does this name hold a dict" (srcjax/frontend/dict_names.py), which dict merges, binding times
and vmap read (three implementations before: ``dict_merges._dict_names``, ``BindingTimes._dict_names`` and
``batch_dict_keys.shown_dict``, each seeing part of the evidence)."""

from __future__ import annotations

import libcst as cst

from srcjax.frontend.dict_names import dict_names


def _names(text: str, **kw: object) -> set[str]:
    fdef = cst.parse_module(text).body[0]
    assert isinstance(fdef, cst.FunctionDef)
    return dict_names(fdef.body.body, **kw)  # type: ignore[arg-type]


def test_every_kind_of_evidence() -> None:
    text = """
def f(p, q, r, s, x):
    a = {"w": x}
    b = {k: v for k, v in p.items()}
    c = dict(w=x)
    d, e = {}, {}
    m = a | q
    n = m
    y = r["w"] + x
    for v in s.values():
        y = y + v
    z = x[0] + x.sum()
    return y
"""
    assert _names(text) == {"a", "b", "c", "d", "e", "m", "n", "p", "r", "s"}


def test_nested_scopes_keep_their_own_names() -> None:
    text = """
def f(a, b, x):
    g = lambda a: a["w"]
    h = [b["k"] for b in x]
    def inner(c):
        c = {}
        return c
    return g(a) + h[0]
"""
    assert _names(text) == set()


def test_a_callee_that_is_not_the_builtin_dict() -> None:
    text = """
def f(x):
    d = dict(x)
    return d
"""
    assert _names(text) == {"d"}
    assert _names(text, is_dict=lambda f: False) == set()
