"""``vmap(f, out_axes=[None, None, 0])`` of a list built by appends of unmapped and mapped values (issue #15).

The list's state is one per push; out_axes given element by element took the whole list's for each element and
refused ("a list that holds both mapped and unmapped values is returned"). A list appended to only outside loops
holds one value per push, in order: each element is returned as its out_axes says. Appends in a loop (a push that
stands for each iteration) are refused as before. Oracle: jax.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import jax_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def mixed_appends(x, c):
    out = []
    out.append(c * 2.0)
    out.append(np.sum(c))
    out.append(x * c)
    return out


def appends_in_a_loop(x, c):
    out = []
    out.append(c * 2.0)
    for i in range(2):
        out.append(x * i)
    return out


@pytest.mark.parametrize("spec", [[None, None, 0], [None, 0, 1], [0, None, 0]])
def test_out_axes_per_element_of_a_list_built_by_appends(spec):
    xb, c = np.random.default_rng(0).normal(size=(4, 3)), np.arange(3.0)
    got = srcjax.vmap(mixed_appends, in_axes=(0, None), out_axes=spec)(xb, c)
    want = jax.vmap(jax_twin(mixed_appends), in_axes=(0, None), out_axes=spec)(xb, c)
    assert isinstance(got, list) and len(got) == 3
    for g, w in zip(got, want, strict=True):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)


def test_out_axes_of_a_list_appended_in_a_loop_is_refused():
    xb, c = np.random.default_rng(1).normal(size=(4, 3)), np.arange(3.0)
    with pytest.raises(srcjax.TranspileError, match="holds both mapped and unmapped values"):
        srcjax.vmap(appends_in_a_loop, in_axes=(0, None), out_axes=[None, 0, 0])(xb, c)
