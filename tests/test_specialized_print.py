"""``srcjax.source(f, *example_args)``: the program printed for given shapes and dtypes
(srcjax/transforms/specialized_print.py, srcjax/printing.py) is the program that runs.

For every program of the corpora (tests/corpus_programs.py, tests/ad_programs.py) under compile,
grad, value_and_grad, jvp, vjp, hessian and vmap, the specialized print is checked three ways,
independently of the check ``srcjax.source`` makes itself before printing it:

- run by NumPy, it gives what the generic program gives run by NumPy (up to rounding);
- compiled by srcjax for the same arguments, it gives the generic program's XLA result bit for bit;
- its StableHLO is the generic program's, or else XLA's optimized HLO of both is the same module
  up to names.

The default run checks a fixed fifth of the cases; ``SRCJAX_SPECIALIZED=all`` checks every one.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import srcjax
from srcjax import autodiff
from srcjax.api import _as_compiled
from srcjax.printing import canonical_hlo, exec_module
from tests import ad_programs as P
from tests.corpus_programs import CORPUS

_ALL = os.environ.get("SRCJAX_SPECIALIZED", "") == "all"


def _leaves(x):
    return [np.asarray(v) for v in srcjax.tree_util.tree_leaves(x)]


def _floats(args):
    return srcjax.tree_util.tree_map(lambda a: np.asarray(a, dtype=np.float64) * 0.5 + 0.25, args)


def transformed(fn, kind, args):
    """(the transformed function, its example arguments) or None where it does not apply."""
    if kind == "compile":
        return srcjax.compile(fn), args
    if kind in ("grad", "value_and_grad", "hessian"):
        try:
            out = srcjax.eval_shape(fn, *args)
        except srcjax.TranspileError:
            return None
        if not hasattr(out, "shape") or out.shape != () or out.dtype.kind != "f":
            return None
        if not all(np.asarray(a).dtype.kind == "f" for a in srcjax.tree_util.tree_leaves(args[0])):
            return None
        if kind == "hessian" and np.ndim(args[0]) != 1:
            return None
        return {"grad": srcjax.grad, "value_and_grad": srcjax.value_and_grad, "hessian": srcjax.hessian}[kind](fn), args
    first = np.asarray(args[0]) if not isinstance(args[0], (tuple, list, dict)) else None
    if kind in ("jvp", "vjp") and (first is None or first.dtype.kind != "f"):
        return None
    if kind == "jvp":
        return autodiff._wrap(fn, "jvp", (0,), False), (*args, _floats(args[0]).astype(first.dtype))
    if kind == "vjp":
        try:
            out = srcjax.eval_shape(fn, *args)
        except srcjax.TranspileError:
            return None
        if not hasattr(out, "shape") or out.dtype.kind != "f":
            return None
        ct = np.full(out.shape, 0.75, dtype=out.dtype)
        return autodiff._wrap(fn, "vjp", (0,), False), (*args, ct)
    if kind == "vmap":
        if not all(isinstance(a, np.ndarray) for a in args):
            return None
        return srcjax.vmap(fn), tuple(np.stack([a, a[::-1] if a.ndim else a]) for a in args)
    raise ValueError(kind)


def check(f, args) -> str:
    """'generic' (nothing specialized was printed), 'stablehlo' or 'optimized' (the level at which
    the printed program is the one that runs); asserts the three checks above."""
    text = srcjax.source(f, *args)
    if text == srcjax.source(f):
        return "generic"
    c = _as_compiled(f)
    mine = exec_module(text, c.program)
    want = f(*args)
    got_numpy, generic_numpy = mine(*args), srcjax.numpy_function(f)(*args)
    for a, b in zip(_leaves(generic_numpy), _leaves(got_numpy), strict=True):
        tight = a.dtype in (np.float64, np.complex128)
        np.testing.assert_allclose(b, a, rtol=1e-12 if tight else 1e-5, atol=1e-12 if tight else 1e-6)
    mine_compiled = srcjax.compile(mine, static_argnames=tuple(sorted(c.static | c.auto_static)))
    got_xla = mine_compiled(*args)
    for a, b in zip(_leaves(want), _leaves(got_xla), strict=True):
        np.testing.assert_array_equal(b, a)
    theirs, ours = srcjax.lower(f, *args), mine_compiled.lower(*args)
    if ours.as_text() == theirs.as_text():
        return "stablehlo"
    mine_hlo, their_hlo = canonical_hlo(ours.compile().as_text()), canonical_hlo(theirs.compile().as_text())
    assert mine_hlo == their_hlo and mine_hlo
    return "optimized"


KINDS = ("compile", "grad", "value_and_grad", "jvp", "vjp", "hessian", "vmap")


def _ad_args(fn):
    from tests.test_ad import args_for

    return args_for(fn)


AD = [P.mse_tanh, P.mlp_loss, P.softmax_xent, P.layer_norm, P.attention, P.rosenbrock, P.logistic, P.poly,
      P.branchy, P.early_return, P.reductions, P.broadcasting, P.shapes, P.loop_carried_unused_after,
      P.coupled_loop, P.long_loop, P.nested_tuples, P.nested_mixed]
CASES = [(f"ad.{fn.__name__}.{k}", fn, None, k) for fn in AD for k in KINDS] + \
        [(f"corpus.{c.name}.{k}", c.fn, c, k) for c in CORPUS if c.xfail is None and not c.static_argnames
         for k in KINDS]
SELECTED = CASES if _ALL else CASES[::5]


@pytest.mark.parametrize("name,fn,case,kind", SELECTED, ids=[c[0] for c in SELECTED])
def test_specialized_print_is_what_runs(name, fn, case, kind) -> None:
    if case is None:
        args = _ad_args(fn)
    else:
        rng = np.random.default_rng(11)
        args = case.args(rng)
        if case.kwargs is not None:
            pytest.skip("keyword arguments")
    try:
        t = transformed(fn, kind, tuple(args))
    except srcjax.TranspileError:
        t = None
    if t is None:
        pytest.skip(f"{kind} does not apply")
    f, a = t
    try:
        srcjax.eval_shape(f, *a)
    except srcjax.TranspileError:
        pytest.skip(f"{kind} refuses it")
    check(f, a)


# -- what is printed ------------------------------------------------------------------------------------


def poisson_nll(z, y):
    return np.sum(np.exp(z) - y * z)


def mse(w, x, y):
    p = np.tanh(x @ w)
    return np.mean((p - y) ** 2)


def shaped(x, i):
    if x.ndim == 2:
        x = x.sum(axis=1)
    else:
        x = x * 2.0
    return x[i]


def test_gradient_for_given_shapes_has_no_guard_and_no_shape_helpers() -> None:
    z, y = np.linspace(-1, 1, 5), np.linspace(0, 2, 5)
    g = srcjax.grad(poisson_nll)
    generic, text = srcjax.source(g), srcjax.source(g, z, y)
    assert "assert " in generic and "unbroadcast(" in generic and "np.sum(" in generic
    assert text.endswith("def poisson_nll_grad(z, y):\n    return -y + np.exp(z)\n"), text  # (y * -1.0: -y)
    assert check(g, (z, y)) in ("stablehlo", "optimized")


def test_shape_dtype_structs_keywords_and_anf() -> None:
    w, x, y = np.zeros((3, 2)), np.zeros((5, 3)), np.zeros((5, 2))
    g = srcjax.grad(mse)
    text = srcjax.source(g, w, x, y)
    assert "0.2 * (p - y)" in text and "assert" not in text, text
    specs = [srcjax.ShapeDtypeStruct(a.shape, a.dtype) for a in (w, x, y)]
    assert srcjax.source(g, *specs) == text
    assert srcjax.source(g, w, x=x, y=y) == text
    anf = srcjax.source(g, w, x, y, form="anf")
    assert "assert" not in anf and len(anf.splitlines()) > len(text.splitlines())
    # float32: the constant is a float32 (a Python float would be weak), computed in float32
    text32 = srcjax.source(g, *[a.astype(np.float32) for a in (w, x, y)])
    assert "np.float32(0.2) * (p - y)" in text32 and "unbroadcast" not in text32, text32
    assert check(g, tuple(a.astype(np.float32) for a in (w, x, y))) in ("stablehlo", "optimized")


def test_static_if_shows_the_branch_taken() -> None:
    f = srcjax.compile(shaped, static_argnums=1)
    text = srcjax.source(f, np.ones((3, 4)), 1)
    assert "if " not in text and "np.sum(x, axis=1)" in text and "2.0" not in text, text
    text = srcjax.source(f, np.ones(3), 1)
    assert "if " not in text and "2.0" in text and "np.sum" not in text, text


def test_a_print_that_is_not_the_program_is_never_shown(monkeypatch) -> None:
    """Whatever the rewrite writes, what is printed lowers to the program that runs: a module that
    computes something else (here the output plus one) is refused and the generic one printed."""
    from srcjax.transforms import specialized_print

    z, y = np.linspace(-1, 1, 5), np.linspace(0, 2, 5)
    g = srcjax.grad(poisson_nll)
    real = specialized_print.modules_for

    def wrong(*a, **k):
        return [t.replace("np.exp(z)", "(np.exp(z) + 1.0)") for t in real(*a, **k)]

    monkeypatch.setattr(specialized_print, "modules_for", wrong)
    assert srcjax.source(g, z, y) == srcjax.source(g)


def test_static_arguments_stay_static() -> None:
    """A Python int the generic program takes static is static in the printed one too (it reads
    the int's value where the generic one computes with it)."""
    from tests.corpus_programs import CORPUS

    case = next(c for c in CORPUS if c.name == "dynamic_row_index_from_static")
    args = case.args(np.random.default_rng(11))
    f = srcjax.compile(case.fn)
    assert srcjax.source(f, *args).endswith("    return x[2, :] + x[(-3)]\n")
    assert check(f, args) in ("stablehlo", "optimized")


def test_argument_errors_are_located() -> None:
    g = srcjax.grad(mse)
    with pytest.raises(srcjax.TranspileError, match="broadcast|shape|matmul"):
        srcjax.source(g, np.zeros((3, 2)), np.zeros((5, 4)), np.zeros((5, 2)))
    with pytest.raises(srcjax.TranspileError, match="form"):
        srcjax.source(g, np.zeros((3, 2)), np.zeros((5, 3)), np.zeros((5, 2)), form="tree")


def test_canonical_hlo_ignores_names_and_order_only() -> None:
    def twice(x):
        return x * 2.0

    def twice_left(x):
        return 2.0 * x

    def thrice(x):
        return x * 3.0

    def sub(x, y):
        return x - y

    def bus(x, y):
        return y - x

    a = np.ones(3)
    h = {f.__name__: canonical_hlo(srcjax.lower(f, *([a] * f.__code__.co_argcount)).compile().as_text())
         for f in (twice, twice_left, thrice, sub, bus)}
    assert h["twice"] == h["twice_left"] != h["thrice"]
    assert h["sub"] != h["bus"]
    assert canonical_hlo("HloModule m\nENTRY %main (p: f32[]) -> f32[] {\n  ROOT %c = f32[9] constant({...})\n}\n") == ""


def test_canonical_hlo_carries_float_negations_through_products_only() -> None:
    """``-a * b``, ``-(a * b)``, ``a * -b`` and ``a * (-1.0) * b`` are the same float (negation is
    exact, rounding symmetric), so where XLA keeps the negation is not told apart; ``-(a + b)`` and
    ``-a + b`` are different programs, and so are integers' (``-a`` may wrap)."""
    def neg_left(x, y):
        return -x * y

    def neg_out(x, y):
        return -(x * y)

    def neg_right(x, y):
        return x * -y

    def times_minus_one(x, y):
        return x * (-1.0) * y

    def neg_twice(x, y):
        return -(-x / y)

    def quotient(x, y):
        return x / y

    def neg_sum(x, y):
        return -(x + y)

    def sum_neg(x, y):
        return -x + y

    def plain(x, y):
        return x * y

    fs = (neg_left, neg_out, neg_right, times_minus_one, neg_twice, quotient, neg_sum, sum_neg, plain)
    a = np.linspace(0.5, 1.5, 3)
    h = {f.__name__: canonical_hlo(srcjax.lower(f, a, a).compile().as_text()) for f in fs}
    assert h["neg_left"] == h["neg_out"] == h["neg_right"] == h["times_minus_one"] != h["plain"]
    assert h["neg_twice"] == h["quotient"]
    assert len({h["neg_sum"], h["sum_neg"], h["neg_left"], h["plain"]}) == 4
    i = np.arange(3, dtype=np.int8)
    hi = {f.__name__: canonical_hlo(srcjax.lower(f, i, i).compile().as_text()) for f in (neg_left, neg_out)}
    assert hi["neg_left"] != hi["neg_out"]


def test_form_is_a_keyword() -> None:
    with pytest.raises(srcjax.TranspileError, match="form is a keyword"):
        srcjax.source(srcjax.grad(mse), "anf")


def reads_a_parameter_then_rebinds_it(x, y):
    u = x * 1.0
    x = np.sin(y)
    return u * x


def test_a_parameter_bound_again_is_not_read_through_an_alias() -> None:
    """``u = x * 1.0`` is ``x`` only until ``x`` is bound again: ``u`` stays (was read as the new x)."""
    a, b = np.linspace(0.5, 1.5, 3), np.linspace(-1.0, 1.0, 3)
    f = srcjax.compile(reads_a_parameter_then_rebinds_it)
    text = srcjax.source(f, a, b)
    got = exec_module(text, _as_compiled(f).program)(a, b)
    np.testing.assert_allclose(got, a * np.sin(b), rtol=1e-15)
    assert check(f, (a, b)) in ("generic", "stablehlo", "optimized")


def test_most_gradients_print_specialized() -> None:
    """A floor, so the print for given shapes does not quietly become the generic one: of the AD
    programs' gradients, all 18 print specialized (14 when written: the loops, poly,
    loop_carried_unused_after, coupled_loop and long_loop, printed generic before statements
    inside blocks were rewritten), each with the generic program's optimized HLO."""
    results = {}
    for fn in AD:
        t = transformed(fn, "grad", tuple(_ad_args(fn)))
        if t is not None:
            results[fn.__name__] = check(*t)
    specialized = [n for n, r in results.items() if r != "generic"]
    assert len(specialized) >= 18, results


def test_loops_and_branches_on_data_print_specialized() -> None:
    """The statements around and inside loops and branches on data are written for the shapes: the
    gradient's guard is gone (it printed generic before), and what is printed is what runs."""
    for fn in (P.coupled_loop, P.data_branches, P.long_loop, P.poly):
        f = srcjax.grad(fn)
        args = tuple(_ad_args(fn))
        text = srcjax.source(f, *args)
        assert "assert " not in text and "is_float" not in text, text
        assert check(f, args) in ("stablehlo", "optimized")


def _rewritten(src: str, facts: dict, ways: dict | None = None) -> str:
    import libcst as cst

    from srcjax.transforms.specialized_print import rewrite

    fdef = cst.parse_module(src).body[0]
    out = rewrite(fdef, facts, ways or {}, set())
    assert out is not None
    return cst.Module(body=[out]).code


def test_a_name_bound_in_a_block_is_never_an_alias() -> None:
    """``u = t * 1.0`` is ``t`` for these shapes, but ``t`` is bound again in the loop: ``u`` stays a
    binding (``u = t``), read where it is read, and the program computes what it computed."""
    f64 = ("a", (3,), np.dtype(np.float64), False)
    src = ("def f(x):\n    t = x\n    for i in range(3):\n        u = t * 1.0\n        t = np.sin(u)\n"
           "    return u + t\n")
    text = _rewritten(src, {"x": f64, "t": f64, "u": f64})
    assert "u = t\n" in text and "return u + t" in text, text
    x = np.linspace(0.1, 0.9, 3)
    ns: dict = {"np": np}
    exec(src, ns)  # noqa: S102
    want = ns["f"](x)
    exec(text, ns)  # noqa: S102
    np.testing.assert_array_equal(ns["f"](x), want)


def test_a_nested_functions_parameters_have_no_fact() -> None:
    """A nested function's parameter shares a name with a top-level binding the recorder saw: the
    fact (a float64 vector) is not the parameter's, so ``unbroadcast(g, x)`` in it stays."""
    f64 = ("a", (3,), np.dtype(np.float64), False)
    src = ("def f(x, g):\n    h = g * 2.0\n    def inner(h):\n        k = unbroadcast(h, x)\n        return k\n"
           "    return inner(np.ones((2, 3)))\n")
    text = _rewritten(src, {"x": f64, "g": f64, "h": f64, "k": f64})
    assert "unbroadcast(h, x)" in text, text


def coverage() -> dict[str, tuple[bool, int, int]]:
    """Per case of CASES (keyword cases left out): (printed specialized, statements of the generic
    module, statements of the module printed for the arguments)."""
    import ast

    def count(text: str) -> int:
        return sum(1 for n in ast.walk(ast.parse(text))
                   if isinstance(n, ast.stmt) and not isinstance(n, (ast.Import, ast.ImportFrom)))

    out = {}
    for name, fn, case, kind in CASES:
        if case is not None and case.kwargs is not None:
            continue
        args = _ad_args(fn) if case is None else case.args(np.random.default_rng(11))
        try:
            t = transformed(fn, kind, tuple(args))
            if t is None:
                continue
            srcjax.eval_shape(t[0], *t[1])
            generic, special = srcjax.source(t[0]), srcjax.source(t[0], *t[1])
        except srcjax.TranspileError:
            continue
        out[name] = (special != generic, count(generic), count(special))
    return out


def _tanh_loop(x):
    y = x
    for _ in range(3):
        y = np.tanh(1.3 * y) + x
    return np.sum(y)


def test_names_bound_in_a_loop_have_their_shapes() -> None:
    """Issue 20: a name bound in a block (a rolled loop the specializer traced, the backward loop's
    ``y_bar``) has the one abstract value every binding of it had, so ``unbroadcast(y_bar, tanh)``
    inside the loop is ``y_bar`` for these shapes (it was kept: no fact for a name bound in a block).
    It is still never an alias (``tanh_bar = y_bar`` stays a binding), and what prints is what runs."""
    f = srcjax.grad(_tanh_loop)
    x = np.linspace(-1.0, 1.0, 4)
    text = srcjax.source(f, x)
    assert "unbroadcast" not in text and "tanh_bar = y_bar\n" in text, text
    assert check(f, (x,)) in ("stablehlo", "optimized")
    ns: dict = {}
    exec(text, ns)  # noqa: S102 - the module printed, run by NumPy
    np.testing.assert_allclose(ns["_tanh_loop_grad"](x), np.asarray(f(x)), rtol=1e-12)


if __name__ == "__main__":  # how many cases print specialized: python -m tests.test_specialized_print
    res = coverage()
    print(f"{sum(v[0] for v in res.values())}/{len(res)} print specialized; statements: generic "
          f"{sum(v[1] for v in res.values())}, for the arguments {sum(v[2] for v in res.values())}")
    for k in KINDS:
        sel = [v for n, v in res.items() if n.endswith("." + k)]
        print(f"  {k:15} {sum(v[0] for v in sel)}/{len(sel)}  statements {sum(v[2] for v in sel)}")
    print("generic:", " ".join(n for n, v in res.items() if not v[0]))



_GPU_HEADER = ('HloModule srcjax, is_scheduled=true, entry_computation_layout={(f64[5]{0}, f64[5]{0})->f64[5]{0}}, '
               'frontend_attributes={fingerprint_before_lhs="%s"}\n\n')
_GPU_FUSION = '''%%fused (param_0.4: f64[5], param_1.6: f64[5]) -> f64[5] {
  %%param_0.4 = f64[5]{0} parameter(0)
  %%param_1.6 = f64[5]{0} parameter(1)
  %s
  %%exponential.1.1 = f64[5]{0} exponential(%%param_1.6)
  ROOT %%add.1.1 = f64[5]{0} add(%%m, %%exponential.1.1)
}

ENTRY %%main.1 (Arg_0.1: f64[5], Arg_1.1: f64[5]) -> f64[5] {
  %%Arg_0.1 = f64[5]{0} parameter(0)
  %%Arg_1.1 = f64[5]{0} parameter(1)
  ROOT %%f = f64[5]{0} fusion(%%Arg_1.1, %%Arg_0.1), kind=kLoop, calls=%%fused, backend_config={"operation_queue_id":"0","native_emitter_backend_config":{"type":"NATIVE_EMITTER_TYPE_INVALID","unroll_factor":0}}
}
'''


def _gpu_module(fingerprint: str, body: str) -> str:
    return _GPU_HEADER % fingerprint + _GPU_FUSION.replace("%%", "%").replace("%s", body, 1)


def test_canonical_hlo_reads_a_gpu_module() -> None:
    """XLA's GPU text (seen on an H200): a fingerprint in the module's frontend attributes, fusions with a
    backend_config, and ``x * -2`` where the CPU keeps ``-(x * 2)``: alike; a different constant is not."""
    c = "%c = f64[] constant(K)\n  %b = f64[5]{0} broadcast(%c), dimensions={}\n  "
    times = c.replace("K", "-2") + "%m = f64[5]{0} multiply(%param_0.4, %b)"
    negated = c.replace("K", "2") + "%t = f64[5]{0} multiply(%param_0.4, %b)\n  %m = f64[5]{0} negate(%t)"
    other = c.replace("K", "2") + "%m = f64[5]{0} multiply(%param_0.4, %b)"
    minus_one = c.replace("K", "-1") + "%m = f64[5]{0} multiply(%b, %param_0.4)"
    negate = "%m = f64[5]{0} negate(%param_0.4)"
    h = {k: canonical_hlo(_gpu_module(f"{i:032x}", v)) for i, (k, v) in enumerate(
        dict(times=times, negated=negated, other=other, minus_one=minus_one, negate=negate).items())}
    assert h["times"] == h["negated"] != h["other"] and h["times"]
    assert h["minus_one"] == h["negate"] != h["times"]
