"""vmap of collectives (``srcjax.lax.psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
``psum_scatter``, ``axis_index``) over the vmap's ``axis_name``: ordinary NumPy over the batch axis.

Over the vmap's own name (``w.b.axis_name``), every example sees the same value, so the result is
unbatched (JAX's semantics):

- ``psum(x, "i")``        ->  ``np.sum(x, axis=0)`` of the batched ``x`` (``x * batch_size`` when
  ``x`` is not batched); ``pmean``/``pmax``/``pmin`` -> ``np.mean``/``np.max``/``np.min``;
- ``all_gather(x, "i")``  ->  the batched ``x`` itself (``axis=a``: that axis moved to ``a``;
  ``tiled=True``: merged into axis ``a``);
- ``psum_scatter(x, "i")`` ->  each example's slice of ``np.sum(x, axis=0)`` (along
  ``scatter_dimension``, moved first), batched;
- ``axis_index("i")``     ->  ``np.arange(batch_size)``, batched;
- ``ppermute(x, "i", perm)`` -> ``batch_ppermute(x, perm)``: a static gather along the batch axis
  (example ``d`` gets example ``s``'s ``x`` for each pair ``(s, d)``, zeros where no pair sends), batched.

A collective over other names (an enclosing vmap's) stays a collective, written for this vmap's
batched operand (``all_gather``'s ``axis`` shifted past the batch axis); the enclosing vmap, which
reads this source, writes it in turn. A tuple of names reduces this vmap's axis here and the others
there.
"""

from __future__ import annotations

import ast
import inspect
from typing import TYPE_CHECKING, Any

import libcst as cst

from ..core import TranspileError
from ..frontend.names import Visitor, code
from .batch_state import State, Tree

if TYPE_CHECKING:
    from .batch import FunctionWriter

COLLECTIVES = {f"srcjax.lax.{n}" for n in ("psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter",
                                           "axis_index", "ppermute")}
_REDUCE = {"psum": "np.sum", "pmean": "np.mean", "pmax": "np.max", "pmin": "np.min"}


def _leaf_states(st: Any) -> list[Any]:
    if isinstance(st, Tree):
        return [leaf for _, v in st.items for leaf in _leaf_states(v)]
    return [st]


def _literal(w: FunctionWriter, node: cst.BaseExpression, what: str, line: cst.CSTNode) -> Any:
    """A static argument: a literal, or a name of the function's closure or module (``AXIS = "i"``),
    or ``inverse_pairs(<one of those>)`` (what ``ppermute``'s transpose writes)."""
    try:
        return ast.literal_eval(code(node))
    except (ValueError, SyntaxError):
        pass
    if type(node) is cst.Call and code(node.func) == "inverse_pairs" and len(node.args) == 1:
        from ..adjoint import inverse_pairs

        return inverse_pairs(_literal(w, node.args[0].value, what, line))
    if type(node) is cst.Name:  # a temporary the normalizer made of a static expression
        found_value = _assigned_once(w, node.value)
        if found_value is not None:
            return _literal(w, found_value, what, line)
    fn = getattr(w.nf, "fn", None)
    if type(node) is cst.Name and fn is not None:
        try:
            found = inspect.getclosurevars(fn)
        except (TypeError, ValueError):  # pragma: no cover - not a Python function
            found = None
        for space in (found.nonlocals, found.globals) if found is not None else ():
            if node.value in space and isinstance(space[node.value], (str, int, bool, tuple, list)):
                return space[node.value]
    raise w.error(f"vmap: the {what} of a collective must be known when srcjax reads the function", line,
                  hint=f"write the {what} as a literal in the call (or a constant of the module)")


def _assigned_once(w: FunctionWriter, name: str) -> cst.BaseExpression | None:
    """The value of the one assignment ``name = value`` of the function being written (None: not one)."""
    values = _Assigns.find(w.nf.fdef, name)
    return values[0] if len(values) == 1 else None


