"""``srcjax.vmap``: a batched program written as source (transforms/batch.py does the writing)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import libcst as cst

from . import general_hessian, pytree, reuse, star_args, warm_transforms
from .api import (  # (api's shared argument helpers)
    Compiled,
    WrittenWhenRead,
    _as_compiled,
    _clean,
    _leaf_aval,
    _tree_key,
    eval_shape,
)
from .batch_shared import share_library_copies
from .core import ArgumentError, ShapeDtypeStruct, Span, TranspileError, transformation
from .custom import custom_jvp, custom_vjp, def_span, owner_of
from .example_errors import example_error
from .frontend import provenance
from .frontend.bound_helpers import is_plain_function
from .frontend.names import Names, code
from .frontend.normalize import NormalizedFunction
from .frontend.program import Program
from .gc_pause import pausing
from .generated import exec_generated, load_module
from .left_out import filled
from .lifetimes import PerFunction
from .transforms import batch_errors, batch_popped, batch_tapes
from .transforms.anf import ADJOINT_IMPORTS
from .transforms.batch import (
    BATCHED_IMPORTS,
    Batcher,
    BatchingError,
    ComprehensionBatchingError,
    FunctionWriter,
    Stack,
    State,
    Tree,
    item,
)
from .transforms.batch_aligns import drop_trivial_aligns  # (at import: every vmap runs it)
from .transforms.batch_control import DataTest
from .transforms.batch_state import any_batched, fully_batched, literal_key, pack

__all__ = ["vmap"]

_COUNTER = itertools.count()
_WRITTEN: PerFunction[Callable[..., Any]] = PerFunction("vmap")  # fn -> axes -> its batched function

Axes = Any  # int | None | a pytree prefix of ints and Nones


def _spec_state(spec: Axes, where: str) -> State:
    """The batched state a parameter has for its in_axes entry."""
    if spec is None:
        return False
    if _is_record(spec):
        return Tree("record", tuple((f".{f}", _spec_state(v, f"{where}.{f}")) for f, v in _fields(spec)))
    if isinstance(spec, bool) or not isinstance(spec, (int, tuple, list, dict)):
        raise ArgumentError(f"vmap: in_axes{where} must be an int, None, or a tuple/list/dict/NamedTuple/dataclass "
                            f"of them, not {spec!r}")
    if isinstance(spec, int):
        return True
    if isinstance(spec, dict):
        return Tree("dict", tuple((repr(k), _spec_state(v, f"{where}[{k!r}]")) for k, v in spec.items()))
    kind = "list" if isinstance(spec, list) else "tuple"
    return Tree(kind, tuple((str(i), _spec_state(v, f"{where}[{i}]")) for i, v in enumerate(spec)))


def _is_record(spec: Axes) -> bool:
    return pytree.is_namedtuple(spec) or pytree.is_record(spec) or type(spec) in pytree.DATA_FIELDS


def _fields(spec: Axes) -> list[tuple[str, Axes]]:
    """A NamedTuple's or dataclass's (field, value) pairs (of one registered with register_dataclass: its
    data fields)."""
    names = spec._fields if pytree.is_namedtuple(spec) else pytree.DATA_FIELDS.get(type(spec)) or \
        pytree.record_fields(spec)
    return [(f, getattr(spec, f)) for f in names]


def _moved(expr: str, spec: Axes) -> str | None:
    """``expr`` with every mapped axis of ``spec`` moved first (None: nothing to move)."""
    if spec is None or spec is False or (isinstance(spec, int) and spec == 0):
        return None
    if _is_record(spec):
        out = expr
        for f, v in _fields(spec):
            m = _moved(f"{expr}.{f}", v)
            if m is not None:
                out = f"tree_set({out}, {f!r}, {m})"
        return None if out == expr else out
    if isinstance(spec, int):
        return f"batch_moveaxis({expr}, {spec}, 0)"
    items = spec.items() if isinstance(spec, dict) else enumerate(spec)
    parts = []
    moved = False
    for k, v in items:
        sub = f"{expr}[{k!r}]"
        m = _moved(sub, v)
        moved = moved or m is not None
        parts.append((repr(k), m or sub))
    if not moved:
        return None
    if isinstance(spec, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in parts) + "}"
    body = ", ".join(v for _, v in parts)
    return ("[" + body + "]") if isinstance(spec, list) else ("(" + body + ("," if len(parts) == 1 else "") + ")")


def _first_batched(expr: str, spec: Axes) -> str | None:
    if spec is None:
        return None
    if _is_record(spec):
        subs = [(f"{expr}.{f}", v) for f, v in _fields(spec)]
    elif isinstance(spec, int):
        return expr
    else:
        subs = [(f"{expr}[{k!r}]", v) for k, v in (spec.items() if isinstance(spec, dict) else enumerate(spec))]
    for sub, v in subs:
        found = _first_batched(sub, v)
        if found is not None:
            return found
    return None


def _shown_key(k: str) -> str:
    """An item key of a container's state as its path is written (``[0]``, ``['w']``, ``.w``)."""
    key = literal_key(k)
    return k if k.startswith(".") else f"[{k}]" if key is None else f"[{key!r}]"


