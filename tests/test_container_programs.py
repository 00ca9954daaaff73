"""tests/container_builtin_programs.py's programs (Python containers of arrays and the builtins users run on them:
dict iteration, zip, enumerate, reversed, comprehensions, ``*`` unpacking, min/max/sum/any/all, ``dict(zip(...))``,
``{**a, **b}``, append/pop, list slices, ``NamedTuple._replace``, dataclasses, ``functools.reduce``, ``map``,
f-string keys, ``isinstance``, ``len``, ``d.get(k, default)``) under ``jit``, ``grad`` and ``value_and_grad`` with
respect to the container, ``vmap`` over a leaf or the container, ``vmap(grad)``, ``jacfwd``, ``jacrev`` and
``hessian``, against four oracles: jax running the module's text with ``np`` as jax.numpy, the user's function run
by NumPy (``jit(f)``, a loop over the examples for ``vmap(f, ...)``), central finite differences of the user's
function with respect to every leaf of the differentiated container (``grad`` at float64), and the generated
source run by NumPy. A refusal is allowed for the messages in ``KNOWN_REFUSALS``; a wrong answer listed in
``KNOWN_WRONG`` is an xfail (reported, not hidden).

The default run checks ``DEFAULT_CASES`` at float64; ``SRCJAX_HYPOTHESIS=thorough`` checks every case at both
dtypes. ``python -m tests.test_container_programs [NAME ...] [--f64]`` runs the corpus (or the cases named) and
prints the counts and every failure.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest

import srcjax
from tests.corpus_harness import Corpus, agree, evaluate, loop_reference, normal

from . import container_builtin_programs as cp
from .twins import jitted

_n = normal  # (the corpora's argument makers, tests/corpus_harness.py)

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


# Refusals met where jax runs the program (reported; a located TranspileError with a hint)
KNOWN_REFUSALS: tuple[str, ...] = (
    "max() compares values known only at run time",  # builtin_max_of_arrays (jax.jit refuses it too)
    "vmap: cannot batch 'max(",
    "'Params' object is not subscriptable",  # hessian of dataclasses.replace(p, w=...) (jacfwd of the update)
    "tuple indices must be integers or slices, not str",  # hessian of p._replace(b=...) (likewise)
    "vmap: cannot batch 'dict(",  # vmap over the dict of dict(params), dict(zip(NAMES, ws))
    "cannot differentiate through `zip(NAMES, ws)` yet",  # dict(zip(NAMES, ws)) under grad
    "cannot differentiate a loop over `enumerate(ws, start=1)` yet",
    "vmap: cannot batch 'enumerate(ws, start=1)'",
    "joining or repeating tuples or lists",  # ws + [x * 2.0] (refused: was a wrong gradient, see below)
    "derivatives of joining lists (`a + b`) are not followed yet",  # the same at run time (jacrev: was 5 leaves)
    "unbroadcast: a value of shape () is not a broadcast of shape (3,)",  # grad wrt x of {**defaults, **a}
    "cannot call getattr() in compiled code",  # getattr(p, name) over p._fields
    "cannot differentiate through `list(ws)` yet",  # stack = list(ws); stack.pop()
    "cannot differentiate through `sorted(params)` yet",  # hessian of a chain over sorted(params)
    # star_in_call: np.maximum(*ws[:2]) (np.stack([*ws, x]) runs: a starred display is a join of copies)
    "*-arguments in a call of a value whose length is not written in this function",
)
# Errors met that are srcjax's own (located in code srcjax wrote, or wrong): xfail, not hidden
KNOWN_INTERNAL: tuple[str, ...] = ()
# Wrong answers found and not fixed yet: (case, check) -> why; xfail, not hidden
KNOWN_WRONG: dict[tuple[str, str], str] = {}


# -- the jax side: the module's text with np as jax.numpy -----------------------------------------------------

def _twin_namespace() -> dict[str, Any]:
    fake = types.SimpleNamespace(tree_util=jax.tree_util)
    text = inspect.getsource(cp)
    text = text.replace("import numpy as np\n", "").replace("import srcjax\n", "")
    ns: dict[str, Any] = {"np": jnp, "srcjax": fake, "__name__": "container_builtin_programs_twin"}
    exec(compile(text, inspect.getsourcefile(cp) or "<twin>", "exec"), ns)
    return ns


TWIN = _twin_namespace()
TRANSFORMS = ("jit", "grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian")
JAX_T = {"jit": lambda f, **kw: f, "grad": jax.grad, "value_and_grad": jax.value_and_grad, "vmap": jax.vmap,
         "jacfwd": jax.jacfwd, "jacrev": jax.jacrev, "hessian": jax.hessian}
SRCJAX_T = {k: getattr(srcjax, k) for k in TRANSFORMS}


def to_twin(x: Any) -> Any:
    """An argument for the jax twin: the module's NamedTuples and dataclasses as the twin's."""
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return TWIN[type(x).__name__](*[to_twin(v) for v in x])
    if isinstance(x, cp.Params):
        return TWIN["Params"](to_twin(x.w), to_twin(x.b))
    if isinstance(x, dict):
        return {k: to_twin(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_twin(v) for v in x)
    return x


# -- the corpus's cases -------------------------------------------------------------------------------------

class Case(NamedTuple):
    name: str
    fn: Callable[..., Any]
    args: Callable[[np.random.Generator, Any], tuple[Any, ...]]
    # (expression over f and the transformations, in_axes of the batched arguments or None)
    checks: tuple[tuple[str, Any], ...]
    rtol32: float = 5e-4


def _d3(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return {"a": _n(r, d, 3), "b": _n(r, d, 3), "c": _n(r, d, 3)}, _n(r, d, 3)


def _l3(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return [_n(r, d, 3) for _ in range(3)], _n(r, d, 3)


def _t3(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return tuple(_n(r, d, 3) for _ in range(3)), _n(r, d, 3)


# every transformation a user applies to f(container, x): the container differentiated, x mapped
ALL = (("jit(f)", None), ("grad(f)", None), ("value_and_grad(f)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)),
       ("vmap(grad(f), in_axes=(None, 0))", (None, 0)), ("jacfwd(f)", None), ("jacrev(f)", None),
       ("hessian(f)", None))
# the container mapped (in_axes 0 over each of its leaves), and the derivative with respect to x
MAPPED = (("vmap(f, in_axes=(0, None))", (0, None)), ("grad(f, argnums=1)", None))
# f(a, b, x): both containers differentiated
ALL3 = (("jit(f)", None), ("grad(f, argnums=(0, 1))", None), ("value_and_grad(f)", None),
        ("vmap(f, in_axes=(None, None, 0))", (None, None, 0)),
        ("vmap(grad(f), in_axes=(None, None, 0))", (None, None, 0)), ("jacfwd(f, argnums=(0, 1))", None),
        ("jacrev(f)", None), ("hessian(f, argnums=2)", None), ("vmap(f, in_axes=(0, 0, None))", (0, 0, None)))


def _case(name: str, args: Callable[[np.random.Generator, Any], tuple[Any, ...]],
          checks: tuple[tuple[str, Any], ...] = ALL + MAPPED, rtol32: float = 5e-4) -> Case:
    return Case(name, getattr(cp, name), args, checks, rtol32)


CASES: tuple[Case, ...] = (
    # dicts of parameters
    _case("dict_items", _d3),
    _case("dict_keys", _d3),
    _case("dict_values_product", _d3),
    _case("sorted_keys_chain", _d3),
    _case("sorted_keys_reverse", _d3),
    _case("dict_comprehension", _d3),
    _case("dict_from_zip", _l3),
    _case("merged_dicts", lambda r, d: ({"b": _n(r, d, 3), "c": _n(r, d, 3)}, _n(r, d, 3))),
    _case("dict_get_default", lambda r, d: ({"a": _n(r, d, 3), "c": _n(r, d, 3)}, _n(r, d, 3))),
    _case("dict_copy_update", _d3),
    _case("nested_dicts", lambda r, d: ({"enc": {"w": _n(r, d, 3), "bias": _n(r, d, 3)},
                                         "dec": {"w": _n(r, d, 3)}}, _n(r, d, 3))),
    _case("fstring_keys", lambda r, d: ({f"{k}{i}": _n(r, d, 3) for k in "wb" for i in range(2)}, _n(r, d, 3))),
    _case("dict_of_rebuilt", lambda r, d: ({"a": _n(r, d, 3), "b": _n(r, d, 3)}, _n(r, d, 3))),
    _case("max_key_by_len", lambda r, d: ({"w": _n(r, d, 3), "bias": _n(r, d, 3)}, _n(r, d, 3))),
    _case("values_list_index", _d3),
    # lists and tuples
    Case("zip_layers", cp.zip_layers, lambda r, d: ([_n(r, d, 3), _n(r, d, 3)], [_n(r, d, 3), _n(r, d, 3)], _n(r, d, 3)),
         ALL3),
    _case("enumerate_weights", _l3),
    _case("reversed_chain", _l3),
    _case("list_comprehension_stack", _l3),
    _case("filtered_comprehension", _l3),
    _case("tuple_generator", _t3),
    _case("star_unpacking", _l3),
    _case("star_in_call", _l3),
    _case("builtin_sum_of_arrays", _l3),
    _case("builtin_sum_of_scalars", _t3),
    _case("max_of_static_shapes", lambda r, d: ([_n(r, d, 3), _n(r, d, 4)], _n(r, d, 3))),
    _case("any_all_static", _l3),
    _case("builtin_max_of_arrays", _l3),
    _case("append_loop", _l3),
    _case("pop_loop", _l3),
    _case("list_slicing", _l3),
    _case("adjacent_pairs", _l3),
    _case("list_concatenation", _l3),
    _case("transpose_pairs", lambda r, d: ([(_n(r, d, 3), _n(r, d, 3)) for _ in range(2)], _n(r, d, 3))),
    _case("nested_comprehension", _l3),
    _case("list_of_dicts", lambda r, d: ([{"w": _n(r, d, 3), "b": _n(r, d, 3)} for _ in range(2)], _n(r, d, 3))),
    _case("isinstance_dispatch", lambda r, d: ([(_n(r, d, 3), _n(r, d, 3)), {"w": _n(r, d, 3)}, _n(r, d, 3)],
                                               _n(r, d, 3))),
    Case("len_of_containers", cp.len_of_containers,
         lambda r, d: ({"a": _n(r, d, 3), "b": _n(r, d, 3)}, [_n(r, d, 3), _n(r, d, 3)], _n(r, d, 3)), ALL3),
    _case("map_builtin", _l3),
    _case("reduce_product", _l3),
    _case("reduce_with_initial", _l3),
    # NamedTuples and dataclasses
    _case("namedtuple_replace", lambda r, d: (cp.Layer(_n(r, d, 3), _n(r, d, 3)), _n(r, d, 3))),
    _case("namedtuple_layers", lambda r, d: ([cp.Layer(_n(r, d, 3), _n(r, d, 3)) for _ in range(2)], _n(r, d, 3))),
    _case("namedtuple_fields", lambda r, d: (cp.Layer(_n(r, d, 3), _n(r, d, 3)), _n(r, d, 3))),
    _case("dataclass_params", lambda r, d: (cp.Params(_n(r, d, 3), _n(r, d, 3)), _n(r, d, 3))),
    _case("dataclass_replace", lambda r, d: (cp.Params(_n(r, d, 3), _n(r, d, 3)), _n(r, d, 3))),
)

BY_NAME = {c.name: c for c in CASES}
DEFAULT_CASES = ("dict_items", "dict_get_default", "zip_layers", "star_unpacking", "namedtuple_replace")


# -- running a check ------------------------------------------------------------------------------------------

def oracle(c: Case, expr: str, in_axes: Any, args: tuple[Any, ...]) -> Any:
    return jitted(evaluate(expr, JAX_T, TWIN[c.fn.__name__], jnp))(*to_twin(args))


def numpy_reference(c: Case, expr: str, in_axes: Any, args: tuple[Any, ...]) -> Any:
    """The user's function run by NumPy, for ``jit(f)`` and ``vmap(f, ...)`` (None otherwise)."""
    return loop_reference(c.fn, expr, in_axes, args)


