"""tests/hunt30_programs.py's everyday NumPy programs (parameters in small classes, recurrences written as loops
over arrays, ``np.linalg`` in losses, masks and cumulative operations, hinge/Huber/softmax losses, einsum and
reshape chains, integer arithmetic on static shapes, string-keyed dict configurations) under ``jit``, ``grad``,
``vmap(grad)`` and ``jacrev``, run by ``tests/vmap_corpus.py``: against jax over the module's text, the NumPy
stand-in (the user's function run by NumPy, a loop over the examples for vmap, finite differences for derivatives)
and the generated source run by NumPy.

The default run checks ``DEFAULT_CASES`` at float64; ``SRCJAX_HYPOTHESIS=thorough`` every check at float64 and
float32. ``python -m tests.test_hunt30_programs [NAME ...] [--f64|--f32]`` runs the corpus (or the cases named)
and prints the counts and every failure.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import srcjax  # noqa: F401 - (the checks' namespace)

from . import hunt30_programs as hp
from .vmap_corpus import JR, Case, G, J, VmapCorpus, g, jr, v, vg

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

# Refusals met where jax refuses too (reported; located at the user's line with a hint)
JAX_REFUSES: tuple[str, ...] = ()
# Refusals met where jax runs the program (each with a reason)
KNOWN_REFUSALS: tuple[str, ...] = (
    # config_dict_mlp: `act = ACTIVATIONS[cfg["activation"]]`, then `act(z)`: a function chosen while tracing is
    # called through a local name; jit runs it, derivatives and vmap follow functions called by their own names
    # (the refusal says to call each by name under an `if` on the setting: tests/test_hunt30_fixes.py)
    "taken from a container or chosen by an `if` while tracing",
    # subclass_super_call: an object of a subclass of a plain class (`class ScaledAffine(Affine)`, its `__call__`
    # through `super()`) made in the function: only classes deriving from object alone are read as records
    # (frontend/constructed_objects.py); jit refuses it too ("constructing a ScaledAffine object runs Python code")
    "constructing a ScaledAffine object runs Python code", "cannot differentiate through `ScaledAffine(...)`",
    "cannot differentiate through `m(...)`",
    # early_return_in_zip: `return` inside `for k, (a, b) in enumerate(zip(xs, ys)):` at a static step: derivatives
    # take an early return out of a loop over a range, an array or a tuple only (jit runs it)
    "`return` inside a loop on array data",
)
# Errors of srcjax's own met and not fixed yet: xfail, not hidden
KNOWN_INTERNAL: tuple[str, ...] = ()
# Wrong answers met and not fixed yet: (case, check[, dtype]) -> why; xfail, not hidden
KNOWN_WRONG: dict[tuple[str, ...], str] = {}


def _n(r: np.random.Generator, d: Any, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * r.standard_normal(shape)).astype(d)


def _u(r: np.random.Generator, d: Any, lo: float, hi: float, *shape: int) -> np.ndarray:
    return r.uniform(lo, hi, shape).astype(d)


def _regression(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    X = r.standard_normal((8, 3))
    return (0.3 * r.standard_normal(3)).astype(d), X.astype(d), (np.sin(X @ np.array([1.0, -0.5, 0.2]))).astype(d)


def _binary(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    X = r.standard_normal((8, 3))
    return (0.3 * r.standard_normal(3)).astype(d), X.astype(d), (r.uniform(size=8) < 0.5).astype(d)


def _classes(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return _n(r, d, 6, 4), r.integers(0, 4, 6)


_01 = (0, None)
_012 = (0, None, None)
_0 = (0,)
CASES: tuple[Case, ...] = (
    # parameters in small classes
    Case("dataclass_mlp", lambda r, d: (_n(r, d, 5, 3), _n(r, d, 3, 4), _n(r, d, 4, 2)),
         (J, g("(0, 1, 2)"), jr(1), vg(_012))),
    Case("lstm_namedtuple", lambda r, d: (_n(r, d, 4, 2), _n(r, d, 8, 2, scale=0.5), _n(r, d, 8, 2, scale=0.5)),
         (J, g("(0, 1, 2)"), jr(2), vg(_012))),
    Case("gaussian_class_nll", lambda r, d: ((_n(r, d, 3), _n(r, d, 3, scale=0.3)), _n(r, d, 3)),
         (J, G, JR, vg(_01)), numpy_dtypes="float32 - np.log(2 * np.pi) (a float64 scalar) is float64 in NumPy"),
    # recurrences as loops over arrays
    Case("elman_rows", lambda r, d: (_n(r, d, 5, 2), _n(r, d, 3, 2), _n(r, d, 3, 3, scale=0.5)),
         (J, g("(0, 1, 2)"), jr(2), vg(_012))),
    Case("bidirectional_sum", lambda r, d: (_n(r, d, 4, 3), _n(r, d, 3)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("discounted_enumerate", lambda r, d: (_n(r, d, 6), _n(r, d, 6)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("zip_rows_cosine", lambda r, d: (_n(r, d, 4, 3), _n(r, d, 4, 3)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("zip_layer_lists", lambda r, d: (_n(r, d, 2, 3), _n(r, d, 3, 4), _n(r, d, 4, 4), _n(r, d, 4, 2)),
         (J, g("(0, 1, 3)"), jr(2), vg((0, None, None, None)))),
    Case("first_block_over", lambda r, d: (_n(r, d, 10),), (J, G, JR, vg(_0), v(_0))),
    Case("scan_carry_tuple", lambda r, d: (_n(r, d, 6, 2), _u(r, d, 0.2, 0.8)), (J, g("(0, 1)"), JR, vg(_01))),
    # np.linalg in losses
    Case("ridge_solve", lambda r, d: _regression(r, d), (J, g("(0, 1, 2)"), jr(1), vg(_012))),
    Case("cholesky_gauss_logpdf", lambda r, d: (_n(r, d, 3, 3, scale=0.5), _n(r, d, 3)),
         (J, g("(0, 1)"), JR, vg(_01))),
    Case("mahalanobis_inv", lambda r, d: (_n(r, d, 5, 3), _n(r, d, 3), _n(r, d, 3, 3, scale=0.7)),
         (J, g("(0, 1, 2)"), jr(2), vg(_012))),
    Case("det_volume_penalty", lambda r, d: (_n(r, d, 3, 3, scale=0.5), _n(r, d, 4, 3)),
         (J, g("(0, 1)"), JR, vg(_01))),
    Case("clip_by_row_norm", lambda r, d: (_n(r, d, 4, 3, scale=0.8),), (J, G, JR, vg(_0))),
    # masks and cumulative operations
    Case("masked_leaky_where", lambda r, d: (_n(r, d, 7), _n(r, d, 7)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("survival_cumprod", lambda r, d: (_n(r, d, 6), (r.uniform(size=6) < 0.3).astype(np.int64)),
         (J, G, JR, vg(_01))),
    Case("cumsum_drawdown", lambda r, d: (_n(r, d, 7, scale=0.3),), (J, G, JR, vg(_0))),
    Case("diff_second_order", lambda r, d: (_n(r, d, 7),), (J, G, JR, vg(_0))),
    Case("topk_by_repeated_argmax", lambda r, d: (_n(r, d, 8),), (J, G, JR, vg(_0), v(_0))),
    Case("topk_mask_threshold", lambda r, d: (_n(r, d, 3, 5), _n(r, d, 5, 2)), (J, g("(0, 1)"), JR, vg(_01))),
    # losses
    Case("multiclass_hinge", lambda r, d: (_n(r, d, 3, 4, scale=0.5), _n(r, d, 6, 3), r.integers(0, 4, 6)),
         (J, G, JR, vg(_012))),
    Case("huber_where", _regression, (J, g("(0, 1)"), JR, vg(_012))),
    Case("squared_hinge_svm", _binary, (J, G, JR, vg(_012))),
    Case("softmax_axis0_pool", lambda r, d: (_n(r, d, 5, 3), _n(r, d, 3)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("nll_take_along_axis", _classes, (J, G, JR, vg(_01)),
         numpy_dtypes="0.0 * np.mean(bool array) (a float64 scalar) makes the float32 loss float64 in NumPy"),
    Case("soft_confusion", _classes, (J, G, JR, vg(_01))),
    # shapes: einsum, products, reshapes, static integers
    Case("einsum_bilinear", lambda r, d: (_n(r, d, 3, 3), _n(r, d, 4, 3), _n(r, d, 4, 3)),
         (J, g("(0, 1, 2)"), JR, vg(_012))),
    Case("centered_cross_cov", lambda r, d: (_n(r, d, 5, 3), _n(r, d, 5, 2)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("patchify_mix", lambda r, d: (_n(r, d, 4, 4), _n(r, d, 4, 4, scale=0.5)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("heads_swapaxes", lambda r, d: (_n(r, d, 3, 4), _n(r, d, 4, 4, scale=0.5), _n(r, d, 4, 4, scale=0.5)),
         (J, g("(0, 1, 2)"), jr(1), vg(_012)),
         numpy_dtypes="float32 scores / np.sqrt(d // h) (a float64 scalar of an int) are float64 in NumPy"),
    Case("halving_tree_sum", lambda r, d: (_u(r, d, 0.5, 1.5, 7),), (J, G, JR, vg(_0))),
    Case("ceil_div_chunks", lambda r, d: (_n(r, d, 8),), (J, G, JR, vg(_0))),
    Case("asserted_shapes", lambda r, d: (_n(r, d, 6, 3), _n(r, d, 3), _n(r, d)), (J, g("(0, 1, 2)"), JR, vg(_012))),
    Case("boolean_reductions", lambda r, d: (_n(r, d, 6), _n(r, d, 6)), (J, g("(0, 1)"), JR, vg(_01), v(_01))),
    # static configuration
    Case("config_dict_mlp", lambda r, d: (_n(r, d, 4, 3), _n(r, d, 3, 5, scale=0.5), _n(r, d, 5, 5, scale=0.5)),
         (J, g("(0, 1, 2)"), jr(2), vg(_012))),
    Case("config_branches", _regression, (J, g("(0, 1)"), JR, vg(_012))),
    Case("namedtuple_penalty_default", _regression, (J, g("(0, 1)"), JR, vg(_012))),
    # refused where jax runs them (KNOWN_REFUSALS)
    Case("subclass_super_call", lambda r, d: (_n(r, d, 2, 3), _n(r, d, 3, 2)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("early_return_in_zip", lambda r, d: (_n(r, d, 4, 2), _n(r, d, 4, 2)), (J, g("(0, 1)"), JR, vg(_01))),
)

DEFAULT_CASES = ("dataclass_mlp", "lstm_namedtuple", "bidirectional_sum", "ridge_solve", "topk_by_repeated_argmax",
                 "heads_swapaxes", "config_branches")

CORPUS = VmapCorpus(hp, CASES, "hunt30_check_", known_refusals=JAX_REFUSES + KNOWN_REFUSALS,
                    known_internal=KNOWN_INTERNAL, known_wrong=KNOWN_WRONG)

test_hunt30_program, test_hunt30_program_thorough = CORPUS.tests(DEFAULT_CASES)

if __name__ == "__main__":
    CORPUS.main(sys.argv[1:])
