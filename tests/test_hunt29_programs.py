"""tests/hunt29_programs.py's everyday NumPy programs (optimizer steps, filters, recurrences, losses with masking,
ragged data with static lengths, parameters in containers, helpers and small classes) under ``jit``, ``grad``,
``vmap(grad)`` and ``jacrev``, run by ``tests/vmap_corpus.py``: against jax over the module's text, the NumPy
stand-in (the user's function run by NumPy, a loop over the examples for vmap, finite differences for derivatives)
and the generated source run by NumPy.

The default run checks ``DEFAULT_CASES`` at float64; ``SRCJAX_HYPOTHESIS=thorough`` every check at float64 and
float32. ``python -m tests.test_hunt29_programs [NAME ...] [--f64|--f32]`` runs the corpus (or the cases named)
and prints the counts and every failure.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import srcjax  # noqa: F401 - (the checks' namespace)

from . import hunt29_programs as hp
from .vmap_corpus import JR, Case, G, J, VmapCorpus, g, jr, v, vg

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

# Refusals met where jax refuses too (reported; located at the user's line with a hint)
JAX_REFUSES: tuple[str, ...] = ()
# Refusals met where jax runs the program (each with a reason)
KNOWN_REFUSALS: tuple[str, ...] = ()
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


def _logistic(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    X = r.standard_normal((8, 3))
    return (0.2 * r.standard_normal(3)).astype(d), X.astype(d), (r.uniform(size=8) < 0.5).astype(d)


def _autoencoder(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return {"enc": _n(r, d, 3, 2, scale=0.5), "dec": _n(r, d, 2, 3, scale=0.5)}, _n(r, d, 6, 3)


def _with_nans(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    t = r.standard_normal((5, 2))
    t[r.uniform(size=(5, 2)) < 0.3] = np.nan
    return _n(r, d, 5, 2), t.astype(d)


def _labels(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return _n(r, d, 7), (r.uniform(size=7) < 0.4).astype(np.int64)


def _triplets(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    a = r.standard_normal((5, 3))
    return a.astype(d), (a + 0.5 * r.standard_normal((5, 3))).astype(d), (a + r.standard_normal((5, 3))).astype(d)


def _padded_labels(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    labels = r.integers(0, 4, 6)
    labels[[1, 4]] = hp.PAD_LABEL
    return _n(r, d, 6, 4), labels


def _valid_rows(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    valid = r.uniform(size=5) < 0.6
    valid[0] = True
    return _n(r, d, 5, 3), _n(r, d, 5, 3), valid


_01 = (0, None)
_012 = (0, None, None)
CASES: tuple[Case, ...] = (
    # optimizer steps
    Case("rmsprop_list", _regression, (J, G, jr(0), vg(_012))),
    Case("nesterov_bowl", lambda r, d: (_n(r, d, 3), _u(r, d, 0.5, 3.0, 3)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("adagrad_clipped", _logistic, (J, G, JR, vg(_012))),
    Case("adam_bias_corrected", _autoencoder, (J, G, v((None, 0)), vg((None, 0)))),
    Case("best_of_candidate_steps", lambda r, d: (_n(r, d, 3), _n(r, d, 3)), (J, g("(0, 1)"), JR, vg(_01))),
    # filters
    Case("alpha_beta_tracker", lambda r, d: (np.cumsum(_n(r, d, 8)),), (J, G, JR, vg((0,)))),
    Case("median_of_three", lambda r, d: (_n(r, d, 7),), (J, G, JR, vg((0,)), v((0,)))),
    Case("smoothing_with_warmup", lambda r, d: (_n(r, d, 8),), (J, G, JR, vg((0,)))),
    Case("biquad_section", lambda r, d: (_n(r, d, 8), np.array([0.2, 0.4, 0.2, -0.5, 0.2], dtype=d)),
         (J, g("(0, 1)"), jr(1), vg(_01))),
    Case("window_trimmed_by_step", lambda r, d: (_n(r, d, 2), _u(r, d, 0.5, 1.5)),
         (J, g("(0, 1)"), JR, vg(_01), vg((None, 0), 1)),
         numpy_dtypes="np.array of Python floats and a float32 omega is float64 in NumPy, float32 in jax"),
    # recurrences
    Case("damped_logistic", lambda r, d: (_u(r, d, 0.1, 0.9, 3), _u(r, d, 2.5, 3.5)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("hawkes_intensity", lambda r, d: (np.cumsum(_u(r, d, 0.2, 1.0, 5)), _u(r, d, 0.5, 1.5)),
         (J, g("(0, 1)"), JR, vg(_01))),
    Case("three_term_recurrence", lambda r, d: (_n(r, d, 5), _u(r, d, -1.0, 1.0, 4)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("sis_peak", lambda r, d: (_u(r, d, 0.01, 0.1, 2), _u(r, d, 0.3, 0.9)), (J, g("(0, 1)"), JR, vg(_01))),
    # losses with masking
    Case("masked_mse", _with_nans, (J, G, JR, vg(_01)),
         numpy_dtypes="float32 / np.sum(mask) (int64) is float64 in NumPy, float32 in jax"),
    Case("focal_loss", _labels, (J, G, JR, vg(_01)),
         numpy_dtypes="np.where(mask, 0.25, 0.75) of Python floats is float64 in NumPy, weak in jax"),
    Case("triplet_margin", _triplets, (J, g("(0, 1, 2)"), JR, vg(_012)),
         numpy_dtypes="0.01 * np.sum(active) (int64) is float64 in NumPy, float32 in jax"),
    Case("smoothed_xent_ignore", _padded_labels, (J, G, JR, vg(_01))),
    Case("weighted_huber_rows", _valid_rows, (J, g("(0, 1)"), JR, vg(_012))),
    # ragged data with static lengths
    Case("ragged_mean_pool", lambda r, d: (_n(r, d, 10, 3), _n(r, d, 3, 2)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("segment_softmax", lambda r, d: (_n(r, d, 8), _n(r, d, 8)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("pad_to_longest", lambda r, d: (_n(r, d, 10), _n(r, d, 5)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("largest_piece_norm", lambda r, d: (_n(r, d, 10),), (J, G, JR, vg((0,)), v((0,)))),
    # parameters in containers
    Case("mlp_list_of_dicts", lambda r, d: (_n(r, d, 4, 3), _n(r, d, 3, 5), _n(r, d, 5, 2)),
         (J, g("(0, 1, 2)"), jr(1), vg(_012))),
    Case("layer_norm_dict", lambda r, d: (_n(r, d, 4, 5), {"gain": _u(r, d, 0.5, 1.5, 5), "bias": _n(r, d, 5)}),
         (J, g("(0, 1)"), JR, vg(_01))),
    Case("rnn_tuple_weights", lambda r, d: (_n(r, d, 4, 2), _n(r, d, 3, 2), _n(r, d, 3, 3, scale=0.5)),
         (J, g("(0, 1, 2)"), jr(2), vg(_012))),
    # helpers and small classes
    Case("linear_class_two_layers", lambda r, d: (_n(r, d, 4, 3), _n(r, d, 3, 4), _n(r, d, 4, 2)),
         (J, g("(0, 1, 2)"), JR, vg(_012))),
    Case("poly_features_in_loop", lambda r, d: (_u(r, d, -1.0, 1.0, 5), _n(r, d, 4)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("scaler_then_ridge", lambda r, d: (_n(r, d, 6, 3), _n(r, d, 3)), (J, g("(0, 1)"), JR, vg(_01))),
    Case("closure_factory_penalty", lambda r, d: (_n(r, d, 3), _n(r, d, 6, 3)), (J, g("(0, 1)"), JR, vg(_01))),
)

DEFAULT_CASES = ("best_of_candidate_steps", "median_of_three", "window_trimmed_by_step", "largest_piece_norm",
                 "sis_peak", "adam_bias_corrected")

CORPUS = VmapCorpus(hp, CASES, "hunt29_check_", known_refusals=JAX_REFUSES + KNOWN_REFUSALS,
                    known_internal=KNOWN_INTERNAL, known_wrong=KNOWN_WRONG)

test_hunt29_program, test_hunt29_program_thorough = CORPUS.tests(DEFAULT_CASES)

if __name__ == "__main__":
    CORPUS.main(sys.argv[1:])
