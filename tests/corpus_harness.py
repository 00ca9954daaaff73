"""What the program corpora's tests share (test_field_programs, test_jax_style_programs, test_container_programs,
test_user_programs, test_hunt12_programs, test_vmap_user_programs): a case's arguments, stacked for a vmap's batch, and one example taken
back out; srcjax's run of a check (a located refusal or a crash classified, ``hunt_sweep.Outcome``); the generated
source run by NumPy against srcjax; the run of one check against jax, the user's function run by NumPy and finite
differences (:func:`run_check`, with a :class:`Corpus`'s oracles); a test's verdict with the corpus's known lists
(:func:`assert_passes`); the command line that runs a corpus and prints its counts (:func:`main`); and the
checks, oracles and corpus of the corpora whose jax twin is their own text (:func:`twin_namespace`,
:func:`twin_corpus`: hunt13-16) with the argument makers and the regressions' comparison they share."""

from __future__ import annotations

import collections
import inspect
import re
import types
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np
import pytest

import srcjax

from .hunt_sweep import Outcome, crash, leaves_agree, refusal, source_run_agrees
from .tiers import thorough_cases

B = 3  # examples in a vmap's batch
CHARS = 1200  # of a wrong answer's detail
EMPTY: Mapping[Any, Any] = types.MappingProxyType({})


def _stack(xs: Any, ax: int) -> Any:
    if isinstance(xs[0], (int, float)):
        return np.asarray(xs)
    return np.stack(xs, axis=ax)


def arguments(c: Any, seed: int, dt: Any, in_axes: Any) -> tuple[Any, ...]:
    """``c.args``'s arguments; with ``in_axes``, ``B`` draws stacked along each mapped argument's axis."""
    if in_axes is None:
        return c.args(np.random.default_rng(seed), dt)  # type: ignore[no-any-return]
    draws = [c.args(np.random.default_rng(seed + k), dt) for k in range(B)]
    return tuple(d if ax is None else srcjax.tree_util.tree_map(lambda *xs, ax=ax: _stack(xs, ax), *ds)
                 for ax, d, ds in zip(in_axes, draws[0], zip(*draws)))


def take(x: Any, ax: Any, k: int) -> Any:
    """Example ``k`` of ``x`` mapped along ``ax`` (``x`` itself where it is not mapped)."""
    return x if ax is None else srcjax.tree_util.tree_map(lambda a: np.take(np.asarray(a), k, axis=ax), x)


def evaluate(expr: str, transforms: dict[str, Any], f: Any, np_module: Any) -> Any:
    """A check's text (``vmap(grad(f), in_axes=(0, None))``) over ``f``, ``transforms`` and ``np``."""
    return eval(expr, {**transforms, "f": f, "np": np_module})  # noqa: S307


def loop_reference(fn: Callable[..., Any], expr: str, in_axes: Any, args: tuple[Any, ...]) -> Any:
    """The user's function run by NumPy, for ``jit(f...)`` and ``vmap(f, ...)`` (a loop over the ``B`` examples
    stacked along ``out_axes``); None for the other checks."""
    if expr.startswith("jit(f"):
        return fn(*args)
    if expr.startswith("vmap(f"):
        m = re.search(r"out_axes=(-?\d)", expr)
        outs = [fn(*[take(a, ax, k) for a, ax in zip(args, in_axes)]) for k in range(B)]
        return srcjax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs],
                                                              axis=int(m.group(1)) if m else 0), *outs)
    return None


def agree(got: Any, want: Any, what: str, rtol: float, dtypes: bool = True, jax_leaves: bool = True) -> None:
    """srcjax's result against jax's (``jax_leaves``: the twin's classes are registered with jax) or another
    oracle's: leaf by leaf (``hunt_sweep.leaves_agree``)."""
    import jax

    leaves_agree(srcjax.tree_util.tree_leaves(got),
                 (jax.tree_util.tree_leaves if jax_leaves else srcjax.tree_util.tree_leaves)(want), what, rtol,
                 dtypes)