def tree_fd(f: Callable[..., Any], args: tuple[Any, ...], k: int, eps: float = 1e-6) -> Any:
    """Central finite differences of ``f`` with respect to every leaf of ``args[k]`` (a container or an array)."""
    leaves, tree = srcjax.tree_util.tree_flatten(args[k])
    grads = []
    for i, leaf in enumerate(leaves):
        x = np.asarray(leaf, dtype=np.float64)
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            vals = []
            for sign in (1.0, -1.0):
                xs = x.copy()
                xs[idx] += sign * eps
                a = list(args)
                a[k] = srcjax.tree_util.tree_unflatten(tree, [xs if j == i else v for j, v in enumerate(leaves)])
                vals.append(float(f(*a)))
            g[idx] = (vals[0] - vals[1]) / (2 * eps)
        grads.append(g)
    return srcjax.tree_util.tree_unflatten(tree, grads)


def fd_reference(c: Case, expr: str, args: tuple[Any, ...]) -> Any:
    """Finite differences of the user's function for ``grad(f)``/``grad(f, argnums=k)``/``argnums=(j, k)``."""
    m = re.fullmatch(r"grad\(f(?:, argnums=(\d|\(\d, \d\)))?\)", expr)
    if m is None:
        return None
    ks = eval(m.group(1) or "0")  # noqa: S307
    if any(leaf.dtype != np.float64 for leaf in srcjax.tree_util.tree_leaves(args)):
        return None
    return tuple(tree_fd(c.fn, args, k) for k in ks) if isinstance(ks, tuple) else tree_fd(c.fn, args, ks)


