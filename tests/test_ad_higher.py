"""Reverse mode over generated reverse-mode code with loops (reverse over reverse).

A gradient's source saves loop values on a tape (``_tape.append(y)`` ... ``y = _tape.pop()``).
Differentiating it again in reverse mode treats the tape as a stack of values: the adjoint of
``v = _tape.pop()`` pushes ``v_bar`` on ``_tape_bar``, the adjoint of ``_tape.append(v)`` pops it
into ``v_bar``. Each result is checked against jax (``jax.jacrev(jax.grad(f))``, ...) on a
jax.numpy twin, and against the generated source run by NumPy.
"""

import numpy as np
import pytest
from hypothesis import Phase, given
from hypothesis import strategies as st

import srcjax
from tests import twins
from tests.test_ad_control import _STEPS
from tests.twins import JAX
from tests.written import examples, numpy_and_jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


# -- programs (module level: srcjax reads their source) ---------------------------------------

def f3(x, n=3):
    y = x
    for _ in range(n):
        y = np.tanh(y) * x
    return np.sum(y)


def over_shape(x):
    y = x
    for i in range(x.shape[0]):
        y = np.tanh(y) * x + i * 0.1
    return np.sum(y)


def two_steps(x):
    y = x
    for _ in range(2):  # short: unrolled
        y = np.sin(y) * x
    return np.sum(y * y)


def nested(x):
    y = x
    for _ in range(3):
        for j in range(4):
            y = np.sin(y) * x + 0.1 * j
        y = y * np.cos(x)
    return np.sum(y * y)