def quietly(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` with warnings ignored (NumPy's overflow in an untaken branch, jax's dtype notes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def srcjax_result(make: Callable[[], Any], expr: str, args: tuple[Any, ...], user_files: tuple[str, ...],
                  known_refusals: tuple[str, ...], compiled: bool = True) -> tuple[Any, Any] | Outcome:
    """srcjax's function (``make()``, under ``srcjax.jit`` unless ``expr`` is a ``jit(...)`` or not ``compiled``:
    a Python function calling srcjax, as ``jvp``) and its result, or the Outcome of its refusal (located in
    ``user_files``, known or not) or crash."""
    try:
        fn = make()
        if compiled and not expr.startswith("jit("):
            fn = srcjax.jit(fn)
        return fn, fn(*args)
    except srcjax.TranspileError as e:
        return refusal(e, user_files, known_refusals, 800)
    except Exception as e:  # noqa: BLE001
        return crash(e, 2500)


def generated_source_agrees(fn: Any, args: tuple[Any, ...], got: Any, rtol: float) -> Outcome | None:
    """The generated source run by NumPy (``srcjax.numpy_function``) against srcjax's result, leaf by leaf (dtypes
    aside): None where it agrees, else the Outcome "numpy" (it did not run) or "wrong" (``hunt_sweep``'s check)."""
    leaves = srcjax.tree_util.tree_leaves
    return source_run_agrees(fn, args, got, lambda g, w, what, r: leaves_agree(leaves(g), leaves(w), what, r,
                                                                                  dtypes=False), rtol, CHARS, 600)


# -- a corpus's cases and their arguments (the corpora's shared record and makers) -----------------------------

class Case(NamedTuple):
    """One program of a corpus (tests/test_*_programs.py) and the checks it runs."""

    name: str
    fn: Callable[..., Any]
    args: Callable[[np.random.Generator, Any], tuple[Any, ...]]  # (rng, dtype) -> the arguments
    # (expression over f and the transformations, in_axes of the batched arguments or None[, more per corpus])
    checks: tuple[tuple[Any, ...], ...]
    numpy: bool = True  # plain NumPy: the user's function run by NumPy is an oracle too
    rtol32: float = 5e-4
    # why NumPy's dtypes differ from jax's here (srcjax follows NumPy): dtypes are then not compared with jax's
    numpy_dtypes: str = ""
    fd: bool = True  # finite differences at float64 are an oracle (not where the program computes in float32)


def normal(rng: np.random.Generator, dt: Any, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.standard_normal(shape)).astype(dt)


def as_dtype(x: Any, dt: Any) -> np.ndarray:
    return np.asarray(x, dtype=dt)


def positive(rng: np.random.Generator, dt: Any, *shape: int, lo: float = 0.5, hi: float = 1.5) -> np.ndarray:
    return rng.uniform(lo, hi, shape).astype(dt)


def spd(rng: np.random.Generator, dt: Any, n: int) -> np.ndarray:
    """A symmetric positive definite n x n matrix."""
    m = rng.standard_normal((n, n))
    return (m @ m.T / n + np.eye(n)).astype(dt)


def jax_vmap(f: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0, masks: bool = False) -> Callable[..., Any]:
    """``jax.vmap(f, in_axes, out_axes)`` as the corpora's oracle: where jax cannot batch ``f`` (Python control flow
    on data; with ``masks``, a boolean mask's data-sized selection too) ``f`` runs one example at a time, stacked."""
    import jax
    import jax.numpy as jnp

    errors: tuple[type[BaseException], ...] = (
        jax.errors.TracerBoolConversionError, jax.errors.ConcretizationTypeError,
        jax.errors.TracerIntegerConversionError, *((jax.errors.NonConcreteBooleanIndexError,) if masks else ()))

    def run(*args: Any) -> Any:
        try:
            return jax.vmap(f, in_axes, out_axes)(*args)
        except errors:
            axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
            n = next(a.shape[ax] for a, ax in zip(args, axes) if ax is not None)
            outs = [f(*[a if ax is None else jax.tree_util.tree_map(lambda v, ax=ax, k=k: jnp.take(v, k, ax), a)
                        for a, ax in zip(args, axes)]) for k in range(n)]
            return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs, out_axes), *outs)
    return run


def _none(*args: Any) -> None:
    return None


class Corpus(NamedTuple):
    """A corpus: its cases (each with ``name``, ``fn``, ``args``, ``rtol32``, ``checks``: ``(expr, in_axes, ...)``
    tuples), its oracles and its lists. The hooks take ``(case, expr, in_axes, args)`` (``fd_reference``:
    ``(case, expr, args)``; ``srcjax_function``: ``(case, expr)``)."""

    cases: tuple[Any, ...]
    user_files: tuple[str, ...]  # where a refusal must be located
    known_refusals: tuple[str, ...]
    oracle: Callable[..., Any]  # jax's result
    oracle_leaves: Callable[[Any], list[Any]]  # the leaves of jax's result (the twin's classes are jax's)
    srcjax_function: Callable[..., Any]
    numpy_reference: Callable[..., Any] = _none  # the user's function run by NumPy, or None
    fd_reference: Callable[..., Any] = _none  # finite differences of a grad check at float64, or None
    # True: a check jax cannot run is the outcome "oracle" at once; False: NumPy and finite differences decide
    jax_required: bool = False
    # True: the dtypes always agree with NumPy's reference; False: where jax gave no result, or the case's
    # numpy_dtypes says why NumPy's differ from jax's (then not compared with jax's)
    numpy_dtypes_always: bool = False
    known_internal: tuple[str, ...] = ()  # errors of srcjax's own: xfail, not hidden
    known_wrong: Mapping[tuple[str, ...], str] = EMPTY  # (name, expr[, dtype]) -> why: xfail, not hidden
    # (name, expr, dtype) -> why: srcjax right but NumPy running the generated source off: xfail
    known_numpy_run: Mapping[tuple[str, ...], str] = EMPTY
    # checks whose srcjax_function is a Python function calling srcjax (``jvp`` of the user's function along fixed
    # tangents): run as they are, with no compiled function whose generated source NumPy could run
    uncompiled: tuple[str, ...] = ()
    # the outcomes a test passes on ("oracle": no oracle ran, jax could not and neither NumPy nor finite
    # differences apply)
    passing: tuple[str, ...] = ("ok", "known", "oracle")

    def checks(self, names: Iterable[str] | None = None,
               dtypes: tuple[str, ...] = ("float64", "float32")) -> list[tuple[str, str, str]]:
        """(name, expr, dtype) of every check of the cases named (all: None)."""
        return [(c.name, chk[0], dt) for c in self.cases if names is None or c.name in names for chk in c.checks
                for dt in dtypes]

    def thorough_checks(self, default_cases: tuple[str, ...]) -> list[tuple[str, str, str]]:
        """The checks the default tier leaves out (it runs ``default_cases`` at float64)."""
        return [k for k in self.checks() if not (k[0] in default_cases and k[2] == "float64")]

    def run(self, name: str, expr: str, dtype: str, seed: int = 0) -> Outcome:
        c = next(c for c in self.cases if c.name == name)
        return run_check(self, c, expr, next(chk[1] for chk in c.checks if chk[0] == expr), dtype, seed)

    def check(self, name: str, expr: str, dtype: str) -> None:
        """A test: the check run, its outcome asserted (:func:`assert_passes`)."""
        assert_passes(self.run(name, expr, dtype), name, expr, dtype, known_wrong=self.known_wrong,
                      known_numpy_run=self.known_numpy_run, known_internal=self.known_internal,
                      passing=self.passing)

    def tests(self, default_cases: tuple[str, ...]) -> tuple[Callable[..., None], Callable[..., None]]:
        """The corpus's two tests, bound to ``test_X`` and ``test_X_thorough`` in its module: every check of
        ``default_cases`` at float64, and (``SRCJAX_HYPOTHESIS=thorough``) every other check."""

        @pytest.mark.parametrize(("name", "expr", "dtype"), self.checks(default_cases, ("float64",)))
        def default(name: str, expr: str, dtype: str) -> None:
            self.check(name, expr, dtype)

        @pytest.mark.parametrize(("name", "expr", "dtype"), thorough_cases(self.thorough_checks(default_cases), 3))
        def thorough(name: str, expr: str, dtype: str) -> None:
            self.check(name, expr, dtype)

        return default, thorough

    def main(self, argv: list[str]) -> None:
        """``python -m tests.test_X [NAME ...] [--f64|--f32]``: the corpus's checks (every case's, or the cases
        named), their counts and every failure."""
        names = {a for a in argv if not a.startswith("--")} or None
        dtypes = ("float64",) if "--f64" in argv else ("float32",) if "--f32" in argv else ("float64", "float32")
        main(self.checks(names, dtypes), self.run, len(self.cases) if names is None else None)


def _copied(a: Any) -> Any:
    return a.copy() if isinstance(a, np.ndarray) else a


def run_check(corpus: Corpus, c: Any, expr: str, in_axes: Any, dtype: str, seed: int = 0) -> Outcome:
    """One check of case ``c`` (``expr`` over its function, ``in_axes`` its batched arguments or None) at
    ``dtype``: srcjax against jax (values and, unless ``c.numpy_dtypes`` says why NumPy's differ, dtypes), the
    user's function run by NumPy, finite differences (float64) and the generated source run by NumPy."""
    dt = np.float32 if dtype == "float32" else np.float64
    args = arguments(c, seed, dt, in_axes)
    numpy_dtypes = bool(getattr(c, "numpy_dtypes", ""))
    why = ""
    try:
        # (a copy: jax's eager fallback runs a twin that writes into a NumPy argument in place)
        want = quietly(corpus.oracle, c, expr, in_axes, srcjax.tree_util.tree_map(_copied, args))
    except Exception as e:  # noqa: BLE001 - (jax cannot run it: NumPy and finite differences still can)
        want = None
        why = f"{type(e).__name__}: {str(e)[:300]}"
        if corpus.jax_required:
            return Outcome("oracle", why)
    compiled = expr not in corpus.uncompiled
    result = srcjax_result(lambda: corpus.srcjax_function(c, expr), expr, args, corpus.user_files,
                           corpus.known_refusals, compiled)
    if isinstance(result, Outcome):
        return result
    fn, got = result
    rtol = c.rtol32 if dtype == "float32" else 1e-6
    leaves = srcjax.tree_util.tree_leaves
    try:
        if want is not None:
            leaves_agree(leaves(got), corpus.oracle_leaves(want), "srcjax vs jax", rtol, dtypes=not numpy_dtypes)
        # (a copy: the user's function may write into its arguments, as NumPy code does, and NumPy then runs the
        # generated source on them)
        ref = quietly(corpus.numpy_reference, c, expr, in_axes, srcjax.tree_util.tree_map(_copied, args))
        if ref is not None:
            leaves_agree(leaves(got), leaves(ref), "the user's function run by NumPy vs srcjax", 10 * rtol,
                         dtypes=corpus.numpy_dtypes_always or want is None or numpy_dtypes)
        fd = corpus.fd_reference(c, expr, srcjax.tree_util.tree_map(_copied, args)) if dtype == "float64" else None
        if fd is not None:
            leaves_agree(leaves(got), leaves(fd), "finite differences vs srcjax's grad", 1e-5, dtypes=False)
    except AssertionError as e:
        return Outcome("wrong", str(e)[:CHARS])
    out = generated_source_agrees(fn, args, got, 10 * rtol) if compiled else None
    if out is not None:
        return out
    if want is None and ref is None and fd is None:
        return Outcome("oracle", why)
    return Outcome("ok", "")


def assert_passes(out: Outcome, name: str, expr: str, dtype: str = "", *,
                  known_wrong: Mapping[tuple[str, ...], str] = EMPTY,
                  known_numpy_run: Mapping[tuple[str, ...], str] = EMPTY, known_internal: tuple[str, ...] = (),
                  passing: tuple[str, ...] = ("ok", "known", "oracle")) -> None:
    """A test's verdict on a check's Outcome: a known wrong answer (keyed ``(name, expr, dtype)`` or
    ``(name, expr)``), a known NumPy run of the generated source, a known internal error are xfails (reported,
    not hidden); any outcome not in ``passing`` fails with its detail."""
    keys = [(name, expr, dtype), (name, expr)]
    if out.status == "wrong":
        why = next((known_wrong[k] for k in keys if k in known_wrong), None)
        if why is not None:
            pytest.xfail(f"reported: {why}")
        if "NumPy running the generated source" in out.detail and keys[0] in known_numpy_run:
            pytest.xfail(f"reported: {known_numpy_run[keys[0]]}")
    if out.status in ("internal", "numpy", "refused") and any(k in out.detail for k in known_internal):
        pytest.xfail(f"reported: {out.detail[:300]}")
    at = f" ({dtype})" if dtype else ""
    assert out.status in passing, f"{name}: {expr}{at}\n{out.status}: {out.detail}"


def main(checks: Iterable[tuple[str, ...]], run: Callable[..., Outcome], programs: int | None = None) -> None:
    """Every check (``run(*check)``: each a fresh start, ``srcjax.reuse.forget()``), its outcome printed and
    every failure's detail; the counts at the end."""
    counts: collections.Counter[str] = collections.Counter()
    for check in checks:
        srcjax.reuse.forget()
        out = run(*check)
        counts[out.status] += 1
        name, expr, *rest = check
        print(f"{out.status:8s} {name}: {expr}" + "".join(f" ({r})" for r in rest), flush=True)
        if out.status not in ("ok", "known"):
            print(re.sub("^", "    ", out.detail[:1500], flags=re.M), flush=True)
    head = f"{programs} programs, " if programs is not None else ""
    print(f"\n{head}{sum(counts.values())} checks: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


# -- finite differences of the user's function (hunt13, hunt14) -----------------------------------------------

def _fd_jacobian(fn: Callable[..., Any], args: tuple[Any, ...], k: int, eps: float = 1e-6) -> Any:
    """Central differences of ``fn``'s output (an array, a tuple or a dict of arrays) with respect to ``args[k]``: the
    output's shape followed by the argument's, as jacfwd/jacrev's."""
    x = np.asarray(args[k], dtype=np.float64)

    def at(v: Any) -> Any:
        a = list(args)
        a[k] = v if x.ndim else float(v)
        out = fn(*a)
        out = tuple(out.values()) if isinstance(out, dict) else out  # (a dict: its values, in its order)
        return tuple(np.asarray(o, dtype=np.float64) for o in out) if isinstance(out, tuple) else \
            (np.asarray(out, dtype=np.float64),)

    cols = []
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        cols.append(tuple((p - m) / (2 * eps) for p, m in zip(at(xp), at(xm))))
    jac = tuple(np.stack([c[i] for c in cols], axis=-1).reshape(o.shape + x.shape) for i, o in enumerate(at(x)))
    out = fn(*args)
    return dict(zip(out, jac)) if isinstance(out, dict) else jac if isinstance(out, tuple) else jac[0]


def _argnums(text: str | None) -> Any:
    return 0 if text is None else eval(text)  # noqa: S307 - (an int or a tuple of ints from the check's text)


def fd_reference(c: Any, expr: str, args: tuple[Any, ...]) -> Any:
    """Central finite differences of the user's function at float64: ``grad``, ``value_and_grad``, ``jacfwd``,
    ``jacrev`` (one argnums or a tuple), and ``vmap(grad(f...), in_axes=...)`` by a loop over the examples."""
    if not (c.numpy and c.fd):
        return None
    m = re.fullmatch(r"(grad|value_and_grad|jacfwd|jacrev)\(f(?:, argnums=(\d|\(\d(?:, \d)*\)))?\)", expr)
    v = re.fullmatch(r"vmap\(grad\(f(?:, argnums=(\d))?\), in_axes=(\(.*\))\)", expr)
    if m is None and v is None:
        return None
    ks = _argnums((m or v).group(2) if m else v.group(1))  # type: ignore[union-attr]
    for k in ks if isinstance(ks, tuple) else (ks,):
        if not (isinstance(args[k], np.ndarray) and args[k].dtype == np.float64):
            return None
    if v is not None:
        in_axes = eval(v.group(2))  # noqa: S307
        grads = [_fd_jacobian(c.fn, tuple(take(a, ax, i) for a, ax in zip(args, in_axes)), ks)
                 for i in range(B)]
        return np.stack(grads)
    one = (lambda k: _fd_jacobian(c.fn, args, k))
    d = tuple(one(k) for k in ks) if isinstance(ks, tuple) else one(ks)
    return (c.fn(*args), d) if m.group(1) == "value_and_grad" else d  # type: ignore[union-attr]


# -- corpora checked against the same program text run with np as jax.numpy (hunt13, hunt14) -------------------

# the checks a case names: an expression over its function ``f``, and the in_axes of the vmap in it (None: no vmap)
J, G, VG, H, JF, JR = (("jit(f)", None), ("grad(f)", None), ("value_and_grad(f)", None), ("hessian(f)", None),
                       ("jacfwd(f)", None), ("jacrev(f)", None))
TRANSFORMS = ("jit", "grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian")


def vmap_check(axes: tuple[Any, ...], inner: str = "f") -> tuple[str, Any]:
    """``vmap(inner, in_axes=axes)``."""
    spelled = "(" + ", ".join(str(a) for a in axes) + ("," if len(axes) == 1 else "") + ")"
    return (f"vmap({inner}, in_axes={spelled})", axes)


def vmap_grad_check(axes: tuple[Any, ...], argnums: int = 0) -> tuple[str, Any]:
    """``vmap(grad(f, argnums=k), in_axes=axes)``."""
    return vmap_check(axes, "grad(f)" if argnums == 0 else f"grad(f, argnums={argnums})")


def twin_namespace(module: types.ModuleType, np_module: Any, **twins: Any) -> dict[str, Any]:
    """The corpus module's text run with ``np`` as ``np_module`` (jax.numpy, or a wrapper of it): every program's
    jax twin, by name; ``twins``: hand-written ones (programs that write into arrays) in their place."""
    text = inspect.getsource(module).replace("import numpy as np\n", "")
    ns: dict[str, Any] = {"np": np_module, "__name__": module.__name__.rsplit(".", 1)[-1] + "_twin"}
    exec(compile(text, inspect.getsourcefile(module) or "<twin>", "exec"), ns)  # noqa: S102
    ns.update(twins)
    return ns


def unbatched(expr: str) -> tuple[str, None]:
    """A check with no vmap in it (``hessian(f)``): its expression and no in_axes."""
    return (expr, None)


def uniform(rng: np.random.Generator, dt: Any, lo: float, hi: float, *shape: int) -> np.ndarray:
    return np.asarray(rng.uniform(lo, hi, shape), dtype=dt)


def dominant(rng: np.random.Generator, dt: Any, n: int, diagonal: float) -> np.ndarray:
    """An n x n matrix made diagonally dominant by ``diagonal`` on its diagonal."""
    return (rng.standard_normal((n, n)) + diagonal * np.eye(n)).astype(dt)


def agree_values(got: Any, want: Any, what: str, rtol: float = 1e-9, dtypes: bool = False) -> None:
    """A regression test's comparison: srcjax's result against an oracle's, leaf by leaf (dtypes on request)."""
    agree(got, want, what, rtol, dtypes=dtypes, jax_leaves=False)


def twin_corpus(cases: tuple[Any, ...], user_file: str, known_refusals: tuple[str, ...], twin: Mapping[str, Any],
                known_internal: tuple[str, ...] = (), known_wrong: Mapping[tuple[str, ...], str] = EMPTY) -> Corpus:
    """A corpus whose jax oracle runs ``twin[name]`` (the corpus module's text with ``np`` as jax.numpy), jitted,
    with jax's vmap one example at a time where a mask selects on data (:func:`jax_vmap`); the NumPy reference is
    the user's function (in a loop over the examples for ``vmap``) for cases with ``numpy``, and finite
    differences check the derivatives at float64."""
    import jax

    from .twins import jitted

    def vmap(f: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0) -> Any:
        return jax_vmap(f, in_axes, out_axes, masks=True)

    jax_t = {"jit": lambda f, **kw: f, "grad": jax.grad, "value_and_grad": jax.value_and_grad, "vmap": vmap,
             "jacfwd": jax.jacfwd, "jacrev": jax.jacrev, "hessian": jax.hessian}
    srcjax_t = {k: getattr(srcjax, k) for k in TRANSFORMS}

    def oracle(c: Any, expr: str, in_axes: Any, args: tuple[Any, ...]) -> Any:
        return jitted(evaluate(expr, jax_t, twin[c.fn.__name__], jax.numpy))(*args)

    def numpy_reference(c: Any, expr: str, in_axes: Any, args: tuple[Any, ...]) -> Any:
        return loop_reference(c.fn, expr, in_axes, args) if c.numpy else None

    return Corpus(cases, (user_file,), known_refusals, oracle, jax.tree_util.tree_leaves,
                  lambda c, expr: evaluate(expr, srcjax_t, c.fn, np), numpy_reference, fd_reference,
                  known_internal=known_internal, known_wrong=known_wrong)
