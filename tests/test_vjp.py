"""srcjax.vjp as two programs: a forward half returning the output and residuals, a backward half on them.

Oracles: jax.vjp on the jax.numpy twin (float64), the generated halves run by NumPy, and the
number of compiled program executions (one per half: the backward half recomputes nothing).
"""

import numpy as np
import pytest

import srcjax
from srcjax import cpp_calls
from srcjax.autodiff import derivative_function
from srcjax.runtime import xla
from tests import ad_programs as P
from tests import container_programs as C
from tests.test_ad import args_for, jax_twin
from tests.test_ad_control import jax_twin as control_twin
from tests.test_ad_control import newton_unbounded
from tests.test_containers import jax_twin as container_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

rng = np.random.default_rng(11)


def loss(w, x, y):  # the README's
    p = np.tanh(x @ w)
    return np.mean((p - y) ** 2)


def rolled(x, v):  # a loop long enough to roll: its tape is one stacked Segment
    h = x
    for _ in range(12):
        h = np.sin(h * v) + h
    return np.sum(h * h)


def unrolled(x, v):  # a loop of two: unrolled, its tape is per-iteration values
    h = x
    for _ in range(2):
        h = np.tanh(h * v)
    return np.sum(h)


def seeded(x, v):  # a loop over the rows of an array, and values saved by an inner `if` on data
    acc = np.zeros_like(v)
    for row in x:
        s = np.sum(row * v)
        if s > 0:
            acc = acc + np.sin(row) * s
        else:
            acc = acc - row
    return np.sum(acc * acc)


def _check(fn, args, twin, cts, **kw):
    out, f = srcjax.vjp(fn, *args, **kw)
    jout, jf = jax.vjp(twin, *args)
    assert f.recomputes is False
    np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-12, atol=1e-12)
    for ct in cts:  # the same vjp_fn, called again with another cotangent
        for a, b in zip(f(ct), jf(ct), strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)


STRAIGHT = [P.mse_tanh, P.mlp_loss, P.softmax_xent, P.layer_norm, P.attention, P.reassign, P.reductions]


@pytest.mark.parametrize("fn", STRAIGHT + [P.coupled_loop, P.long_loop, P.data_branches, P.loop_in_helper],
                         ids=lambda f: f.__name__)
def test_split_vjp_matches_jax(fn):
    _check(fn, args_for(fn), jax_twin(fn), [1.0, -2.5])


def _twin(fn):
    import inspect

    import jax.numpy as jnp

    ns = {"np": jnp}
    exec(compile(inspect.getsource(fn), __file__, "exec"), ns)
    return ns[fn.__name__]


@pytest.mark.parametrize("fn", [rolled, unrolled, seeded], ids=lambda f: f.__name__)
def test_split_vjp_through_loops(fn):
    args = (rng.normal(size=(5, 3)) if fn is seeded else rng.normal(size=3), rng.normal(size=3))
    _check(fn, args, _twin(fn), [1.0, 0.3])


def test_a_rolled_loop_saves_stacked_rows_and_the_backward_half_loops_over_them():
    x, v = rng.normal(size=3), rng.normal(size=3)
    _, f = srcjax.vjp(rolled, x, v)
    halves = f._halves
    fwd_hlo = srcjax.lower(halves.fwd, x, v).as_text()
    bwd_hlo = srcjax.lower(halves.bwd, *f._saved, np.float64(1.0)).as_text()
    assert "stablehlo.while" in fwd_hlo and "stablehlo.while" in bwd_hlo
    assert "tensor<12x3xf64>" in bwd_hlo  # the tape: 12 rows of the loop's saved value, an argument


def test_while_on_data_with_max_iters():
    a = np.array([2.0, 3.0])
    out, f = srcjax.vjp(newton_unbounded, a, max_iters=60)
    assert f.recomputes is False
    for ct in (1.0, 2.0):
        (da,) = f(ct)
        np.testing.assert_allclose(np.asarray(da), ct * 0.5 / np.sqrt(a), rtol=1e-9)
    _, jf = jax.vjp(control_twin(newton_unbounded), a)
    np.testing.assert_allclose(np.asarray(f(1.0)[0]), np.asarray(jf(1.0)[0]), rtol=1e-9)