def indexed(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(x[i]) * s + x[i] ** 2
    return s


def with_break(x):
    y = x
    for _ in range(6):
        y = np.sin(y) * 1.5 + x
        if np.max(y) > 2.0:
            break
    return np.sum(y ** 2)


def with_continue(x):
    y = x
    for k in range(5):
        if np.sum(y) < -0.2:
            continue
        y = y * 0.8 + np.tanh(y) * k
    return np.sum(y * x)


def if_on_data(x):
    y = x
    for _ in range(4):
        if np.sum(y) > 0.5:
            y = np.tanh(y) * 1.5
        else:
            y = y * y - 0.5
    return np.sum(y)


def while_on_data(x):
    y = x
    while np.sum(y * y) < 10.0:
        y = y * 1.3 + np.sin(y)
    return np.sum(y)


def matvec(x, w):
    h = x
    for _ in range(4):
        h = np.tanh(w @ h)
    return np.sum(h ** 2)


@srcjax.custom_vjp
def softplus(x):
    return np.log1p(np.exp(x))


def softplus_fwd(x):
    return softplus(x), (x,)


def softplus_bwd(res, g):
    (x,) = res
    return (g / (1 + np.exp(-x)),)


softplus.defvjp(softplus_fwd, softplus_bwd)


def custom_in_loop(x):
    h = x
    for _ in range(3):
        h = softplus(h) * 0.5 + h * h * 0.1
    return h


def custom_in_loop_vec(x):
    h = x
    for _ in range(4):
        h = softplus(h) * x
    return np.sum(h)


def jax_twin(fn):
    @jax.custom_vjp
    def sp(x):
        return jnp.log1p(jnp.exp(x))

    sp.defvjp(lambda x: (sp(x), (x,)), lambda res, g: (g / (1 + jnp.exp(-res[0])),))
    return twins.jax_twin(fn, LABELS=LABELS, softplus=sp)


def agree(ours, ref, numpy_run):
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(np.asarray(numpy_run), np.asarray(ours), rtol=1e-10, atol=1e-12)


X3 = np.linspace(0.1, 0.5, 3)
X5 = np.linspace(-0.4, 0.5, 5)
LOOPS = [(f3, X3), (over_shape, X5), (two_steps, X3), (nested, X3), (indexed, X5), (with_break, X3),
         (with_continue, X5), (if_on_data, X3)]


# -- jacrev(grad), vjp(grad), jacrev(jacrev) ----------------------------------------------------

@pytest.mark.parametrize("fn,x", LOOPS, ids=[fn.__name__ for fn, _ in LOOPS])
def test_jacrev_of_grad_through_loops(fn, x):
    h = srcjax.jacrev(srcjax.grad(fn))
    agree(h(x), JAX.jacrev(JAX.grad(jax_twin(fn)))(x), srcjax.numpy_function(h)(x))


@pytest.mark.parametrize("fn,x", LOOPS[:4], ids=[fn.__name__ for fn, _ in LOOPS[:4]])
def test_vjp_of_grad_through_loops(fn, x):
    ct = np.cos(np.arange(x.size) + 1.0)
    out, pull = srcjax.vjp(srcjax.grad(fn), x)
    ref_out, ref_pull = jax.vjp(JAX.grad(jax_twin(fn)), x)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12)
    (bar,) = pull(ct)
    np.testing.assert_allclose(bar, ref_pull(ct)[0], rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("fn,x", [(f3, X3), (over_shape, X5), (with_break, X3)], ids=["f3", "over_shape", "break"])
def test_jacrev_of_jacrev_through_loops(fn, x):
    h = srcjax.jacrev(srcjax.jacrev(fn))
    agree(h(x), JAX.jacrev(JAX.jacrev(jax_twin(fn)))(x), srcjax.numpy_function(h)(x))


def test_static_loop_count_as_an_argument():
    h = srcjax.jacrev(srcjax.grad(f3))
    ref = JAX.jacrev(JAX.grad(jax_twin(f3)), argnums=0)
    for n in (1, 4):
        np.testing.assert_allclose(h(X3, n), ref(X3, n), rtol=1e-9, atol=1e-12)


def test_while_on_data_with_max_iters():
    h = srcjax.jacrev(srcjax.grad(while_on_data, max_iters=20))
    agree(h(X3), JAX.jacrev(JAX.grad(jax_twin(while_on_data)))(X3), srcjax.numpy_function(h)(X3))


@pytest.mark.parametrize("argnum", [0, 1])
def test_jacrev_of_grad_of_a_matrix_loop(argnum):
    w = np.array([[0.5, -0.3, 0.2], [0.1, 0.4, -0.6], [0.3, 0.2, 0.1]])
    h = srcjax.jacrev(srcjax.grad(matvec, argnum), argnum)
    ref = JAX.jacrev(JAX.grad(jax_twin(matvec), argnum), argnum)(X3, w)
    agree(h(X3, w), ref, srcjax.numpy_function(h)(X3, w))


# -- custom_vjp inside a loop: grad of grad runs reverse over reverse ---------------------------

def test_grad_of_grad_through_a_custom_vjp_in_a_loop():
    gg = srcjax.grad(srcjax.grad(custom_in_loop))
    ref = JAX.grad(JAX.grad(jax_twin(custom_in_loop)))
    for x in (0.3, -1.1):
        agree(gg(x), ref(x), srcjax.numpy_function(gg)(x))
    h = srcjax.jacrev(srcjax.grad(custom_in_loop_vec))
    agree(h(X3), JAX.jacrev(JAX.grad(jax_twin(custom_in_loop_vec)))(X3), srcjax.numpy_function(h)(X3))


def custom_in_branch(x):
    if np.sum(x) > 0:
        y = softplus(x) * x
    else:
        y = x * 3.0
    return np.sum(y * y)


def test_jacrev_of_grad_through_a_custom_vjp_in_a_branch_on_data():
    # regression (session 6): the inlined forward rule returns `(out, (x,))`, a nested tuple whose
    # inner cotangent was dropped: 0.079 where jax gives 0.119 (tests/test_ad.py has the user-level form)
    h = srcjax.jacrev(srcjax.grad(custom_in_branch))
    ref = JAX.jacrev(JAX.grad(jax_twin(custom_in_branch)))
    for x in (X3, -X3):
        agree(h(x), ref(x), srcjax.numpy_function(h)(x))


# -- a derivative called inside the function differentiated -----------------------------------

V = np.array([0.3, -0.2, 0.7])
GRAD_F3 = srcjax.grad(f3)


def hvp_like(x):
    return np.sum(GRAD_F3(x) * V)


def test_grad_of_a_function_calling_a_gradient_with_a_loop():
    jg = JAX.grad(jax_twin(f3))
    ref = JAX.grad(lambda x: jnp.sum(jg(x) * V))(X3)
    g = srcjax.grad(hvp_like)
    agree(g(X3), ref, srcjax.numpy_function(g)(X3))


# -- the generated source, and the loops it keeps ----------------------------------------------

def test_generated_source_is_readable_and_runs_with_numpy():
    h = srcjax.jacrev(srcjax.grad(f3))
    text = srcjax.source(h)
    assert "def f3_grad_jacrev(x, n=3):" in text
    assert "_tape_bar.append(" in text and "_tape_bar.pop()" in text  # the cotangent tape
    assert "_tape_1.append(" in text  # the second level's own tape
    np.testing.assert_allclose(srcjax.numpy_function(h)(X3), h(X3), rtol=1e-12)


def test_reverse_over_reverse_keeps_loops_rolled():
    from srcjax.autodiff import derivative_function

    vjp_of_grad = srcjax.compile(derivative_function(srcjax.grad(over_shape), "vjp", (0,)))
    x = np.linspace(-0.4, 0.5, 8)
    text = srcjax.lower(vjp_of_grad, x, x).as_text()
    assert text.count("stablehlo.while") == 4  # primal, adjoint, and the adjoint of each: none unrolled


# -- random loop programs ----------------------------------------------------------------------

# not yet here: lists of arrays (np.stack(items)) and tuples held in variables (a swap's cotangents),
# see the test below
_LOOP_STEPS = ["break", "continue", "cumsum", "gather", "if_data", "triangle", "where", "while"]


@st.composite
def loop_program(draw):
    """``def f(x, w)`` (x, w f64[3]) of random steps with loops, ifs, break/continue on data."""
    names, lines = ["x", "w"], []
    for n in range(draw(st.integers(2, 4))):
        a, v = draw(st.sampled_from(names)), f"v{n}"
        lines += [ln.format(a=a, v=v) for ln in _STEPS[draw(st.sampled_from(_LOOP_STEPS))]]
        names.append(v)
    body = "\n".join("    " + ln for ln in lines)
    return f"import numpy as np\n\n\ndef f(x, w):\n{body}\n    return np.sum({names[-1]} * {names[-2]})\n"


# 3 derandomized examples in CI; SRCJAX_HYPOTHESIS=thorough draws 60 fresh ones (tests/written.py)
@examples(3, scale=20, phases=[Phase.explicit, Phase.generate])
@given(loop_program(), st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6))
def test_random_control_programs_jacrev_of_grad_match_jax(tmp_path_factory, text, vals):
    f, jf = numpy_and_jax(tmp_path_factory.mktemp("rr_programs", numbered=True), text, "rr")
    x, w = np.array(vals[:3]), np.array(vals[3:])
    try:
        h = srcjax.jacrev(srcjax.grad(f))
        agree(h(x, w), JAX.jacrev(JAX.grad(jf))(x, w), srcjax.numpy_function(h)(x, w))
    except AssertionError as e:
        raise AssertionError(f"{e}\n{text}") from None


