"""Buffer donation (``donate_argnums``/``donate_argnames``, JAX's semantics; issue #18).

A donated argument's device buffer may be reused for a result of the same shape and dtype: the
compiled module says so with ``tf.aliasing_output = k`` on ``@main``'s argument (XLA's
input/output aliasing), and PJRT then hands the input buffer to the output instead of allocating
one. The donated :class:`srcjax.Array` is deleted by that call; reading it or passing it again is
an :class:`srcjax.ArgumentError` (``runtime/xla.py``). A donated leaf with no result of its shape
and dtype is left alone, as in JAX; NumPy inputs are uploaded afresh each call, so donating them
changes nothing the caller sees. A NumPy view of the array (``np.asarray(a)`` before the call)
keeps XLA from taking the buffer: then it copies, and the array stays valid.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .core import ArgumentError, ShapedArray

__all__ = ["donated_names", "donated_leaves", "alias_text"]


def donated_names(params: Sequence[str], argnums: int | Sequence[int], argnames: str | Iterable[str],
                  fname: str) -> frozenset[str]:
    """The parameters ``donate_argnums``/``donate_argnames`` name (errors as for static ones)."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    names = (argnames,) if isinstance(argnames, str) else tuple(argnames)
    bad = [i for i in nums if not -len(params) <= i < len(params)]
    if bad:
        raise ArgumentError(f"donate_argnums {tuple(bad)} out of range for {fname} with {len(params)} parameters")
    for n in names:
        if n not in params:
            raise ArgumentError(f"donate_argnames: {fname} has no parameter {n!r}")
    return frozenset({params[i] for i in nums} | set(names))


def donated_leaves(params: Sequence[str], values: Sequence[Any], donate: frozenset[str], static: frozenset[str],
                   n_leaves: int, count: Callable[[Any], int]) -> list[int]:
    """Positions, among a call's ``n_leaves`` dynamic leaves (in parameter order), of the donated
    parameters' leaves; ``count(v)`` is how many dynamic leaves an argument has. By position only,
    so one program serves every call of its signature."""
    out: list[int] = []
    k = 0
    for name, v in zip(params, values):
        if name in static:
            continue
        n = count(v)
        if name in donate:
            out += range(k, k + n)
        k += n
    return out if k == n_leaves else []


_TYPE = r"tensor<(?:[^<>]|<[^<>]*>)*>"


def alias_text(text: str, donated: Sequence[int], in_avals: Sequence[ShapedArray],
               out_avals: Sequence[ShapedArray]) -> str:
    """``text`` with each donated argument of ``@main`` aliased to the first unused result of its
    shape and dtype (``{tf.aliasing_output = k : i32}``); unchanged where none matches."""
    used: set[int] = set()
    pairs = []
    for i in donated:
        a = in_avals[i]
        for k, o in enumerate(out_avals):
            if k not in used and o.shape == a.shape and o.dtype == a.dtype:
                used.add(k)
                pairs.append((i, k))
                break
    if not pairs:
        return text
    start = text.index("func.func public @main(")
    end = text.index("\n", start)
    sig = text[start:end]
    for i, k in pairs:
        sig, n = re.subn(rf"(%arg{i}: {_TYPE})(?=[,)])", rf"\1 {{tf.aliasing_output = {k} : i32}}", sig, count=1)
        if n != 1:
            return text  # (an argument with attributes already: a sharded program; not donated)
    return text[:start] + sig + text[end:]