def test_containers_in_and_out():
    p, x = {"w": rng.normal(size=(3, 2))}, rng.normal(size=(4, 3))
    out, f = srcjax.vjp(C.outputs_tree, p, x)
    jout, jf = jax.vjp(container_twin(C.outputs_tree), p, x)
    assert f.recomputes is False
    ct = {"h": rng.normal(size=(4, 2)), "pair": (1.5, rng.normal(size=(3, 2)))}
    for a, b in zip(jax.tree_util.tree_leaves(f(ct)), jax.tree_util.tree_leaves(jf(ct)), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


def test_python_scalar_primal_and_float32_cotangent_dtype():
    out, f = srcjax.vjp(P.scalar_fn, 0.7)
    (g,) = f(1.0)
    _, jf = jax.vjp(jax_twin(P.scalar_fn), 0.7)
    np.testing.assert_allclose(float(g), float(jf(1.0)[0]), rtol=1e-12)
    w, x, y = (rng.normal(size=s).astype(np.float32) for s in ((3, 2), (5, 3), (5, 2)))
    _, f = srcjax.vjp(loss, w, x, y)
    assert all(np.asarray(b).dtype == np.float32 for b in f(1.0))  # a Python 1.0 takes the output's dtype


def _runs(monkeypatch):
    count = [0]
    run, run_one = xla.Executable.run, xla.Executable.run_one

    def counted(self, bufs):
        count[0] += 1
        return run(self, bufs)

    def counted_one(self, bufs):
        count[0] += 1
        return run_one(self, bufs)

    monkeypatch.setattr(xla.Executable, "run", counted)
    monkeypatch.setattr(xla.Executable, "run_one", counted_one)
    return count


def test_one_program_per_half_and_no_forward_work_in_the_backward_half(monkeypatch):
    w, x, y = rng.normal(size=(3, 2)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    srcjax.vjp(loss, w, x, y)[1](1.0)  # compile both
    h = srcjax.vjp(loss, w, x, y)[1]._halves
    for half in (h.fwd, h.bwd):  # (runs counted on srcjax's Python path: not through jaxlib's C++ dispatcher)
        cpp_calls.detach(half)
    count = _runs(monkeypatch)
    out, f = srcjax.vjp(loss, w, x, y)
    assert count[0] == 1  # the forward half
    f(1.0)
    f(2.0)
    assert count[0] == 3  # one backward run per cotangent
    halves = f._halves
    fwd = srcjax.lower(halves.fwd, w, x, y).as_text()
    bwd = srcjax.lower(halves.bwd, *f._saved, np.float64(1.0))
    assert "stablehlo.tanh" in fwd
    assert "tanh" not in bwd.as_text()  # d tanh reads the saved output: tanh is not recomputed
    assert bwd.compile().as_text().count(" dot(") == 2  # x_bar and w_bar; `x @ w` is not recomputed


def test_source_shows_both_halves_and_saves_only_what_the_adjoint_reads():
    w, x, y = rng.normal(size=(3, 2)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    _, f = srcjax.vjp(loss, w, x, y)
    text = srcjax.source(f)
    fwd, bwd = text.split("def loss_vjp_bwd")
    assert "def loss_vjp_fwd(w, x, y):" in fwd
    # not matmul (tanh's rule reads its output), not pow_1 (a shape); the mean is folded into the return
    assert "return np.mean(sub ** 2), (p, sub)" in fwd
    assert "return mean, (p, sub)" in srcjax.source(f, form="anf")
    assert bwd.startswith("(w, x, y, p, sub, out_bar):")
    assert "np.tanh" not in bwd and "@" not in bwd


@pytest.mark.parametrize("fn", [P.mlp_loss, P.layer_norm, P.data_branches, P.coupled_loop, rolled, seeded],
                         ids=lambda f: f.__name__)
def test_numpy_run_of_the_halves_matches_xla(fn):
    if fn in (rolled, seeded):
        args = (rng.normal(size=(5, 3)) if fn is seeded else rng.normal(size=3), rng.normal(size=3))
    else:
        args = args_for(fn)
    fwd = derivative_function(fn, "vjp_split", tuple(range(len(args))))
    bwd, reads, _ = fwd.__srcjax_split__
    out, res = fwd(*args)  # plain Python: NumPy runs it
    ct = 0.7
    bars = bwd(*[args[i] for i in reads], *res, ct)
    again = bwd(*[args[i] for i in reads], *res, ct)  # the tape is copied before it is popped
    x_out, f = srcjax.vjp(fn, *args)
    np.testing.assert_allclose(np.asarray(x_out), out, rtol=1e-12)
    for a, b, c in zip(f(ct), bars, again, strict=True):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(c, b)


def test_numpy_device_recomputes():
    c = srcjax.compile(loss, device="numpy")
    w, x, y = rng.normal(size=(3, 2)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    out, f = srcjax.vjp(c, w, x, y)
    assert f.recomputes is True
    _, g = srcjax.vjp(loss, w, x, y)
    for a, b in zip(f(1.0), g(1.0)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


def test_source_of_a_recomputing_vjp_in_both_forms():
    """Regression: source() of a VJP that runs one program (device="numpy", or a split that fell back)
    raised a TypeError from srcjax's internals (form was passed to a method that took none)."""
    w, x, y = rng.normal(size=(3, 2)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    _, f = srcjax.vjp(srcjax.compile(loss, device="numpy"), w, x, y)
    assert f.recomputes is True
    for form in ("readable", "anf"):
        assert "def loss_vjp(w, x, y, out_bar):" in srcjax.source(f, form=form)
    _, g = srcjax.vjp(loss, w, x, y)
    g._halves.recompute = "as if the split had failed"
    for form in ("readable", "anf"):
        text = srcjax.source(g, form=form)
        assert "def loss_vjp(w, x, y, out_bar):" in text and "_fwd" not in text


def test_grad_is_still_one_program():
    text = srcjax.source(srcjax.grad(loss))
    assert "def loss_grad(w, x, y):" in text and "_fwd" not in text


def _int_args(x, n, labels):
    y = x
    for _ in range(n):
        y = np.sin(y) * 2.0
    return y[labels]


def test_vjp_with_integer_arguments_gives_none_for_them():
    x, labels = np.array([0.1, 0.2, 0.3]), np.array([2, 0])
    out, pull = srcjax.vjp(_int_args, x, 3, labels)
    ct = np.array([1.0, 2.0])
    x_bar, n_bar, labels_bar = pull(ct)
    assert n_bar is None and labels_bar is None  # (JAX gives float0 zeros there)

    def jf(x):
        y = x
        for _ in range(3):
            y = jax.numpy.sin(y) * 2.0
        return y[labels]

    np.testing.assert_allclose(np.asarray(out), np.asarray(jf(x)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(x_bar), np.asarray(jax.vjp(jf, x)[1](ct)[0]), rtol=1e-12)
