"""A function whose default reads a global of its module (``def f(x, w=W)``) and that calls a helper of
another module: its derivative and batched programs run each function in its own module's namespace,
where the other module's ``W`` does not exist (was: ``NameError: name 'W' is not defined``, and then
an array default compared by truth value)."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import numpy as np

import srcjax

MAIN = """
import numpy as np
from {helpers} import squashed

W = np.array([1.0, 2.0, 3.0])


def f(x, w=W):
    return np.sum(squashed(x) * w)
"""

HELPERS = """
import numpy as np


def squashed(x):
    return np.sin(x) ** 2
"""


def test_derivatives_and_vmap_of_a_function_with_a_module_default(tmp_path: Any, monkeypatch: Any) -> None:
    helpers = f"defaults_helpers_{tmp_path.name}"
    main = f"defaults_main_{tmp_path.name}"
    (tmp_path / f"{helpers}.py").write_text(HELPERS)
    (tmp_path / f"{main}.py").write_text(MAIN.format(helpers=helpers))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        f = importlib.import_module(main).f
        x = np.array([0.0, 0.5, 1.0])
        w = np.array([1.0, 2.0, 3.0])
        np.testing.assert_allclose(srcjax.grad(f)(x), np.sin(2 * x) * w, rtol=1e-12)
        np.testing.assert_allclose(srcjax.jit(f)(x), f(x), rtol=1e-12)
        xs = np.stack([x, 2 * x])
        np.testing.assert_allclose(srcjax.vmap(f)(xs), [f(x), f(2 * x)], rtol=1e-12)
        np.testing.assert_allclose(srcjax.vmap(srcjax.grad(f))(xs), np.sin(2 * xs) * w, rtol=1e-12)
    finally:
        sys.modules.pop(main, None)
        sys.modules.pop(helpers, None)