def _pushed_in_order(fdef: cst.FunctionDef, expr: str, st: Stack, spec: list[Any]) -> bool:
    """Whether the list ``expr`` (state ``st``) holds one value per push, in order, as many as ``spec`` has: it is
    appended to only outside loops (a push in a loop's body stands for each of its iterations)."""
    if type(st) is not Stack or len(st.entries) != len(spec) or not expr.isidentifier():
        return False
    in_loop = False

    class V(cst.CSTVisitor):
        depth = 0

        def visit_For(self, n: cst.For) -> None:
            self.depth += 1

        def leave_For(self, n: cst.For) -> None:
            self.depth -= 1

        def visit_While(self, n: cst.While) -> None:
            self.depth += 1

        def leave_While(self, n: cst.While) -> None:
            self.depth -= 1

        def visit_Call(self, n: cst.Call) -> None:
            nonlocal in_loop
            f = n.func
            if self.depth and type(f) is cst.Attribute and type(f.value) is cst.Name and f.value.value == expr:
                in_loop = True

    fdef.body.visit(V())
    return not in_loop


class _EntryWriter(FunctionWriter):
    """The entry function: its returns put the batch axis where ``out_axes`` says."""

    entry_writer = True

    out_axes: Axes = 0

    def returned_expr(self, val: str, st: State) -> str:
        return self.out(val, st, self.out_axes)

    def _same_structure(self, spec: Axes, st: State, path: str) -> None:
        """Refuse an out_axes container that is not a prefix of the output's (jax's "out_axes specification
        must be a tree prefix of the corresponding value"): a dict's other keys, a record's other fields, a
        tuple for a dict (was: a dict's keys out_axes did not name silently dropped from the result, an
        internal IndexError/KeyError). Only where the output's structure is known (a Tree)."""
        if not isinstance(st, Tree) or not isinstance(spec, (tuple, list, dict)) and not _is_record(spec):
            return
        if _is_record(spec):
            fields = sorted(f".{f}" for f, _ in _fields(spec))
            fits = st.kind == "record" and sorted(k for k, _ in st.items) == fields
            shown = f"{type(spec).__name__} with fields {[f[1:] for f in fields]}"
        elif isinstance(spec, dict):
            fits = st.kind == "dict" and sorted(map(repr, spec)) == sorted(repr(literal_key(k)) for k, _ in st.items)
            shown = f"a dict with keys {sorted(spec, key=repr)}"
        else:
            fits = st.kind in ("tuple", "list")  # (their lengths: checked below, with their own message)
            shown = f"a {type(spec).__name__} of {len(spec)}"
        if fits:
            return
        if st.kind == "record":
            has = f"a record with fields {sorted(k[1:] for k, _ in st.items)}"
        elif st.kind == "dict":
            has = f"a dict with keys {sorted((literal_key(k) for k, _ in st.items), key=repr)}"
        else:
            has = f"a {st.kind} of {len(st.items)}"
        raise self.error(f"vmap: out_axes{path and ' at ' + path} is {shown}, but the output{path} is {has}",
                         hint="give out_axes the output's structure, an axis (or None) for each of its parts, "
                              "or one int for all of it")

    def out(self, expr: str, st: State, spec: Axes, path: str = "") -> str:
        """``expr`` (state ``st``) with its batch axis where ``spec`` says; ``path``: where it is in the
        output (``[0]['y']``), for errors."""
        self._same_structure(spec, st, path)
        if _is_record(spec):
            sts = dict(st.items) if isinstance(st, Tree) else {}
            return pack("record", [(f".{f}", self.out(item(expr, f".{f}"), sts.get(f".{f}", st), v, f"{path}.{f}"))
                                   for f, v in _fields(spec)], expr)
        if isinstance(spec, (tuple, list)) and isinstance(st, Tree) and st.kind in ("tuple", "list") and \
                len(spec) != len(st.items):  # (jax's "out_axes ... does not match the output's structure")
            raise self.error(f"vmap: out_axes{path and ' at ' + path} has {len(spec)} entries but the output"
                             f"{path} is a {st.kind} of {len(st.items)}",
                             hint="give out_axes one entry per returned value (or one int for all of them)")
        if isinstance(spec, (tuple, list, dict)):
            items = list(spec.items()) if isinstance(spec, dict) else list(enumerate(spec))
            # the output's keys as written in the function (`{"w": ...}`), by value: out_axes={'w': 0}
            by_value: dict[Any, State] = {literal_key(k): v for k, v in st.items} if isinstance(st, Tree) else {}
            keys: dict[Any, str] = {literal_key(k): k for k, _ in st.items} if isinstance(st, Tree) else {}
            if isinstance(spec, list) and isinstance(st, Stack) and _pushed_in_order(self.nf.fdef, expr, st, spec):
                by_value = dict(enumerate(st.entries))  # (out_axes=[None, 0] of `out.append(c); out.append(x)`)
            written = [(keys.get(k, repr(k)), by_value.get(k, st) if by_value else st, v, k) for k, v in items]
            parts = [(key, self.out(item(expr, key), kst, v, f"{path}[{k!r}]")) for key, kst, v, k in written]
            if isinstance(spec, dict):
                return "{" + ", ".join(f"{k}: {v}" for k, v in parts) + "}"
            body = ", ".join(v for _, v in parts)
            as_list = st.kind == "list" if isinstance(st, Tree) else isinstance(spec, list)  # (the output's kind)
            return ("[" + body + "]") if as_list else "(" + body + ("," if len(parts) == 1 else "") + ")"
        if isinstance(st, Tree):
            kind = st.kind
            parts = [(k, self.out(item(expr, k), v, spec, f"{path}{_shown_key(k)}")) for k, v in st.items]
            if kind == "record":
                return pack(kind, parts, expr)
            if kind == "dict":
                return "{" + ", ".join(f"{k}: {v}" for k, v in parts) + "}"
            body = ", ".join(v for _, v in parts)
            return ("[" + body + "]") if kind == "list" else "(" + body + ("," if len(parts) == 1 else "") + ")"
        if isinstance(st, Stack):  # a list built by appends (np.split's pieces): each push's state
            mapped = [any_batched(e) for e in st.entries]
            if not any(mapped) and spec is not None:  # (items per example, as jax broadcasts them)
                expr = f"batch_broadcast_items({expr}, {self.size})"
            elif any(mapped) and not all(fully_batched(e) for e in st.entries):
                if spec is None or not expr.isidentifier():
                    raise self.error("vmap: a list that holds both mapped and unmapped values is returned"
                                     + (f": output{path}" if path else ""),
                                     hint="return the mapped and the unmapped values in separate lists (or a tuple)")
                self.forced.add(expr)  # (written again, each unmapped value broadcast where it is appended, as jax)
            if spec is not None:
                return expr if spec == 0 else f"batch_moveaxis_items({expr}, 0, {spec})"
            st = any(mapped)
        if spec is None:
            if st:
                raise self.error("vmap: out_axes=None for an output srcjax maps" + (f": output{path}" if path
                                 else "") + " (it depends on a mapped argument, or it is a leaf of a container that "
                                 "srcjax maps as a whole: tree_map, or a loop over the leaves, of a container "
                                 "with a mapped leaf; jax keeps such a leaf unmapped)",
                                 hint="give the output an axis in out_axes (e.g. 0), or compute it from "
                                      "unmapped arguments only, outside the tree_map or loop over the leaves")
            return expr
        if st:
            return expr if spec == 0 else f"batch_moveaxis({expr}, 0, {spec})"
        return f"batch_out({expr}, {spec}, {self.size}, False)"


