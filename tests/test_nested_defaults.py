"""``def g(v, k=k)`` defined and called inside a loop (the default captures the loop variable): the default is
kept in a name of the enclosing function (frontend/nested_defaults.py; #15, was refused "nested functions with
defaults"). Uses that could see another ``def``'s default (the function stored or passed, called with the
defaulted parameter) stay refused."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax

jax.config.update("jax_enable_x64", True)


def loop_default(x):
    t = 0.0
    for k in range(3):
        def g(v, k=k):
            return np.sin(v * (k + 1))
        t = t + np.sum(g(x))
    return t


def jax_loop_default(x):
    t = 0.0
    for k in range(3):
        def g(v, k=k):
            return jnp.sin(v * (k + 1))
        t = t + jnp.sum(g(x))
    return t


def two_defaults_later_call(x):
    out = []
    for k in range(2):
        def g(v, a=k, b=2.0 * k):
            return v * a + b
        out.append(g(x) ** 2)
        k = 5  # (the default is k's value when the def ran)
        out.append(g(x))
    return np.sum(np.stack(out))


def stored(x):
    fs = []
    for k in range(3):
        def g(v, k=k):
            return v * k
        fs.append(g)
    return np.sum(fs[0](x) + fs[2](x))


def keyword_rate(y0, k):
    def rhs(y, k=1.0, c=0.5):
        return -k * y + c * np.sin(y)

    y = y0
    for _ in range(3):
        a = rhs(y, k=k)
        b = rhs(y + 0.1 * a, c=k, k=2.0)  # (keywords out of order)
        y = y + 0.1 * (a + rhs(b) + rhs(y, k, 0.25))
    return np.sum(y ** 2)


def jax_keyword_rate(y0, k):
    def rhs(y, k=1.0, c=0.5):
        return -k * y + c * jnp.sin(y)

    y = y0
    for _ in range(3):
        a = rhs(y, k=k)
        b = rhs(y + 0.1 * a, c=k, k=2.0)
        y = y + 0.1 * (a + rhs(b) + rhs(y, k, 0.25))
    return jnp.sum(y ** 2)


def star_call(x):
    def g(v, k=1.0):
        return v * k
    args = (x, 2.0)
    return np.sum(g(*args))


X = np.array([0.3, 1.7, 4.0])


def test_loop_default_against_jax():
    np.testing.assert_allclose(np.asarray(srcjax.jit(loop_default)(X)), loop_default(X), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.grad(loop_default)(X)), np.asarray(jax.grad(jax_loop_default)(X)),
                               rtol=1e-10)
    xs = np.stack([X, 2 * X])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(loop_default))(xs)),
                               np.asarray(jax.vmap(jax.grad(jax_loop_default))(xs)), rtol=1e-10)


def test_defaults_are_the_values_when_the_def_ran():
    np.testing.assert_allclose(np.asarray(srcjax.jit(two_defaults_later_call)(X)), two_defaults_later_call(X),
                               rtol=1e-12)
    want = jax.grad(lambda x: jnp.sum(jnp.stack([(x * k + 2.0 * k) ** 2 for k in range(2)] +
                                                [x * k + 2.0 * k for k in range(2)])))(X)
    np.testing.assert_allclose(np.asarray(srcjax.grad(two_defaults_later_call)(X)), np.asarray(want), rtol=1e-10)


def test_a_stored_nested_function_with_defaults_is_refused():
    with pytest.raises(srcjax.TranspileError, match="nested functions with defaults"):
        srcjax.jit(stored)(X)


def test_defaults_passed_by_keyword_against_jax_and_finite_differences():
    """``rhs(y, k=k)`` (hunt23's rk4_rate_keyword): each call passes every parameter by position, the name that
    keeps the default where it leaves it out (was refused "nested functions with defaults")."""
    from .fd import central_fd

    k = 1.3
    np.testing.assert_allclose(np.asarray(srcjax.jit(keyword_rate)(X, k)), keyword_rate(X, k), rtol=1e-12)
    gx, gk = srcjax.grad(keyword_rate, argnums=(0, 1))(X, k)
    jx, jk = jax.grad(jax_keyword_rate, argnums=(0, 1))(X, k)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(jx), rtol=1e-10)
    np.testing.assert_allclose(float(gk), float(jk), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(gx), central_fd(keyword_rate, (X, k), 0), rtol=1e-6)
    np.testing.assert_allclose(float(gk), central_fd(keyword_rate, (X, k), 1), rtol=1e-6)
    xs = np.stack([X, 2 * X])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(keyword_rate, in_axes=(0, None))(xs, k)),
                               np.asarray(jax.vmap(jax_keyword_rate, in_axes=(0, None))(xs, k)), rtol=1e-12)
    text = srcjax.source(srcjax.jit(keyword_rate))
    assert "def rhs(y, k, c):" in text and "rhs(y, k, rhs_c_default)" in text, text


def test_a_nested_function_with_defaults_called_with_star_args_is_refused():
    with pytest.raises(srcjax.TranspileError, match="nested functions with defaults"):
        srcjax.jit(star_call)(X)


def test_nested_defs_are_found_in_every_kind_of_block():
    """The statement walk that finds nested ``def``s (faster than a full libcst visit) finds the same ones,
    in source order: in branches, loops' ``else``, ``with``, ``try``'s clauses, ``match`` cases, classes."""
    import textwrap

    import libcst as cst

    from srcjax.frontend.nested_defaults import _nested_defs

    fdef = cst.parse_module(textwrap.dedent('''
        def f(x):
            def a(): pass
            if x:
                def b(): pass
            elif x:
                def c(): pass
            else:
                def d(): pass
            for i in x:
                def e(): pass
            else:
                def g(): pass
            while x:
                def h(): pass
            with x:
                def i(): pass
            try:
                def j(): pass
            except ValueError:
                def k(): pass
            else:
                def l(): pass
            finally:
                def m(): pass
            match x:
                case 1:
                    def n(): pass
            class C:
                def o(self):
                    def p(): pass
            q = lambda: 0
            if x: pass
    ''')).body[0]
    assert isinstance(fdef, cst.FunctionDef)
    assert [d.name.value for d in _nested_defs(fdef)] == list("abcdeghijklmnop")


def test_nested_defs_found_in_every_block_as_a_visitor_finds_them():
    """``_nested_defs`` walks only blocks (not every node, as a visitor did: a third of normalizing a function):
    the same ``def``s, in the same order, inside every kind of compound statement and clause."""
    import libcst as cst

    from srcjax.frontend.nested_defaults import _nested_defs

    text = '''
def f(x):
    def a(v, k=1):
        def b(w):
            return w
        return v
    if x:
        def c(v): return v
    elif x > 1:
        def d(v): return v
    else:
        def e(v): return v
    for i in x:
        def g(v): return v
    else:
        def h(v): return v
    while x:
        def i(v): return v
    with x as y:
        def j(v): return v
    try:
        def k(v): return v
    except E:
        def l(v): return v
    else:
        def m(v): return v
    finally:
        def n(v): return v
    class C:
        def o(self): return 1
    match x:
        case 1:
            def p(v): return v
    q = lambda v: v
    return a
'''
    fdef = cst.parse_module(text).body[0]
    seen = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n):
            if n is not fdef:
                seen.append(n)

    fdef.visit(V())
    found = _nested_defs(fdef)
    assert [d.name.value for d in found] == list("abcdeghijklmnop")
    assert [id(d) for d in found] == [id(d) for d in seen]
