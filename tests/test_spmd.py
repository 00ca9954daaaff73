"""Many devices (issue #19): sharding, sharded device_put and compile, on 4 CPU devices.

The XLA client's device count is fixed when the process makes it, so the multi-device checks run
in one child process with ``SRCJAX_NUM_CPU_DEVICES=4`` (``tests/spmd_checks.py``: a batch of checks,
one JSON line of results, bounded in time); what needs one device runs here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import srcjax
from srcjax.sharding import Mesh, NamedSharding, P, PartitionSpec, SingleDeviceSharding
from tests.child_checks import run_once

ROOT = Path(__file__).resolve().parent.parent


def _results() -> dict[str, str]:
    return run_once("spmd_checks.py")


CHECKS = ["devices", "device_put_and_read", "sharded_forward_equals_numpy", "outputs_feed_back_without_host",
          "in_and_out_shardings", "containers_of_sharded_arrays", "grad_of_sharded", "sharding_constraint", "partitioned_hlo_shows_collectives",
          "errors_are_sharding_errors", "jax_not_imported", "same_as_jax"]


@pytest.mark.parametrize("name", CHECKS)
def test_on_four_devices(name: str) -> None:
    got = _results().get(name)
    assert got == "ok", got


def test_partition_spec_and_mesh_names() -> None:
    assert P is PartitionSpec and srcjax.make_mesh is srcjax.sharding.make_mesh
    assert P("x", None) == ("x", None) and P(["a", "b"]) == (("a", "b"),) and P(("a",)) == ("a",)
    assert P("a", None).axes(3) == (("a",), (), ())
    with pytest.raises(srcjax.ShardingError):
        P(3)


def test_one_device_mesh_and_default_array_sharding() -> None:
    dev = srcjax.devices()[0]
    mesh = srcjax.make_mesh((1,), ("x",))
    assert mesh.shape == {"x": 1} and mesh.devices.flat[0] == dev
    s = NamedSharding(mesh, P("x"))
    a = srcjax.device_put(np.arange(4.0), s)
    assert np.array_equal(np.asarray(a), np.arange(4.0))
    b = srcjax.compile(lambda_free)(np.arange(4.0))
    assert b.sharding == SingleDeviceSharding(dev) and len(b.addressable_shards) == 1
    assert b.addressable_shards[0].device == dev and b.addressable_shards[0].data is b
    with pytest.raises(srcjax.ShardingError, match="longer than the rank"):
        srcjax.device_put(np.ones(3), NamedSharding(mesh, P("x", None)))
    with pytest.raises(srcjax.ShardingError):
        Mesh(np.array([dev]), ("a", "b"))


def lambda_free(x):
    return np.tanh(x)


def test_constraint_on_one_device_is_the_identity() -> None:
    s = NamedSharding(srcjax.make_mesh((1,), ("x",)), P("x"))

    def f(x):
        return np.sum(srcjax.lax.with_sharding_constraint(np.sin(x), s) ** 2)

    x = np.linspace(0, 1, 4)
    assert srcjax.lax.with_sharding_constraint(x, s) is x
    assert np.allclose(srcjax.compile(f)(x), f(x))
    assert np.allclose(srcjax.grad(f)(x), 2 * np.sin(x) * np.cos(x))
    assert "sdy" not in srcjax.lower(f, x).as_text()


def test_device_count_env_is_read_when_the_client_is_made() -> None:
    code = ("import sys, srcjax; print(srcjax.device_count()); assert 'jax' not in sys.modules")
    for env, want in (({"SRCJAX_NUM_CPU_DEVICES": "3"}, "3"),
                      ({"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}, "2"), ({}, "1")):
        e = {k: v for k, v in os.environ.items() if k not in ("SRCJAX_NUM_CPU_DEVICES", "XLA_FLAGS")}
        e.update(env, PYTHONPATH=str(ROOT))
        out = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and out.stdout.strip() == want, (env, out.stdout, out.stderr[-2000:])