def batched_source(fn: Callable[..., Any], in_axes: Axes, out_axes: Axes, axis_size: int | None,
                   axis_name: Any = None) -> tuple[str, str, Batcher, Any]:
    """The module text of ``vmap(fn, in_axes, out_axes, axis_size, axis_name)``, its function's name, and
    the program."""
    c = _as_compiled(fn)
    fns = function_defaults(c.signature)  # (`act=np.tanh`: calls through it are calls of np.tanh, as for grad)
    try:
        try:
            return _batched_source(c, Program(c.fn, fns) if fns else c.program, fn, in_axes, out_axes, axis_size,
                                   axis_name)
        except ComprehensionBatchingError:  # read again with comprehensions written as append loops
            return _batched_source(c, Program(c.fn, fns or None, comprehension_loops=True), fn, in_axes, out_axes,
                                   axis_size, axis_name)
    except BatchingError as e:  # found in generated source (a derivative's helper): at the user's function
        fn0 = _user_function(c.fn)
        code0 = getattr(fn0, "__code__", None)
        if getattr(c.fn, "__srcjax_derived__", None) is None and code0 is not None:  # (its def line, as the CLI)
            raise e.with_span(Span(code0.co_filename, code0.co_firstlineno, 0, code0.co_firstlineno, 0)) from None
        raise e.with_span(def_span(fn0)) from None


def function_defaults(sig: inspect.Signature) -> dict[str, Any]:
    """The parameters with a function for default (``act=np.tanh``): the batched source calls that function
    through them (a call passing another is refused: :meth:`Vmapped._check_sizes`)."""
    return {p.name: p.default for p in sig.parameters.values()
            if p.default is not p.empty and is_plain_function(p.default)}


def _user_function(fn: Any) -> Any:
    """The user's function a generated one (a derivative, maybe of a derivative) was written from."""
    for _ in range(16):
        derived = getattr(fn, "__srcjax_derived__", None)
        inner = derived[1] if derived is not None else getattr(fn, "_primal", None) or getattr(fn, "fn", None)
        if inner is None or inner is fn:
            return fn
        fn = inner
    return fn


def _batched_source(c: Compiled, prog: Program, fn: Callable[..., Any], in_axes: Axes, out_axes: Axes,
                    axis_size: int | None, axis_name: Any = None) -> tuple[str, str, Batcher, Any]:
    b = Batcher(prog)
    b.axis_name = axis_name
    name = b.names.fresh(f"{prog.entry.name}_vmap")
    while True:
        b.tape_slots.pushes.clear()  # (the keys this writing pushes and pops: see batch_tapes.paired)
        b.tape_slots.pops.clear()
        try:
            written = _write_entry(c, prog, b, name, fn, in_axes, out_axes, axis_size)
            batch_tapes.paired(b.tape_slots)  # (rows keyed by their helper's family: each pop found its pushes)
            return written
        except DataTest as e:  # a Python `if`/`while` on batched data: functionalized, then written again
            if e.function != prog.entry.name:
                raise
            b.data_names.setdefault(e.function, set()).update(e.names)
        except ComprehensionBatchingError:
            raise
        except BatchingError as e:  # (a value restored from a tape batched whole, needed static: refused)
            raise batch_popped.unproved(e, b.tape_slots) from None
        except batch_tapes.Relearn as e:  # a tape's slots found batched after a pop read them: all again
            data_names = b.data_names
            b = Batcher(prog)
            b.axis_name, b.data_names, b.tape_slots = axis_name, data_names, e.slots
            e.slots.again()
            name = b.names.fresh(f"{prog.entry.name}_vmap")