def stacked(x):
    items = []
    for k in range(3):
        items.append(np.cos(x + k))
    return np.sum(np.prod(np.stack(items), axis=0))


def test_lists_of_arrays_in_reverse_over_reverse():
    # was refused: the gradient splits np.stack's cotangent with srcjax.adjoint.seq_pieces, now a
    # loop of appends that reverse mode follows
    h = srcjax.jacrev(srcjax.grad(stacked))
    ref = JAX.jacrev(JAX.grad(jax_twin(stacked)))(X3)
    agree(h(X3), ref, srcjax.numpy_function(h)(X3))


def _th(x):
    return np.tanh(x)


def calls_a_helper(w):
    return np.sum(_th(w) * w)


def test_reverse_over_reverse_through_a_helper_is_right():
    # regression: the helper's forward half saves tanh on the tape for its backward half; reverse
    # mode over that derivative dropped the cotangent of the saved value and gave a wrong Hessian
    # (1.83 where the answer is 1.67). It was refused since; jacrev of such a derivative is now the
    # same Jacobian by forward mode (issue #15), as grad of grad is.
    w = np.array([0.3, -0.5])
    t = 1 - np.tanh(w) ** 2
    want = np.diag(2 * t - 2 * w * np.tanh(w) * t)  # d2/dw2 of tanh(w) * w
    np.testing.assert_allclose(srcjax.jacrev(srcjax.grad(calls_a_helper))(w), want, rtol=1e-12)
    np.testing.assert_allclose(srcjax.hessian(calls_a_helper)(w), want, rtol=1e-12)
    np.testing.assert_allclose(srcjax.jacfwd(srcjax.grad(calls_a_helper))(w), want, rtol=1e-12)


# -- common programs: reverse over reverse through the first level's helpers and `if`s on data ---------

def rnn_loss(params, xs, ys):
    h = np.zeros(params["Wh"].shape[0])
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(params["Wx"] @ xs[t] + params["Wh"] @ h + params["b"])
        pred = params["Wo"] @ h
        loss = loss + np.sum((pred - ys[t]) ** 2)
    return loss / xs.shape[0]


