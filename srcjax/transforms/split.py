"""Reverse mode split in two programs: a forward half that saves residuals, a backward half that reads them.

Input: a :class:`~srcjax.frontend.program.Program` and the parameters to differentiate.
Output: the Python source of two functions (plus the fwd/bwd halves of the helpers they call)::

    def loss_vjp_fwd(w, x, y):           # the primal sweep
        ...
        return mean, (p, sub)            # (output, residuals)

    def loss_vjp_bwd(w, x, p, sub, out_bar):   # params it reads, residuals, cotangent
        ...                              # the adjoint sweep
        return (w_bar, x_bar, y_bar,)

Both sweeps are exactly those of :class:`~srcjax.transforms.reverse_ad.VJP` (what
``vjp_source`` writes as one function); the cut between them is the only new thing:

- **residuals** are the names the adjoint reads before it binds them (upward-exposed)
  that the primal binds: their values at the end of the primal sweep. Intermediates the
  adjoint does not read (``matmul`` for ``np.tanh(matmul)``, whose rule reads its output)
  are not saved. A parameter the adjoint reads is not a residual (the caller has it and
  passes it again), unless the primal rebinds it.
- the **tape** (values that loops and helper calls save, ``_tape.append``) is one more
  residual, ``_tape``: under NumPy a list of arrays; compiled, a rolled loop's part of it
  is one stacked :class:`~srcjax.lower.rolled_for.Segment`, which the specializer returns as
  its arrays and accepts back as an argument (a pytree node). The backward half pops a
  copy (``list(_tape)``), so it can run again with another cotangent.
- after simplification, residuals and parameters the backward half no longer reads are
  dropped from both signatures (and the forward half's dead code with them).

Invariants: ``bwd(*reads, *fwd(*params)[1], ct)`` is ``vjp_source``'s function on
``(params, ct)``; both halves are plain Python that NumPy runs.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from ..frontend.ast_walk import walk_ast
from ..frontend.names import Names, names_in, target_names
from ..frontend.program import Program
from ..frontend.restructure import walk
from .activity import upward_exposed
from .anf import ADJOINT_IMPORTS, dedent_block, signature
from .derivative_source import entry_vjp, record_origins
from .simplify import simplify_source


@dataclass
class Split:
    text: str  # the module (header, both halves, helpers), simplified
    fwd: str
    bwd: str
    reads: tuple[int, ...]  # indices of the parameters the backward half takes again, in order
    residuals: tuple[str, ...]  # what the forward half returns after the output (the tape last, if any)


def split_source(program: Program, argnums: Sequence[int], fwd: str, bwd: str, header: str,
                 origins: dict[str, str] | None = None, max_iters: int | None = None) -> Split:
    """The forward and backward halves of ``program.entry``'s VJP w.r.t. ``argnums`` (see the module doc)."""
    nf = program.entry
    params = [p.name.value for p in nf.plain_fdef.params.params]
    v, helpers, extra = entry_vjp(program, argnums, max_iters)
    out_bar = v.names.fresh("out_bar")
    primal, adj, out, defined = v.sweeps(out_bar)
    bars = v.finish_bars(adj, defined)
    tape_re = re.compile(rf"(?<![\w.]){re.escape(v.tape)}\b")
    uses_tape = any(tape_re.search(ln) for ln in primal + adj)
    exposed = upward_exposed(cst.parse_module(dedent_block("\n".join(adj))).body) if adj else set()
    kwonly = [p.name.value for p in nf.plain_fdef.params.kwonly_params]  # the backward half takes them saved
    bound: list[str] = list(kwonly)  # names the primal binds, in order of first binding
    in_loops: set[str] = set()  # ... and those it binds inside a loop
    body = cst.parse_module(dedent_block("\n".join(primal))).body if primal else []
    for st, depth in walk(body):
        names = [n for t in st.targets for n in target_names(t.target)] if isinstance(st, cst.Assign) else \
            target_names(st.target) if isinstance(st, cst.For) else []
        bound += names
        if depth or isinstance(st, cst.For):
            in_loops.update(names)
    top = set(v.final_bound) | set(kwonly) | {  # bound on every path
        n for line in body if isinstance(line, cst.SimpleStatementLine)
        for st in line.body if isinstance(st, cst.Assign) for t in st.targets for n in target_names(t.target)}
    skip = {v.tape, out_bar, *v.bar.values()}
    residuals = [n for n in dict.fromkeys(bound) if n in exposed and n not in skip]
    reads = [i for i, p in enumerate(params) if p in exposed and p not in residuals]
    _record = record_origins
    _record(helpers, origins)
    if uses_tape:
        residuals.append(v.tape)

    shape_defs: list[str] = []  # definitions the backward half repeats for a shape (see _shape_only)

    def write(reads: list[int], residuals: list[str]) -> str:
        saved = [n for n in residuals if n != v.tape]
        f = [f"def {fwd}({signature(nf)}):"]
        if uses_tape:
            f.append(f"    {v.tape} = []")
        # bound on some paths only: None before a loop binds it (a rolled loop carries it from zeros);
        # UNSET where an `if` on data binds it (the adjoint reads it under the same test; compiled,
        # the other branch gives zeros)
        f += [f"    {n} = {'None' if n in in_loops else 'UNSET'}" for n in saved if n not in top]
        f += primal
        f.append(f"    return {out}, ({', '.join(residuals)}{',' if len(residuals) == 1 else ''})")
        b = [f"def {bwd}({', '.join([params[i] for i in reads] + residuals + [out_bar])}):"]
        if uses_tape:
            b.append(f"    {v.tape} = list({v.tape})  # popped below: a copy, so this can run again")
        b += [f"    {d}  # read for its shape only (XLA drops the computation)" for d in shape_defs]
        b += adj
        b.append(f"    return ({', '.join(bars)},)")
        body = "\n".join(f) + "\n\n\n" + "\n".join(b) + "\n" + ("\n\n" + "\n\n".join(extra) if extra else "")
        return simplify_source(header + body, set(ADJOINT_IMPORTS))

    text = write(reads, residuals)
    # a residual the backward half reads for its shape only, computed by one pure statement from
    # values it has: that statement is repeated there instead (XLA drops the computation itself)
    shape_defs[:] = _shape_only(text, fwd, bwd, residuals, params)
    if shape_defs:
        moved = {d.split(" = ", 1)[0] for d in shape_defs}
        residuals = [n for n in residuals if n not in moved]
        needed = {n for d in shape_defs for n in names_in(cst.parse_statement(d))}
        reads = sorted(set(reads) | {i for i, p in enumerate(params) if p in needed})
        text = write(reads, residuals)
    # simplification may leave a residual or parameter unread (folded away): drop it from both halves
    unread = _unread_parameters(text, bwd) - {out_bar, v.tape}
    if unread:
        reads = [i for i in reads if params[i] not in unread]
        residuals = [n for n in residuals if n not in unread]
        text = write(reads, residuals)
    return Split(text, fwd, bwd, tuple(reads), tuple(residuals))


