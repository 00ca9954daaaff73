"""vmap's batched copies of srcjax's helpers: one function per content, shared; a program's own die with it.

``srcjax/batch_shared.py`` (issue #15): per-example gradients of two functions batch ``max_bar`` and
``matmul_rhs_bar`` for the same argument states, and both programs call one ``max_bar_vmap`` (normalized
once), still agreeing with jax. What is shared, and so every name and text, is decided by the program's
content, never by what ran before (an earlier attempt gave the clipped hessian ``max_share_vmap_1`` when it
ran alone). A program's copies, and the user's functions their namespace holds, are collected with it
(``frontend/program.py`` kept every copy's normalized form for the process).
"""

from __future__ import annotations

import gc
import sys
import weakref
from pathlib import Path
from typing import Any

import jax
import numpy as np

import srcjax
from srcjax import batch_shared
from srcjax.frontend import program
from tests import golden
from tests.test_ad_higher import clipped

jax.config.update("jax_enable_x64", True)


def _loss(c: float) -> Any:
    def loss(w, x, y):
        return np.sum(np.tanh(x @ w) * y) * c + np.max(x @ w)
    return loss


def _jax_loss(w, x, y):
    return jax.numpy.sum(jax.numpy.tanh(x @ w) * y) * 2.0 + jax.numpy.max(x @ w)


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((3, 2)), rng.standard_normal((4, 3)), rng.standard_normal((4, 2))


def _copies(v: Any) -> dict[str, Any]:
    return {k: f for k, f in v.fn.__globals__.items() if k.endswith("_vmap") and batch_shared.is_shared(f)}


def test_per_example_grads_share_the_helpers_copies_and_agree_with_jax() -> None:
    w, x, y = _data()
    a = srcjax.vmap(srcjax.grad(_loss(1.0)), in_axes=(None, 0, 0))
    b = srcjax.vmap(srcjax.grad(_loss(2.0)), in_axes=(None, 0, 0))
    got = np.asarray(b(w, x, y))
    a(w, x, y)
    want = jax.vmap(jax.grad(_jax_loss), in_axes=(None, 0, 0))(w, x, y)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12, atol=1e-12)
    shared_a, shared_b = _copies(a), _copies(b)
    assert {"max_bar_vmap", "matmul_rhs_bar_vmap"} <= set(shared_a), shared_a
    assert all(shared_a[k] is shared_b[k] for k in shared_a)
    for f in shared_a.values():  # (a namespace of its own: no user function kept alive by it)
        assert "loss" not in f.__globals__ and "loss_grad" not in f.__globals__


def test_a_program_and_its_copies_die_with_it(monkeypatch: Any) -> None:
    # (copies not shared: each program's own, run in its namespace, with the user's functions)
    monkeypatch.setattr(sys.modules["srcjax.vmap"], "share_library_copies", lambda *args: None)
    w, x, y = _data()
    srcjax.vmap(srcjax.grad(_loss(5.0)), in_axes=(None, 0, 0))(w, x, y)  # (the helpers normalized)
    size = len(program._LIBRARY)
    refs = []
    for c in (3.0, 4.0):
        f = _loss(c)
        srcjax.vmap(srcjax.grad(f), in_axes=(None, 0, 0))(w, x, y)
        refs.append(weakref.ref(f))
        del f
    assert len(program._LIBRARY) == size  # (the helpers' own forms only: no program's copy)
    srcjax.reuse.forget()
    gc.collect()
    assert [r() for r in refs] == [None, None]  # (the user's functions, which each copy's namespace held)


def test_names_do_not_depend_on_what_ran_before() -> None:
    want = (Path(golden.GOLDEN_DIR) / "test_ad_higher.clipped.hessian.txt").read_text()
    first = srcjax.hessian(clipped)
    assert srcjax.source(first) == want  # (two copies call one `max_share_vmap`: one function, one name)
    srcjax.reuse.forget()  # (written again, the first program's shared copies alive)
    assert srcjax.source(srcjax.hessian(clipped)) == want
    assert "max_share_vmap_1" not in want