class _Assigns(Visitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.found: list[cst.BaseExpression] = []

    @classmethod
    def find(cls, node: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
        v = cls(name)
        v.walk(node)
        return v.found

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(type(t.target) is cst.Name and t.target.value == self.name for t in node.targets):
            self.found.append(node.value)


def collective(w: FunctionWriter, value: cst.Call, ind: int, line: cst.CSTNode) -> tuple[str, State]:
    """The batched ``srcjax.lax.<collective>(...)`` call and its state."""
    f = code(value.func).rsplit(".", 1)[1]
    pos = [a.value for a in value.args if a.keyword is None]
    kw = {a.keyword.value: a.value for a in value.args if a.keyword is not None}
    params = ["axis_name"] if f == "axis_index" else ["x", "axis_name", "perm"] if f == "ppermute" else \
        ["x", "axis_name"]
    args = dict(zip(params, pos))
    args.update({k: v for k, v in kw.items() if k in params})
    if set(params) - set(args):
        raise w.error(f"vmap: srcjax.lax.{f} needs {' and '.join(params)}", line)
    if "axis_index_groups" in kw and code(kw["axis_index_groups"]) != "None":
        raise w.error(f"vmap: srcjax.lax.{f} with axis_index_groups", line,
                      hint="reduce over the whole axis (axis_index_groups=None)")
    name = _literal(w, args["axis_name"], "axis_name", line)
    names = tuple(name) if isinstance(name, (tuple, list)) else (name,)
    bound = w.b.axis_name
    here = bound is not None and bound in names
    rest = tuple(n for n in names if n != bound)
    rest_text = repr(rest[0]) if len(rest) == 1 else repr(rest)
    if f == "axis_index":
        if not here:
            return code(value), False
        if rest:
            raise w.error("vmap: srcjax.lax.axis_index over several names", line, hint="give one name")
        return f"np.arange({w.size})", True
    x = code(args["x"])
    st = w.value_state(args["x"])
    if not isinstance(st, bool):
        leaves = _leaf_states(st)
        if f in _REDUCE and here and not rest and all(isinstance(v, bool) for v in leaves) and len(set(leaves)) == 1:
            # a container's leaves, all batched or all not (JAX reduces a pytree leaf by leaf)
            per_leaf = f"{_REDUCE[f]}(v, axis=0)" if leaves[0] else f"v * {w.size}" if f == "psum" else "v"
            return f"srcjax.tree_util.tree_map(lambda v: {per_leaf}, {x})", False
        raise w.error(f"vmap: srcjax.lax.{f} of a container", line, hint="call it on each array")
    if f == "all_gather":
        axis = _literal(w, kw["axis"], "axis", line) if "axis" in kw else 0
        tiled = _literal(w, kw["tiled"], "tiled", line) if "tiled" in kw else False
        if not isinstance(axis, int) or axis < 0:
            raise w.error("vmap: srcjax.lax.all_gather with a negative axis", line, hint="count axes from 0")
        if not here:
            if not st:
                return code(value), False
            extra = "" if not tiled else ", tiled=True"
            return f"srcjax.lax.all_gather({x}, {code(args['axis_name'])}, axis={axis + 1}{extra})", True
        if rest:
            raise w.error("vmap: srcjax.lax.all_gather over several names", line, hint="give one name")
        xb = x if st else w.convert(x, False, True)
        if st is False:
            xb = _let(w, "gathered", xb, ind)
        moved = xb if axis == 0 else f"np.moveaxis({xb}, 0, {axis})"
        if not tiled:
            return moved, False
        shape = f"{xb}.shape[1:{axis + 1}] + (-1,) + {xb}.shape[{axis + 2}:]" if axis else f"(-1,) + {xb}.shape[2:]"
        return f"np.reshape({moved}, {shape})", False
    if f == "ppermute":
        if not here:
            return code(value), st
        if rest:
            raise w.error("vmap: srcjax.lax.ppermute over several names", line, hint="give one name")
        perm = _literal(w, args["perm"], "perm", line)
        from .. import lax

        try:
            pairs = lax.check_perm(perm, 1 << 62)
        except TranspileError as e:
            raise w.error(e.message, line, hint=e.hint) from None
        xb = x if st else _let(w, "permuted", w.convert(x, False, True), ind)
        return f"batch_ppermute({xb}, {tuple(pairs)!r})", True
    if f == "psum_scatter":
        return _scatter(w, value, x, st, kw, here, bool(rest), code(args["axis_name"]), ind, line)
    if not here:
        return code(value), st
    if st:
        out = f"{_REDUCE[f]}({x}, axis=0)"
    else:
        out = f"{x} * {w.size}" if f == "psum" else x
    if rest:
        out = f"srcjax.lax.{f}({out}, {rest_text})"
    return out, False


def _scatter(w: FunctionWriter, value: cst.Call, x: str, st: bool, kw: dict[str, cst.BaseExpression], here: bool,
             rest: bool, name: str, ind: int, line: cst.CSTNode) -> tuple[str, State]:
    """``psum_scatter`` (the transpose of ``all_gather``): the sum over the batch, each example's
    slice (``tiled=True``: block) of it along ``scatter_dimension``, batched."""
    d = _literal(w, kw["scatter_dimension"], "scatter_dimension", line) if "scatter_dimension" in kw else 0
    tiled = _literal(w, kw["tiled"], "tiled", line) if "tiled" in kw else False
    if not isinstance(d, int) or d < 0:
        raise w.error("vmap: srcjax.lax.psum_scatter with a negative scatter_dimension", line,
                      hint="count axes from 0")
    if not here:
        if not st:
            return code(value), False
        extra = "" if not tiled else ", tiled=True"
        return f"srcjax.lax.psum_scatter({x}, {name}, scatter_dimension={d + 1}{extra})", True
    if rest:
        raise w.error("vmap: srcjax.lax.psum_scatter over several names", line, hint="give one name")
    total = _let(w, "psum", f"np.sum({x}, axis=0)" if st else f"{x} * {w.size}", ind, False)
    if tiled:
        total = _let(w, "blocks", f"np.reshape({total}, {total}.shape[:{d}] + ({w.size}, -1) + "
                                  f"{total}.shape[{d + 1}:])", ind, False)
    return (total if d == 0 else f"np.moveaxis({total}, {d}, 0)"), True


def check_helper(w: FunctionWriter, value: cst.Call, line: cst.CSTNode) -> None:
    """Refuse a call of a program function with no batched argument that reaches a collective over
    this vmap's name (it would be left unbatched: it has no batch axis to reduce or count)."""
    if w.b.axis_name is None or type(value.func) is not cst.Name:
        return
    functions = w.program.functions
    seen: set[str] = set()
    todo = [value.func.value]
    while todo:
        name = todo.pop()
        if name in seen or name not in functions:
            continue
        seen.add(name)
        text = code(functions[name].fdef)
        quoted = (f"'{w.b.axis_name}'", f'"{w.b.axis_name}"')
        if any(c + "(" in text for c in COLLECTIVES) and any(q in text for q in quoted):
            raise w.error(f"vmap: {value.func.value} reaches a collective over {w.b.axis_name!r} but gets no "
                          f"batched argument", line,
                          hint="pass it a mapped argument, or call the collective in the vmapped function")
        todo += [n for n in functions if n + "(" in text]


def _let(w: FunctionWriter, hint: str, expr: str, ind: int, st: bool = True) -> str:
    n = w.names.fresh(hint)
    w.emit(f"{n} = {expr}", ind)
    w.bind(n, st)
    return n

