"""First calls (issue #15, issue #18 item 4): work a new function's first call no longer does, and
that what runs and what is shown stay the same without it.

- Reading a generated function (a derivative, a batched program) takes its file name from its code:
  ``inspect.getsourcefile`` looked for its module among all of ``sys.modules`` to give back the same
  name (~0.7 ms a function with jax imported).
"""

from __future__ import annotations

import inspect

import numpy as np

import srcjax
from srcjax.frontend import read
from tests.test_first_call import _fresh_function

_X = np.linspace(0.25, 1.5, 4)


def test_a_generated_function_is_read_without_a_search_of_the_modules(monkeypatch):
    f = _fresh_function("def f(x):\n    return np.sum(np.cos(x) * x * 1.375)\n")
    g = srcjax.grad(f)
    plain = g.fn
    assert read.is_generated(plain)
    asked: list[object] = []
    real = inspect.getsourcefile
    monkeypatch.setattr(inspect, "getsourcefile", lambda obj: asked.append(obj) or real(obj))
    read._CACHE.set(plain, (plain.__code__, id(plain.__globals__)), None)  # (read again)
    src = read.read_function(plain)
    assert asked == []
    assert src.filename == plain.__code__.co_filename and src.filename.startswith("<srcjax.")
    assert src.fdef.name.value == plain.__name__
    # the user's own function is still found in its file
    user = read.read_function(f)
    assert user.filename == inspect.getsourcefile(f) and asked
    np.testing.assert_allclose(np.asarray(srcjax.hessian(f)(_X)),
                               np.diag((-2 * np.sin(_X) - _X * np.cos(_X)) * 1.375), rtol=1e-6, atol=1e-12)