CORPUS = Corpus(CASES, ("container_builtin_programs.py",), KNOWN_REFUSALS, oracle, jax.tree_util.tree_leaves,
                lambda c, expr: evaluate(expr, SRCJAX_T, c.fn, np), numpy_reference, fd_reference,
                known_internal=KNOWN_INTERNAL, known_wrong=KNOWN_WRONG)


test_container_program, test_container_program_thorough = CORPUS.tests(DEFAULT_CASES)

if __name__ == "__main__":
    CORPUS.main(sys.argv[1:])


# -- regressions found by the corpus ------------------------------------------------------------------------

def _get_present(params: Any, x: Any) -> Any:
    return np.sum(np.tanh(params.get("a", 1.0) * x)) + np.sum(params.get("missing", 0.5) * x)


def _get_default_array(params: Any, x: Any) -> Any:
    return np.sum(params.get("c", x) ** 2) + np.sum(params.get("z", x) * x)


def _get_in_a_generator(params: Any, x: Any) -> Any:
    return sum(np.sum(params.get(k, x) * x) for k in ("a", "z"))


def _update_keywords(params: Any, x: Any) -> Any:
    d = dict(params)
    d.update(b=d["b"] + x, c=d["a"] * 2.0)
    return np.sum(d["a"] * d["b"]) + np.sum(d["c"] ** 2)