# arguments that only give the helper a shape: (function, argument position)
_SHAPE_ARGS = {("unbroadcast", 1), ("expand_reduced", 1), ("reduced_size", 0), ("broadcast_like", 1),
               ("np.shape", 0), ("np.ndim", 0), ("np.size", 0)}


def _shape_only(text: str, fwd: str, bwd: str, residuals: list[str], params: list[str]) -> list[str]:
    """Definitions (``pow_1 = sub ** 2``) of residuals the backward half reads only through the
    shape of its value, each one pure statement at the top of the forward half reading parameters
    and residuals bound once (so their values there are those the backward half has): in order."""
    mod = ast.parse(text)
    defs = {n.name: n for n in mod.body if isinstance(n, ast.FunctionDef)}
    f, b = defs[fwd], defs[bwd]
    shape_reads: set[int] = set()
    for n in walk_ast(b):
        if isinstance(n, ast.Call):
            fn = ast.unparse(n.func)
            shape_reads |= {id(a) for k, a in enumerate(n.args) if (fn, k) in _SHAPE_ARGS and isinstance(a, ast.Name)}
    loads: dict[str, list[ast.Name]] = {}
    stores: dict[str, int] = {}
    for n in walk_ast(b):
        if isinstance(n, ast.Name):
            if isinstance(n.ctx, ast.Load):
                loads.setdefault(n.id, []).append(n)
            else:
                stores[n.id] = stores.get(n.id, 0) + 1
    fstores: dict[str, int] = {}
    for n in walk_ast(f):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            fstores[n.id] = fstores.get(n.id, 0) + 1
    ret = f.body[-1]
    if not (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple) and len(ret.value.elts) == 2 and
            isinstance(ret.value.elts[1], ast.Tuple)):
        return []
    returned = [ast.unparse(e) for e in ret.value.elts[1].elts]  # what the forward half returns per residual
    same = {n for n, r in zip(residuals, returned) if n == r}
    top: dict[str, ast.Assign] = {st.targets[0].id: st for st in f.body if isinstance(st, ast.Assign) and
                                  len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)}
    candidates = {r for r in same if r in top and fstores.get(r) == 1 and not stores.get(r) and loads.get(r) and
                  all(id(x) in shape_reads for x in loads[r]) and _pure(top[r].value)}
    rebound = {p for p in params if fstores.get(p)}  # a parameter the forward half binds again: bound twice
    while True:  # drop those reading a value the backward half would not have
        have = candidates | (same - candidates) | {p for p in params if not fstores.get(p)}
        bad = {r for r in candidates if any(n.id not in have or fstores.get(n.id, 0) > 1 or n.id in rebound
                                            for n in walk_ast(top[r].value) if isinstance(n, ast.Name))}
        if not bad:
            break
        candidates -= bad
    return [ast.unparse(st) for st in f.body if isinstance(st, ast.Assign) and st.targets[0] is not None and
            isinstance(st.targets[0], ast.Name) and st.targets[0].id in candidates]


def _pure(e: ast.expr) -> bool:
    """Only operators, NumPy functions and srcjax.adjoint helpers (no forward half pushing on a tape)."""
    for n in walk_ast(e):
        if isinstance(n, ast.Call):
            fn = ast.unparse(n.func)
            if not (fn.startswith("np.") or fn in ADJOINT_IMPORTS):
                return False
        elif isinstance(n, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            return False
    return True


def _unread_parameters(text: str, name: str) -> set[str]:
    fdef = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    params = {a.arg for a in fdef.args.args}
    read = {n.id for st in fdef.body for n in walk_ast(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return params - read


def fresh_names(program: Program, base: str) -> tuple[str, str]:
    """``base_fwd``, ``base_bwd``: free in the program (and its helpers' generated halves)."""
    names = Names(set(program.functions) | {n for nf in program.functions.values() for n in names_in(nf.plain_fdef)})
    return names.fresh(f"{base}_fwd"), names.fresh(f"{base}_bwd")
