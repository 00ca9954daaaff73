"""Products and solves that read an operand repeated along new leading axes (``FuncBuilder.repeated``).

vmap marks an unmapped matrix read by a branch on batched data as ``taken(batch_broadcast(A, n), test)``
(issue #15): the lowering sees that the operand is ``A`` repeated and computes with ``A`` itself (one
product with the batch as free axes, one factorization whose right sides are the batch; a stack-wise
primitive such as ``np.linalg.inv`` once, its result repeated), not one product or factorization per
example. Here the repeat is the user's own ``np.broadcast_to``: each program against NumPy, and the
optimized HLO holds no repeated copy of the matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import srcjax
from tests.written import examples

N = 5  # examples; A is 4x4 (the repeat would be f64[5,4,4])


def rep(a, n):
    return np.broadcast_to(a, (n,) + a.shape)


def ein_batch(A, x):  # the repeat's axis a batch axis of the product
    return np.einsum("zij,zj->zi", rep(A, x.shape[0]), x)


def ein_batch_right(A, x):
    return np.einsum("zj,zji->zi", x, rep(A, x.shape[0]))


def ein_free(A, x):  # a free axis of the repeat: the product of A, repeated
    return np.einsum("zij,jk->zik", rep(A, 5), x[0:4, 0:3])


def ein_both(A, x):  # both operands repeats
    return np.einsum("zij,zjk->zik", rep(A, 5), rep(x[0:4, 0:3] * 2.0, 5))


def ein_contracted(A, x):  # the repeat's axis contracted: left as it is
    return np.einsum("zij,zj->i", rep(A, x.shape[0]), x)


def ein_two_levels(A, x):
    return np.einsum("yzij,zj->yzi", np.broadcast_to(A, (3, x.shape[0]) + A.shape), x)


def matmul_vector(A, x):
    return rep(A, x.shape[0]) @ x[:, :, None]


def vector_matmul(A, x):
    return x[:, None, :] @ rep(A, x.shape[0])


def matmul_transposed(A, x):  # a transpose of the repeat's own axes keeps it a repeat
    return np.swapaxes(rep(A, x.shape[0]), 1, 2) @ x[:, :, None]


def matmul_mixed_dtypes(A, x):  # A float32, converted to float64 (still a repeat)
    return rep(A.astype(np.float32), x.shape[0]) @ x[:, :, None]


def tensordot_rep(A, x):
    return np.tensordot(x, rep(A, x.shape[0]), axes=([1], [2]))


def solve_stack(A, x):  # right sides (N, 4, 1)
    return np.linalg.solve(rep(A, x.shape[0]), x[:, :, None])


def solve_matrices(A, x):  # right sides (N, 4, 2)
    return np.linalg.solve(rep(A, x.shape[0]), np.stack([x, x * 2.0], axis=-1))


def solve_one_vector(A, x):  # one right side (a vector): the solution repeated
    return np.linalg.solve(rep(A, x.shape[0]), x[0])


def solve_broadcast_rhs(A, x):  # right sides (1, 4, 1) broadcast against the repeat
    return np.linalg.solve(rep(A, x.shape[0]), x[0:1, :, None])


PROGRAMS = [ein_batch, ein_batch_right, ein_free, ein_both, ein_contracted, ein_two_levels, matmul_vector,
            vector_matmul, matmul_transposed, matmul_mixed_dtypes, tensordot_rep, solve_stack, solve_matrices,
            solve_one_vector, solve_broadcast_rhs]


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    return rng.standard_normal((4, 4)) + 4.0 * np.eye(4), rng.standard_normal((N, 4))


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_a_repeated_operand_is_read_unrepeated(f: Any) -> None:
    A, x = _data()
    got = srcjax.jit(f)(A, x)
    np.testing.assert_allclose(np.asarray(got), f(A, x), rtol=1e-12, atol=1e-12)
    if f is ein_contracted:
        return
    hlo = srcjax.jit(f).lower(A, x).compile().as_text()
    assert "f64[5,4,4]" not in hlo and "f64[3,5,4,4]" not in hlo, hlo  # (no copy of A per example)


def inverse(A, x):  # a stack-wise primitive of a repeat: one inverse, repeated
    return np.linalg.inv(rep(A, x.shape[0])) @ x[:, :, None]


def determinant_and_eigh(A, x):
    s = rep(A + A.T, x.shape[0])
    w, v = np.linalg.eigh(s)
    return np.linalg.det(s)[:, None] * x + w + v[:, 0, :]


def matrix_power_svd(A, x):
    u, s, vh = np.linalg.svd(np.linalg.matrix_power(rep(A, x.shape[0]), 3))
    return s * x + np.abs(u[:, 0, :] * vh[:, :, 0])


@pytest.mark.parametrize("f", [inverse, determinant_and_eigh, matrix_power_svd], ids=lambda f: f.__name__)
def test_a_stack_wise_primitive_of_a_repeat_runs_once(f: Any) -> None:
    A, x = _data()
    np.testing.assert_allclose(np.asarray(srcjax.jit(f)(A, x)), f(A, x), rtol=1e-10, atol=1e-10)
    hlo = srcjax.jit(f).lower(A, x).compile().as_text()
    assert "f64[5,4,4]" not in hlo, hlo  # (no matrix per example: one factorization)


# -- random products of a repeat (hypothesis): any batch/free/contracted layout of the repeat's axes ------------


def ein_repeat_left(A, y, spec, lead):  # type: ignore[no-untyped-def]
    return np.einsum(spec, np.broadcast_to(A, lead + A.shape), y)


def ein_repeat_right(A, y, spec, lead):  # type: ignore[no-untyped-def]
    return np.einsum(spec, y, np.broadcast_to(A, lead + A.shape))


@st.composite
def _products(draw: Any) -> tuple[str, tuple[int, ...], np.ndarray, np.ndarray, bool]:
    letters = list("abcdefg")
    size = {c: draw(st.integers(1, 3)) for c in letters}
    n_lead, n_a = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    x = letters[:n_lead + n_a]
    shared = draw(st.lists(st.sampled_from(x), unique=True, max_size=len(x)))
    y = draw(st.permutations(shared + letters[n_lead + n_a:n_lead + n_a + draw(st.integers(0, 2))]))
    both = list(dict.fromkeys(x + list(y)))
    out = draw(st.lists(st.sampled_from(both), unique=True, max_size=len(both)))
    right = draw(st.booleans())
    spec = f"{''.join(y)},{''.join(x)}->{''.join(out)}" if right else f"{''.join(x)},{''.join(y)}->{''.join(out)}"
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    A = rng.standard_normal(tuple(size[c] for c in x[n_lead:]))
    return spec, tuple(size[c] for c in x[:n_lead]), A, rng.standard_normal(tuple(size[c] for c in y)), right


@examples(15, scale=15)
@given(_products())
def test_random_products_of_a_repeat_agree_with_numpy(case: Any) -> None:
    """Whatever role the repeated axes take in a product (batch, free, contracted: left as it is), the
    product read unrepeated equals NumPy's on the repeat itself."""
    spec, lead, A, y, right = case
    f = ein_repeat_right if right else ein_repeat_left
    got = srcjax.jit(f, static_argnames=("spec", "lead"))(A, y, spec=spec, lead=lead)
    np.testing.assert_allclose(np.asarray(got), f(A, y, spec, lead), rtol=1e-10, atol=1e-12, err_msg=spec)
