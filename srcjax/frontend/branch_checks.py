"""Which checks inside a branch on data a generated derivative decides while specializing.

A derivative srcjax wrote may inline a library helper whose Python checks a value's *structure*
(``srcjax.adjoint.first_of``: ``if len(a) != len(b): raise ValueError(...)``) inside an ``if`` on array data.
The binding-time analysis is flow-insensitive: a name bound under an ``if`` on data is DYNAMIC everywhere (after
the ``if`` it is the join of the paths, and derivative code saves such names on its tape), so the check's test
looked like data and :mod:`srcjax.frontend.functionalize` refused the ``raise`` ("a helper of the inner one
checks values inside the branch"). Where the test is read, though, its value is the one the branch just
computed: :func:`decided_raises` follows the definitions that reach each test inside the branch (flow-sensitive,
:meth:`BindingTimes.at`): :func:`decided_here` gives the ``if``\\ s whose test is STATIC there, which stay
Python ``if``\\ s (the lowering decides them while it specializes the branch's function), and the ``raise``\\ s that
only such tests guard (up to the innermost ``if`` on data around them), which the lowering reaches only where
the checks fail. Only in generated functions: a user's ``raise`` there would run whichever branch the data takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from .binding_times import DYNAMIC, STATIC, BindingTimes
from .names import target_names
from .syntax import assigned_in, orelse_stmts

__all__ = ["decided_here"]


def decided_here(bta: BindingTimes, stmts: Sequence[Any]) -> tuple[set[int], set[int]]:
    r"""``id()`` of the ``if``\ s of ``stmts`` (the branches of an ``if`` on data) on a test that is STATIC where it
    is read (its names taken at the definitions inside ``stmts`` that reach it), and of the ``raise`` statements
    under at least one such ``if`` below the innermost ``if`` or ``while`` on data around them, and only such."""
    inside = set(assigned_in(stmts))
    out: set[int] = set()
    tests: set[int] = set()

    def kind(e: cst.CSTNode, env: dict[str, int]) -> int:
        # a name bound in the branch but not on every path to `e` may hold a value from elsewhere: DYNAMIC
        return bta.at(e, {n: env.get(n, DYNAMIC) for n in inside})

    # state: None (no test since the innermost `if`/`while` on data), True (only tests decided here), False
    def block(ss: Sequence[Any], env: dict[str, int], state: bool | None) -> dict[str, int]:
        env = dict(env)
        for s in ss:
            if isinstance(s, cst.SimpleStatementLine):
                for small in s.body:
                    if isinstance(small, cst.Assign):
                        k = kind(small.value, env)
                        env.update((n, k) for t in small.targets for n in target_names(t.target))
                    elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                        env.update((n, DYNAMIC) for n in target_names(small.target))
                    elif isinstance(small, cst.Raise) and state:
                        out.add(id(small))
            elif isinstance(s, cst.If):
                t = kind(s.test, env)
                if t == STATIC:
                    tests.add(id(s))
                data = t != STATIC and bta.of(s.test) == DYNAMIC  # (a `cond`: both branches specialized)
                inner = state is not False if t == STATIC else None if data else False
                a = block(s.body.body, env, inner)
                b = block(orelse_stmts(s), env, inner)
                # (a `cond`'s outputs are joined, two Python values into an array unless they are the same:
                # `skip = False`, then `if lt: skip = True` on data, is data after it)
                bound = set(assigned_in([s])) if data else set()
                env = {n: DYNAMIC if n in bound else max(a.get(n, DYNAMIC), b.get(n, DYNAMIC))
                       for n in set(a) | set(b)}
            elif isinstance(s, (cst.For, cst.While)):
                body = list(s.body.body)
                looped = assigned_in(body) + (target_names(s.target) if isinstance(s, cst.For) else [])
                env.update((n, DYNAMIC) for n in looped)
                on_data = isinstance(s, cst.While) and kind(s.test, env) != STATIC
                block(body, env, None if on_data else state)
            elif isinstance(s, cst.FunctionDef):
                env[s.name.value] = DYNAMIC
        return env

    block(stmts, {}, None)
    return tests, out