def _write_entry(c: Compiled, prog: Program, b: Batcher, name: str, fn: Callable[..., Any], in_axes: Axes,
                 out_axes: Axes, axis_size: int | None) -> tuple[str, str, Batcher, Any]:
    nf = b.with_data_tests(prog.entry)
    params = c.params
    specs = _in_specs(in_axes, len(params), fn)
    states = {p: _spec_state(s, f"[{i}]") for i, (p, s) in enumerate(zip(params, specs))}
    w = _EntryWriter(b, nf, states)
    w.out_axes = out_axes
    w.size = w.names.fresh("batch_size")
    for p, s in zip(params, specs):
        m = _moved(p, s)
        if m is not None:
            w.emit(f"{p} = {m}", 1)
    firsts = [f for p, s in zip(params, specs) if (f := _first_batched(p, s)) is not None]
    if firsts:
        w.emit(f"{w.size} = batch_size_of({firsts[0]})", 1)
        for f in firsts[1:]:
            w.emit(f"assert batch_size_of({f}) == {w.size}, 'vmap: mapped axes of different sizes'", 1)
    elif axis_size is not None:
        w.emit(f"{w.size} = {int(axis_size)}", 1)
    else:
        raise ArgumentError("vmap: nothing is mapped (every in_axes is None) and no axis_size is given",
                            hint="map an argument (in_axes=0) or pass axis_size=n")
    if owner_of(prog.entry.fn) is not None:
        # vmap of a custom_vjp/custom_jvp function itself: the entry moves the axes and calls the batched
        # copy, which keeps its (batched) rules as a call of it inside would (a body written here would
        # drop them: derivatives of the batched program would differentiate the primal)
        entry_states = tuple(states[p] for p in params)
        helper, ret, _, _ = b.function(prog.entry, entry_states)
        b.custom_rules(helper, prog.entry, entry_states, ret)
        res = w.names.fresh("out")
        w.emit(f"{res} = {helper}({', '.join(params)})", 1)
        w.emit(f"return {w.out(res, ret, out_axes)}", 1)
    else:
        w.write_body()
        batch_errors.refuse_shared_lists(w)  # (`m = out`, then `out.append(y)`)
    text = f"def {name}({code(nf.fdef.params)}):\n" + "\n".join(w.lines) + "\n"
    return text, name, b, prog


def _in_specs(in_axes: Axes, n: int, fn: Any) -> list[Axes]:
    if isinstance(in_axes, (int, type(None))) and not isinstance(in_axes, bool):
        return [in_axes] * n
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not isinstance(in_axes, tuple):
        raise ArgumentError(f"vmap: in_axes must be an int, None or a tuple with one entry per argument, "
                            f"not {in_axes!r}")
    if len(in_axes) != n:
        raise ArgumentError(f"vmap: in_axes has {len(in_axes)} entries but {getattr(fn, '__name__', fn)} takes "
                            f"{n} arguments", hint="give one entry per positional argument (None: not mapped)")
    return list(in_axes)


@pausing
def batched_function(fn: Callable[..., Any], in_axes: Axes, out_axes: Axes, axis_size: int | None,
                     axis_name: Any = None) -> Callable[..., Any]:
    """The generated Python function of ``vmap(fn, in_axes, out_axes, axis_size, axis_name)`` (cached)."""
    key = (_freeze(in_axes), _freeze(out_axes), axis_size, axis_name)
    hit = _WRITTEN.get(fn, key)
    if hit is not None:
        return hit
    from .transforms import readable
    from .transforms.simplify import simplify_source

    text, name, b, prog = batched_source(fn, in_axes, out_axes, axis_size, axis_name)
    # (every name of ADJOINT_IMPORTS and BATCHED_IMPORTS: the modules' __all__)
    header = "import numpy as np\nimport srcjax\nfrom srcjax.adjoint import *\nfrom srcjax.batched import *\n\n\n"
    used = b.used(text + "".join(b.texts[r] for _, _, rules in b.customs.values() for r in rules))
    used += [r for _, _, rules in b.customs.values() for r in rules if r not in used]
    origins = {g: b.origins[g] for g in used}
    module_text = header + text + "".join("\n\n" + b.texts[g] for g in used)
    try:
        module_text = simplify_source(module_text, set(ADJOINT_IMPORTS) | set(BATCHED_IMPORTS), {})
    except Exception:  # pragma: no cover - the simplifier is an optimization
        pass
    module_text = drop_trivial_aligns(module_text)  # (batch_align_b(add, b) of an add computed from b: add)
    anf_text = module_text
    module_text = readable.for_program(module_text, set(ADJOINT_IMPORTS) | set(BATCHED_IMPORTS), prog)
    module_text, marked = provenance.unmark(module_text, same_tree=True)  # (each line's user statement)
    anf_text = provenance.strip(anf_text, same_tree=True)  # (the marked texts' trees serve: not parsed again)
    base = _as_compiled(fn).fn
    filename = f"<srcjax.vmap of {base.__qualname__} #{next(_COUNTER)}>"
    owners = {g: prog.functions.get(origins.get(g, prog.entry.name), prog.entry) for g in [name, *origins]}
    try:
        compiled = load_module(filename, module_text, owners, marked)
    except SyntaxError as e:  # pragma: no cover - a bug in the writer
        raise TranspileError(f"internal error: generated vmap source does not parse: {e}\n{module_text}") from e
    functions = exec_generated(compiled, name, prog, origins, {})
    readable.keep_anf(functions, anf_text, module_text)
    customs = {n for g, (_, _, rules) in b.customs.items() for n in (g, *rules)}
    share_library_copies(functions, origins, prog, module_text, anf_text, customs)  # (one per content)
    for g, (kind, nondiff, rules) in b.customs.items():  # batched custom functions keep their (batched) rules
        if g not in functions:
            continue
        fn_g = functions[g]
        if kind == "vjp":
            wrapped: Any = custom_vjp(fn_g, nondiff_argnums=nondiff)
            wrapped.defvjp(functions[rules[0]], functions[rules[1]])
        else:
            wrapped = custom_jvp(fn_g, nondiff_argnums=nondiff)
            wrapped.defjvp(functions[rules[0]])
        for f in functions.values():
            if f.__globals__.get(g) is fn_g:
                f.__globals__[g] = wrapped
    out = functions[name]
    out.__srcjax_derived__ = ("vmap", base, ())  # type: ignore[attr-defined]
    _WRITTEN.set(fn, key, out)
    return out


