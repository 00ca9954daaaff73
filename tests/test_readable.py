"""Readable derivative source (srcjax.transforms.readable): the printed gradient of common losses
is close to what a person writes by hand, and the readable and ANF forms compute the same numbers.

Counting rule (``count_statements``): the statements of the gradient function's body, nested
blocks included (a compound statement counts once, plus its body); not counted: the import lines
(outside the function), the ``assert`` guard that checks the output is a real scalar, and the
statement computing the value it checks when nothing but the guard reads it (the loss itself: a
hand-written gradient does not compute it, and XLA drops it). The hand-written gradients below are
counted by the same rule, and checked to be gradients (against ``srcjax.grad``).
"""

from __future__ import annotations

import ast
import os

import numpy as np
import pytest

import srcjax
from srcjax.transforms import readable


def count_statements(text: str, name: str) -> int:
    fdef = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == name)
    body = list(fdef.body)
    guard = next((s for s in body if isinstance(s, ast.Assert)), None)
    if guard is not None:
        checked = {n.id for n in ast.walk(guard.test) if isinstance(n, ast.Name)}
        reads = [n.id for s in body if s is not guard for n in ast.walk(s)
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
        body = [s for s in body if s is not guard and not (
            isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and
            s.targets[0].id in checked and s.targets[0].id not in reads)]
    return sum(1 for s in body for n in ast.walk(s) if isinstance(n, ast.stmt))


# -- the losses, each with its hand-written gradient (w.r.t. the first argument) --------------------


def least_squares(w, X, y):
    return np.sum((X @ w - y) ** 2)


def least_squares_hand(w, X, y):
    return 2 * X.T @ (X @ w - y)


def ridge(w, X, y):
    return np.sum((X @ w - y) ** 2) + 0.1 * np.sum(w ** 2)


def ridge_hand(w, X, y):
    return 2 * X.T @ (X @ w - y) + 0.2 * w


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_hand(x):
    a = x[1:] - x[:-1] ** 2
    g = np.zeros_like(x)
    g[1:] += 200.0 * a
    g[:-1] += -400.0 * a * x[:-1] - 2.0 * (1.0 - x[:-1])
    return g


def logistic_regression(w, X, y):
    return np.mean(np.log1p(np.exp(-y * (X @ w))))


def logistic_regression_hand(w, X, y):
    s = -y / (1.0 + np.exp(y * (X @ w)))
    return X.T @ s / y.shape[0]


def softmax_cross_entropy(z, t):
    return np.log(np.sum(np.exp(z))) - np.sum(t * z)


def softmax_cross_entropy_hand(z, t):
    e = np.exp(z)
    return e / np.sum(e) * np.sum(t) - t


def sigmoid_cross_entropy(z, y):
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.sum(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def sigmoid_cross_entropy_hand(z, y):
    return 1.0 / (1.0 + np.exp(-z)) - y


def huber(x, y):
    r = x - y
    return np.sum(np.where(np.abs(r) <= 1.0, 0.5 * r ** 2, np.abs(r) - 0.5))


def huber_hand(x, y):
    r = x - y
    return np.where(np.abs(r) <= 1.0, r, np.sign(r))


def log_cosh(x, y):
    return np.sum(np.log(np.cosh(x - y)))


def log_cosh_hand(x, y):
    return np.tanh(x - y)


def pseudo_huber(x, y):
    return np.sum(np.sqrt(1.0 + (x - y) ** 2) - 1.0)


def pseudo_huber_hand(x, y):
    r = x - y
    return r / np.sqrt(1.0 + r ** 2)


def poisson_nll(z, y):
    return np.sum(np.exp(z) - y * z)


def poisson_nll_hand(z, y):
    return np.exp(z) - y


def softmax_weighted(z, v):
    e = np.exp(z - np.max(z))
    return np.sum(v * e / np.sum(e))


def softmax_weighted_hand(z, v):
    e = np.exp(z - np.max(z))
    s = e / np.sum(e)
    return s * (v - np.sum(v * s))


def layernorm(x, g):
    xc = x - np.mean(x)
    return np.sum(g * xc / np.sqrt(np.mean(xc ** 2) + 1e-5))


def layernorm_hand(x, g):
    xc = x - np.mean(x)
    inv = 1.0 / np.sqrt(np.mean(xc ** 2) + 1e-5)
    xhat = xc * inv
    return inv * (g - np.mean(g) - xhat * np.mean(g * xhat))


def squared_hinge(w, X, y):
    return np.sum(np.maximum(0.0, 1.0 - y * (X @ w)) ** 2)


def squared_hinge_hand(w, X, y):
    m = np.maximum(0.0, 1.0 - y * (X @ w))
    return -2.0 * X.T @ (m * y)


def mlp(params, x, y):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    out = h @ w2 + b2
    return np.mean((out - y) ** 2)


def mlp_hand(params, x, y):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    d_out = 2.0 * (h @ w2 + b2 - y) / y.size
    d_h = d_out @ w2.T * (1.0 - h ** 2)
    return (x.T @ d_h, np.sum(d_h, 0), h.T @ d_out, np.sum(d_out, 0))


def _args(name, rng):
    n, d = 7, 3
    X, y = rng.standard_normal((n, d)), rng.standard_normal(n)
    x, t = rng.standard_normal(5), rng.standard_normal(5)
    if name in ("least_squares", "ridge"):
        return (rng.standard_normal(d), X, y)
    if name in ("logistic_regression", "squared_hinge"):
        return (rng.standard_normal(d), X, np.sign(y))
    if name == "rosen":
        return (x,)
    if name == "softmax_cross_entropy":
        return (x, np.eye(5)[2])
    if name == "sigmoid_cross_entropy":
        return (x, rng.uniform(size=5))
    if name == "mlp":
        params = (rng.standard_normal((d, 4)), rng.standard_normal(4), rng.standard_normal((4, 2)),
                  rng.standard_normal(2))
        return (params, X, rng.standard_normal((n, 2)))
    if name == "huber":
        return (2.0 * x, t)
    return (x, t)


# name -> the statement count of the hand-written gradient above (asserted, so the table stays true)
HAND = {"least_squares": 1, "ridge": 1, "rosen": 5, "logistic_regression": 2, "softmax_cross_entropy": 2,
        "sigmoid_cross_entropy": 1, "huber": 2, "log_cosh": 1, "pseudo_huber": 2, "poisson_nll": 1,
        "softmax_weighted": 3, "layernorm": 4, "squared_hinge": 2, "mlp": 5}
LOSSES = {name: globals()[name] for name in HAND}


def _printed(name):
    f = LOSSES[name]
    return srcjax.source(srcjax.grad(f)), f"{name}_grad"


@pytest.mark.parametrize("name", list(HAND))
def test_hand_written_gradient_is_a_gradient(name) -> None:
    import inspect

    hand = globals()[name + "_hand"]
    assert count_statements(inspect.getsource(hand), hand.__name__) == HAND[name]
    args = _args(name, np.random.default_rng(0))
    want = srcjax.tree_util.tree_leaves(srcjax.numpy_function(srcjax.grad(LOSSES[name]))(*args))
    got = srcjax.tree_util.tree_leaves(hand(*args))
    for a, b in zip(want, got, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-12)


def _ratios(form: str, specialized: bool = False) -> dict[str, float]:
    out = {}
    for name, hand in HAND.items():
        f = srcjax.grad(LOSSES[name])
        args = _args(name, np.random.default_rng(0)) if specialized else ()
        text = srcjax.source(f, *args, form=form)
        out[name] = count_statements(text, f"{name}_grad") / hand
    return out


def test_printed_gradients_are_close_to_hand_written() -> None:
    """Issue 20's target, for the gradient printed for the example arguments' shapes and dtypes
    (``srcjax.source(f, *args)``): at most 3x the hand-written statement count for each loss, 2x
    on average (1.63x and 3x when met).

    sigmoid_cross_entropy was the last one over (5 statements for a hand-written 1): its backward
    pass kept ``1.0 + exp(-z)`` alive for ``1.0 / add``'s rule and multiplied by ``1 / p`` for
    ``log``'s. ``1 / x``'s rule now reads its result (``-g * out * out``, as ``np.reciprocal``'s) and
    ``log``'s divides (``g / x``, as JAX's), so it prints ``exp``, ``p`` and the return. (A person
    writes ``p - y``: that is algebra, not the same floating-point program.)"""
    ratios = _ratios("readable", specialized=True)
    assert max(ratios.values()) <= 3.0, ratios
    assert sum(ratios.values()) / len(ratios) <= 2.0, ratios
    assert ratios["sigmoid_cross_entropy"] <= 3.0, ratios


def test_specialized_print_is_shorter() -> None:
    """What the print for the example arguments reaches (a floor, so it does not get worse): on
    average at most 2x the hand-written gradient (1.77x when written, 1.63x since ``1 / x`` and
    ``log`` read their results), never longer than the generic print, all 14 within 3x."""
    special, generic = _ratios("readable", specialized=True), _ratios("readable")
    assert all(special[n] <= generic[n] for n in HAND), (special, generic)
    assert sum(special.values()) / len(HAND) <= 1.57, special  # (1.56x since ridge's is 0.2 * w + ...)
    assert all(r <= 3.0 for r in special.values()), special
    assert special["ridge"] <= 1 and special["poisson_nll"] <= 1 and special["softmax_cross_entropy"] <= 1, special


def test_readable_form_is_shorter_than_anf() -> None:
    """What the readable pass reaches today (a floor, so it does not get worse): on average 0.6x the
    ANF form's statements, never longer, and 3.88x the hand-written gradient (was 5.27x before shapes
    were read from live values and results folded into the return, 4.06x before the guard's facts,
    ``srcjax.transforms.readable_facts``); 3.22x since constant cotangents are written as what they
    are (``unbroadcast(ones, x)`` is ``ones_like(x)``, ``ones * 2 * t`` is ``2 * t``: simplify.py),
    3.15x since ``expand_reduced(0.1 * ones, w, ...)`` is ``0.1 * ones_like(w)``; 11 of the 14 within 3x."""
    readable_, anf = _ratios("readable"), _ratios("anf")
    assert all(readable_[n] <= anf[n] for n in HAND), (readable_, anf)
    assert sum(readable_[n] / anf[n] for n in HAND) / len(HAND) <= 0.6, (readable_, anf)
    assert sum(readable_.values()) / len(HAND) <= 3.16, readable_
    assert sum(1 for r in readable_.values() if r <= 3.0) >= 11, readable_
    assert readable_["sigmoid_cross_entropy"] <= 9 and readable_["poisson_nll"] <= 4, readable_
    assert readable_["rosen"] <= 2.0 and readable_["mlp"] <= 3.0 and readable_["least_squares"] <= 3.0, readable_
    assert readable_["huber"] <= 3.0 and readable_["softmax_cross_entropy"] <= 2.5 and readable_["ridge"] <= 4, \
        readable_


def table() -> list[tuple[str, int, int, int, int]]:
    """(loss, hand-written, ANF form, readable form, readable form for the example arguments)
    statement counts: ``python -m tests.test_readable``."""
    rows = []
    for name, hand in HAND.items():
        f = srcjax.grad(LOSSES[name])
        fname = f"{name}_grad"
        args = _args(name, np.random.default_rng(0))
        rows.append((name, hand, count_statements(srcjax.source(f, form="anf"), fname),
                     count_statements(srcjax.source(f), fname), count_statements(srcjax.source(f, *args), fname)))
    return rows


if __name__ == "__main__":
    rows = table()
    print(f"{'loss':24} {'hand':>5} {'anf':>5} {'readable':>9} {'ratio':>6} {'for args':>9} {'ratio':>6}")
    for name, hand, anf, read, special in rows:
        print(f"{name:24} {hand:5} {anf:5} {read:9} {read / hand:6.2f} {special:9} {special / hand:6.2f}")
    print(f"{'mean ratio':24} {'':5} {sum(r[2] / r[1] for r in rows) / len(rows):5.2f} "
          f"{'':9} {sum(r[3] / r[1] for r in rows) / len(rows):6.2f} "
          f"{'':9} {sum(r[4] / r[1] for r in rows) / len(rows):6.2f}")
    print(f"{'max ratio':24} {'':5} {max(r[2] / r[1] for r in rows):5.2f} "
          f"{'':9} {max(r[3] / r[1] for r in rows):6.2f} {'':9} {max(r[4] / r[1] for r in rows):6.2f}")


# -- the readable form computes exactly what the ANF form computes -------------------------------------


def _run(text: str, fname: str, globs: dict, *args):
    ns = dict(globs)
    exec(compile(text, f"<{fname}>", "exec"), ns)
    return ns[fname](*args)


def _same(a, b) -> None:
    for x, y in zip(srcjax.tree_util.tree_leaves(a), srcjax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("name", list(HAND))
def test_losses_readable_and_anf_forms_agree(name) -> None:
    f = srcjax.grad(LOSSES[name])
    args = _args(name, np.random.default_rng(1))
    fname = f"{name}_grad"
    got = _run(srcjax.source(f), fname, globals(), *args)
    _same(got, _run(srcjax.source(f, form="anf"), fname, globals(), *args))
    special = _run(srcjax.source(f, *args), fname, globals(), *args)  # (NumPy: the same up to rounding)
    for a, b in zip(srcjax.tree_util.tree_leaves(got), srcjax.tree_util.tree_leaves(special), strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-12, atol=1e-14)
    _same(got, srcjax.numpy_function(f)(*args))
    np.testing.assert_allclose(np.asarray(srcjax.tree_util.tree_leaves(f(*args))[0]),
                               np.asarray(srcjax.tree_util.tree_leaves(got)[0]), rtol=1e-12, atol=1e-14)


def test_random_programs_readable_and_anf_forms_agree(tmp_path_factory) -> None:
    """grad, jvp and vmap of random programs with control flow on data (tests/test_ad_control.py's
    generator): the two forms run by NumPy give identical numbers."""
    from hypothesis import HealthCheck, given, note, settings

    from tests.test_ad_control import control_program
    from tests.written import numpy_and_jax

    scale = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1

    @settings(max_examples=12 * scale, deadline=None, database=None, suppress_health_check=list(HealthCheck),
              derandomize=scale == 1)  # (the default sample is fixed)
    @given(control_program())
    def check(text):
        note(text)
        f, _ = numpy_and_jax(tmp_path_factory.mktemp("readable", numbered=True), text, "rd")
        rng = np.random.default_rng(3)
        x, w = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
        for g, fname, args in ((srcjax.grad(f, argnums=(0, 1)), "f_grad", (x, w)),
                               (srcjax.vmap(f), "f_vmap", (np.stack([x, w]), np.stack([w, x])))):
            _same(_run(srcjax.source(g), fname, f.__globals__, *args),
                  _run(srcjax.source(g, form="anf"), fname, f.__globals__, *args))

    check()


# -- the pass on its own: what moves and what does not ---------------------------------------------------


def _fold(body: str, keep: frozenset[str] = frozenset({"x", "y"})) -> str:
    text = "import numpy as np\n\n\ndef f(x, y):\n" + "".join("    " + ln + "\n" for ln in body.split("\n"))
    out = readable.readable_source(text, {"ones_like"}, keep)
    return out.split("def f(x, y):\n")[1]


def test_single_use_temporaries_fold_with_parentheses_where_needed() -> None:
    assert _fold("add = x + y\nmul = add * 2.0\nreturn mul") == "    return (x + y) * 2.0\n"
    assert _fold("sub = x - y\nsub_1 = y - sub\nreturn sub_1") == "    return y - (x - y)\n"
    assert _fold("pow_1 = x ** 2\nneg = -pow_1\nreturn neg") == "    return -(x ** 2)\n"
    assert _fold("neg = -x\npow_1 = neg ** 2\nreturn pow_1") == "    return (-x) ** 2\n"
    assert _fold("pow_1 = x ** y\npow_2 = 2.0 ** pow_1\nreturn pow_2") == "    return 2.0 ** x ** y\n"
    assert _fold("s = x, y\nreturn np.stack(s)") == "    return np.stack((x, y))\n"


def test_names_the_user_wrote_and_multiple_uses_stay() -> None:
    assert _fold("h = np.tanh(x)\nreturn h * y", keep=frozenset({"x", "y", "h"})) == \
        "    h = np.tanh(x)\n    return h * y\n"
    assert _fold("t = np.tanh(x)\nreturn t * t") == "    t = np.tanh(x)\n    return t * t\n"
    assert _fold("t = np.tanh(x)\nx_bar = t * y\nreturn x_bar * t") == \
        "    t = np.tanh(x)\n    x_bar = t * y\n    return x_bar * t\n"


def test_a_derivative_result_folds_only_where_it_still_reads_as_itself() -> None:
    """``x_bar`` (the derivative of a parameter) folds into ``return x_bar`` and into the statement
    that accumulates into it (``x_bar = x_bar + ...``), nowhere else; a user's own ``x_bar`` stays."""
    assert _fold("t = np.tanh(x)\nx_bar = t * y\nreturn x_bar") == "    return np.tanh(x) * y\n"
    assert _fold("x_bar = np.cos(y)\nx_bar = x_bar + np.sin(x)\nreturn x_bar") == \
        "    return np.cos(y) + np.sin(x)\n"
    body = "x_bar = np.sin(x)\nreturn x_bar * y"
    assert _fold(body) == "".join("    " + ln + "\n" for ln in body.split("\n"))
    body = "x_bar = np.sin(x)\nreturn x_bar"
    assert _fold(body, keep=frozenset({"x", "y", "x_bar"})) == "".join("    " + ln + "\n" for ln in body.split("\n"))
    body = "y_bar = np.sin(x)\nx_bar = y_bar * y\nreturn x_bar, y_bar"  # read twice: stays
    assert _fold(body) == "    y_bar = np.sin(x)\n    x_bar = y_bar * y\n    return x_bar, y_bar\n"


def test_nothing_moves_across_side_effects_rebinding_or_blocks() -> None:
    body = "t = np.tanh(x)\nitems.append(y)\nreturn t"
    assert _fold(body) == "".join("    " + ln + "\n" for ln in body.split("\n"))
    body = "t = np.tanh(x)\n_tape.append(g(y))\nreturn t"  # a call inside the push
    assert _fold(body) == "".join("    " + ln + "\n" for ln in body.split("\n"))
    # pushing names on the tape changes nothing a pure expression reads
    assert _fold("t = np.tanh(x)\n_tape.append((x, y,))\nreturn t") == \
        "    _tape.append((x, y,))\n    return np.tanh(x)\n"
    body = "t = x[0]\nx[0] = 1.0\nreturn t"
    assert _fold(body) == "".join("    " + ln + "\n" for ln in body.split("\n"))
    body = "t = np.tanh(y)\ny = x\nreturn t"
    assert _fold(body, keep=frozenset()) == "".join("    " + ln + "\n" for ln in body.split("\n"))
    body = "t = np.tanh(x)\nfor k in range(3):\n    y = y + t\nreturn y"
    assert _fold(body) == "".join("    " + ln + "\n" for ln in body.split("\n"))
    body = "t = np.tanh(x)\nreturn g(y, t) + h()"  # h() would run before np.tanh(x)
    assert _fold(body) == "".join("    " + ln + "\n" for ln in body.split("\n"))
    assert _fold("t = np.tanh(x)\nreturn g(y, t)") == "    return g(y, np.tanh(x))\n"


def test_lines_stay_short() -> None:
    long = " + ".join(["np.tanh(x)"] * 8)
    body = f"t = {long}\nreturn np.sum(t * y) + np.sum(t * y * y) + np.sin(y)"
    assert _fold(body.replace("np.sum(t * y) + ", "")).count("\n") == 2


def test_views_are_read_at_each_use() -> None:
    assert _fold("getitem = x[:-1]\nreturn getitem * getitem + y[1:]") == "    return x[:-1] * x[:-1] + y[1:]\n"


def _tidy(line: str, keep: frozenset[str] = frozenset()) -> str:
    return readable.tidy(f"def f(a, b):\n    {line}\n", keep).split("\n")[1].strip()


def test_tidying_is_exact() -> None:
    assert _tidy("y = -(-x)") == "y = x"
    assert _tidy("y = a * 2 * b") == "y = 2 * a * b"
    assert _tidy("y = 100.0 * a * 2 * b") == "y = 200.0 * a * b"
    assert _tidy("y = -(2.5 * a)") == "y = -2.5 * a"
    assert _tidy("y = -(100.0 * a * 2)") == "y = -200.0 * a"
    assert _tidy("y = -(2 * a)") == "y = -(2 * a)"  # an unsigned a: -2 does not fit
    assert _tidy("y = 0.1 * a * 3") == "y = 0.1 * a * 3"  # rounding: not gathered
    assert _tidy("y = -a * 2 * b") == "y = -a * 2 * b"
    # a negated product or quotient that leads with a negated float: both signs go
    assert _tidy("y = -(-(1.0 - a) / b)") == "y = (1.0 - a) / b"
    assert _tidy("y = -(-(a / b + a) * b * a)") == "y = (a / b + a) * b * a"
    assert _tidy("y = -(-(-(-(1.0 - a) / b) + -a / b) * b)") == "y = ((1.0 - a) / b + -a / b) * b"
    assert _tidy("y = -(-a * b)") == "y = -(-a * b)"  # a may be an integer: -a may wrap
    assert _tidy("y = -(-a / b)") == "y = -(-a / b)"
    assert _tidy("y = -(b * -(1.0 - a))") == "y = -(b * -(1.0 - a))"  # (only a leading one)
    assert _tidy("y = a * 2 * b", keep=frozenset({"y"})) == "y = a * 2 * b"  # the user's line, as written
    assert _tidy("y_bar = a * 2 * b", keep=frozenset({"y"})) == "y_bar = 2 * a * b"
    i8 = np.array([-128, 5], dtype=np.int8)  # why an integer's negation is not removed: it wraps
    with np.errstate(all="ignore"):
        assert not np.array_equal(-(-i8 / 2.0), i8 / 2.0)
        for a in (np.float16(3.5), np.float32(-7.25), np.array([np.inf, -0.0, np.nan, 1e308]), 1.0 + 2j):
            b = np.float32(0.3)
            for x, y in ((-(-(1.0 - a) / b), (1.0 - a) / b), (-(-(1.0 - a) * b * 3), (1.0 - a) * b * 3)):
                assert np.array_equal(x, y, equal_nan=True) and np.result_type(x) == np.result_type(y)
    for a in (np.float16(3.5), np.float32(-7.25), np.arange(4, dtype=np.int8), 1e308, 3):
        assert np.array_equal(100.0 * a * 2 * 1.5, 200.0 * a * 1.5)
        assert np.result_type(100.0 * a * 2) == np.result_type(200.0 * a)


def test_anf_form_and_cli_flag(tmp_path) -> None:
    f = srcjax.grad(rosen)
    anf, text = srcjax.source(f, form="anf"), srcjax.source(f)
    assert "getitem" in anf and "getitem" not in text
    assert count_statements(text, "rosen_grad") < count_statements(anf, "rosen_grad")
    with pytest.raises(srcjax.TranspileError, match="form"):
        srcjax.source(f, form="tree")


def test_views_stay_where_a_call_may_write_into_them() -> None:
    body = "t = y[1:]\nt.append(x)\nreturn t"
    assert _fold(body) == "".join("    " + ln + "\n" for ln in body.split("\n"))


def test_a_binding_read_once_folds_even_when_its_name_is_bound_again() -> None:
    assert _fold("a_bar = y\na_bar = a_bar + np.sin(x)\nreturn a_bar * 2.0") == \
        "    return (y + np.sin(x)) * 2.0\n"
    body = "g = index_add(zeros_like(x), 0, y)\ng = index_add(g, 1, y)\nreturn g"  # accumulations stay
    assert _fold(body) == "".join("    " + ln + "\n" for ln in body.split("\n"))
    body = "a = np.sin(x)\nb = a * a\na = np.cos(x)\nreturn a + b"  # read twice: stays; the second folds
    assert _fold(body) == "    a = np.sin(x)\n    b = a * a\n    return np.cos(x) + b\n"


# -- renumbering the survivors (srcjax.transforms.readable_names) ----------------------------------------


def _renumber(body: str, keep: frozenset[str] = frozenset()) -> str:
    from srcjax.transforms.readable_names import renumber

    text = "import numpy as np\n\n\ndef f(x, y):\n" + "".join("    " + ln + "\n" for ln in body.split("\n"))
    return renumber(text, keep).split("def f(x, y):\n")[1]


def _lines(body: str) -> str:
    return "".join("    " + ln + "\n" for ln in body.split("\n"))


def test_survivors_take_the_lowest_numbers_with_their_derivatives() -> None:
    assert _renumber("sub_1 = x - y\nsub_1_bar = sub_1 * 2\nsub_3 = sub_1_bar + x\nreturn sub_3") == \
        _lines("sub = x - y\nsub_bar = sub * 2\nsub_1 = sub_bar + x\nreturn sub_1")
    assert _renumber("out_bar_1 = x * y\nreturn out_bar_1") == _lines("out_bar = x * y\nreturn out_bar")
    body = "sum_1 = np.sum(x)\nreturn sum_1"  # not `sum`: a builtin
    assert _renumber(body) == _lines(body)


def test_renumbering_leaves_what_it_cannot_rename_freely() -> None:
    for body, keep in (("sub_1 = x - y\nreturn sub_1 + sub", frozenset()),  # sub: a global it reads
                       ("sub_1 = x - y\nreturn sub_1", frozenset({"sub"})),  # the user's name
                       ("sub_1 = x - y\nreturn sub_1", frozenset({"sub_1"})),
                       ("sub_1 = x - y\nreturn [sub_1 for _ in y]", frozenset()),  # a nested scope
                       ("sub_1 = x - y\nif y:\n    sub_1 = y\nreturn sub_1", frozenset())):  # control flow
        assert _renumber(body, keep) == _lines(body), body
    text = "import numpy as np\n\n\ndef f(x_1, y):\n    x_2 = x_1 * y\n    return x_2\n"  # a parameter's family
    from srcjax.transforms.readable_names import renumber
    assert renumber(text) == text
    text = "exp = 2\n\n\ndef f(x, y):\n    exp_1 = np.exp(x)\n    return exp_1\n"  # a module-level name
    assert renumber(text) == text


def test_two_families_never_take_one_name() -> None:
    """``mul_4`` (family ``mul``, after ``mul_3``) and ``mul_1_1`` (family ``mul_1``) would both become
    ``mul_1``: two values, one name, a silently wrong program (found batching four nested
    ``srcjax.lax.switch`` calls). The second family keeps its names."""
    body = ("mul_3 = x * y\nmul_1_1 = x * 1.1\nc = np.cos(mul_1_1)\nmul_4 = c * mul_1_1\n"
            "return np.tanh(mul_1_1) + mul_4 + mul_3")
    want = ("mul = x * y\nmul_1_1 = x * 1.1\nc = np.cos(mul_1_1)\nmul_1 = c * mul_1_1\n"
            "return np.tanh(mul_1_1) + mul_1 + mul")
    assert _renumber(body) == _lines(want)
    x, y = np.linspace(-1.0, 1.0, 5), 0.5
    got = _run("import numpy as np\n\n\ndef f(x, y):\n" + _renumber(body), "f", globals(), x, y)
    _same(got, _run("import numpy as np\n\n\ndef f(x, y):\n" + _lines(body), "f", globals(), x, y))


def test_renumbered_derivative_computes_the_same() -> None:
    """The renamed readable program and the ANF form give the same numbers (renaming is alpha-renaming)."""
    f = srcjax.grad(mlp)
    text = srcjax.source(f)
    assert "out_bar_1" not in text and "out_bar = " in text
    args = _args("mlp", np.random.default_rng(5))
    _same(_run(text, "mlp_grad", globals(), *args), _run(srcjax.source(f, form="anf"), "mlp_grad", globals(), *args))


def test_loop_bodies_fold_and_branches_stay() -> None:
    """Inside a ``for`` body temporaries fold as anywhere, nothing crosses the loop's boundary; a
    function with an ``if`` (which srcjax may functionalize) is left as it is."""
    body = "acc = x\nfor i in range(3):\n    t = np.sin(acc)\n    acc = t * y\nreturn acc"
    assert _fold(body) == _lines("acc = x\nfor i in range(3):\n    acc = np.sin(acc) * y\nreturn acc")
    body = "t = np.sin(x)\nfor i in range(3):\n    u = np.cos(y)\n    y = y + u\nz = y * 2.0\nreturn z + t"
    assert _fold(body) == _lines("t = np.sin(x)\nfor i in range(3):\n    y = y + np.cos(y)\nreturn 2.0 * y + t")
    body = "t = np.sin(x)\nif y:\n    u = np.cos(y)\n    y = u * 2.0\nreturn t + y"
    assert _fold(body) == _lines(body)


def test_a_copy_of_a_folded_definition_keeps_its_precedence() -> None:
    """Regression: ``s = s + b; c = s; m = 200.0 * c`` folded ``s + b`` into the copy ``c = s``, then
    ``c`` into the product with a name's precedence: ``200.0 * np.sum(g) + b`` (a silent wrong
    answer the specialized print's checker caught for ``jacrev(grad(rosen))``)."""
    src = ("import numpy as np\n\n\ndef f(b, g):\n    s = np.sum(g)\n    s = s + b\n    c = s\n"
           "    m = 200.0 * c\n    return m\n")
    for tidy in (True, False):
        text = readable.readable_source(src, set(), frozenset({"b", "g"}), tidy)
        ns: dict = {}
        exec(text, ns)  # noqa: S102 - the module printed, run by NumPy
        g = np.arange(3.0)
        assert ns["f"](2.0, g) == 200.0 * (np.sum(g) + 2.0), text


def test_jvp_of_augmented_assignments_is_the_derivative() -> None:
    """Regression (a silent wrong answer, on the program that runs and on its print): the folding
    wrote ``pow_dot = a + b / 4 * 2 * y`` for ``(a + b) / 4 * 2 * y`` in the JVP of ``y = x.copy();
    y += 1; y *= 2.0; y -= x; y /= 4; y **= 2`` (``y = (x + 2) / 4``, so ``dy**2 = (x + 2) / 8 * dx``):
    ``srcjax.jvp`` gave 1.6875 for 0.3125."""
    from srcjax import autodiff
    from srcjax.api import _as_compiled
    from srcjax.printing import exec_module
    from tests.corpus_programs import augmented_assignment

    x, t = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.25, -0.5])
    want = (x + 2) / 8 * t
    np.testing.assert_allclose(np.asarray(srcjax.jvp(augmented_assignment, (x,), (t,))[1]), want, rtol=1e-12)
    f = autodiff._wrap(augmented_assignment, "jvp", (0,), False)
    printed = exec_module(srcjax.source(f), _as_compiled(f).program)(x, t)
    np.testing.assert_allclose(printed[1], want, rtol=1e-12)


def test_jvp_of_attention_is_the_derivative() -> None:
    """Regression (the same folding bug): ``w_dot = (a + b) * w`` ran as ``a + b * w`` in the JVP of
    tests/ad_programs.attention (softmax's ``scores - max``); checked against central differences."""
    from tests import ad_programs as P

    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    t = rng.standard_normal(q.shape)
    _, tan = srcjax.jvp(P.attention, (q, k, v), (t, np.zeros_like(k), np.zeros_like(v)))
    h = 1e-6
    fd = (np.asarray(P.attention(q + h * t, k, v)) - np.asarray(P.attention(q - h * t, k, v))) / (2 * h)
    np.testing.assert_allclose(np.asarray(tan), fd, rtol=1e-6, atol=1e-7)


def _max_loss(x):
    return (np.max(x, axis=0) * 2.0).sum()


def test_annotated_defaults_of_helpers_print_as_pep8_spaces_them() -> None:
    """A library helper's ``initial: Any = None`` printed as ``initial = None`` once its annotation was
    dropped (PEP 8: ``initial=None`` without one)."""
    import re

    text = srcjax.source(srcjax.vmap(srcjax.grad(_max_loss)))
    assert "initial=None)" in text, text
    assert not re.search(r"^def .*\w = ", text, re.M), text


def test_statements_the_scan_passes_over_have_nothing_to_tidy(monkeypatch) -> None:
    """Only a statement holding a negated negation or number, a number after ``*``, a comment or a backslash
    is read by tidy; the others come out as reading every statement with ``-`` or ``*`` made them."""
    import re

    text = ("def f(a, b):\n    c = a * b - b\n    d = -(-a * 2.5) * b * 2\n    e = a * (-2) * b\n"
            "    g = -(2.5 * a)\n    h = -(-(a * b))  # c\n    return c * d * e * g * h\n")
    assert readable._TIDIED.search("    c = a * b - b") is None
    got = readable.tidy(text)
    assert "e = -2 * a * b" in got and "g = -2.5 * a" in got and "h = a * b" in got, got
    monkeypatch.setattr(readable, "_TIDIED", re.compile(r"[-*]"))
    assert readable.tidy(text) == got


_TIDY_SAMPLE = [c for c in __import__("tests.golden", fromlist=["cases"]).cases()
                if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" or
                __import__("zlib").crc32(c[0].encode()) % 40 == 17]


@pytest.mark.parametrize("name,fn,transform", _TIDY_SAMPLE, ids=[c[0] for c in _TIDY_SAMPLE])
def test_tidy_reads_as_when_every_negation_and_product_was_read(name, fn, transform, monkeypatch) -> None:
    """Every text tidied while a sample of the golden corpora is written (all of them in the thorough tier)
    comes out as it did when each statement with a ``-`` or a ``*`` was read."""
    import re

    from tests.golden import render

    original = readable.tidy
    scan = readable._TIDIED

    def checked(text: str, keep: frozenset[str] = frozenset()) -> str:
        got = original(text, keep)
        monkeypatch.setattr(readable, "_TIDIED", re.compile(r"[-*]"))
        try:
            assert got == original(text, keep), text
        finally:
            monkeypatch.setattr(readable, "_TIDIED", scan)
        return got

    monkeypatch.setattr(readable, "tidy", checked)
    render(fn, transform)
