"""Refusals of hunt24's corpus (tests/hunt24_programs.py) that NumPy runs, made to run (session 43): check_mask's
``np.bitwise_and(mask, vector)`` of a default tuple ``mask=(1, 0, 1)``. Each against NumPy running the user's
function (jax refuses these spellings itself); derivatives against finite differences where they apply."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax


def _check_mask(db: Any, mask: Any = (1, 0, 1)) -> Any:
    out = np.zeros(db.shape[0], dtype=bool)
    for idx, line in enumerate(db):
        target, vector = line[0], line[1:]
        if (mask == np.bitwise_and(mask, vector)).all():
            if target == 1:
                out[idx] = 1
    return out


def _data_ints(x: Any, y: Any) -> Any:
    k = np.sum(y)
    return np.bitwise_and((k, 3), x)


def test_a_tuple_of_int_arguments_where_an_array_goes_runs() -> None:
    """Refused before ("np.bitwise_and(): a tuple of traced values where an array goes"): NumPy makes an array of
    it. Python int arguments are specialized on (as any Python int a static value needs); integers computed from
    data are stacked into NumPy's int64 array."""
    db = np.array([[1, 1, 0, 1], [1, 1, 1, 1], [0, 1, 0, 1], [1, 0, 0, 0]])
    np.testing.assert_array_equal(np.asarray(srcjax.jit(_check_mask)(db)), _check_mask(db))
    np.testing.assert_array_equal(np.asarray(srcjax.jit(_check_mask)(db, (0, 1, 1))), _check_mask(db, (0, 1, 1)))
    batch = np.stack([db, db[::-1]])
    np.testing.assert_array_equal(np.asarray(srcjax.vmap(_check_mask)(batch)), [_check_mask(b) for b in batch])
    x, y = np.array([5, 7], np.int32), np.array([1, 2, 3], np.int32)
    got = srcjax.jit(_data_ints)(x, y)
    np.testing.assert_array_equal(np.asarray(got), _data_ints(x, y))
    assert got.dtype == _data_ints(x, y).dtype


def test_a_list_of_float_arguments_where_an_array_goes_is_still_refused() -> None:
    """A list argument's derivative is a list (jax's): an array made of it would lose that, so floats stay
    refused (test_errors.py's list argument)."""
    with pytest.raises(srcjax.DTypeError, match="a list of traced values where an array goes"):
        srcjax.jit(lambda x: np.sin(x))([1.5, 2.0])


def _folding(seq: Any) -> Any:
    # (hunt24's nussinov, smaller) Python's max of table entries computed from data
    N = seq.shape[0]
    table = np.zeros((N, N), np.int32)
    for i in range(N - 1, -1, -1):
        for j in range(i + 1, N):
            table[i, j] = max(table[i, j], table[i, j - 1])
            table[i, j] = max(table[i, j], table[i + 1, j - 1] + (seq[i] + seq[j] == 3))
    return table


def _normalized(image: Any) -> Any:
    # (hunt24's laplacien) a Python float beside a reduction's value
    out = np.abs(4 * image[1:-1, 1:-1] - image[0:-2, 1:-1] - image[2:, 1:-1])
    valmax = max(1., np.max(out)) + 1.E-9
    return out / valmax


def _mixed(a: Any, b: Any) -> Any:
    return max(a.sum(), b.sum(), 0.5) + min(a[0], b[1]) + min(2, 3)


def test_builtin_max_and_min_of_values_from_data_run() -> None:
    """Refused before ("the builtin max() compares values known only at run time"): Python's max of single
    values is a select, each next value where it compares greater (``np.where(b > a, b, a)``), as Python keeps the
    first of equal values and compares NaN as it does."""
    seq = np.array([0, 3, 1, 2, 3, 0])
    got = srcjax.jit(_folding)(seq)
    np.testing.assert_array_equal(np.asarray(got), _folding(seq))
    assert got.dtype == np.int32
    for scale in (0.1, 10.0):
        image = scale * np.random.default_rng(0).standard_normal((5, 5))
        np.testing.assert_allclose(np.asarray(srcjax.jit(_normalized)(image)), _normalized(image), rtol=1e-12)
        got32 = srcjax.jit(_normalized)(image.astype(np.float32))
        assert got32.dtype == _normalized(image.astype(np.float32)).dtype == np.float32
    a, b = np.array([0.3, -1.0, 0.2]), np.array([0.1, 0.4, -2.0])
    nan = np.array([np.nan, 1.0, 2.0])
    for x, y in ((a, b), (nan, b), (-a, b), (a, nan)):  # (max(nan, v) is nan, max(v, nan) is v, as Python's)
        assert np.isnan(_mixed(x, y)) == (x is nan)
        np.testing.assert_allclose(np.asarray(srcjax.jit(_mixed)(x, y)), _mixed(x, y))
    with pytest.raises(srcjax.TranspileError, match="the builtin max"):  # (NumPy: an array's truth is ambiguous)
        srcjax.jit(lambda a, b: max(a, b))(a, b)