def attention(q, k, v):
    s = q @ k.T / np.sqrt(q.shape[-1])
    s = s - np.max(s, axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / np.sum(p, axis=-1, keepdims=True)
    return np.sum((p @ v) ** 2)


def clipped(x):
    y = np.clip(x, -0.5, 0.5)
    z = np.where(y > 0, y ** 2, -y)
    return np.sum(np.abs(z) + np.maximum(x, 0.1))


def normalize(x):
    mu = x.mean(axis=0)
    sd = x.std(axis=0)
    return np.sum(((x - mu) / (sd + 1e-5)) ** 3)


def layer_norm(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + 1e-5) * g + b
    return np.sum(np.tanh(y) ** 2)


LABELS = np.array([0, 3, 1, 2, 1])


def softmax_xent(w, X):
    logits = X @ w
    m = np.max(logits, axis=1, keepdims=True)
    z = logits - m
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    n = X.shape[0]
    return -np.mean(logp[np.arange(n), LABELS])


def norms_and_abs(x):
    return np.linalg.norm(x) + np.sum(np.linalg.norm(x, axis=1) ** 2) + np.sum(np.abs(np.sin(x) - 0.2) * x)


def branchy(x, w):  # the hypothesis test's `if_data` and `while` steps (bug: UNSET joined a tuple)
    if np.sum(w) > 0.3:
        v0 = np.tanh(w) * 1.5
    else:
        v0 = w * w - 0.5  # noqa: F841  (as the hypothesis test writes it)
    v1 = w * 1.0
    it = 0
    while it < 3 and np.sum(v1 * v1) < 4.0:
        v1 = v1 * 1.4 + 0.1
        it = it + 1
    if np.sum(x) > 0.3:
        v2 = np.tanh(x) * 1.5
    else:
        v2 = x * x - 0.5
    return np.sum(v2 * v1)


_R = np.random.default_rng(3)
COMMON = [
    (rnn_loss, ({"Wx": _R.normal(size=(4, 3)) * 0.3, "Wh": _R.normal(size=(4, 4)) * 0.3, "b": np.zeros(4),
                 "Wo": _R.normal(size=(2, 4))}, _R.normal(size=(5, 3)), _R.normal(size=(5, 2)))),
    (attention, (_R.normal(size=(4, 3)), _R.normal(size=(5, 3)), _R.normal(size=(5, 2)))),
    (clipped, (_R.normal(size=6),)),
    (normalize, (_R.normal(size=(5, 3)),)),
    (layer_norm, (_R.normal(size=(2, 4)), _R.normal(size=4), _R.normal(size=4))),
    (softmax_xent, (_R.normal(size=(3, 4)) * 0.5, _R.normal(size=(5, 3)))),
    (norms_and_abs, (_R.normal(size=(4, 3)),)),
]


def tree_agree(ours, ref, numpy_run=None, rtol=1e-9):
    la = jax.tree_util.tree_leaves(jax.tree_util.tree_map(np.asarray, ours))
    lb = jax.tree_util.tree_leaves(ref)
    assert len(la) == len(lb)
    for a, b in zip(la, lb):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-10)
    if numpy_run is not None:
        for a, c in zip(la, jax.tree_util.tree_leaves(jax.tree_util.tree_map(np.asarray, numpy_run))):
            np.testing.assert_allclose(c, a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn,args", COMMON, ids=[fn.__name__ for fn, _ in COMMON])
def test_jacrev_of_grad_of_common_programs(fn, args):
    h = srcjax.jacrev(srcjax.grad(fn))
    ref = JAX.jacrev(JAX.grad(jax_twin(fn)))(*args)
    numpy_run = srcjax.numpy_function(h)(*args) if not isinstance(args[0], dict) else None
    tree_agree(h(*args), ref, numpy_run)


@pytest.mark.parametrize("fn,args", COMMON, ids=[fn.__name__ for fn, _ in COMMON])
def test_vjp_of_grad_of_common_programs(fn, args):
    from srcjax.autodiff import derivative_function

    g = JAX.grad(jax_twin(fn))(*args)
    ct = jax.tree_util.tree_map(lambda t: np.cos(np.arange(np.size(t)) + 1.0).reshape(np.shape(t)), g)
    out, pull = srcjax.vjp(srcjax.grad(fn), *args)
    ref_out, ref_pull = jax.vjp(JAX.grad(jax_twin(fn)), *args)
    tree_agree(out, ref_out)
    tree_agree(pull(ct), ref_pull(ct))
    # the generated vjp of the gradient, run by NumPy
    nv = srcjax.numpy_function(derivative_function(srcjax.grad(fn), "vjp", tuple(range(len(args)))))
    tree_agree(nv(*args, ct)[1], ref_pull(ct))


def test_jacrev_of_grad_with_one_branch_binding_a_helpers_cotangents():
    """Regression: on the XLA path a tuple (a shape, a helper's cotangents) bound on one branch of an
    `if` on data only, UNSET or unbound on the other, failed with "the branches give different structures"."""
    x, w = np.array([0.3, 0.2, 0.1]), np.array([-0.2, 0.5, 0.4])
    h = srcjax.jacrev(srcjax.grad(branchy))
    ref = JAX.jacrev(JAX.grad(jax_twin(branchy)))
    for xx in (x, -x):
        agree(h(xx, w), ref(xx, w), srcjax.numpy_function(h)(xx, w))


def test_values_saved_in_a_data_branch_of_a_helper_reach_its_backward_half():
    """Regression: `g_before` (a helper's value saved inside an `if` on data, here expand_reduced's
    reshape in mean/std's rules) was missing from the helper's forward half's tape: reverse over
    reverse failed with "name 'g_before' is not defined" in generated source."""
    from srcjax.autodiff import derivative_function

    v = derivative_function(srcjax.grad(normalize), "vjp", (0,))
    x = COMMON[3][1][0]
    ct = np.cos(np.arange(x.size) + 1.0).reshape(x.shape)
    ref = jax.vjp(JAX.grad(jax_twin(normalize)), x)[1](ct)[0]
    np.testing.assert_allclose(srcjax.compile(v)(x, ct)[1][0], ref, rtol=1e-9)
    np.testing.assert_allclose(v(x, ct)[1][0], ref, rtol=1e-9)


def test_shape_moves_of_derivative_code_are_primitives_in_reverse_over_reverse():
    """unbroadcast / broadcast_like / expand_reduced apply their own rules: no generated
    `unbroadcast_fwd`/`unbroadcast_bwd` helpers saving their internals on a tape."""
    text = srcjax.source(srcjax.jacrev(srcjax.grad(normalize)))
    for helper in ("unbroadcast", "broadcast_like", "expand_reduced"):
        assert f"def {helper}_fwd" not in text and f"def {helper}_bwd" not in text
    h = srcjax.hessian(normalize)
    x = COMMON[3][1][0]
    agree(h(x), JAX.hessian(jax_twin(normalize))(x), srcjax.numpy_function(h)(x))


@srcjax.custom_jvp
def _sin_c(x):
    return np.sin(x)


@_sin_c.defjvp
def _sin_c_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return np.sin(x), t * np.cos(x)


def _through_custom_jvp(x):
    y = _sin_c(x)
    return np.sum(y * y)


def test_reverse_over_reverse_through_a_custom_jvp_is_right_not_zero():
    """jacrev(grad(f)) through a custom_jvp gave an all-zero Hessian (the rule's transpose was
    differentiated in its tangents only); it was refused since, and is now the same Jacobian by
    forward mode (issue #15); hessian is right."""
    x = np.array([0.1, 0.2, 0.3])
    want = np.diag(2 * np.cos(2 * x))  # d2/dx2 sum(sin(x)^2) = 2 cos(2x)
    np.testing.assert_allclose(np.asarray(srcjax.jacrev(srcjax.grad(_through_custom_jvp))(x)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.hessian(_through_custom_jvp)(x)), want, rtol=1e-12)


@pytest.mark.parametrize("n", [5, 3])
def test_forward_over_reverse_of_an_early_return_under_a_static_test(n):
    """A SILENT WRONG ANSWER (found with issue #15's Hessian sweep): grad's adjoint reads the forward
    values of an early `return` branch in a second `if` on the same static test; their tangents were
    dropped after the first `if` (bound on one path only), so jvp of grad, jacfwd of grad and hessian
    gave the second-order terms through them as zero (hessian(early_return) was 0)."""
    from tests.ad_programs import early_return

    def jf(x):
        return jnp.sum(jnp.abs(x) ** 1.5) if x.shape[0] > 3 else jnp.sum(x ** 2)

    x = _R.normal(size=n) + 0.1
    want = np.asarray(JAX.hessian(jf)(x))
    np.testing.assert_allclose(np.asarray(srcjax.hessian(early_return)(x)), want, rtol=1e-10, atol=1e-12)
    hvp = srcjax.jvp(srcjax.grad(early_return), (x,), (np.ones(n),))[1]
    np.testing.assert_allclose(np.asarray(hvp), want @ np.ones(n), rtol=1e-10, atol=1e-12)
