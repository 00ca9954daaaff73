"""``srcjax.pmap`` (issue #19): one program per device, collectives across the devices.

The multi-device checks run in one child process with 4 CPU devices (``tests/pmap_checks.py``: a
batch of checks against NumPy loops over the devices and against ``jax.pmap``, one JSON line of
results, bounded in time); what needs one device, or none, runs here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import srcjax
from tests.child_checks import run_once

ROOT = Path(__file__).resolve().parent.parent


def _results() -> dict[str, str]:
    return run_once("pmap_checks.py")


CHECKS = ["every_collective_against_numpy", "psum_scatter_against_numpy", "axis_index_groups",
          "in_axes_and_out_axes", "containers_and_static_arguments",
          "results_are_sharded_and_feed_back_without_the_host", "devices_argument", "grad_inside_pmap", "transforms_of_a_pmap",
          "vmap_inside_and_pmap_of_vmap", "collectives_of_containers_in_a_training_step", "lowered_text_shows_the_collectives", "errors", "property_against_a_loop",
          "jax_not_imported", "same_as_jax_pmap"]


@pytest.mark.parametrize("name", CHECKS)
def test_on_four_devices(name: str) -> None:
    got = _results().get(name)
    assert got == "ok", got


def centered(x):
    return x - srcjax.lax.pmean(x, "i") + srcjax.lax.axis_index("i")


def dbl(y):
    return y * 2


def test_one_device_is_a_plain_program() -> None:
    x = np.arange(6.0).reshape(1, 2, 3)
    out = srcjax.pmap(centered, "i")(x)
    np.testing.assert_array_equal(out, np.zeros_like(x))
    assert out.sharding.device_set == {srcjax.devices()[0]}
    shifted = srcjax.pmap(lambda v: srcjax.lax.ppermute(v, "i", []), "i")(x)  # no pair: zeros
    np.testing.assert_array_equal(shifted, np.zeros_like(x))


def test_source_is_the_per_device_program() -> None:
    text = srcjax.source(srcjax.pmap(centered, "i"))
    assert text.startswith("# srcjax.pmap(centered, axis_name='i', in_axes=0, out_axes=0):")
    assert 'srcjax.lax.pmean(x, "i")' in text and "def centered(x):" in text
    low = srcjax.pmap(centered, "i").lower(np.ones((1, 3))).as_text()
    assert "stablehlo.all_reduce" in low and "stablehlo.replica_id" in low and "mhlo.num_replicas = 1" in low


def test_more_slices_than_devices() -> None:
    with pytest.raises(srcjax.ArgumentError, match=r"argument 'x' has size 3 along its mapped axis, but there is "
                                                   r"1 device") as e:
        srcjax.pmap(centered, "i")(np.ones((3, 2)))
    assert "SRCJAX_NUM_CPU_DEVICES" in (e.value.hint or "")


def test_unbound_and_mismatched_axis_names() -> None:
    with pytest.raises(srcjax.UnboundAxisNameError, match="pmean over 'i'") as e:
        srcjax.pmap(centered, "j")(np.ones((1, 2)))
    assert "test_pmap.py" in str(e.value) and "srcjax.pmap(f, axis_name='i')" in (e.value.hint or "")
    with pytest.raises(srcjax.UnboundAxisNameError, match="ppermute over 'i'"):
        srcjax.lax.ppermute(np.ones(2), "i", [(0, 1)])
    with pytest.raises(srcjax.ArgumentError, match="axis_name must be a string"):
        srcjax.pmap(centered, 3)


def use_pmap(x):
    return np.sum(srcjax.pmap(dbl)(x))


PD = srcjax.pmap(dbl, "i", in_axes=1)


def call_pd(x):
    return PD(x)


@pytest.mark.parametrize("how", ["jit", "grad"])
def test_pmap_inside_transformed_code_is_its_vmap(how: str) -> None:
    """Inside compiled or differentiated code a pmap is its vmap with the same axis name (one device
    here: every mapped size is 1)."""
    transform = srcjax.jit if how == "jit" else srcjax.grad
    x = np.arange(3.0).reshape(1, 3)
    for fn, arg in ((call_pd_sum, x.T), (use_pmap, x)):  # (PD maps axis 1)
        want = np.sum(2 * arg) if how == "jit" else np.full(arg.shape, 2.0)
        np.testing.assert_allclose(np.asarray(transform(fn)(arg)), want)


def call_pd_sum(x):
    return np.sum(PD(x))


def test_nested_pmap_is_refused() -> None:
    with pytest.raises(srcjax.ArgumentError, match="nested pmap") as e:
        srcjax.pmap(PD)
    assert e.value.hint


def test_numpy_device_is_refused() -> None:
    p = srcjax.pmap(srcjax.compile(dbl, device="numpy"), "i")
    with pytest.raises(srcjax.ArgumentError, match="numpy device"):
        p(np.ones((1, 2)))


def test_eval_shape_and_out_axes_errors() -> None:
    p = srcjax.pmap(lambda x: (x, srcjax.lax.psum(x, "i")), "i", out_axes=(1, None))
    shapes = srcjax.eval_shape(p, srcjax.ShapeDtypeStruct((1, 2, 3), np.float32))
    assert [s.shape for s in shapes] == [(2, 1, 3), (2, 3)]
    with pytest.raises(srcjax.ArgumentError, match=r"out_axes is \(0, 1, 2\), which does not match"):
        srcjax.pmap(lambda x: (x, x), "i", out_axes=(0, 1, 2))(np.ones((1, 2)))
    with pytest.raises(srcjax.ArgumentError, match="out_axes 3 for an output of 1 dimension"):
        srcjax.pmap(lambda x: x, "i", out_axes=3)(np.ones((1, 2)))