def _update_from_dict(params: Any, x: Any) -> Any:
    d = {"a": x, "z": x * 3.0}
    d.update(params)
    d.update({"b": d["b"] * x})
    return np.sum(d["a"] * d["b"]) + np.sum(d["z"])


def _twin(fn: Callable[..., Any]) -> Callable[..., Any]:
    ns: dict[str, Any] = {"np": jnp, "Any": Any}
    exec(inspect.getsource(fn), ns)  # noqa: S102
    return ns[fn.__name__]


@pytest.mark.parametrize("fn", [_get_present, _get_default_array, _get_in_a_generator, _update_keywords,
                                _update_from_dict], ids=lambda f: f.__name__)
def test_dict_get_and_update_are_differentiated(fn: Callable[..., Any]) -> None:
    """Silent wrong answers: ``d.get(k, default)`` was read as a value that does not depend on ``d`` (a zero
    gradient with respect to ``d``, and to a default ``x`` it returns), and ``d.update(b=v)`` as a call reverse mode
    did not see (wrong gradients for both arguments). Now ``d[k] if k in d else default`` and ``d["b"] = v``
    (frontend/dict_methods.py): jax's gradients, and finite differences'."""
    rng = np.random.default_rng(0)
    p = {"a": rng.standard_normal(3), "b": rng.standard_normal(3), "c": rng.standard_normal(3)}
    x = rng.standard_normal(3)
    for argnums in (0, 1):
        got = srcjax.grad(fn, argnums=argnums)(p, x)
        agree(got, jax.grad(_twin(fn), argnums=argnums)(p, x), f"grad argnums={argnums}", 1e-9)
        agree(got, tree_fd(fn, (p, x), argnums), "finite differences", 1e-5, dtypes=False, jax_leaves=False)
    agree(srcjax.vmap(fn, in_axes=(None, 0))(p, np.stack([x, 2 * x])),
          jax.vmap(_twin(fn), in_axes=(None, 0))(p, np.stack([x, 2 * x])), "vmap", 1e-9)


