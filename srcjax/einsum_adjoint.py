"""The einsum helpers of derivative code that need nothing from :mod:`srcjax.adjoint`: the operands'
subscripts and the tangent (one einsum per operand). They are :mod:`srcjax.adjoint` helpers in every
respect, kept in their own file for the line budget (as :mod:`srcjax.complex_adjoint`): their
``__module__`` is ``srcjax.adjoint`` (set at the bottom). The cotangents (``einsum_bars``) stay in
:mod:`srcjax.adjoint`, which they share ``unbroadcast`` with.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_EINSUM_SPARE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def einsum_terms(subscripts: Any, shapes: Any) -> tuple[list[str], str]:
    """(subscripts of each operand, output subscripts) of an einsum, with ``...`` spelled out
    as spare letters and an implicit output made explicit (NumPy's rules). Static."""
    s = subscripts.replace(" ", "")
    ins, arrow, out = s.partition("->")
    terms = ins.split(",")
    n_ell = max([len(sh) - len(t) + 3 for t, sh in zip(terms, shapes) if "..." in t] + [0])
    ell = "".join([c for c in _EINSUM_SPARE if c not in s])[:n_ell]
    letters = [t.replace("...", ell[len(ell) - (len(sh) - len(t) + 3):]) if "..." in t else t
               for t, sh in zip(terms, shapes)]
    if not arrow:
        seen = "".join(letters)
        out = ell + "".join(sorted([c for c in seen if seen.count(c) == 1 and c not in ell]))
    elif "..." in out:
        out = out.replace("...", ell)
    return letters, out


def einsum_jvp(subscripts: Any, operands: Any, tangents: Any) -> Any:
    """The tangent of ``np.einsum(subscripts, *operands)``: one einsum per operand (product rule)."""
    if len(operands) == 1:
        (ta,) = tangents
        return np.einsum(subscripts, ta)
    if len(operands) == 2:
        a, b = operands
        ta, tb = tangents
        return np.einsum(subscripts, ta, b) + np.einsum(subscripts, a, tb)
    if len(operands) == 3:
        a, b, c = operands
        ta, tb, tc = tangents
        return np.einsum(subscripts, ta, b, c) + np.einsum(subscripts, a, tb, c) + np.einsum(subscripts, a, b, tc)
    if len(operands) == 4:
        a, b, c, d = operands
        ta, tb, tc, td = tangents
        return (np.einsum(subscripts, ta, b, c, d) + np.einsum(subscripts, a, tb, c, d)
                + np.einsum(subscripts, a, b, tc, d) + np.einsum(subscripts, a, b, c, td))
    raise NotImplementedError("einsum derivatives support at most 4 operands")


EINSUM_HELPERS = ("einsum_terms", "einsum_jvp")
for _name in EINSUM_HELPERS:
    globals()[_name].__module__ = "srcjax.adjoint"
