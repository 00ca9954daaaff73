"""A corpus of programs written to be vmapped (tests/test_hunt18_programs.py): each check an expression over the
program ``f`` and the transformations (``vmap(grad(f), in_axes=({'w': 0, 'b': None}, 0), out_axes=-1)``),
evaluated three ways: with srcjax's functions (under ``srcjax.jit``), with jax's over the program module's text
run with ``srcjax`` bound to jax and ``np`` to jax.numpy (values and dtypes; where jax cannot vmap Python control
flow on data, one example at a time), and with the NumPy stand-in (``tests/loop_fd_standin.py``: vmap a loop over
the examples, derivatives by central finite differences at float64) over the module's text run with ``srcjax``
bound to it. The generated source run by NumPy is checked against srcjax (``corpus_harness``). A check's
arguments are the case's draws, ``B`` of them stacked along the check's in_axes (a prefix per argument: an int,
None, a dict, a list, a tuple or a NamedTuple of them; a list of prefixes: nested vmaps, innermost first).

Outcomes (``hunt_sweep.Outcome``): ok; known (a refusal in the corpus's lists); wrong; internal; refused (located
at the user's line); numpy (the generated source does not run under NumPy); oracle (neither jax nor the stand-in
gave an answer: a failure, the check is the corpus's mistake)."""

from __future__ import annotations

import importlib.util
import inspect
import pathlib
import tempfile
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np
import pytest

import srcjax

from . import corpus_harness
from . import loop_fd_standin as standin
from .corpus_harness import EMPTY, assert_passes, generated_source_agrees, quietly, srcjax_result
from .hunt_sweep import Outcome, leaves_agree
from .tiers import thorough_cases

B = 3  # examples in a check's batch
TRANSFORMS = ("vmap", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian", "jit", "jvp")


def v(axes: tuple[Any, ...], inner: str = "f", out: str = "", extra: str = "") -> tuple[str, Any]:
    """``vmap(inner, in_axes=axes[, out_axes=out])`` stacked along ``axes``."""
    spelled = "(" + ", ".join(repr(a) for a in axes) + ("," if len(axes) == 1 else "") + ")"
    text = f"vmap({inner}, in_axes={spelled}" + (f", out_axes={out}" if out else "") + extra + ")"
    return text, axes


def jv(axes: tuple[Any, ...], inner: str = "f") -> tuple[str, Any]:
    """``jit(vmap(inner, in_axes=axes))``."""
    text, _ = v(axes, inner)
    return f"jit({text})", axes


def gv(axes: tuple[Any, ...], inner: str) -> tuple[str, Any]:
    """``grad`` of the sum of a vmap (the mapped arguments' gradient, argument 0)."""
    n = len(axes)
    names = ", ".join(f"a{k}" for k in range(n))
    text, _ = v(axes, inner)
    return f"grad(lambda {names}: np.sum({text}({names})))", axes



def jp(n: int, which: tuple[int, ...] | None = None) -> tuple[str, None]:
    """``jvp`` of ``f`` (``n`` arguments) along fixed tangents of the arguments ``which`` (default: all; the others
    closed over): ``lambda a0, a1: jvp(lambda t0: f(t0, a1), (a0,), (np.sin(2.0 * a0 + 1.0),))``."""
    ks = tuple(range(n)) if which is None else which
    names = ", ".join(f"a{k}" for k in range(n))
    tangents = "".join(f"np.sin(2.0 * a{k} + {k + 1}.0), " for k in ks)
    primals = "".join(f"a{k}, " for k in ks)
    if len(ks) == n:
        return f"lambda {names}: jvp(f, ({primals}), ({tangents}))", None
    inner = ", ".join(f"t{k}" if k in ks else f"a{k}" for k in range(n))
    params = ", ".join(f"t{k}" for k in ks)
    return f"lambda {names}: jvp(lambda {params}: f({inner}), ({primals}), ({tangents}))", None

class Case(NamedTuple):
    name: str
    args: Callable[[np.random.Generator, Any], tuple[Any, ...]]  # (rng, dtype) -> one example's arguments
    # (expression over f, the axes its arguments are stacked along: None, a prefix per argument, or a list of
    # them for nested vmaps, innermost first)
    checks: tuple[tuple[str, Any], ...]
    rtol32: float = 2e-3
    fd: bool = True  # False: a custom rule that is not the derivative (the stand-in's finite differences differ)
    numpy_dtypes: str = ""  # why NumPy's dtypes differ from jax's here: dtypes then not compared with jax's
    fn_name: str = ""  # the module's function (default: name)


# the corpora's check specs (test_hunt22_programs, test_hunt23_programs): (transformation of `f`, in_axes)
J = ("jit(f)", None)
G, H, JF, JR = ("grad(f)", None), ("hessian(f)", None), ("jacfwd(f)", None), ("jacrev(f)", None)


def g(argnums: Any) -> tuple[str, None]:
    return (f"grad(f, argnums={argnums})", None)


def jf(argnums: Any) -> tuple[str, None]:
    return (f"jacfwd(f, argnums={argnums})", None)


def jr(argnums: Any) -> tuple[str, None]:
    return (f"jacrev(f, argnums={argnums})", None)


def h(argnums: Any) -> tuple[str, None]:
    return (f"hessian(f, argnums={argnums})", None)


def gs(argnums: Any = 0) -> tuple[str, None]:
    """``grad`` of the sum of the squares of ``f``'s output (a loss over an array-valued program)."""
    return (f"grad(lambda *a: np.sum(f(*a) ** 2), argnums={argnums})", None)


def vg(axes: tuple[Any, ...], argnums: Any = 0) -> tuple[str, Any]:
    """``vmap(grad(f[, argnums]), in_axes=axes)``."""
    return v(axes, "grad(f)" if argnums == 0 else f"grad(f, argnums={argnums})")


def vgs(axes: tuple[Any, ...], argnums: Any = 0) -> tuple[str, Any]:
    """``vmap`` of :func:`gs`."""
    return v(axes, gs(argnums)[0])


def out(k: int, t: str = "jacrev", argnums: Any = 0) -> tuple[str, None]:
    """``t`` of output ``k`` of a function returning a tuple."""
    return (f"{t}(lambda *a: f(*a)[{k}], argnums={argnums})", None)


def _stack_prefix(draws: list[Any], ax: Any) -> Any:
    """``draws`` (one argument's examples) stacked along the prefix ``ax``."""
    if ax is None:
        return draws[0]
    if isinstance(ax, int):
        return srcjax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs], axis=ax), *draws)
    if isinstance(ax, dict):
        return {k: _stack_prefix([d[k] for d in draws], ax[k]) for k in draws[0]}
    if isinstance(ax, tuple) and hasattr(ax, "_fields"):
        return type(draws[0])(*[_stack_prefix([d[i] for d in draws], a) for i, a in enumerate(ax)])
    return type(draws[0])(_stack_prefix([d[i] for d in draws], a) for i, a in enumerate(ax))