def _joined(ws: Any, x: Any) -> Any:
    return np.sum(np.stack(ws + [x * 2.0]) * x)


def _doubled(ws: Any, x: Any) -> Any:
    return np.sum(np.stack(ws + ws) * x)


@pytest.mark.parametrize("fn", [_joined, _doubled], ids=lambda f: f.__name__)
def test_grad_through_joined_lists_is_refused_not_wrong(fn: Callable[..., Any]) -> None:
    """Silent wrong answer: ``grad`` with respect to ``ws`` of ``ws + [c]`` or ``ws + ws`` gave the joined list's
    cotangent (3 or 4 leaves for a list of 2) to ``ws`` (the rule of ``+`` on arrays); now refused at the user's
    line until derivatives follow joined lists."""
    rng = np.random.default_rng(0)
    ws, x = [rng.standard_normal(3), rng.standard_normal(3)], rng.standard_normal(3)
    with pytest.raises(srcjax.TranspileError, match="joining") as e:
        srcjax.grad(fn)(ws, x)
    assert "test_container_programs.py" in str(e.value).split("\n")[0]
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(ws, x)), fn(ws, x), rtol=1e-12)


def test_jacfwd_by_a_dict_not_in_sorted_order_run_by_numpy() -> None:
    """Silent wrong answer (the generated source run by NumPy): ``jacfwd`` by a dict whose keys are not in sorted
    order (``{"enc": ..., "dec": ...}``) zips ``tree.items()`` with a basis tangent's items; the bases were built in
    sorted key order, so ``enc``'s derivative went to ``dec`` (XLA, with its arguments' dicts sorted, was right). The
    bases now keep the argument's key order (``pytree.from_leaves``)."""
    rng = np.random.default_rng(0)
    t = {"enc": {"w": rng.standard_normal(3), "bias": rng.standard_normal(3)}, "dec": {"w": rng.standard_normal(3)}}
    x = rng.standard_normal(3)
    f = srcjax.jacfwd(cp.nested_dicts)
    want = jax.jacfwd(TWIN["nested_dicts"])(t, x)
    agree(f(t, x), want, "jacfwd (XLA) vs jax", 1e-9)
    agree(srcjax.numpy_function(srcjax.jit(f))(t, x), want, "jacfwd (NumPy) vs jax", 1e-9, dtypes=False)
