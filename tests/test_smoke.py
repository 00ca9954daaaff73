import numpy as np
import pytest

import srcjax


def predict(w1, b1, w2, x):
    h = np.tanh(x @ w1 + b1)
    return np.mean(h @ w2, axis=-1)


def test_predict_three_oracles():
    rng = np.random.default_rng(0)
    w1, b1, w2, x = (rng.normal(size=s).astype(np.float32) for s in [(3, 16), (16,), (16, 4), (7, 3)])
    expected = predict(w1, b1, w2, x)
    out = srcjax.compile(predict)(w1, b1, w2, x)
    gen = srcjax.numpy_function(predict)(w1, b1, w2, x)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gen, expected, rtol=1e-6)
    assert out.shape == (7,) and out.dtype == np.float32


def test_shape_error_points_at_line():
    rng = np.random.default_rng(0)
    w1, b1, w2 = (rng.normal(size=s).astype(np.float32) for s in [(3, 16), (16,), (16, 4)])
    with pytest.raises(srcjax.ShapeError) as ei:
        srcjax.compile(predict)(w1, b1, w2, np.zeros((7, 5), np.float32))
    e = ei.value
    assert e.span.filename == __file__
    assert e.span.line == predict.__code__.co_firstlineno + 1
    assert "(7, 5)" in str(e) and "(3, 16)" in str(e)
