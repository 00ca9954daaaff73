"""Methods of a dict that reads or writes its entries, written as the subscripts derivatives and batching follow:

``d.get(k, default)``    ->  ``d[k] if k in d else default`` (the test decided while specializing: a dict's keys are
                            static), so the derivative flows to ``d[k]``
``d.update(k1=v1, ...)`` ->  ``d["k1"] = v1`` ... (the values computed first, as Python does)
``d.update({k: v, ...})`` -> ``d[k] = v`` ...
``d.update(other)``      ->  ``for key in other: d[key] = other[key]``

Before, ``d.get(...)`` was read as a value that does not depend on ``d`` (a zero derivative, silently) and
``d.update(...)`` as a call reverse mode and batching did not see (wrong derivatives, silently). Only a receiver
that is not a static value is rewritten (``TABLE.get(k)`` of a module-level dict runs while specializing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ..core import UnsupportedSyntaxError
from .names import walk

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["get_call", "lazy_get", "update_statement"]


def _plain_args(call: cst.Call) -> bool:
    return not any(a.star for a in call.args)


def get_call(norm: Normalizer, node: cst.Call) -> cst.BaseExpression | None:
    """``d.get(k[, default])`` as ``d[k] if k in d else default`` (see the module's docstring); None: not such a
    call (or a static receiver)."""
    func = node.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "get") or not _plain_args(node) \
            or not 1 <= len(node.args) <= 2 or any(a.keyword is not None for a in node.args) \
            or norm.static_value(func.value)[0]:
        return None
    recv, key = norm.atom(func.value), norm.atom(node.args[0].value)
    default = node.args[1].value if len(node.args) == 2 else cst.Name("None")
    read = cst.Subscript(value=recv, slice=[cst.SubscriptElement(slice=cst.Index(value=key))])
    test = cst.Comparison(left=key, comparisons=[cst.ComparisonTarget(operator=cst.In(), comparator=recv)])
    out = cst.IfExp(test=test, body=read, orelse=default)
    where = norm.src.positions.get(node)
    if where is not None:
        for n in (out, read, test):
            norm.src.positions[n] = where
    return out


def lazy_get(updated: cst.Call) -> cst.BaseExpression | None:
    """``d.get(k[, default])`` kept nested (a comprehension's element; ``updated``: its parts already rewritten)
    as ``d[k] if k in d else default`` when ``d`` and ``k`` are names or literals (read twice); None otherwise."""
    func = updated.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "get" and isinstance(func.value, cst.Name)) \
            or not _plain_args(updated) or not 1 <= len(updated.args) <= 2 \
            or any(a.keyword is not None for a in updated.args) \
            or not isinstance(updated.args[0].value, (cst.Name, cst.SimpleString, cst.Integer)):
        return None
    recv, key = func.value, updated.args[0].value
    default = updated.args[1].value if len(updated.args) == 2 else cst.Name("None")
    read = cst.Subscript(value=recv, slice=[cst.SubscriptElement(slice=cst.Index(value=key))])
    test = cst.Comparison(left=key, comparisons=[cst.ComparisonTarget(operator=cst.In(), comparator=recv)])
    return cst.IfExp(test=test, body=read, orelse=default)


def update_statement(norm: Normalizer, node: cst.Call) -> bool:
    """``d.update(...)`` as a statement on a local dict ``d``, emitted as assignments of its entries (see the
    module's docstring); False: not such a call (nothing emitted)."""
    func = node.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "update" and isinstance(func.value, cst.Name)) \
            or func.value.value not in norm.locals or not _plain_args(node):
        return False
    _refuse_object_update(norm, node, func.value)
    pos = [a for a in node.args if a.keyword is None]
    if len(pos) > 1 or pos and not (isinstance(pos[0].value, cst.Dict) or len(node.args) == 1):
        return False
    d = func.value
    entries: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []
    if pos and isinstance(pos[0].value, cst.Dict):
        for e in pos[0].value.elements:
            if not isinstance(e, cst.DictElement):
                return False  # (`{**other}`: left as it was)
            entries.append((norm.atom(e.key), norm.atom(e.value)))
    elif pos:  # d.update(other): a loop over other's keys
        other = norm.atom(pos[0].value)
        key = cst.Name(norm.fresh("key"))
        loop = cst.For(target=key, iter=other, body=cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[
            cst.Assign(targets=[cst.AssignTarget(target=_item(d, key))], value=_item(other, key))])]))
        where = norm.src.positions.get(node)
        if where is not None:
            for n in _nodes(loop):
                norm.src.positions[n] = where
        norm.statement(loop)
        return True
    for a in node.args:
        if a.keyword is not None:
            entries.append((cst.SimpleString(repr(a.keyword.value)), norm.atom(a.value)))
    for k, v in entries:
        norm.index_assign(_item(d, k), v, node)
    return True


def _item(d: cst.BaseExpression, key: cst.BaseExpression) -> cst.Subscript:
    return cst.Subscript(value=d, slice=[cst.SubscriptElement(slice=cst.Index(value=key))])


def _nodes(n: cst.CSTNode) -> list[cst.CSTNode]:
    out = [n]
    for c in n.children:
        out.extend(_nodes(c))
    return out


def _refuse_object_update(norm: Normalizer, node: cst.Call, d: cst.Name) -> None:
    """``st.update(row)`` of ``st = Stats(...)``, an object of the user's class made in the function: its method
    changes the object in place (``self.total = ...``), which srcjax cannot follow (an object made in the function
    is a value: the change would be lost), so it is refused; it was read as a dict's ``update`` (an error about
    indexing with the row's values)."""
    for n in walk(norm.src.fdef.body):
        if type(n) is cst.Assign and len(n.targets) == 1 and type(n.targets[0].target) is cst.Name \
                and n.targets[0].target.value == d.value and type(n.value) is cst.Call:
            ok, cls = norm.static_value(n.value.func)
            if ok and isinstance(cls, type) and not issubclass(cls, dict) and hasattr(cls, "update") \
                    and cls.__module__ not in ("builtins", "collections"):
                raise UnsupportedSyntaxError(
                    f"`{d.value}.update(...)` calls {cls.__name__}.update, which changes the object `{d.value}` "
                    "made in the function in place: srcjax reads such an object as a value, and cannot follow the "
                    "change", span=norm.span(node),
                    hint="keep the state in local arrays (`total = total + row`), or in a NamedTuple rebuilt "
                         "with _replace (`st = st._replace(total=st.total + row)`)")