def _indexed(x: Any) -> Any:
    # (hunt24's local_maxima) loops over np.ndindex of a static shape, and of sizes
    out = np.zeros(x.shape)
    for idx in np.ndindex(x.shape):
        out[idx] = x[idx] * (idx[0] + 1)
    for i, j in np.ndindex(2, 3):
        out[i, j] += x[1 - i, j] ** 2
    return out


def test_loops_over_np_ndindex_run_and_differentiate() -> None:
    """Refused before ("cannot call ndindex()"): the index tuples are static, as the shape is; the loop reads
    ``list(np.ndindex(...))``, which reverse mode reads again backwards (an iterator would be used up)."""
    x = np.arange(6.0).reshape(2, 3) - 2.5
    np.testing.assert_allclose(np.asarray(srcjax.jit(_indexed)(x)), _indexed(x))
    loss = lambda x: np.sum(np.sin(_indexed(x)))  # noqa: E731
    fd = np.array([(loss(x + 1e-6 * e) - loss(x - 1e-6 * e)) / 2e-6 for e in np.eye(6).reshape(6, 2, 3)])
    g = srcjax.grad(loss)
    np.testing.assert_allclose(np.asarray(g(x)), fd.reshape(2, 3), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(g)(x)), fd.reshape(2, 3), rtol=1e-6, atol=1e-7)
    batch = np.stack([x, -x])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(_indexed)(batch)), [_indexed(b) for b in batch])
    assert "for idx in list(ndindex):" in srcjax.source(_indexed)


def _two(a: Any, b: Any) -> Any:
    return max(a.sum(), b[0]) * min(a[1], 2.0) + max(np.sum(a * b), 0.1)


def test_derivatives_of_builtin_max_of_values_from_data_follow_the_value_kept() -> None:
    """Refused before ("the builtin max() compares values known only at run time"; eager jax.grad runs it): the
    cotangent goes to the value Python's comparison keeps (refuse48: transforms/anf.py's ``_selected_op``)."""
    a, b = np.array([0.3, 0.5]), np.array([1.5, 0.1])
    loss = lambda a: _two(a, b)  # noqa: E731
    fd = [(loss(a + 1e-6 * e) - loss(a - 1e-6 * e)) / 2e-6 for e in np.eye(2)]
    np.testing.assert_allclose(np.asarray(srcjax.grad(_two)(a, b)), fd, rtol=1e-6)


def test_vmap_of_builtin_max_and_min_of_each_examples_values() -> None:
    """Refused before under vmap ("the builtin max() compares values known only at run time"): batched source calls
    ``batch_builtin_max`` (srcjax/order_stats.py), the select of each example's values; an example's array of one
    dimension or more is still refused (NumPy: an array's truth value is ambiguous)."""
    seqs = np.array([[0, 3, 1, 2, 3, 0], [2, 1, 1, 0, 3, 3]])
    np.testing.assert_array_equal(np.asarray(srcjax.vmap(_folding)(seqs)), [_folding(s) for s in seqs])
    images = np.random.default_rng(1).standard_normal((2, 5, 5)) * np.array([0.1, 10.0])[:, None, None]
    np.testing.assert_allclose(np.asarray(srcjax.vmap(_normalized)(images)), [_normalized(i) for i in images])
    A, b = np.random.default_rng(2).standard_normal((4, 2)), np.array([0.4, 0.1])
    batched = srcjax.vmap(_two, in_axes=(0, None))
    want = [_two(a, b) for a in A]
    np.testing.assert_allclose(np.asarray(batched(A, b)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(batched)(A, b)), want, rtol=1e-12)
    with pytest.raises(srcjax.TranspileError, match="max"):
        srcjax.vmap(lambda a, b: max(a, b))(A, A)