def arguments(c: Case, axes: Any, dt: Any, seed: int = 0) -> tuple[Any, ...]:
    """The check's arguments: the case's draw, or ``B`` draws stacked along each level of ``axes``."""
    levels = [] if axes is None else axes if isinstance(axes, list) else [axes]

    def draw(s: int, depth: int) -> tuple[Any, ...]:
        if depth == len(levels):
            return c.args(np.random.default_rng(s), dt)
        ds = [draw(s * 7 + k + 1, depth + 1) for k in range(B + depth)]  # (nested levels of different sizes)
        return tuple(_stack_prefix([d[i] for d in ds], ax) for i, ax in enumerate(levels[len(levels) - 1 - depth]))
    return draw(seed, 0)


def _to_twin(x: Any, ns: Mapping[str, Any], classes: tuple[str, ...]) -> Any:
    """An argument for a twin: the module's NamedTuples as the twin's."""
    if isinstance(x, tuple) and hasattr(x, "_fields") and type(x).__name__ in classes:
        return ns[type(x).__name__](*[_to_twin(v, ns, classes) for v in x])
    if isinstance(x, dict):
        return {k: _to_twin(v, ns, classes) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_to_twin(v, ns, classes) for v in x)
    return x


def _copying(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` called with copies of its array arguments: the user's function run by NumPy may change an argument
    in place (``W *= ...``, as NumPy allows), which would change the check's arguments and the stand-in's
    finite differences' base point for every later call."""

    def run(*args: Any, **kwargs: Any) -> Any:
        copy = lambda a: np.array(a) if isinstance(a, np.ndarray) else a  # noqa: E731
        return fn(*srcjax.tree_util.tree_map(copy, args), **srcjax.tree_util.tree_map(copy, kwargs))

    return run


def _leaves(x: Any) -> list[Any]:
    return srcjax.tree_util.tree_leaves(x)


class VmapCorpus:
    """A module of programs (``module``), its cases and lists; ``prefix`` names the files the checks' expressions
    are written to (a refusal located there or in the module is the user's); ``classes``: the module's classes a
    check's text names (the NamedTuples of in_axes prefixes)."""

    def __init__(self, module: types.ModuleType, cases: tuple[Case, ...], prefix: str, *,
                 classes: tuple[str, ...] = (), known_refusals: tuple[str, ...] = (),
                 known_internal: tuple[str, ...] = (), known_wrong: Mapping[tuple[str, ...], str] = EMPTY) -> None:
        import jax

        self.module, self.cases, self.prefix, self.classes = module, cases, prefix, classes
        self.by_name = {c.name: c for c in cases}
        self.user_files = (pathlib.Path(inspect.getsourcefile(module) or "").name, prefix)
        self.known_refusals, self.known_internal, self.known_wrong = known_refusals, known_internal, known_wrong
        text = inspect.getsource(module)
        for line in ("import numpy as np\n", "import srcjax\n"):
            text = text.replace(line, "")
        fake = types.SimpleNamespace(
            vmap=jax.vmap, grad=jax.grad, value_and_grad=jax.value_and_grad, jacfwd=jax.jacfwd, jacrev=jax.jacrev,
            hessian=jax.hessian, jvp=jax.jvp, vjp=jax.vjp, jit=jax.jit, custom_jvp=jax.custom_jvp,
            custom_vjp=jax.custom_vjp, lax=jax.lax, tree_util=jax.tree_util, random=jax.random)
        name = module.__name__.rsplit(".", 1)[-1]
        self.jax_twin = self._exec(text, {"np": jax.numpy, "srcjax": fake, "__name__": f"{name}_jax"})
        self.numpy_twin = self._exec(text, {"np": np, "srcjax": standin.namespace(), "__name__": f"{name}_numpy"})
        self.jax_t = {"vmap": self._jax_vmap, "grad": jax.grad, "value_and_grad": jax.value_and_grad,
                      "jacfwd": jax.jacfwd, "jacrev": jax.jacrev, "hessian": jax.hessian,
                      "jit": lambda f, **kw: f, "jvp": jax.jvp, "np": jax.numpy}
        self.srcjax_t = {k: getattr(srcjax, k) for k in TRANSFORMS} | {"np": np}
        self.numpy_t = {k: standin.TRANSFORMS[k] for k in TRANSFORMS} | {"np": np}
        self._dir = pathlib.Path(tempfile.mkdtemp(prefix=f"srcjax_{prefix}"))
        self._made: dict[str, Any] = {}

    def _exec(self, text: str, ns: dict[str, Any]) -> dict[str, Any]:
        exec(compile(text, inspect.getsourcefile(self.module) or "<twin>", "exec"), ns)  # noqa: S102
        return ns

    @staticmethod
    def _jax_vmap(fn: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0, **kw: Any) -> Callable[..., Any]:
        """jax.vmap; where jax cannot batch Python control flow on data, one example at a time."""
        import jax

        errors = (jax.errors.TracerBoolConversionError, jax.errors.ConcretizationTypeError,
                  jax.errors.TracerIntegerConversionError)

        def run(*args: Any) -> Any:
            try:
                return jax.vmap(fn, in_axes, out_axes, **kw)(*args)
            except errors:
                return standin.vmap(lambda *a: jax.tree_util.tree_map(np.asarray, fn(*a)), in_axes, out_axes,
                                    **{k: v for k, v in kw.items() if k == "axis_size"})(*args)
        return run

    def evaluate(self, expr: str, transforms: dict[str, Any], f: Any, ns: Mapping[str, Any]) -> Any:
        """``expr`` over ``f`` and ``transforms``, written to a module file of its own first (srcjax reads the
        source of a lambda in it); ``ns``: where the module's classes come from."""
        if expr not in self._made:
            path = self._dir / f"{self.prefix}{len(self._made)}.py"
            params = ", ".join([*sorted(self.jax_t), *self.classes])
            path.write_text(f"def make(f, {params}):\n    return {expr}\n")
            spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            spec.loader.exec_module(module)  # type: ignore[union-attr]
            self._made[expr] = module.make
        return self._made[expr](f, **transforms, **{k: ns[k] for k in self.classes})

    def numpy_reference(self, c: Case, expr: str, args: tuple[Any, ...], dtype: str) -> tuple[Any, float] | None:
        """The check run by the NumPy stand-in (a loop over examples, finite differences) and the tolerance its
        answer has; None where it has none (derivatives at float32 or three deep, ``.at[]`` on a NumPy array)."""
        src = inspect.getsource(getattr(self.module, c.fn_name or c.name))
        uses_fd = any(t in expr or t in src for t in ("grad", "jac", "hessian", "jvp", "vjp"))
        if uses_fd and not c.fd:
            return None
        standin.reset()
        try:
            fn = self.evaluate(expr, self.numpy_t, _copying(self.numpy_twin[c.fn_name or c.name]), self.numpy_twin)
            out = quietly(fn, *_to_twin(args, self.numpy_twin, self.classes))
        except standin.NoReference:
            return None
        except AttributeError as e:  # (`.at[]` of a NumPy array)
            if "'at'" in str(e):
                return None
            raise
        rtol = {0: 1e-9 if dtype == "float64" else 10 * c.rtol32, 1: 1e-5, 2: 2e-4}[standin.deepest()]
        return out, rtol

    def run_check(self, c: Case, expr: str, axes: Any, dtype: str, seed: int = 0) -> Outcome:
        from .twins import jitted

        dt = np.float32 if dtype == "float32" else np.float64
        args = arguments(c, axes, dt, seed)
        name = c.fn_name or c.name
        want, why = None, ""
        try:
            fn_jax = self.evaluate(expr, self.jax_t, self.jax_twin[name], self.jax_twin)
            want = quietly(jitted(fn_jax), *_to_twin(args, self.jax_twin, self.classes))
        except Exception as e:  # noqa: BLE001 - (jax cannot run it: the NumPy stand-in decides)
            why = f"jax: {type(e).__name__}: {str(e)[:300]}"
        result = srcjax_result(lambda: self.evaluate(expr, self.srcjax_t, getattr(self.module, name),
                                                     vars(self.module)),
                               expr, args, self.user_files, self.known_refusals)
        if isinstance(result, Outcome):
            if result.status == "refused" and want is None:  # (jax refuses too: said so, for the report)
                return Outcome("refused", f"jax cannot run it either ({why})\n{result.detail}")
            return result
        fn, got = result
        rtol = c.rtol32 if dtype == "float32" else 1e-8
        try:
            ref = self.numpy_reference(c, expr, args, dtype)
        except Exception as e:  # noqa: BLE001 - (a mistake of the case: reported as the oracle's)
            ref, why = None, f"{why}\nthe NumPy stand-in: {type(e).__name__}: {str(e)[:600]}"
        try:
            if want is not None:
                import jax

                leaves_agree(_leaves(got), jax.tree_util.tree_leaves(want), "srcjax vs jax", rtol,
                             dtypes=not c.numpy_dtypes)
            if ref is not None:
                leaves_agree(_leaves(got), _leaves(ref[0]),
                             "srcjax vs the NumPy stand-in (loops, finite differences)", max(ref[1], rtol),
                             dtypes=False)
        except AssertionError as e:
            return Outcome("wrong", str(e)[:1500])
        if want is None and ref is None:
            return Outcome("oracle", why)
        return generated_source_agrees(fn, args, got, 10 * rtol) or Outcome("ok", "")

    def all_checks(self, names: Iterable[str] | None = None,
                   dtypes: tuple[str, ...] = ("float64", "float32")) -> list[tuple[str, str, str]]:
        return [(c.name, chk[0], dt) for c in self.cases if names is None or c.name in names for chk in c.checks
                for dt in dtypes]

    def run(self, name: str, expr: str, dtype: str) -> Outcome:
        c = self.by_name[name]
        return self.run_check(c, expr, next(k[1] for k in c.checks if k[0] == expr), dtype)

    def check(self, name: str, expr: str, dtype: str) -> None:
        # (a float32 derivative of a program jax cannot run, an in-place write, has no oracle: the stand-in's
        # finite differences are float64's, and its float64 twin is checked by them)
        passing = ("ok", "known", "oracle") if dtype == "float32" else ("ok", "known")
        assert_passes(self.run(name, expr, dtype), name, expr, dtype, known_wrong=self.known_wrong,
                      known_internal=self.known_internal, passing=passing)

    def tests(self, default_cases: tuple[str, ...]) -> tuple[Callable[..., None], Callable[..., None]]:
        """The corpus's two tests: every check of ``default_cases`` at float64, and (``SRCJAX_HYPOTHESIS=
        thorough``) every other check at float64 and float32."""

        @pytest.mark.parametrize(("name", "expr", "dtype"), self.all_checks(default_cases, ("float64",)))
        def default(name: str, expr: str, dtype: str) -> None:
            self.check(name, expr, dtype)

        @pytest.mark.parametrize(("name", "expr", "dtype"), thorough_cases(
            [k for k in self.all_checks() if not (k[0] in default_cases and k[2] == "float64")], 3))
        def thorough(name: str, expr: str, dtype: str) -> None:
            self.check(name, expr, dtype)

        return default, thorough

    def main(self, argv: list[str]) -> None:
        """``python -m tests.test_X [NAME ...] [--f64|--f32]``: the checks, their counts and every failure."""
        dts = ("float64",) if "--f64" in argv else ("float32",) if "--f32" in argv else ("float64", "float32")
        names = {a for a in argv if not a.startswith("--")} or None
        corpus_harness.main(self.all_checks(names, dts), self.run, len(self.cases) if names is None else None)
