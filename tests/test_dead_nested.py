"""``transforms/dead_nested.py`` (run at the end of :mod:`srcjax.transforms.simplify`): dead statements in nested
functions and in loops' and branches' blocks, unread nested ``def``\\ s and stores bound again before any read are
deleted; what a closure, a later read, a tape or a decorator may need is kept. Then a vmapped bisection (a
``while`` on data: its batched step held ``hi_3_2 = taken(hi_3, gt_2)`` never read) against jax."""

from __future__ import annotations

import ast
import textwrap
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from srcjax.adjoint import __all__ as adjoint_names
from srcjax.transforms import dead_nested, simplify
from srcjax.transforms.dead_nested import drop_dead_nested
from tests.golden import cases, render
from tests.tiers import THOROUGH

jax.config.update("jax_enable_x64", True)

PURE = frozenset(adjoint_names)


def _pass(text: str) -> str:
    return drop_dead_nested(textwrap.dedent(text), PURE)


def test_unread_and_overwritten_stores_of_nested_functions_go():
    got = _pass("""
        def f(x, c):
            def step(carry):
                hi = carry * 2.0
                lo_2 = taken(hi, c)
                hi_2 = taken(hi, c)
                hi_2 = hi + 1.0
                _i_1 = x
                return hi_2
            return srcjax.lax.while_loop(cond, step, x)
        """)
    assert "lo_2" not in got and "hi_2 = taken(hi, c)" not in got and "_i_1" not in got, got
    assert "hi_2 = hi + 1.0" in got and "hi = carry * 2.0" in got


def test_an_in_place_check_in_a_nested_function_stays():
    """(session 44) ``in_place(x, new, alias=)`` refuses while specializing (frontend/item_views.py), and
    ``in_place(x, new)`` where ``new`` does not fit ``x`` (NumPy's error): an unread or overwritten one in a loop's
    body is not dead (no shapes are known here; tests/test_simplify.py: the top-level twin)."""
    got = _pass("""
        def f(x, c):
            def step(carry):
                r = carry[0]
                add = r + 1.0
                r = in_place(r, add, alias="carry[0]")
                s = in_place(r, add)
                r = carry * 2.0
                return r
            return srcjax.lax.while_loop(cond, step, x)
        """)
    assert 'r = in_place(r, add, alias="carry[0]")' in got and "s = in_place(r, add)" in got, got


def test_what_may_be_read_stays():
    text = """
        def f(x, c):
            _tape = []
            t = x * 2.0
            def g():
                return t
            y = g()
            t = x * 3.0
            if c:
                u = np.sin(x)
            else:
                u = x
            @register
            def h():
                return x
            v = helper(x)
            return y + t + u
        """
    got = _pass(text)
    assert got == textwrap.dedent(text), got  # (a closure reads t; u is read after the branch; a decorator; a call)


def test_an_unread_nested_def_goes_and_a_block_keeps_a_statement():
    got = _pass("""
        def f(x):
            def vjp_fun(ct):
                return ct * x
            for i in range(3):
                w = np.sin(x)
            return x
        """)
    assert "vjp_fun" not in got and "w = np.sin(x)" in got, got


def bisection_root(c):
    lo, hi = -10.0 + 0.0 * c, 10.0 + 0.0 * c
    while hi - lo > 1e-6:
        mid = 0.5 * (lo + hi)
        if mid ** 3 + mid - c > 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def bisection_root_jax(c):
    def cond(s):
        return s[1] - s[0] > 1e-6

    def body(s):
        lo, hi = s
        mid = 0.5 * (lo + hi)
        up = mid ** 3 + mid - c > 0
        return jnp.where(up, lo, mid), jnp.where(up, mid, hi)

    lo, hi = jax.lax.while_loop(cond, body, (-10.0 + 0.0 * c, 10.0 + 0.0 * c))
    return 0.5 * (lo + hi)


def test_a_vmapped_bisection_reads_without_dead_lines_and_agrees_with_jax():
    c = np.array([0.5, 2.0, -3.0, 30.0])
    vf = srcjax.vmap(bisection_root)
    np.testing.assert_allclose(np.asarray(vf(c)), jax.vmap(bisection_root_jax)(c), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.compile(vf, device="numpy")(c)), jax.vmap(bisection_root_jax)(c),
                               rtol=1e-12)
    text = srcjax.source(vf)
    assert "taken(hi_3, gt_2)\n" not in text and "= taken(lo_3, gt_2, False)\n" not in text, text


def _analysis_deletes(text: str) -> list[tuple[int, int]]:
    """What the full analysis (``_function``) would delete in the straight-line module-level functions of
    ``text`` that :func:`~srcjax.transforms.dead_nested._nothing_dead` lets through (with no name fixed by a
    ``global``: it deletes at least as much as with some)."""
    tree = ast.parse(text)
    spans: list[tuple[int, int]] = []
    for top in tree.body:
        if isinstance(top, ast.FunctionDef) and dead_nested._nothing_dead(top):
            dead_nested._function(top, False, set(), PURE, set(), spans, text.splitlines(keepends=True),
                                  dead_nested._Loads(top))
    return spans


def test_a_rebinding_read_first_skips_the_analysis_and_one_unread_does_not():
    chain = textwrap.dedent("""
        def f(x):
            x_bar = zeros_like(x)
            x_bar = index_add(x_bar, np.s_[1:], x)
            t = x * 2.0
            t += x
            t = x * 3.0
            y, t = t, x
            return x_bar, y
        """)
    assert dead_nested._nothing_dead(ast.parse(chain).body[0]) and _pass(chain) == chain
    for dead, live in (("t = x * 2.0", "t = x * 3.0"), ("t = x * 2.0", "t, u = x, x")):
        text = textwrap.dedent(f"""
            def f(x):
                {dead}
                y = np.sin(x)
                {live}
                return t + y
            """)
        assert not dead_nested._nothing_dead(ast.parse(text).body[0]), text
    got = _pass("""
        def f(x):
            t = x * 2.0
            y = np.sin(x)
            t = x * 3.0
            return t + y
        """)
    assert "t = x * 2.0" not in got and "t = x * 3.0" in got, got


_SAMPLE = [c for c in cases() if THOROUGH or zlib.crc32(c[0].encode()) % 40 == 11]


@pytest.mark.parametrize("name,fn,transform", _SAMPLE, ids=[c[0] for c in _SAMPLE])
def test_functions_let_through_have_nothing_dead(name, fn, transform, monkeypatch) -> None:
    """Every module the simplifier hands to this pass while a sample of the golden corpora is written (all of
    them in the thorough tier): where the scan of a module-level function finds nothing to delete, the full
    analysis deletes nothing either."""
    texts: list[str] = []
    original = simplify.drop_dead_nested

    def recorded(text: str, pure_calls: frozenset[str]) -> str:
        texts.append(text)
        return original(text, pure_calls)

    monkeypatch.setattr(simplify, "drop_dead_nested", recorded)
    render(fn, transform)
    for text in texts:
        assert _analysis_deletes(text) == [], text
