"""The parameters a user's helper changes in place, as NumPy sees them: ``def build_up_b(b, u): b[1:-1] = ...``
writes into the caller's array, and the caller reads ``b`` afterwards (npbench's cavity_flow). srcjax's arrays
are immutable, as JAX's: the helper's write binds its own ``b`` again and the caller's keeps the old value, so
frontend/aliasing.py refuses such a call where the caller reads the argument after it.

Read from the helper's source (``ast``, its own statements, not nested functions): a parameter is changed by
``p[k] = v``, ``p[k] op= v``, ``p op= v`` (in place for an array), by a NumPy call that writes into it
(``np.tanh(p, out=p)``, ``np.exp(p, p)``: a ufunc's positional output, ``np.fill_diagonal(p, v)``,
``np.copyto(p, v)``, ``np.add.at(p, i, v)``, ``p.fill(v)``; scikit-learn's in-place activations) or by passing it
to another helper that changes it, unless the helper binds the name again anywhere (``p = p.copy()``: a
conservative guess that the change is to its own copy). Helpers whose source cannot be read change nothing
here."""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["changed_parameters"]

_CACHE: dict[types.CodeType, dict[int, str]] = {}


def _own_nodes(fdef: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    todo: list[ast.AST] = list(fdef.body)
    while todo:
        node = todo.pop()
        yield node
        todo += [c for c in ast.iter_child_nodes(node)
                 if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))]


def _base(t: ast.expr) -> str | None:
    while isinstance(t, ast.Subscript):
        t = t.value
    return t.id if isinstance(t, ast.Name) else None


def _flat(t: ast.expr) -> list[ast.expr]:
    if isinstance(t, (ast.Tuple, ast.List)):
        return [x for e in t.elts for x in _flat(e.value if isinstance(e, ast.Starred) else e)]
    return [t]


def _callee(fn: types.FunctionType, func: ast.expr) -> Any:
    if not isinstance(func, ast.Name):
        return None
    closure = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False))
    try:
        return closure[func.id].cell_contents if func.id in closure else fn.__globals__.get(func.id)
    except ValueError:  # pragma: no cover (an empty cell)
        return None


# NumPy functions that write into their first argument (ufunc.at too)
_WRITING = (np.fill_diagonal, np.copyto, np.put_along_axis, np.place, np.putmask, np.put)
_WRITING_METHODS = ("fill", "put", "itemset", "sort", "partition", "resize", "setfield")


def _static(fn: types.FunctionType, e: ast.expr) -> Any:
    """The object a name or attribute chain (``np.exp``, ``np.add.at``) is in ``fn``'s globals; None if unknown."""
    if isinstance(e, ast.Name):
        return _callee(fn, e)
    if isinstance(e, ast.Attribute):
        base = _static(fn, e.value)
        return None if base is None else getattr(base, e.attr, None)
    return None


def _written(fn: types.FunctionType, call: ast.Call) -> list[ast.expr]:
    """The arguments of ``call`` a NumPy call writes into (``out=``, a ufunc's positional outputs, the first
    argument of ``np.fill_diagonal``/``np.copyto``/``ufunc.at``, the object of ``a.fill(v)``)."""
    f = call.func
    callee = _static(fn, f)
    user = isinstance(callee, types.FunctionType) and not (callee.__module__ or "").startswith("numpy")
    out = [] if user else [x for kw in call.keywords if kw.arg == "out" for x in _flat(kw.value)]  # (a helper's
    # own `out=` parameter is not NumPy's)
    if isinstance(f, ast.Attribute) and f.attr in _WRITING_METHODS and _static(fn, f.value) is None:
        out.append(f.value)  # (`p.fill(0.0)`: a method of an array, not of a module)
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    if isinstance(callee, np.ufunc) and len(positional) > callee.nin:
        out += positional[callee.nin:]
    if positional and (any(callee is w for w in _WRITING) or
                       getattr(callee, "__name__", "") == "at" and isinstance(getattr(callee, "__self__", None),
                                                                             np.ufunc)):
        out.append(positional[0])
    return out


def changed_parameters(fn: Any, seen: frozenset[types.CodeType] = frozenset()) -> dict[int, str]:
    """The positions of the parameters ``fn`` changes in place, each with the change as written and where."""
    if not isinstance(fn, types.FunctionType) or fn.__code__ in seen:
        return {}
    code = fn.__code__
    if code in _CACHE:
        return _CACHE[code]
    module = getattr(fn, "__module__", "") or ""
    if module.split(".")[0] in ("numpy", "srcjax", "jax"):
        return {}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return {}
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)) or fdef.name != fn.__name__:
        return {}
    params = [a.arg for a in [*fdef.args.posonlyargs, *fdef.args.args]]
    rebound: set[str] = set()
    changes: dict[str, str] = {}
    first = code.co_firstlineno - 1

    def change(name: str | None, node: ast.AST, what: str, then: str = "") -> None:
        if name in params and name not in changes:
            where = f"line {first + getattr(node, 'lineno', 1)} of {fn.__name__}"
            changes[name] = f"`{what}` ({where})" + (f", which runs {then}" if then else "")

    for node in _own_nodes(fdef):
        if isinstance(node, ast.Assign):
            for t in (x for tgt in node.targets for x in _flat(tgt)):
                if isinstance(t, ast.Name):
                    rebound.add(t.id)
                elif isinstance(t, ast.Subscript):
                    change(_base(t), node, ast.unparse(node))
        elif isinstance(node, ast.AugAssign):
            change(_base(node.target), node, ast.unparse(node))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            rebound.update(x.id for x in _flat(node.target) if isinstance(x, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name):
            rebound.add(node.target.id)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            rebound.update(x.id for x in _flat(node.optional_vars) if isinstance(x, ast.Name))
        elif isinstance(node, ast.Call):
            for t in _written(fn, node):
                change(_base(t), node, ast.unparse(node))
            callee = _callee(fn, node.func)
            inner = changed_parameters(callee, seen | {code}) if callee is not None else {}
            if not inner:
                continue
            names = list(callee.__code__.co_varnames[:callee.__code__.co_argcount])
            for k, what in inner.items():
                positional = [a for a in node.args if not isinstance(a, ast.Starred)]
                arg = positional[k] if k < len(positional) else next(
                    (kw.value for kw in node.keywords if kw.arg == names[k]), None)
                if arg is not None:  # (`inner(p)`, `inner(p[0])`: an item or a view of p)
                    change(_base(arg), node, ast.unparse(node), what)
    out = {params.index(p): what for p, what in changes.items() if p not in rebound}
    _CACHE[code] = out
    return out
