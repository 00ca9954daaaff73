"""Refusals where jax runs, under composed transformations (issue #15, session 27): each agrees with jax now.

- ``jacrev(f, argnums=1)`` / ``vmap(jacrev(f, argnums=1))`` of a ``for`` with a ``break`` on an array
  argument that is not differentiated (``if x[i] > thr: break`` then ``s = s + ... * h[i % 3]``): the
  break's flag (``stop = True`` under the test) was taken for a static value, since binding-time analysis
  gave names bound under a test that may be data (an UNKNOWN one: x is not differentiated) the control's
  kind of the `if` around it; the next ``if not stop:`` saved ``s`` on the tape inside a branch on data
  ("the Python list `_tape` is changed inside a branch on array data", and under vmap: "reverse mode
  through a loop inside an `if` on array data"). A name bound under an UNKNOWN test is UNKNOWN at least.
- ``vmap(jacrev(f))`` / ``vmap(hessian(f))`` of an ``f`` with an early ``return`` on data before a helper with
  a static argument (``logsumexp(v, axis=-1)``): "cannot batch '(a + 1 if a >= 0 else a for a in axis)'" and
  "expand_reduced's axis= argument must be the same for every example" (hunt seeds 165, 294, 344). The
  second vmap meets the ``cond``'s branches as derivative code writes them (``axis_1 = axis`` ... ``axis, m
  = (axis_1, m_1)``), where the rule keeping an output that one branch passes through from an ``UNSET``
  operand unbatched (``batch_lax._kept``) looked only for a parameter returned as it is; it follows copies.
- ``vmap(jacrev(step), in_axes=(0, None))`` where ``step`` is ``w - 0.1 * grad(inner)(w, x)`` and ``inner``
  has an ``if`` on data calling helpers: DTypeError "cannot use a value of type _Unset (object) as an array"
  at the user's ``if``. Values saved for the adjoint that one path leaves ``UNSET`` were selected per example
  (``batch_select(gt, v, batch_broadcast(UNSET))``): such an item of a ``cond`` on batched data is now the
  other branch's for every example, batched or not (``_kept``); and ``taken(UNSET, test)`` (a broadcast
  ``UNSET`` read by a batched branch) is ``UNSET`` when lowered, as when run by NumPy.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import srcjax  # noqa: E402

from .twins import jax_twin  # noqa: E402

jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def broken_sum(x, h, thr):
    s = 0.0
    for i in range(4):
        if x[i] > thr:
            break
        s = s + np.tanh(x[i]) * h[i % 3]
    h = h + s
    return np.tanh(h)


def broken_sum_jax(x, h, thr):  # (jax cannot break on a traced value: the same loop with a mask)
    s = 0.0
    done = False
    for i in range(4):
        done = jnp.logical_or(done, x[i] > thr)
        s = jnp.where(done, s, s + jnp.tanh(x[i]) * h[i % 3])
    return jnp.tanh(h + s)


@pytest.mark.parametrize("argnums", [0, 1])
def test_reverse_mode_of_a_break_on_an_argument_not_differentiated(argnums: int) -> None:
    rng = np.random.default_rng(8)
    xs, h = rng.uniform(0.0, 1.0, (6, 4)), rng.standard_normal(3)
    xs[0, :] = 0.1  # (one example never breaks, one breaks at once)
    xs[1, 0] = 0.9
    got = srcjax.vmap(srcjax.jacrev(broken_sum, argnums=argnums), in_axes=(0, None, None))(xs, h, 0.7)
    want = jax.jit(jax.vmap(jax.jacrev(broken_sum_jax, argnums=argnums), in_axes=(0, None, None)))(xs, h, 0.7)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    one = srcjax.jacrev(broken_sum, argnums=argnums)(xs[2], h, 0.7)
    np.testing.assert_allclose(one, want[2], rtol=1e-12, atol=1e-14)


def logsumexp(v, axis=-1):
    m = np.max(v, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(v - m), axis=axis))


def early_return(w, x):
    h = np.tanh(x)
    if np.max(np.abs(h)) > 0.5:
        return np.sum(h * h)
    logits = h @ w
    return logits[0] - logsumexp(logits)


def early_return_jax(w, x):
    h = jnp.tanh(x)
    logits = h @ w
    return jax.lax.cond(jnp.max(jnp.abs(h)) > 0.5, lambda: jnp.sum(h * h),
                        lambda: logits[0] - jax.scipy.special.logsumexp(logits))


@pytest.mark.parametrize("how", ["jacrev", "hessian"])
def test_second_vmap_of_an_early_return_before_a_static_axis(how: str) -> None:
    rng = np.random.default_rng(3)
    w, xs = rng.standard_normal((3, 4)), rng.standard_normal((6, 3)) * np.array([[0.2], [2.0]] * 3)
    got = srcjax.vmap(getattr(srcjax, how)(early_return, argnums=1), in_axes=(None, 0))(w, xs)
    want = jax.jit(jax.vmap(getattr(jax, how)(early_return_jax, argnums=1), in_axes=(None, 0)))(w, xs)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def act(z):
    return np.tanh(z) + 0.1 * z


def squared(z):
    return np.sum(z * z)


def inner_loss(w, x):
    z = x @ w
    if np.sum(z) > 0.0:
        loss = squared(act(z))
    else:
        loss = squared(z) * 0.5
    return loss


def inner_step(w, x):
    return w - 0.1 * srcjax.grad(inner_loss)(w, x)


def inner_step_jax(w, x):
    def loss(w):
        z = x @ w
        return jax.lax.cond(jnp.sum(z) > 0.0, lambda: jnp.sum((jnp.tanh(z) + 0.1 * z) ** 2),
                            lambda: jnp.sum(z * z) * 0.5)
    return w - 0.1 * jax.grad(loss)(w)


def test_vmap_of_jacrev_of_a_step_whose_grad_branches_on_data() -> None:
    rng = np.random.default_rng(5)
    ws, x = rng.standard_normal((6, 3, 2)), rng.standard_normal((4, 3))
    ws[::2] = -ws[::2]  # (both branches taken)
    got = srcjax.vmap(srcjax.jacrev(inner_step), in_axes=(0, None))(ws, x)
    want = jax.jit(jax.vmap(jax.jacrev(inner_step_jax), in_axes=(0, None)))(ws, x)
    sums = np.einsum("ij,bjk->b", x, ws)
    assert (sums > 0).any() and (sums <= 0).any()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def loss_and_aux(w, x):
    z = np.tanh(x @ w)
    return np.sum(z * z), z


def vjp_aux_inside(w, x):
    out, vjp_fn, aux = srcjax.vjp(lambda v: loss_and_aux(v, x), w, has_aux=True)
    (gw,) = vjp_fn(1.0)
    return np.sum(gw * gw) + np.sum(aux) + out


def test_has_aux_inside_compiled_code_through_a_call_returning_the_pair() -> None:
    rng = np.random.default_rng(2)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    twin = jax_twin(vjp_aux_inside, helpers=[loss_and_aux], srcjax=types.SimpleNamespace(vjp=jax.vjp))
    np.testing.assert_allclose(srcjax.jit(vjp_aux_inside)(w, x), jax.jit(twin)(w, x), rtol=1e-12)
    xs = rng.standard_normal((5, 4, 3))
    np.testing.assert_allclose(srcjax.vmap(vjp_aux_inside, in_axes=(None, 0))(w, xs),
                               jax.jit(jax.vmap(twin, in_axes=(None, 0)))(w, xs), rtol=1e-12)
