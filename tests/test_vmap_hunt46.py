"""Issue #15 (vmap) audited again with programs srcjax had not seen (session 46, vhunt): control flow on batched
data and compositions (tests/vmap_hunt46_programs.py).

Each case runs ``srcjax.vmap`` (or a composition) and compares it with a Python loop over the examples (the
user's function run by NumPy, or srcjax's un-batched transformation of one example: vmap alone is under test),
with the generated source run by NumPy, and with ``jax.vmap`` of the program's jax twin where jax can trace it
(Python control flow on data cannot be traced by jax: the loop is the oracle there). Values, shapes and pytree
structure must agree; dtypes must equal the NumPy loop's.

``python -m tests.test_vmap_hunt46 [NAME ...]`` runs the cases and prints ok / refused / wrong / crash counts.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import srcjax

from . import tiers, written
from . import vmap_hunt46_programs as P
from .twins import jax_twin
from .vmap_loop_oracle import agree, loop

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def r(rng: np.random.Generator, *s: int, dtype: Any = np.float64) -> np.ndarray:
    return rng.standard_normal(s).astype(dtype)


def batch_of(tree: Any, axes: Any) -> int | None:
    """The size of the first mapped axis of ``tree`` under ``axes`` (a pytree prefix of ints and Nones)."""
    if axes is None:
        return None
    if isinstance(axes, int):
        return int(np.shape(jax.tree_util.tree_leaves(tree)[0])[axes])
    pairs = [(tree[k], axes[k]) for k in axes] if isinstance(axes, dict) else list(zip(tree, axes))
    sizes = [batch_of(t, a) for t, a in pairs]
    return next(s for s in sizes if s is not None) if any(s is not None for s in sizes) else None


def check(fn: Callable[..., Any], args: tuple[Any, ...], in_axes: Any = 0, out_axes: Any = 0, *,
          twin: Callable[..., Any] | bool | None = True, example: Callable[..., Any] | None = None,
          rtol: float = 1e-7, dtypes: bool = True, source: bool = True, axis_size: int | None = None) -> Any:
    """``srcjax.vmap(fn, in_axes, out_axes)(*args)`` against the loop of ``example`` (default ``fn``) over the
    examples, the generated source run by NumPy, and ``jax.vmap(twin)`` (True: ``fn``'s jax twin; None: no jax)."""
    batched = srcjax.vmap(fn, in_axes=in_axes, out_axes=out_axes, axis_size=axis_size)
    got = batched(*args)
    n = axis_size if axis_size is not None else batch_of(args, in_axes if isinstance(in_axes, (tuple, list))
                                                          else (in_axes,) * len(args))
    one = example if example is not None else fn
    agree(got, loop(one, args, in_axes, n, out_axes), what="loop over examples", rtol=rtol, dtypes=dtypes)
    if source:
        agree(srcjax.numpy_function(batched)(*args), got, what="generated source run by NumPy", rtol=rtol)
    if twin is not None and twin is not False:
        jt = jax_twin(fn) if twin is True else twin
        jargs = jax.tree_util.tree_map(lambda a: jnp.asarray(a) if isinstance(a, np.ndarray) else a, args)
        want = jax.vmap(jt, in_axes=in_axes, out_axes=out_axes, axis_size=axis_size)(*jargs)
        agree(got, want, what="jax.vmap", rtol=max(rtol, 1e-7))
    return got


def twin_of(fn: Callable[..., Any], **names: Any) -> Callable[..., Any]:
    return jax_twin(fn, **names)


RNG = np.random.default_rng(46)
M43 = r(RNG, 4, 3)


# -- while / for on batched data --------------------------------------------------------------------------------

def case_grow_each_entry() -> None:
    check(P.grow_each_entry, (r(RNG, 4, 3) * 2,), twin=None)
    check(P.grow_each_entry, (r(RNG, 3, 5) * 2,), 1, twin=None)


def case_tuple_state_break() -> None:
    check(P.tuple_state_break, (r(RNG, 5, 3),), twin=None)


def case_dict_state_halving() -> None:
    check(P.dict_state_halving, (r(RNG, 4, 2) * np.array([[1.0], [5.0], [0.05], [30.0]]),), twin=None)
    check(P.dict_state_halving, (r(RNG, 2, 4) * 3,), 1, {"v": -1, "n": 0}, twin=None)


def case_list_state_grow() -> None:
    check(P.list_state_grow, (r(RNG, 4, 2), r(RNG, 2)), (0, None), twin=None)
    check(P.list_state_grow, (r(RNG, 4, 2), r(RNG, 2, 4)), (0, 1), (1, 0, 0), twin=None)


def case_return_from_while() -> None:
    check(P.return_from_while, (np.array([0.1, 1.9, -2.1, 1.2, 0.0]),), twin=None)


def case_while_skip_odd() -> None:
    check(P.while_skip_odd, (np.array([0.3, 1.1, 2.9, 0.05]),), twin=None)


def case_while_in_while() -> None:
    check(P.while_in_while, (np.array([0.5, 2.0, 30.0, 400.0]),), twin=None)


def case_break_after_write() -> None:
    check(P.break_after_write, (r(RNG, 5, 4),), twin=None)
    check(P.break_after_write, (r(RNG, 4, 5),), -1, -1, twin=None)


def case_collatz_like() -> None:
    check(P.collatz_like, (np.array([1, 6, 7, 27, 12]),), twin=None)


def case_for_continue_accumulate() -> None:
    check(P.for_continue_accumulate, (r(RNG, 4, 3), r(RNG, 3, 2)), (0, None), twin=None)
    check(P.for_continue_accumulate, (r(RNG, 4, 3), r(RNG, 4, 3, 2)), (0, 0), twin=None)


# -- in-place updates, scatters, gathers, dynamic slices ------------------------------------------------------

def case_accumulate_at() -> None:
    idx = np.array([[0, 1, 1, 3], [2, 2, 2, 2], [3, 0, 1, 0]])
    check(P.accumulate_at, (r(RNG, 3, 4), idx), (0, 0),
          twin=lambda x, i: jnp.zeros(4).at[i].add(x))
    check(P.accumulate_at, (r(RNG, 4), idx), (None, 0), twin=lambda x, i: jnp.zeros(4).at[i].add(x))


def case_set_row_at() -> None:
    m = r(RNG, 4, 3, 2)
    check(P.set_row_at, (m, np.array([0, 2, 1, 2]), r(RNG, 4, 2)), (0, 0, 0), twin=lambda m, i, v: jnp.asarray(m).at[i, :].set(v))
    check(P.set_row_at, (m[0], np.array([0, 2, 1, 2]), r(RNG, 2)), (None, 0, None),
          twin=lambda m, i, v: jnp.asarray(m).at[i, :].set(v))


def case_add_to_column() -> None:
    check(P.add_to_column, (r(RNG, 3, 4), np.array([0, 3, -1, 2, 0])), (None, 0),
          twin=lambda m, j: jnp.asarray(m).at[:, j].add(1.0))
    check(P.add_to_column, (r(RNG, 3, 4, 5), np.array([0, 3, -1, 2, 0])), (2, 0),
          twin=lambda m, j: jnp.asarray(m).at[:, j].add(1.0))


def case_set_entry_mixed() -> None:
    check(P.set_entry_mixed, (r(RNG, 4, 3, 3), np.array([0, 2, 1, 2]), r(RNG, 4)),
          twin=lambda m, i, v: m.at[i, 1].set(v).at[0, i].set(-v))


def case_negative_index_write() -> None:
    check(P.negative_index_write, (r(RNG, 5), np.array([0, 1, 4, 2])), (None, 0),
          twin=lambda x, i: jnp.asarray(x).at[-i - 1].set(100.0))


def case_window_sum() -> None:
    check(P.window_sum, (r(RNG, 4, 7), np.array([0, 2, 4, 6])), (0, 0))
    check(P.window_sum, (r(RNG, 7), np.array([0, 2, 4, 6])), (None, 0))
    check(P.window_sum, (r(RNG, 7, 3), 3), (1, None))


def case_paste_patch() -> None:
    check(P.paste_patch, (r(RNG, 3, 4, 5), r(RNG, 3, 2, 2), np.array([0, 3, 2]), np.array([4, 1, 0])))
    check(P.paste_patch, (r(RNG, 4, 5), r(RNG, 2, 2), np.array([0, 3, 2]), 1), (None, None, 0, None))


def case_scatter_2d() -> None:
    idx = np.array([[[0, 1, 2, 2], [3, 3, 0, 3]], [[1, 1, 1, 0], [0, 0, 0, 2]]])
    jt = lambda i, w: jnp.zeros((3, 4)).at[i[0], i[1]].add(w)  # noqa: E731
    check(P.scatter_2d, (idx, r(RNG, 2, 4)), twin=jt)
    check(P.scatter_2d, (idx, r(RNG, 4)), (0, None), twin=jt)
    check(P.scatter_2d, (idx[0], r(RNG, 4, 3)), (None, 1), twin=jt)


def case_gather_rows() -> None:
    idx = np.array([[0, 4, 4], [1, 0, 3], [2, 2, 2]])
    jt = twin_of(P.gather_rows)
    jt0 = lambda t, i: jt(jnp.asarray(t), i)  # noqa: E731
    check(P.gather_rows, (r(RNG, 5, 3), idx), (None, 0), twin=jt0)
    check(P.gather_rows, (r(RNG, 3, 5, 3), idx), (0, 0), twin=jt0)
    check(P.gather_rows, (r(RNG, 5, 3, 3), idx), (2, 0), (-1, 0), twin=jt0)


def case_take_columns() -> None:
    idx = np.array([[0, 2], [3, 3], [1, 0]])
    check(P.take_columns, (r(RNG, 2, 4), idx), (None, 0))
    check(P.take_columns, (r(RNG, 2, 4, 3), idx), (-1, 0), 2)


def case_write_into_shared() -> None:
    check(P.write_into_shared, (r(RNG, 4), np.array([3, 0, 0]), 5.0), (None, 0, None),
          twin=lambda b, i, v: jnp.asarray(b).at[i].set(v))
    check(P.write_into_shared, (r(RNG, 4), 2, r(RNG, 3)), (None, None, 0), twin=lambda b, i, v: jnp.asarray(b).at[i].set(v))


def case_swap_entries() -> None:
    check(P.swap_entries, (r(RNG, 4, 5), np.array([0, 1, 2, 4]), np.array([4, 1, 0, 0])),
          twin=lambda x, i, j: jnp.asarray(x).at[i].set(x[j]).at[j].set(x[i]))
    check(P.swap_entries, (r(RNG, 5), np.array([0, 1, 2, 4]), 3), (None, 0, None),
          twin=lambda x, i, j: jnp.asarray(x).at[i].set(x[j]).at[j].set(x[i]))


def case_scatter_max_loop() -> None:
    idx = np.array([[0, 1, 1, 0], [2, 2, 2, 2], [0, 1, 2, 1]])
    check(P.scatter_max_loop, (r(RNG, 3, 4), idx), twin=lambda x, i: jnp.full(3, -jnp.inf).at[i].max(x))


def case_at_chain() -> None:
    jt1 = twin_of(P.at_chain)
    jt = lambda x, i, v: jt1(jnp.asarray(x), i, v)  # noqa: E731
    check(P.at_chain, (r(RNG, 3, 4), np.array([1, 0, 3]), r(RNG, 3)), twin=jt, example=srcjax.jit(P.at_chain))
    check(P.at_chain, (r(RNG, 4), np.array([1, 0, 3]), 2.0), (None, 0, None), twin=jt, example=srcjax.jit(P.at_chain))


# -- srcjax.lax control flow -----------------------------------------------------------------------------------

def case_fori_batched_lower() -> None:
    check(P.fori_batched_lower, (np.array([0, 2, 4, 1]), r(RNG, 6)), (0, None))
    check(P.fori_batched_lower, (np.array([0, 2, 4, 1]), r(RNG, 4, 6)), (0, 0))


def case_while_loop_counter() -> None:
    check(P.while_loop_counter, (r(RNG, 4, 3), 6.0), (0, None))
    check(P.while_loop_counter, (r(RNG, 3), np.array([1.0, 5.0, 30.0])), (None, 0))


def case_scan_dict_out() -> None:
    check(P.scan_dict_out, (r(RNG, 3), r(RNG, 5, 3)), (0, 1))
    check(P.scan_dict_out, (0.5, r(RNG, 5, 3)), (None, 1), (0, {"c": 1, "sq": -1}))


def case_scan_no_xs() -> None:
    check(P.scan_no_xs, (r(RNG, 4),))
    check(P.scan_no_xs, (r(RNG, 3, 2),), 1, (0, 2))


def case_cond_dict_branches() -> None:
    check(P.cond_dict_branches, (r(RNG, 5), r(RNG, 5, 2), r(RNG, 2)), (0, 0, None))
    check(P.cond_dict_branches, (0.5, r(RNG, 2), r(RNG, 2, 5)), (None, None, 1), {"y": 0, "z": 1})


def case_switch_unbatched_operand() -> None:
    check(P.switch_unbatched_operand, (np.array([0, 1, 2, 1, 7, -3]), r(RNG, 3)), (0, None))


def case_cond_inside_scan() -> None:
    check(P.cond_inside_scan, (r(RNG, 4, 6), 0.1), (0, None))
    check(P.cond_inside_scan, (r(RNG, 6), np.array([-0.5, 0.0, 0.5])), (None, 0))


def case_fori_in_while() -> None:
    check(P.fori_in_while, (np.array([0.1, 0.5, 3.0, 10.0]),))


def case_scan_int_carry() -> None:
    check(P.scan_int_carry, (r(RNG, 3, 5),))
    check(P.scan_int_carry, (r(RNG, 5, 3),), 1, ((0, 0), 1))


def case_switch_in_fori() -> None:
    ks = np.array([[0, 1, 2], [2, 2, 2], [1, 0, 1], [0, 0, 1]])
    check(P.switch_in_fori, (ks, r(RNG, 4)), (0, 0))
    check(P.switch_in_fori, (ks, r(RNG, 2)), (0, None))


# -- compositions ---------------------------------------------------------------------------------------------

def case_vmap_grad_branchy() -> None:
    g = srcjax.grad(P.branchy_energy, argnums=1)
    check(g, (r(RNG, 4, 5), 0.7), (0, None), twin=jax.grad(twin_of(P.branchy_energy), argnums=1) and None,
          example=g)
    check(g, (r(RNG, 5), np.array([0.3, -1.2, 2.0])), (None, 0), example=g, twin=None)


def case_grad_of_vmap_sum() -> None:
    x, w = r(RNG, 4, 5), np.array([0.3, -1.2, 2.0, 0.1])
    f = lambda x, w: np.sum(srcjax.vmap(P.branchy_energy)(x, w))  # noqa: E731
    got = srcjax.grad(f, argnums=(0, 1))(x, w)
    g = srcjax.grad(P.branchy_energy, argnums=(0, 1))
    want = (np.stack([g(x[k], w[k])[0] for k in range(4)]), np.array([g(x[k], w[k])[1] for k in range(4)]))
    agree(got, want, what="grad(sum(vmap))")


def case_vmap_grad_cond() -> None:
    g = srcjax.grad(P.cond_energy)
    check(g, (r(RNG, 5, 3),), example=g, twin=jax.grad(twin_of(P.cond_energy)))


def case_jvp_of_vmap_cond() -> None:
    xs, ts = r(RNG, 5, 3), r(RNG, 5, 3)
    got = srcjax.jvp(srcjax.vmap(P.cond_energy), (xs,), (ts,))
    want = jax.jvp(jax.vmap(twin_of(P.cond_energy)), (xs,), (ts,))
    agree(got, want, what="jvp(vmap(cond))")


def case_vmap_jvp_unbatched_tangent() -> None:
    xs, t = r(RNG, 4, 3), r(RNG, 3)
    f = lambda x, t: srcjax.jvp(P.update_then_reduce, (x,), (t,))  # noqa: E731
    jt = twin_of(P.update_then_reduce)
    check(f, (xs, t), (0, None), twin=None, source=False)
    del jt


def case_vmap_vmap_axes() -> None:
    inner = srcjax.vmap(P.pair_score, in_axes=(None, 1))
    a, b = r(RNG, 4, 3), r(RNG, 3, 5)
    got = srcjax.vmap(inner, in_axes=(0, None), out_axes=-1)(a, b)
    jt = twin_of(P.pair_score)
    want = jax.vmap(jax.vmap(jt, in_axes=(None, 1)), in_axes=(0, None), out_axes=-1)(a, b)
    agree(got, want, what="vmap(vmap)")
    assert np.shape(got) == (5, 4)


def case_vmap_jacrev_update() -> None:
    j = srcjax.jacrev(P.vec_update)
    check(j, (r(RNG, 4, 3),), example=j, twin=None)


def case_jacfwd_of_vmap() -> None:
    xs = r(RNG, 3, 4)
    got = srcjax.jacfwd(srcjax.vmap(P.vec_update))(xs)
    jt = twin_of(P.vec_update, np=type("N", (), {**{k: getattr(jnp, k) for k in ("tanh",)}})) if False else None
    want = np.zeros((3, 4, 3, 4))
    jk = srcjax.jacfwd(P.vec_update)
    for k in range(3):
        want[k, :, k, :] = np.asarray(jk(xs[k]))
    agree(got, want, what="jacfwd(vmap)")
    del jt


def case_vmap_hessian_cond() -> None:
    h = srcjax.hessian(P.cond_energy)
    check(h, (r(RNG, 4, 3),), example=h, twin=jax.hessian(twin_of(P.cond_energy)))


def case_vmap_value_and_grad_aux() -> None:
    f = srcjax.value_and_grad(P.aux_loss, has_aux=True)
    check(f, (r(RNG, 3, 2), r(RNG, 5, 4, 3)), (None, 0), example=f, dtypes=False,
          twin=jax.value_and_grad(twin_of(P.aux_loss), has_aux=True))


def case_vmap_grad_scan() -> None:
    g = srcjax.grad(P.scan_loss)
    check(g, (np.array([0.5, -0.3, 0.9]), r(RNG, 3, 6)), (0, 0), example=g, twin=jax.grad(twin_of(P.scan_loss)))
    check(g, (0.4, r(RNG, 6, 3)), (None, 1), example=g, twin=jax.grad(twin_of(P.scan_loss)))


def case_vmap_jit_vmap() -> None:
    f = srcjax.vmap(srcjax.jit(P.jit_of_vmap_inside), in_axes=(None, 0))
    x, ws = r(RNG, 4, 3), r(RNG, 5, 3)
    got = f(x, ws)
    jt = twin_of(P.pair_score)
    want = jax.vmap(jax.jit(jax.vmap(jt, in_axes=(0, None))), in_axes=(None, 0))(x, ws)
    agree(got, want, what="vmap(jit(f calling jit(vmap)))")


def case_vmap_of_inner_vmap() -> None:
    jt = lambda x, w: jax.vmap(lambda r: jnp.sum(jnp.tanh(r * w)))(x)  # noqa: E731
    check(P.inner_vmapped, (r(RNG, 3, 4, 2), r(RNG, 2)), (0, None), twin=jt)
    check(P.inner_vmapped, (r(RNG, 4, 2), r(RNG, 2, 3)), (None, 1), -1, twin=jt)


def case_vmap_custom_vjp() -> None:
    g = srcjax.grad(P.clipped_loss)
    xs = r(RNG, 4, 3) * 2
    check(g, (xs, 0.5), (0, None), example=g, twin=None)
    got = srcjax.vmap(g, in_axes=(0, None))(xs, 0.5)
    agree(got, np.clip(3 * xs ** 2, -0.5, 0.5), what="custom_vjp rule used")
    check(g, (xs, np.array([0.1, 1.0, 5.0, 0.5])), (0, 0), example=g, twin=None)


def case_vmap_custom_jvp() -> None:
    g = srcjax.grad(P.softplus_sum)
    check(g, (r(RNG, 4, 3),), example=g, twin=None)
    got = srcjax.jvp(srcjax.vmap(P.softplus2), (M43,), (M43,))
    agree(got, (np.log1p(np.exp(M43)), M43 / (1 + np.exp(-M43))), what="jvp(vmap(custom_jvp))")


def case_namedtuple_in_axes_none_leaf() -> None:
    p = P.Pt(r(RNG, 4), r(RNG, 4, 3))
    jt = twin_of(P.pt_norm)
    check(P.pt_norm, (p, 2.0), (P.Pt(None, 1), None), twin=jt)
    check(P.pt_norm, (p, np.array([1.0, 2.0, 3.0])), (P.Pt(None, 1), 0), {"r": -1, "t": 0}, twin=jt)


def case_axis_size_only() -> None:
    check(P.pair_score, (r(RNG, 3), r(RNG, 3)), None, 0, axis_size=3)
    check(P.scan_no_xs, (r(RNG, 2),), (None,), (None, 1), axis_size=2)


# -- dtypes, 0-d examples, batch size 1 -------------------------------------------------------------------------

def case_masked_int_sum() -> None:
    x = RNG.integers(-5, 5, (4, 3))
    mask = RNG.random((4, 3)) > 0.5
    check(P.masked_int_sum, (x, mask, 3), (0, 0, None))
    check(P.masked_int_sum, (x.astype(np.int32), mask[0], np.array([1.5, 2.0, 0.5, 1.0])), (0, None, 0))


def case_f32_f64_mix() -> None:
    check(P.f32_f64_mix, (r(RNG, 3, 2), r(RNG, 3, 2, dtype=np.float32)), twin=None, rtol=1e-6)
    check(P.f32_f64_mix, (r(RNG, 3, 2, dtype=np.float32), r(RNG, 2)), (0, None), twin=None, rtol=1e-6)


def case_scalar_newton() -> None:
    check(P.scalar_newton, (np.array([0.5, 8.0, 27.0, 100.0, 1e-3]),), twin=None)


def case_bool_flip() -> None:
    m = RNG.random((4, 5)) > 0.5
    check(P.bool_flip, (m, np.array([0, 4, 2, 2])), twin=lambda m, i: (m.at[i].set(~m[i]), jnp.sum(m.at[i].set(~m[i]))))


def case_int_state_loop() -> None:
    x = RNG.integers(-5, 5, (4, 6))
    check(P.int_state_loop, (x, 0), (0, None), twin=None)
    check(P.int_state_loop, (x, np.array([-2, 0, 1, 3])), (0, 0), twin=None)


def case_batch_of_one() -> None:
    check(P.tuple_state_break, (r(RNG, 1, 3),), twin=None)
    check(P.window_sum, (r(RNG, 1, 7), np.array([3])), (0, 0))
    check(P.collatz_like, (np.array([27]),), twin=None)
    check(P.cond_dict_branches, (r(RNG, 1), r(RNG, 1, 2), r(RNG, 2)), (0, 0, None))


# -- an example the batched program masks computes indices out of range (NumPy must not raise; XLA clamps) -------

def case_masked_out_of_range_indices() -> None:
    # (the generated source run by NumPy raised IndexError: a finished example of a `while` on batched data, or one
    # on the other side of an `if`, still indexes, with an index its own program never reads with)
    check(P.sum_first_n, (r(RNG, 4), np.array([0, 4, 2, 3])), (None, 0), twin=None)
    check(P.sum_first_n, (r(RNG, 3, 4), np.array([4, 1, 0])), twin=None)
    check(P.guarded_read, (r(RNG, 5), np.array([0, 7, 4, 5, -2])), (None, 0), twin=None)
    check(P.guarded_write, (r(RNG, 4, 3), np.array([0, -9, 2, -1])), twin=None)


def case_out_of_range_write_clamped_as_unbatched() -> None:
    # (a batched scatter dropped an out-of-range write where the un-batched program (dynamic_update_slice) clamped
    # it: vmap(f) was not the loop of jit(f); both drop it now, as JAX's scatters: srcjax/index_writes.py)
    one = srcjax.jit(P.write_into_shared)
    check(P.write_into_shared, (np.arange(4.0), np.array([1, 7, -9]), 5.0), (None, 0, None), twin=None,
          example=lambda b, i, v: one(b, np.asarray(i), v))


# -- second round ---------------------------------------------------------------------------------------------

def case_for_else_break() -> None:
    check(P.find_or_default, (r(RNG, 5, 4), 0.9), (0, None), twin=None)
    check(P.find_or_default, (r(RNG, 4), np.array([-3.0, 0.0, 0.5, 9.0])), (None, 0), twin=None)


def case_static_for_else() -> None:
    # (`for ... else` was refused: "for ... else is not supported"; now a flag the loop's `break` clears)
    x = r(RNG, 3)
    agree(srcjax.jit(P.static_for_else)(x), P.static_for_else(x), what="jit(for-else)")
    agree(srcjax.grad(lambda v: np.sum(P.static_for_else(v) ** 2))(x), -2 * P.static_for_else(x), what="grad")
    check(P.static_for_else, (r(RNG, 4, 3),))


def case_first_index_for_else() -> None:
    # the canonical search: `idx` is first assigned in the loop, under a `break` on data, and in the `else:`
    # clause: it was refused ("`idx`, which it first assigns, is used after the loop"); the clause's `idx = -1`
    # now binds it before the loop too (frontend/loop_else.py), so the loop carries it (refuse47)
    check(P.first_index_for_else, (r(RNG, 4, 5), 0.5), (0, None), twin=None)
    x = np.array([[0.1, 0.2, 0.3], [0.9, 0.1, 0.7], [0.1, 0.6, 0.2]])
    agree(srcjax.vmap(P.first_index_for_else, in_axes=(0, None))(x, 0.5), np.array([-1, 0, 1]), what="vmap")


def case_while_else() -> None:
    check(P.while_else, (np.array([0.1, 0.5, 1.0, 3.0, -1.0]),), twin=None)


def case_nested_break_inner() -> None:
    check(P.nested_break_inner, (r(RNG, 4, 3, 5) + 0.5,), twin=None)
    check(P.nested_break_inner, (r(RNG, 3, 5, 4) + 0.5,), 2, twin=None)


def case_promote_in_loop() -> None:
    # (every example has a positive entry: one without returns the Python int 0, int64 in the loop oracle)
    check(P.promote_in_loop, (np.abs(r(RNG, 4, 3)) * [1, -1, 1],), twin=None)
    check(P.promote_in_loop, (np.abs(r(RNG, 4, 3, dtype=np.float32)) * np.float32(-1) + 0.5,), twin=None,
          rtol=1e-6, dtypes=False)
    check(P.promote_in_loop, (np.abs(r(RNG, 4, 3, dtype=np.float32)) * np.float32(-1) + np.float32([9, 0, 0]),),
          twin=None, rtol=1e-6)
    ints = RNG.integers(-3, 3, (4, 3)).astype(np.int32)
    ints[:, 0] = 1
    check(P.promote_in_loop, (ints,), twin=None)


def case_f32_while() -> None:
    check(P.f32_while, (r(RNG, 4, 2, dtype=np.float32) * np.float32(4),), twin=None, rtol=1e-6)


def case_write_in_while() -> None:
    check(P.write_in_while, (r(RNG, 5, 4), 0.3), (0, None), twin=None)
    check(P.write_in_while, (np.sort(r(RNG, 4)), np.array([-5.0, 0.0, 0.5, 5.0])), (None, 0), twin=None)


def case_add_at_batched_target() -> None:
    jt = lambda h, i, w: jnp.asarray(h).at[i].add(w)  # noqa: E731
    check(P.add_at_batched_target, (r(RNG, 3, 4), np.array([[0, 0, 3], [1, 2, 1], [3, 3, 3]]), r(RNG, 3, 3)),
          twin=jt)
    check(P.add_at_batched_target, (r(RNG, 3, 4), np.array([0, 0, 3]), r(RNG, 3)), (0, None, None), twin=jt)
    check(P.add_at_batched_target, (r(RNG, 4), np.array([0, 0, 3]), r(RNG, 3, 2)), (None, None, 1), twin=jt)


def case_double_index_accumulate() -> None:
    ii, jj = np.array([[0, 1, 1], [2, 2, 0], [1, 1, 1]]), np.array([[2, 0, 0], [1, 1, 1], [0, 2, 0]])
    check(P.double_index_accumulate, (r(RNG, 3, 3), ii, jj), (None, 0, 0), twin=None)
    check(P.double_index_accumulate, (r(RNG, 3, 3, 3), ii, jj[0]), (0, 0, None), twin=None)


def case_scan_reverse_dict_carry() -> None:
    check(P.scan_reverse_dict_carry, (r(RNG, 6, 3), r(RNG, 3)), (1, 0))
    check(P.scan_reverse_dict_carry, (r(RNG, 3, 6), 0.2), (0, None), ({"s": 0, "m": -1}, 1))


def case_switch_closures() -> None:
    check(P.switch_closures, (np.array([0, 1, 2, 2]), r(RNG, 4, 3), r(RNG, 3)), (0, 0, None))
    check(P.switch_closures, (1, r(RNG, 3), r(RNG, 4, 3)), (None, None, 0))


def case_cond_no_operands() -> None:
    check(P.cond_no_operands, (r(RNG, 5), r(RNG, 5, 2)))
    check(P.cond_no_operands, (r(RNG, 5), r(RNG, 2)), (0, None))


def case_fori_at_update() -> None:
    check(P.fori_at_update, (np.array([0, 2, 4]), r(RNG, 3, 4)), twin=None, example=srcjax.jit(P.fori_at_update))
    check(P.fori_at_update, (np.array([0, 2, 4]), r(RNG, 4)), (0, None), twin=None,
          example=srcjax.jit(P.fori_at_update))


def case_while_closure_limit() -> None:
    check(P.while_closure_limit, (r(RNG, 4), 3.0), (0, None))
    check(P.while_closure_limit, (0.3, np.array([0.1, 1.0, 10.0])), (None, 0))


def case_vmap_jacfwd_scan() -> None:
    j = srcjax.jacfwd(P.scan_loss_jac)
    check(j, (r(RNG, 3, 5),), example=j, twin=jax.jacfwd(twin_of(P.scan_loss_jac)))
    j = srcjax.jacrev(P.scan_loss_jac)
    check(j, (r(RNG, 5, 3),), 1, 2, example=j, twin=jax.jacrev(twin_of(P.scan_loss_jac)))


def case_counts_by_row() -> None:
    check(P.counts_by_row, (r(RNG, 4, 3, 5), 0.5), (0, None), twin=None)
    check(P.counts_by_row, (r(RNG, 3, 5), np.array([-9.0, 0.0, 9.0])), (None, 0), twin=None)


def case_unbatched_leaf_becomes_batched() -> None:
    check(P.unbatched_leaf_becomes_batched, (r(RNG, 3), r(RNG, 4, 2) * 2), (None, 0), twin=None)


def case_int_bool_mix() -> None:
    check(P.int_bool_mix, (RNG.integers(-4, 4, (4, 3)), RNG.random((4, 3)) > 0.5))
    check(P.int_bool_mix, (r(RNG, 3, dtype=np.float32), RNG.random((4, 3)) > 0.5), (None, 0))


def case_vmap_vmap_while() -> None:
    f = srcjax.vmap(srcjax.vmap(P.while_in_while), in_axes=1, out_axes=(1, 0))
    a = np.abs(r(RNG, 3, 4)) * 40
    got = f(a)
    want = loop(lambda col: loop(P.while_in_while, (col,), 0, 3), (a,), 1, 4, (1, 0))
    agree(got, want, what="vmap(vmap(while))", dtypes=True)


def case_grad_of_vmap_while_hessian() -> None:
    f = lambda x: np.sum(srcjax.vmap(P.find_or_default, in_axes=(0, None))(x, 0.5) ** 2)  # noqa: E731
    x = r(RNG, 4, 3)
    one = srcjax.grad(lambda v: P.find_or_default(v, 0.5) ** 2)
    agree(srcjax.grad(f)(x), np.stack([one(x[k]) for k in range(4)]), what="grad(sum(vmap(for-else)))")
    h = srcjax.hessian(lambda v: P.nested_break_inner(v))
    m = r(RNG, 3, 2, 3) + 0.5
    agree(srcjax.vmap(h)(m), np.stack([h(m[k]) for k in range(3)]), what="vmap(hessian(nested break))")


def case_hessian_of_helper_with_nested_loops() -> None:
    # (forward over reverse through a helper's nested `for`: its tape holds the inner loop's range, whose tangent
    # was None, and `zip(reversed(r), reversed(r_dot))` raised "reversed(): 'NoneType' object is not reversible")
    m = r(RNG, 2, 3)
    want = jax.hessian(twin_of(P.calls_grid_energy, helpers=[P.grid_energy]))(m)
    agree(srcjax.hessian(P.calls_grid_energy)(m), want, what="hessian(helper with nested loops)")
    h = srcjax.hessian(P.calls_grid_energy)
    check(h, (r(RNG, 3, 2, 3),), example=h, twin=None)


# -- third round ----------------------------------------------------------------------------------------------

def case_vmap_grad_while_max_iters() -> None:
    g = srcjax.grad(P.damped_sqrt, max_iters=60)
    a = np.array([0.5, 2.0, 9.0, 100.0])
    check(g, (a,), example=g, twin=None)
    agree(srcjax.vmap(g)(a), 0.5 / np.sqrt(a), what="d sqrt", rtol=1e-6)


def case_keyword_argument_batched() -> None:
    xs, ss = r(RNG, 4, 3), np.array([0.5, 1.0, 2.0, 4.0])
    got = srcjax.vmap(P.scaled_softplus)(xs, scale=ss)
    want = jax.vmap(twin_of(P.scaled_softplus))(xs, scale=ss)
    agree(got, want, what="keyword mapped at 0 (jax's rule)")


def case_list_argument_prefix() -> None:
    layers = [r(RNG, 3, 3), r(RNG, 4, 3, 2)]
    check(P.list_arg_mix, (layers, r(RNG, 4, 3)), ([None, 0], 0), twin=None)
    check(P.list_arg_mix, (layers, r(RNG, 3)), ([None, 0], None), twin=None)


def case_scan_pair_seq() -> None:
    check(P.scan_pair_seq, (0.0, r(RNG, 5, 3), r(RNG, 3, 5)), (None, 1, 0), (0, -1))
    check(P.scan_pair_seq, (r(RNG, 3), r(RNG, 5), r(RNG, 3, 5)), (0, None, 0))


def case_break_with_add_at() -> None:
    idx = np.array([[0, 1, 1, 3], [2, 2, 0, 0], [3, 3, 3, 1]])
    w = np.abs(r(RNG, 3, 4)) * np.array([[1, 1, -1, 1], [1, 1, 1, 1], [-1, 1, 1, 1]])
    check(P.break_with_add_at, (idx, w), twin=None)
    check(P.break_with_add_at, (idx, w[1]), (0, None), twin=None)


def case_vmap_vmap_grad_axes() -> None:
    g = srcjax.grad(P.nested_grad_pair, argnums=(0, 1))
    f = srcjax.vmap(srcjax.vmap(g, in_axes=(0, None)), in_axes=(None, 1))
    a, b = r(RNG, 4, 3), r(RNG, 3, 5)
    got = f(a, b)
    jg = jax.grad(twin_of(P.nested_grad_pair), argnums=(0, 1))
    want = jax.vmap(jax.vmap(jg, in_axes=(0, None)), in_axes=(None, 1))(a, b)
    agree(got, want, what="vmap(vmap(grad))")


def case_zero_d_examples_negative_axis() -> None:
    check(P.while_else, (np.array([0.1, 0.5, 3.0]),), -1, -1, twin=None)
    check(P.scalar_newton, (np.array([0.5, 8.0, 27.0, 1.0]),), -1, -1, twin=None)
    check(P.grow_each_entry, (np.array([[0.5, 8.0], [0.2, 1.0]]),), -1, -1, twin=None)


# -- fourth round ---------------------------------------------------------------------------------------------

def case_vmap_grad_aux_scatter() -> None:
    g = srcjax.grad(P.scatter_loss, has_aux=True)
    idx = np.array([[0, 2, 2, 1], [1, 1, 1, 1], [0, 0, 2, 2]])
    jg = jax.grad(lambda x, i: (jnp.sum(jnp.sin(jnp.zeros(3).at[i].add(x ** 2))),
                                jnp.zeros(3).at[i].add(x ** 2)), has_aux=True)
    check(g, (r(RNG, 3, 4), idx), example=g, twin=jg)
    check(g, (r(RNG, 4), idx), (None, 0), example=g, twin=jg)


def case_vmap_jacrev_scatter() -> None:
    j = srcjax.jacrev(lambda x, i: P.scatter_loss(x, i)[1])
    idx = np.array([[0, 2, 2, 1], [1, 1, 1, 1], [0, 0, 2, 2]])
    jj = jax.jacrev(lambda x, i: jnp.zeros(3).at[i].add(x ** 2))
    check(j, (r(RNG, 3, 4), idx), example=j, twin=jj, source=False)


def case_grad_of_vmap_switch() -> None:
    ks, xs = np.array([0, 1, 2, 1]), r(RNG, 4, 3)
    f = lambda x: np.sum(srcjax.vmap(P.switch_loss)(ks, x))  # noqa: E731
    jf = lambda x: jnp.sum(jax.vmap(twin_of(P.switch_loss))(ks, x))  # noqa: E731
    agree(srcjax.grad(f)(xs), jax.grad(jf)(xs), what="grad(vmap(switch))")
    g = srcjax.grad(P.switch_loss, argnums=1)
    check(g, (ks, xs), example=g, twin=jax.grad(twin_of(P.switch_loss), argnums=1))


def case_jvp_vmap_out_axes() -> None:
    xs, ts = r(RNG, 3, 4), r(RNG, 3, 4)
    f = srcjax.vmap(P.vec_update, in_axes=1, out_axes=-1)
    got = srcjax.jvp(f, (xs,), (ts,))
    want = jax.jvp(jax.vmap(lambda x: jnp.tanh(x).at[1].set(jnp.tanh(x)[0] * x[2]), in_axes=1, out_axes=-1),
                   (xs,), (ts,))
    agree(got, want, what="jvp(vmap(out_axes=-1))")


def case_vmap_vjp_unbatched_cotangent() -> None:
    xs, g = r(RNG, 4, 3), r(RNG, 3)
    f = lambda x, ct: srcjax.vjp(P.vec_update, x)[1](ct)[0]  # noqa: E731
    jf = lambda x, ct: jax.vjp(lambda v: jnp.tanh(v).at[1].set(jnp.tanh(v)[0] * v[2]), x)[1](ct)[0]  # noqa: E731
    check(f, (xs, g), (0, None), twin=jf, source=False)


def case_vmap_jacfwd_jacfwd_lax_while() -> None:
    # (hessian, reverse mode through lax.while_loop, is refused as jax refuses it: "needs a bound on its iterations")
    with pytest.raises(srcjax.TranspileError, match="needs a bound on its iterations"):
        srcjax.vmap(srcjax.hessian(P.while_loss))(r(RNG, 3, 2))
    h = srcjax.jacfwd(srcjax.jacfwd(P.while_loss))
    check(h, (r(RNG, 3, 2) * 0.5,), example=h, twin=jax.jacfwd(jax.jacfwd(twin_of(P.while_loss))), source=False)


def case_nested_for_else() -> None:
    # an inner loop's `else` that `continue`s the outer loop, whose own `else` runs when no `break` left it
    check(P.nested_else, (r(RNG, 5, 3, 4), np.array([0.2, 0.7, 1.0, 1.4, 3.0])), twin=None)
    m = r(RNG, 3, 4)
    agree(srcjax.jit(P.nested_else)(m, np.array(0.8)), P.nested_else(m, 0.8), what="jit(nested for-else)")


CASES: dict[str, Callable[[], None]] = {name[5:]: fn for name, fn in list(globals().items())
                                        if name.startswith("case_") and callable(fn)}
# a refusal (TranspileError at the user's line) of what jax runs: case -> why (xfail, reported)
KNOWN_REFUSALS: dict[str, str] = {}
# wrong answers or crashes left to another change: case -> why (xfail, reported)
KNOWN_WRONG: dict[str, str] = {}
# the default tier: the regressions of this audit's fixes and one or two cases of each family (while/for on batched
# data, batched indices, srcjax.lax, compositions, dtypes); SRCJAX_HYPOTHESIS=thorough runs every case
DEFAULT = ["masked_out_of_range_indices", "out_of_range_write_clamped_as_unbatched", "fori_batched_lower",
           "static_for_else", "while_else", "first_index_for_else", "hessian_of_helper_with_nested_loops",
           "tuple_state_break", "dict_state_halving", "return_from_while", "set_entry_mixed", "window_sum", "scatter_2d", "gather_rows",
           "scan_dict_out", "cond_dict_branches", "switch_in_fori", "vmap_value_and_grad_aux", "vmap_custom_vjp",
           "vmap_vmap_grad_axes", "vmap_jit_vmap", "masked_int_sum", "batch_of_one", "swap_entries"]
assert set(DEFAULT) <= set(CASES)


def run_case(name: str) -> None:
    if name in KNOWN_REFUSALS or name in KNOWN_WRONG:
        pytest.xfail(KNOWN_REFUSALS.get(name) or KNOWN_WRONG[name])
    CASES[name]()


@pytest.mark.parametrize("name", DEFAULT)
def test_case(name: str) -> None:
    run_case(name)


@pytest.mark.parametrize("name", tiers.thorough_cases([n for n in CASES if n not in DEFAULT]))
def test_case_thorough(name: str) -> None:
    run_case(name)


# -- a property test: random in_axes / out_axes / batch sizes on programs with control flow on batched data ------

# (program, each argument's per-example shape (a dict of shapes for a dict argument), the output's structure:
# a tuple of per-leaf ranks, or a dict of them, or one rank; whether jit runs it: vmap with nothing mapped is jit)
RANDOM_PROGRAMS: list[tuple[Callable[..., Any], tuple[Any, ...], Any, bool]] = [
    (P.list_state_grow, ((2,), (2,)), (1, 1, 0), True),
    (P.tuple_state_break, ((3,),), (1, 0, 0), True),
    (P.for_continue_accumulate, ((3,), (3, 2)), 1, True),
    # (jit refuses `while k < n and x[k] < v:` (k is needed static for `and`); vmap runs it)
    (P.write_in_while, ((4,), ()), (1, 0), False),
    (P.cond_inside_scan, ((6,), ()), (0, 1), True),
    (P.break_after_write, ((4,),), 1, True),
    (P.dict_param_loop, ({"w": (3,), "b": ()}, (3,)), {"h": 1, "k": 0}, True),
]


@st.composite
def vmapped_call(draw: Any) -> tuple[Any, ...]:
    fn, shapes, outs, jit_runs = draw(st.sampled_from(RANDOM_PROGRAMS))
    n = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)

    def leaf(shape: tuple[int, ...]) -> tuple[Any, Any]:
        if not draw(st.booleans()) and (jit_runs or len(args) > 0):
            return 2.0 * rng.standard_normal(shape), None
        ax = draw(st.integers(-len(shape) - 1, len(shape)))
        full = list(shape)
        full.insert(ax if ax >= 0 else len(shape) + 1 + ax, n)
        return 2.0 * rng.standard_normal(full), ax

    args, axes = [], []
    for shape in shapes:
        if isinstance(shape, dict):
            parts = {k: leaf(v) for k, v in shape.items()}
            args.append({k: v[0] for k, v in parts.items()})
            leaf_axes = {k: v[1] for k, v in parts.items()}
            whole = set(leaf_axes.values())
            # a pytree prefix: one int (or None) for the whole dict where its leaves share it
            axes.append(whole.pop() if len(whole) == 1 and draw(st.booleans()) else leaf_axes)
        else:
            a, ax = leaf(shape)
            args.append(a)
            axes.append(ax)
    mapped = bool(jax.tree_util.tree_leaves(axes))

    def out_axis(rank: int) -> Any:
        return None if not mapped else draw(st.integers(-rank - 1, rank))

    if isinstance(outs, int):
        out_axes: Any = out_axis(outs)
    elif isinstance(outs, dict):
        out_axes = {k: out_axis(v) for k, v in outs.items()}
    else:
        out_axes = tuple(out_axis(v) for v in outs)
        if mapped and draw(st.booleans()):  # one int for every output
            out_axes = draw(st.integers(-1, 0))
    in_axes = tuple(axes) if len(axes) > 1 or draw(st.booleans()) else axes[0]
    return fn, tuple(args), in_axes, out_axes, (None if mapped else n)


@written.examples(4, scale=15)
@given(vmapped_call())
def test_random_axes_on_control_flow_agree_with_a_loop(call: tuple[Any, ...]) -> None:
    fn, args, in_axes, out_axes, axis_size = call
    note = f"{fn.__name__} in_axes={in_axes} out_axes={out_axes} axis_size={axis_size}"
    try:
        check(fn, args, in_axes, out_axes, twin=None, axis_size=axis_size)
    except AssertionError as e:
        raise AssertionError(f"{note}: {e}") from None


def verdict(name: str) -> tuple[str, str]:
    try:
        CASES[name]()
    except srcjax.TranspileError as e:
        return "refused", str(e).splitlines()[0][:300]
    except AssertionError as e:
        return "wrong", str(e)[:600]
    except Exception:  # noqa: BLE001
        return "crash", traceback.format_exc()[-1500:]
    return "ok", ""


def main(names: list[str]) -> None:
    counts: dict[str, int] = {}
    for name in names or list(CASES):
        kind, why = verdict(name)
        counts[kind] = counts.get(kind, 0) + 1
        print(f"{kind:8} {name}" + (f"\n    {why}" if why else ""), flush=True)
    print(counts)


if __name__ == "__main__":
    main(sys.argv[1:])

