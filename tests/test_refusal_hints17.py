"""Refusals a user meets, located at the user's line with what to write instead (known17's list, from errs16's
left items): one-argument ``np.where(condition)`` (was "np.where(): missing a required argument: 'x'") and a
wrong tuple-unpack count ``a, b = (x, y, z)`` (had no hint)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

X = np.array([1.5, -2.0, 3.0])


def indices_where(x: Any) -> Any:
    return np.sum(np.where(x > 0))


def unpack_three_into_two(x: Any) -> Any:
    p, q = (x, x * 2, x * 3)
    return p + q


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0]


@pytest.mark.parametrize("transform", [srcjax.jit, srcjax.grad])
def test_one_argument_where_says_it_is_nonzero(transform: Any) -> None:
    with pytest.raises(srcjax.TranspileError, match=r"np\.where\(condition\) with one argument") as e:
        transform(indices_where)(X)
    assert "test_refusal_hints17.py:18:" in _first_line(e.value)
    assert "np.where(condition, x, y)" in (e.value.hint or "")


def test_the_mask_the_hint_names_runs() -> None:
    def masked(x: Any) -> Any:
        return np.sum(np.where(x > 0, x, 0.0)) + np.count_nonzero(x > 0)

    np.testing.assert_allclose(np.asarray(srcjax.jit(masked)(X)), 4.5 + 2)


def test_a_wrong_unpack_count_has_a_hint() -> None:
    with pytest.raises(srcjax.ShapeError, match="cannot unpack 3 values into 2 names") as e:
        srcjax.jit(unpack_three_into_two)(X)
    assert "test_refusal_hints17.py:22:" in _first_line(e.value)
    assert "write 3 names" in (e.value.hint or "")


class Stats:
    def __init__(self, n: int) -> None:
        self.total = np.zeros(n)
        self.count = 0

    def update(self, row: Any) -> None:
        self.total = self.total + row
        self.count = self.count + 1


def mean_rows(X: Any) -> Any:
    st = Stats(X.shape[1])
    for i in range(X.shape[0]):
        st.update(X[i])
    return st.total / st.count


@pytest.mark.parametrize("transform", [srcjax.jit, lambda f: srcjax.grad(lambda X: np.sum(f(X)))])
def test_a_method_changing_an_object_made_in_the_function_is_refused_clearly(transform: Any) -> None:
    # (was read as a dict's update: "indexing with a f64[] value: indices must be integers")
    with pytest.raises(srcjax.UnsupportedSyntaxError, match=r"calls Stats\.update, which changes the object") as e:
        transform(mean_rows)(np.arange(6.0).reshape(3, 2))
    assert "test_refusal_hints17.py:" in _first_line(e.value) and "_replace" in (e.value.hint or "")


def grows_while_walked(x: Any) -> Any:
    d = {"a": x, "b": 2 * x}
    for k in d:
        d[k + "_sq"] = d[k] ** 2
    return np.sum(d["a"])


@pytest.mark.parametrize("transform", [srcjax.jit, srcjax.grad, srcjax.jacrev])
def test_a_dict_growing_while_walked_is_pythons_error_under_every_transformation(transform: Any) -> None:
    # (grad and jacrev returned a value, where Python raises RuntimeError: the derivative walks the dict under
    # another name, `loop_items`)
    with pytest.raises(srcjax.StaticValueError, match="dictionary changed size during iteration") as e:
        transform(grows_while_walked)(np.array([1.0, 2.0]))
    assert "test_refusal_hints17.py:" in _first_line(e.value) and "for k in d:" in str(e.value)


def test_a_dict_walked_and_written_at_its_own_keys_runs_under_grad() -> None:
    def scaled(x: Any) -> Any:
        d = {"a": x, "b": 2 * x}
        for k in d:
            d[k] = d[k] ** 2
        return np.sum(d["a"] + d["b"])

    np.testing.assert_allclose(np.asarray(srcjax.grad(scaled)(np.array([1.0, 2.0]))), 10 * np.array([1.0, 2.0]))
