"""Buffer donation (issue #18, ``srcjax/donation.py``): a donated argument's buffer is reused for a
result of its shape and dtype (XLA input/output aliasing); the donated array cannot be used after
the call (a clear ArgumentError, not a crash); results equal those without donation."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax


def step(params, grads, lr):
    return {k: params[k] - lr * grads[k] for k in params}, np.sum(grads["w"])


def _params(rng):
    return {"w": rng.standard_normal((4, 3)).astype(np.float32), "b": rng.standard_normal(3).astype(np.float32)}


def test_donated_buffers_are_aliased_and_the_results_match():
    rng = np.random.default_rng(0)
    p, g = _params(rng), _params(rng)
    plain = srcjax.jit(step)
    donating = srcjax.jit(step, donate_argnums=0)
    text = srcjax.lower(donating, p, g, 0.1).as_text()
    assert "tf.aliasing_output" not in text  # (lower() shows the program before aliasing)
    want = plain(p, g, 0.1)
    dev = srcjax.device_put(p)
    got = donating(dev, g, 0.1)
    for k in p:
        np.testing.assert_allclose(np.asarray(got[0][k]), np.asarray(want[0][k]), rtol=1e-6)
    assert float(got[1]) == pytest.approx(float(want[1]))
    (plan,) = donating._tree_cache.values() or donating._cache.values()
    assert plan.exe.text.count("tf.aliasing_output") == 2  # both leaves of params
    for k in p:
        with pytest.raises(srcjax.ArgumentError, match="donated"):
            np.asarray(dev[k])
    with pytest.raises(srcjax.ArgumentError, match="donated"):
        donating(dev, g, 0.1)


def test_a_training_loop_feeding_results_back_equals_the_plain_one():
    rng = np.random.default_rng(1)
    p, g = _params(rng), _params(rng)
    plain, donating = srcjax.jit(step), srcjax.jit(step, donate_argnames="params")
    a, b = srcjax.device_put(p), srcjax.device_put(p)
    for _ in range(5):
        a = plain(a, g, 0.05)[0]
        b = donating(b, g, 0.05)[0]
    for k in p:
        np.testing.assert_allclose(np.asarray(b[k]), np.asarray(a[k]), rtol=1e-6)


def test_numpy_inputs_and_leaves_without_a_matching_result_are_left_alone():
    rng = np.random.default_rng(2)
    p, g = _params(rng), _params(rng)
    kept = {k: v.copy() for k, v in p.items()}
    donating = srcjax.jit(step, donate_argnums=(0, 1))
    out = donating(p, g, 0.1)  # NumPy inputs: uploaded afresh, the caller's arrays unchanged
    for k in p:
        np.testing.assert_array_equal(p[k], kept[k])
        np.testing.assert_allclose(np.asarray(out[0][k]), p[k] - 0.1 * g[k], rtol=1e-6)

    def shrink(x):
        return x[:2].sum()

    s = srcjax.jit(shrink, donate_argnums=0)
    x = srcjax.device_put(np.arange(4.0))
    assert float(s(x)) == 1.0
    assert float(s(x)) == 1.0  # no result of its shape: not donated, still usable


def test_donate_argument_errors():
    with pytest.raises(srcjax.ArgumentError, match="donate_argnums"):
        srcjax.jit(step, donate_argnums=5)
    with pytest.raises(srcjax.ArgumentError, match="donate_argnames"):
        srcjax.jit(step, donate_argnames="nope")
