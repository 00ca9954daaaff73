"""``sorted(d.items(), key=lambda kv: kv[0])`` is ``sorted(d.items())``: a dict's keys are unique, so its pairs
compare by their keys alone (never by their values), in the same order. (``reverse=True`` is left alone: write
``for k, v in reversed(sorted(d.items()))``, whose ``sorted`` ANF names first and puts back.) jit ran it
already (the lambda ran while specializing); derivatives refused the lambda ("cannot differentiate through the
nested function `lambda_fn`") and vmap the call; ``for k, v in sorted(d.items())`` they follow.

Other keys stay lambdas (jit runs them; derivatives and vmap refuse them at the call): a decorate-sort-undecorate
rewrite would pass the items (arrays of a list) through ``sorted`` or ``list(xs)[i]`` in a comprehension, where
reverse mode does not follow derivatives yet.
"""

from __future__ import annotations

from typing import Any

import libcst as cst


def _key_lambda(node: cst.Call) -> tuple[cst.Lambda, bool] | None:
    """The call's ``key=`` lambda of one plain parameter and its ``reverse=`` (a literal), or None."""
    if not (isinstance(node.func, cst.Name) and node.func.value == "sorted") or len(node.args) < 2 \
            or node.args[0].keyword is not None or node.args[0].star:
        return None
    kw = {a.keyword.value: a.value for a in node.args[1:] if a.keyword is not None}
    if len(kw) != len(node.args) - 1 or set(kw) - {"key", "reverse"} or not isinstance(kw.get("key"), cst.Lambda):
        return None
    reverse = kw.get("reverse", cst.Name("False"))
    if not (isinstance(reverse, cst.Name) and reverse.value in ("True", "False")):
        return None
    lam = kw["key"]
    assert isinstance(lam, cst.Lambda)
    p = lam.params
    if len(p.params) != 1 or p.params[0].default is not None or p.posonly_params or p.kwonly_params \
            or isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None:
        return None
    return lam, reverse.value == "True"


def _first_of(lam: cst.Lambda) -> bool:
    """``lambda kv: kv[0]``."""
    b, name = lam.body, lam.params.params[0].name.value
    if not (isinstance(b, cst.Subscript) and isinstance(b.value, cst.Name) and b.value.value == name
            and len(b.slice) == 1 and isinstance(b.slice[0].slice, cst.Index)):
        return False
    idx = b.slice[0].slice.value
    return isinstance(idx, cst.Integer) and idx.value == "0"


def _items_call(e: cst.BaseExpression) -> bool:
    return isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "items" \
        and not e.args


def rewrite(node: cst.Call, positions: dict[cst.CSTNode, Any]) -> cst.BaseExpression:
    """``node`` with its ``key=`` lambda written out (see the module's docstring), or ``node``; ``positions``:
    the source's, where the new call takes the user's."""
    found = _key_lambda(node)
    if found is None:
        return node
    lam, reverse = found
    seq = node.args[0].value
    if reverse or not (_items_call(seq) and _first_of(lam)):
        return node
    out = node.with_changes(args=[cst.Arg(seq)])
    if node in positions:
        positions[out] = positions[node]
    return out
