"""vmap of ``srcjax.lax`` control flow: a batched predicate selects, a batched loop condition freezes.

- ``cond``/``switch`` on a batched predicate or index run every branch and select per example
  (``batch_select``/``batch_choose``); on an unbatched one they stay one ``lax`` call;
- ``while_loop`` with a batched condition runs while any example runs; each step computes the
  body for every example and keeps the old carry of examples already done (JAX's batched
  while);
- ``fori_loop`` and ``scan`` carry batched values (the carry is batched from the start when the
  body makes it batched; ``scan`` maps over axis 1 of batched ``xs``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ..frontend.names import code, names_in
from .batch_state import State, Tree, all_batched, any_batched, join

if TYPE_CHECKING:
    from .batch import FunctionWriter


def lax_call(w: FunctionWriter, value: cst.Call, ind: int, line: cst.CSTNode) -> tuple[str, State]:
    """``srcjax.lax.cond/switch/while_loop/fori_loop/scan`` with batched operands (see transforms/batch.py)."""
    f = code(value.func).rsplit(".", 1)[1]
    args = [a for a in value.args if a.keyword is None]
    kw = {a.keyword.value: a.value for a in value.args if a.keyword is not None}

    def fn(node: cst.BaseExpression) -> cst.FunctionDef:
        if isinstance(node, cst.Name) and node.value in w.defs:
            return w.defs[node.value]
        raise w.error(f"vmap: srcjax.lax.{f} needs a function defined in this function", line)

    if f == "cond":
        pred, tf, ff = args[0].value, args[1].value, args[2].value
        ops = [a.value for a in args[3:]]
        op_states = [w.value_state(o) for o in ops]
        t_st = w.nested_state(fn(tf), op_states)
        f_st = w.nested_state(fn(ff), op_states)
        ret = join(t_st, f_st)
        pb = any_batched(w.value_state(pred))
        tname, _ = w.nested(fn(tf), op_states, ind, want_return=ret,
                               name=w.names.fresh(code(tf)) if pb else code(tf))
        fname, _ = w.nested(fn(ff), op_states, ind, want_return=ret,
                               name=w.names.fresh(code(ff)) if pb else code(ff))
        opargs = ", ".join(code(o) for o in ops)
        if not pb:
            return f"srcjax.lax.cond({code(pred)}, {tname}, {fname}{', ' + opargs if opargs else ''})", ret
        a = w.names.fresh("if_true_out")
        b = w.names.fresh("if_false_out")
        w.emit(f"{a} = {tname}({opargs})", ind)
        w.emit(f"{b} = {fname}({opargs})", ind)
        return f"batch_select({code(pred)}, {w.convert(a, ret, True)}, {w.convert(b, ret, True)})", True
    if f == "switch":
        index, branches = args[0].value, args[1].value
        ops = [a.value for a in args[2:]]
        if not isinstance(branches, (cst.List, cst.Tuple)):
            raise w.error("vmap: srcjax.lax.switch needs a list of functions", line)
        op_states = [w.value_state(o) for o in ops]
        fdefs = [fn(e.value) for e in branches.elements]
        ret = False
        for fd in fdefs:
            ret = join(ret, w.nested_state(fd, op_states))
        pb = any_batched(w.value_state(index))
        names_ = []
        for e, fd in zip(branches.elements, fdefs):
            n_, _ = w.nested(fd, op_states, ind, want_return=ret,
                                name=w.names.fresh(code(e.value)) if pb else code(e.value))
            names_.append(n_)
        opargs = ", ".join(code(o) for o in ops)
        if not pb:
            return (f"srcjax.lax.switch({code(index)}, [{', '.join(names_)}]"
                    f"{', ' + opargs if opargs else ''})"), ret
        outs = []
        for n_ in names_:
            o = w.names.fresh(f"{n_}_out")
            w.emit(f"{o} = {n_}({opargs})", ind)
            outs.append(w.convert(o, ret, True))
        return f"batch_choose({code(index)}, [{', '.join(outs)}])", True
    if f == "while_loop":
        cf, bf, init = fn(args[0].value), fn(args[1].value), args[2].value
        carry = w.value_state(init)
        for _ in range(8):
            out = w.nested_state(bf, [carry])
            new = join(carry, out)
            if new == carry:
                break
            carry = new
        c_st = w.nested_state(cf, [carry])
        init_code = code(init)
        if any_batched(c_st):
            carry = all_batched(carry)
            init_code = w.convert(init_code, w.value_state(init), carry)
            cname, _ = w.nested(cf, [carry], ind, name=w.names.fresh(f"{cf.name.value}_each"))
            bname, _ = w.nested(bf, [carry], ind, want_return=carry,
                                   name=w.names.fresh(f"{bf.name.value}_each"))
            c = w.names.fresh("carry")
            anyname = w.names.fresh("any_running")
            step = w.names.fresh("step_running")
            w.emit(f"def {anyname}({c}):", ind)
            w.emit(f"return np.any({cname}({c}))", ind + 1)
            w.emit(f"def {step}({c}):", ind)
            w.emit(f"return batch_select({cname}({c}), {bname}({c}), {c})", ind + 1)
            return f"srcjax.lax.while_loop({anyname}, {step}, {init_code})", carry
        init_code = w.convert(init_code, w.value_state(init), carry)
        cname, _ = w.nested(cf, [carry], ind)
        bname, _ = w.nested(bf, [carry], ind, want_return=carry)
        return f"srcjax.lax.while_loop({cname}, {bname}, {init_code})", carry
    if f == "fori_loop":
        lo, hi, bf, init = args[0].value, args[1].value, fn(args[2].value), args[3].value
        if any(any_batched(w.state(n)) for n in names_in(lo) + names_in(hi)):
            raise w.error("vmap: the bounds of a fori_loop depend on a mapped argument", line,
                             hint="write the loop as a while loop on data")
        carry = w.value_state(init)
        for _ in range(8):
            out = w.nested_state(bf, [False, carry])
            new = join(carry, out)
            if new == carry:
                break
            carry = new
        init_code = w.convert(code(init), w.value_state(init), carry)
        bname, _ = w.nested(bf, [False, carry], ind, want_return=carry)
        return f"srcjax.lax.fori_loop({code(lo)}, {code(hi)}, {bname}, {init_code})", carry
    if f == "scan":
        sf = fn(args[0].value)
        init = args[1].value if len(args) > 1 else kw["init"]
        xs = args[2].value if len(args) > 2 else kw.get("xs")
        xs_state = w.value_state(xs) if xs is not None else False
        xb = any_batched(xs_state)
        carry = w.value_state(init)
        for _ in range(8):
            out = w.nested_state(sf, [carry, xb])
            if isinstance(out, Tree) and len(out.items) == 2:
                new = join(carry, out.items[0][1])
            else:
                new = join(carry, any_batched(out))
            if new == carry:
                break
            carry = new
        out = w.nested_state(sf, [carry, xb])
        ys = out.items[1][1] if isinstance(out, Tree) and len(out.items) == 2 else any_batched(out)
        want = Tree("tuple", (("0", carry), ("1", ys)))
        bname, _ = w.nested(sf, [carry, xb], ind, want_return=want)
        init_code = w.convert(code(init), w.value_state(init), carry)
        xs_code = f"batch_moveaxis({code(xs)}, 0, 1)" if xb and xs is not None else \
            (code(xs) if xs is not None else "None")
        extra = "".join(f", {k}={code(v)}" for k, v in kw.items() if k not in ("init", "xs"))
        res = w.names.fresh("scan_out")
        w.emit(f"{res} = srcjax.lax.scan({bname}, {init_code}, {xs_code}{extra})", ind)
        ys_code = f"batch_moveaxis({res}[1], 1, 0)" if any_batched(ys) else f"{res}[1]"
        return f"({res}[0], {ys_code})", Tree("tuple", (("0", carry), ("1", any_batched(ys))))
    raise w.error(f"vmap: cannot batch srcjax.lax.{f}", line)  # pragma: no cover