def _freeze(spec: Axes) -> Any:
    if _is_record(spec):
        return (type(spec), tuple((f, _freeze(v)) for f, v in _fields(spec)))
    if isinstance(spec, dict):
        return ("dict", tuple((k, _freeze(v)) for k, v in spec.items()))
    if isinstance(spec, (list, tuple)):
        return (type(spec).__name__, tuple(_freeze(v) for v in spec))
    return spec


class Vmapped(WrittenWhenRead, Compiled):  # type: ignore[misc]  # (fn: a property over Compiled's attribute)
    """``srcjax.vmap(fn, ...)``: a compiled batched program; checks the mapped sizes of its arguments.

    Its source is written when first needed (``_write``), as jit's and grad's are: by the first call,
    ``lower`` or ``eval_shape`` (for their arguments), or anything reading ``fn`` (``srcjax.source``,
    another transformation). Until then the function vmapped stands in (its signature is the batched
    one's). Of a Jacobian whose arguments there are arrays (one example's: an array argument, an array
    output), the batched source is written from the Jacobian's array form (``array_form_for``); a later
    call that is not of that kind runs the vmap of its generic form (``_generic``)."""

    _write: Callable[[Any], tuple[Callable[..., Any], Any]] | None = None  # (example call or None) -> the batched
    # function, and the Jacobian whose array form it was written from (or None)
    _of_arrays: Any = None  # the Jacobian whose array form the source was written from
    _generic: Vmapped | None = None  # (then: the vmap of its generic form, for calls of another kind)
    _generic_form = False  # (this one batches the generic form of a Jacobian: _vmap's `generic`)
    _picks = False  # (of a Jacobian: the form written depends on the call that writes it, _vmap's `pick`)
    _served: Any = None  # (one example of the first call the level-2 cache served while the source was pending:
    # what the source is then written for, so that it is the program that ran: _write_pending)

    def __init__(self, fn: Callable[..., Any], write: Callable[[Any], tuple[Callable[..., Any], Any]], in_axes: Axes,
                 out_axes: Axes, axis_size: int | None, **kw: Any) -> None:
        c = _as_compiled(fn)
        # the function vmapped stands in until the source is written (as it is now: reading a Jacobian's
        # `fn` would write its generic form)
        super().__init__(c.__dict__.get("_fn") or c.fn, **kw)
        for k in [k for k in vars(self) if k.startswith("__srcjax")]:  # (the stand-in's marks)
            del self.__dict__[k]
        self._write = write
        self._in_axes = in_axes
        self._out_axes = out_axes
        self._axis_size = axis_size
        self._axis_name: Any = None
        self._primal = fn
        self._nparams = len(self.params)
        self._omitting: dict[tuple[Any, ...], Any] = {}
        # vmap(f, in_axes=k) of an f with defaults, or whose keyword arguments k does not map over their axis
        # 0, and in_axes with fewer entries than f's parameters: maps what a call passes (boxed: (in_axes,))
        self._one_axis: tuple[Axes] | None = None
        self._by_passed: dict[Any, Vmapped | None] = {}  # (__call__: the vmap for each way of passing arguments)

    def _write_pending(self) -> None:
        if self._write is not None:
            self._write_now(self._served)

    def _write_now(self, call: Any) -> None:
        """Write the batched source (``call``: a call's arguments, one example's, or None: not known)."""
        write, self._write = self._write, None
        assert write is not None
        try:
            written, self._of_arrays = write(call)
        except TranspileError as e:
            self._write = write  # (the next reader gets the error again)
            raise _clean(example_error(self._primal, call, e, eval_shape) or e) from None
        self._fn = written
        for k in [k for k in vars(self) if k.startswith("__srcjax")]:  # (the stand-in's marks)
            del self.__dict__[k]
        functools.update_wrapper(self, written)

    def _bind(self, args: Any, kwargs: dict[str, Any]) -> list[Any]:
        if self._write is not None:
            if not self._warm_preload(args, kwargs):
                if self._write is not None:
                    # (not a program an earlier process wrote: no source to write; nor written meanwhile, by
                    # the error of a call that does not bind, which reads the function for its def line)
                    self._write_now(self.one_example(tuple(args), kwargs))
            elif self._served is None and self._write is not None:
                # (an earlier process wrote the source for this call's kind of example: a later reader,
                # srcjax.source, writes it for the same, so that it prints the program this call ran)
                self._served = self.one_example(tuple(args), kwargs)
        return super()._bind(args, kwargs)

    def _warm_identity(self) -> list[Any] | None:
        if self.in_shardings is not None or self.out_shardings is not None:
            return None
        return warm_transforms.vmap_identity(
            [_freeze(self._in_axes), _freeze(self._out_axes), self._axis_size, self._axis_name,
             None if self._one_axis is None else _freeze(self._one_axis[0]),
             self._generic_form or self._written_generic()], self._primal)

    def _written_generic(self) -> bool:
        """Whether the source of this vmap of a Jacobian that has an array form was written from its generic
        form whatever the call: by a reader before any call (srcjax.source), or by a call whose example does
        not take the array form. Its programs are then those of ``_vmap(..., generic=True)`` (keyed so in the
        level-2 cache), not those a pending one writes for a call's example (the array form's where the call
        takes it), which is what the level-2 cache serves it (``_served``)."""
        return self._write is None and self._of_arrays is None and self._picks and \
            bool(self._primal.has_array_form())  # type: ignore[attr-defined]  # (a Jacobian: _picks)

    def _warm_reads(self) -> Any:
        reads = super()._warm_reads()
        reads.merge(warm_transforms.reads_of(self._primal))  # (the function vmapped: its files and names)
        return reads

    def _not_its_form(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Vmapped | None:
        """The vmap of the Jacobian's generic form where this one was written from its array form and
        these arguments are not of that kind (a container); else None."""
        j = self._of_arrays
        if j is None:
            return None
        example = self.one_example(args, kwargs)
        if example is not None and j.array_form_for(*example) is not None:
            return None
        if self._generic is None:
            self._generic = _vmap(self._primal, self._in_axes, self._out_axes, self._axis_size, self._axis_name,
                                  generic=True)
        return self._generic

    def __repr__(self) -> str:  # (not written for a repr)
        return f"<srcjax.compile of {self._fn.__qualname__}>"

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        other = self._not_its_form(args, kwargs) if self._write is None else None
        return other.lower(*args, **kwargs) if other is not None else super().lower(*args, **kwargs)

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call through srcjax's Python path (``Compiled.__call__``: jaxlib's C++ dispatcher first, once
        attached; it comes here for a signature it has no record of, so the mapped sizes of every call the
        C++ side serves were checked here first: a record is keyed by exactly these shapes and structures)."""
        if self._one_axis is not None:
            # one in_axes for every argument maps those passed (JAX's meaning): a parameter left to
            # its default is the same for every example
            # (the vmap for a call's set of passed parameters, kept by how many are positional and which
            # are named: ~0.1 us, where building the in_axes tuple each call took ~1 us)
            how = (len(args), *kwargs) if kwargs else len(args)
            other = self._by_passed.get(how, self)
            if other is self:
                other = self._by_passed[how] = self._omitting_for(args, kwargs)
            if other is not None:
                return other(*args, **kwargs)
        if not kwargs and len(args) < self._nparams:
            args = filled(self, args)
        if not kwargs and len(args) == self._nparams and self.device != "numpy":
            plan = self._cache.get(self._fast_key(args))
            if plan is not None:
                return plan.run(args)
            if self._tree_cache and not self._static_all and (tree := _tree_key(args)) is not None:
                plan = self._tree_cache.get(tree[0])
                if plan is not None:  # containers of arrays of shapes seen (and checked) before
                    return plan.run(tree[1])
        try:
            self._check_sizes(args if not kwargs else (*args, *(kwargs.get(p) for p in self.params[len(args):])))
            # (arguments passed by keyword too, as the C++ side's records, which take them as positional ones:
            # one error for both paths; a parameter not passed is None there, which has no leaves)
        except TranspileError:
            if self._write is not None:  # (the batched source says where a mapped non-array is used and which
                self._write_pending()    # in_axes leaves it unmapped: its error first, as when vmap() wrote it)
            raise
        if self._served is not None and self._write is not None and not self._warm_preload(args, kwargs):
            # (a call the level-2 cache does not serve, after one it served: the source written for the served
            # call's example, the program that ran; then this call takes it, or the generic form's vmap)
            self._write_pending()
        other = self._not_its_form(args, kwargs) if self._write is None else None
        if other is not None:
            return other(*args, **kwargs)
        return super()._call(args, kwargs)

    def one_example(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> general_hessian.Call | None:
        """The arguments one example of a call with these gets (a mapped leaf: a ShapeDtypeStruct
        without its mapped axis), for what the vmapped function's output type decides
        (``general_hessian.takes_general``); None where they are not known (a mapped non-array)."""
        try:
            specs = _in_specs(self._in_axes, len(self.params), self._primal)
            named = dict(zip(self.params, specs))
            return (tuple(_one_example(a, s) for a, s in zip(args, specs)),
                    {k: _one_example(v, named.get(k)) for k, v in kwargs.items()})
        except (TranspileError, LookupError, TypeError, ValueError, AttributeError):
            return None

    def for_passing(self, npos: int, names: Sequence[str]) -> Vmapped:
        """The vmap serving a call that passes ``npos`` positional arguments and ``names`` by keyword
        (this one, or the one mapping what such a call passes: where the front end reads such a call,
        ``jit``/``grad`` of this one called so)."""
        if self._one_axis is None:
            return self
        return self._omitting_for((None,) * npos, dict.fromkeys(names)) or self

    def _omitting_for(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Vmapped | None:
        """The vmap of the primal for a call passing ``args`` and ``kwargs`` when it maps other parameters
        than this one (one made per such set, in ``_omitting``), else None (this one serves the call)."""
        assert self._one_axis is not None
        try:
            specs = call_axes(self._one_axis[0], self.params, len(args), kwargs)
        except TranspileError as e:
            raise _clean(e) from None
        if list(specs) == _in_specs(self._in_axes, len(self.params), self._primal):
            return None
        key = _freeze(specs)
        if key not in self._omitting:
            self._omitting[key] = vmap(self._primal, specs, self._out_axes, self._axis_size, self._axis_name)
        return self._omitting[key]  # type: ignore[no-any-return]

    def _check_sizes(self, args: Sequence[Any]) -> None:
        specs = _in_specs(self._in_axes, len(self.params), self._primal)
        sizes: list[tuple[str | _LeafPath, int]] = []
        fixed = self.__dict__.get("_fixed_functions")
        if fixed is None:
            fixed = self.__dict__["_fixed_functions"] = function_defaults(_as_compiled(self._primal).signature) \
                if self._primal is not None else {}
        for p, a, s in zip(self.params, args, specs):
            if p in fixed and a is not None and a is not fixed[p]:
                raise _clean(ArgumentError(
                    f"vmap: `{p}` is called as a function, and the batched source calls its default "
                    f"{getattr(fixed[p], '__name__', fixed[p])!s} through it: another function passed for it is "
                    "not supported", hint=f"vmap a function that fixes it: functools.partial(f, {p}=...)"))
            for path, leaf, ax in _leaves_with_axes(a, s, p):
                if ax is None:
                    continue
                aval = _leaf_aval(leaf)
                if aval is None:
                    raise _clean(ArgumentError(f"vmap: {path} is mapped (in_axes {ax}) but is not an array",
                                               hint=f"pass in_axes=None for {p}"))
                nd = len(aval.shape)
                if not -nd <= ax < nd:
                    raise _clean(ArgumentError(
                        f"vmap: in_axes {ax} for {path}, which has {nd} dimension{'s' * (nd != 1)} "
                        f"(shape {aval.shape})", hint="map an axis it has, or pass None to not map it"))
                sizes.append((path, aval.shape[ax]))
        if self._axis_size is not None:
            sizes.insert(0, ("axis_size", self._axis_size))
        for path, n in sizes[1:]:
            if n != sizes[0][1]:
                raise _clean(ArgumentError(
                    f"vmap: mapped axes of different sizes: {sizes[0][0]} has {sizes[0][1]}, {path} has {n}",
                    hint="every mapped argument needs the same size along its mapped axis"))


def call_axes(in_axes: Axes, params: Sequence[str], npos: int, kwargs: Any) -> tuple[Axes, ...]:
    """The in_axes entry of each parameter for a call passing ``npos`` positional arguments and ``kwargs``
    by keyword (JAX's meaning): ``in_axes`` gives the positional ones' axes (one for all, or a tuple of
    one entry each), an argument passed by keyword is mapped over its axis 0, one left out is not mapped."""
    if isinstance(in_axes, tuple):
        if len(in_axes) != npos:
            raise ArgumentError(
                f"vmap: in_axes has {len(in_axes)} entr{'y' if len(in_axes) == 1 else 'ies'} but the call passes "
                f"{npos} positional argument{'s' * (npos != 1)}",
                hint="give in_axes one entry per positional argument of the call (arguments passed by keyword are "
                     "mapped over their axis 0, as in jax; pass them positionally to give them another axis or None)")
        head = in_axes
    else:
        head = (in_axes,) * npos
    return tuple(head[i] if i < npos else 0 if p in kwargs else None for i, p in enumerate(params))


def _one_example(value: Any, spec: Axes) -> Any:
    """``value`` as one example sees it under its in_axes entry ``spec`` (mapped leaves: ShapeDtypeStructs)."""
    if spec is None:
        return value
    if isinstance(spec, int) and not isinstance(spec, bool):
        return pytree.tree_map(lambda leaf: _without_axis(leaf, spec), value)
    if _is_record(spec):
        fields = {f: _one_example(getattr(value, f), s) for f, s in _fields(spec)}
        return value._replace(**fields) if pytree.is_namedtuple(value) else dataclasses.replace(value, **fields)
    if isinstance(spec, dict):
        return {k: _one_example(v, spec[k]) for k, v in value.items()}
    return pytree.tree_like(value, [_one_example(v, s) for v, s in zip(value, spec, strict=True)])


def _without_axis(leaf: Any, axis: int) -> ShapeDtypeStruct:
    a = _leaf_aval(leaf)
    if a is None:
        raise TypeError("a mapped leaf that is not an array")
    shape = tuple(a.shape)
    k = axis if axis >= 0 else len(shape) + axis
    return ShapeDtypeStruct(shape[:k] + shape[k + 1:], a.dtype)


class _LeafPath:
    """``p['w']``: how an error names leaf ``i`` of an argument (found only when an error is written)."""

    def __init__(self, value: Any, i: int, base: str) -> None:
        self.value, self.i, self.base = value, i, base

    def __str__(self) -> str:
        return pytree.leaf_path(self.value, self.i, self.base)


def _leaves_with_axes(value: Any, spec: Axes, path: str) -> list[tuple[str | _LeafPath, Any, int | None]]:
    """(path, leaf, axis) for every leaf of an argument under its in_axes prefix."""
    if spec is None or isinstance(spec, int):
        leaves, _ = pytree.flatten(value)
        if len(leaves) == 1 and leaves[0] is value:
            return [(path, value, spec)]
        return [(_LeafPath(value, i, path), leaf, spec) for i, leaf in enumerate(leaves)]
    out: list[tuple[str | _LeafPath, Any, int | None]] = []
    if _is_record(spec):
        if type(value) is not type(spec):
            raise _clean(ArgumentError(f"vmap: in_axes for {path} is a {type(spec).__name__}, but the argument is "
                                       f"{type(value).__name__}",
                                       hint="in_axes must have the argument's structure (or be one int/None)"))
        for f, v in _fields(spec):
            out += _leaves_with_axes(getattr(value, f), v, f"{path}.{f}")
        return out
    if isinstance(spec, dict):
        if not isinstance(value, dict) or set(value) != set(spec):
            raise _clean(ArgumentError(f"vmap: in_axes for {path} is a dict with keys {sorted(map(str, spec))}, but "
                                       f"the argument is {type(value).__name__}"
                                       + (f" with keys {sorted(map(str, value))}" if isinstance(value, dict) else ""),
                                       hint="in_axes must have the argument's structure (or be one int/None)"))
        for k, v in spec.items():
            out += _leaves_with_axes(value[k], v, f"{path}[{k!r}]")
        return out
    if pytree.is_namedtuple(value) or pytree.is_record(value) or type(value) in pytree.DATA_FIELDS:
        # (a plain tuple for a NamedTuple: the batched source reads `p.spread` by field, and found no state for it:
        # a leaf in_axes left unmapped was read as mapped, silently wrong; jax refuses it too)
        raise _clean(ArgumentError(f"vmap: in_axes for {path} is a {type(spec).__name__}, but the argument is a "
                                   f"{type(value).__name__}",
                                   hint=f"write in_axes for it as the record itself: {type(value).__name__}(...) "
                                        "with an axis or None per field (or one int/None)"))
    if not isinstance(value, (tuple, list)) or len(value) != len(spec):
        raise _clean(ArgumentError(f"vmap: in_axes for {path} has {len(spec)} entries, but the argument is "
                                   f"{type(value).__name__}" + (f" of length {len(value)}"
                                                                 if isinstance(value, (tuple, list)) else ""),
                                   hint="in_axes must have the argument's structure (or be one int/None)"))
    for i, v in enumerate(spec):
        out += _leaves_with_axes(value[i], v, f"{path}[{i}]")
    return out


@transformation
def vmap(fn: Callable[..., Any], in_axes: Axes = 0, out_axes: Axes = 0, axis_size: int | None = None,
         axis_name: Any = None) -> Vmapped:
    """The batched version of ``fn`` (JAX's ``vmap``), written as source (``srcjax.source`` shows it).

    ``in_axes``: for each positional argument, the axis mapped over (an int, negative ints count from
    the end), ``None`` for an argument shared by every example, or a tuple/list/dict prefix of the
    argument's structure; one int or None applies to every argument. ``out_axes``: where the batch
    axis goes in each output (``None``: an output that does not depend on a mapped argument).
    ``axis_size``: the batch size when no argument is mapped. ``axis_name``: the name ``fn``'s
    collectives (``srcjax.lax.psum(x, name)``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
    ``psum_scatter``, ``axis_index``, ``ppermute``) give the mapped axis; the batched source writes them as NumPy over
    the batch axis
    (``psum`` -> ``np.sum(x, axis=0)``, the same for every example).
    """
    if axis_name is not None and not isinstance(axis_name, str):
        raise _clean(ArgumentError(f"vmap: axis_name must be a string, not {axis_name!r}"))
    if isinstance(fn, NormalizedFunction):  # srcjax.vmap(f) inside a function srcjax is transpiling: f's function
        fn = fn.fn
    if axis_size is not None and (isinstance(axis_size, bool) or not isinstance(axis_size, int) or axis_size < 0):
        raise _clean(ArgumentError(f"vmap: axis_size must be a non-negative int, not {axis_size!r}"))
    if (star := star_args.dispatch(fn, lambda g: vmap(g, in_axes, out_axes, axis_size, axis_name))) is not None:
        return star  # type: ignore[return-value]  # (`def f(*xs)`: in_axes over the positions of each call)
    options = (_freeze(in_axes), _freeze(out_axes), axis_size, axis_name)
    def made() -> Vmapped:
        v = _vmap(fn, in_axes, out_axes, axis_size, axis_name)
        return general_hessian.remade(v, fn, lambda g: vmap(g, in_axes, out_axes, axis_size, axis_name),
                                      v.one_example)  # type: ignore[no-any-return]

    return reuse.reused(fn, "vmap", options, made)


def _vmap(fn: Callable[..., Any], in_axes: Axes, out_axes: Axes, axis_size: int | None, axis_name: Any,
          generic: bool = False) -> Vmapped:
    c = _as_compiled(fn)
    one_axis: tuple[Axes] | None = None  # (the in_axes as given, where each call decides: Vmapped._one_axis)
    defaults = [p.name for p in c.signature.parameters.values() if p.default is not p.empty]
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if (in_axes is None or isinstance(in_axes, int)) and not isinstance(in_axes, bool) and (defaults or in_axes != 0):
        # the program for a call that leaves the defaults (a call passing them maps them: Vmapped._call),
        # a keyword argument mapped over its axis 0 whatever the one in_axes is (JAX's meaning)
        one_axis = (in_axes,)
        if defaults:
            in_axes = tuple(None if p in defaults else in_axes for p in c.params)
    elif type(in_axes) is tuple and len(in_axes) < len(c.params):
        # one entry per positional argument a call passes, the other arguments passed by keyword, each
        # mapped over its axis 0 (JAX's meaning); the program written first: the parameters after the
        # entries passed by keyword where they have no default, left to their default where they have one
        one_axis = (in_axes,)
        in_axes = in_axes + tuple(None if p in defaults else 0 for p in c.params[len(in_axes):])
    try:  # (what jax checks at vmap(): in_axes' kinds, one per parameter; the rest when the source is written)
        for i, s in enumerate(_in_specs(in_axes, len(c.params), fn)):
            _spec_state(s, f"[{i}]")
    except TranspileError as e:
        raise _clean(e) from None
    pick = None if generic else getattr(fn, "array_form_for", None)  # (a Jacobian: its array form)

    def write(call: Any) -> tuple[Callable[..., Any], Any]:  # (the batched function, the Jacobian of its form)
        form = pick(*call) if pick is not None and call is not None else None
        return batched_function(form or fn, in_axes, out_axes, axis_size, axis_name), None if form is None else fn

    out = Vmapped(fn, write, in_axes, out_axes, axis_size,
                  static_argnums=tuple(i for i, p in enumerate(c.params) if p in c.static), device=c.device)
    out._axis_name = axis_name
    out._one_axis = one_axis
    out._generic_form = generic
    out._picks = pick is not None
    return out


_ = Names
