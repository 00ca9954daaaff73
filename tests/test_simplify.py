"""Before/after source tests for the generated-code simplifier."""

import ast
import os
import textwrap
from collections import Counter
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from srcjax.transforms.simplify import simplify_source

_SCALE = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1


def simp(text: str) -> str:
    return simplify_source(textwrap.dedent(text), {"unbroadcast", "ones_like"})


def test_copy_propagation_and_dead_code():
    out = simp("""
        def f(x, out_bar):
            a_bar = out_bar
            unused = np.sin(x)
            b = a_bar * x
            return b
    """)
    assert out.strip() == textwrap.dedent("""
        def f(x, out_bar):
            b = out_bar * x
            return b
    """).strip()


def test_statements_after_a_return_or_raise_are_dropped():
    # (the joins a writer puts after a branch that returns: `rows = rows`, never run; a hessian's generic
    # source carried hundreds of them)
    out = simp("""
        def f(x, flag):
            if flag:
                y = np.sin(x)
                return y
                y = y  # a join
                x = x
            else:
                raise ValueError("no")
                z = 2
            for i in range(3):
                if i: return x; w = 2
            return x * 2.0
            q = 1
    """)
    assert out.strip() == textwrap.dedent("""
        def f(x, flag):
            if flag:
                y = np.sin(x)
                return y
            else:
                raise ValueError("no")
            for i in range(3):
                if i: return x; w = 2
            return x * 2.0
    """).strip()


def test_keeps_impure_calls_reassigned_names_and_loops():
    src = """
        def f(x, _tape):
            y = helper_fwd(x, _tape)
            z = x
            z = z * 2
            for i in range(3):
                t = x
                _tape.append(t)
            w = x
            return y, z
    """
    out = simp(src)
    assert "y = helper_fwd(x, _tape)" in out  # may push on the tape: kept though y's value is unused here
    assert "z = x" in out and "z = z * 2" in out  # z is bound twice: not a copy to propagate
    assert "t = x" in out  # inside a loop: untouched
    assert "w = x" not in out  # dead


def test_dead_rebindings_dropped():
    """A name bound again and again at the top level (a JVP's primal output ``x_bar`` its tangent-only form drops):
    each binding nothing reads before the next is dead code; a read in between, a binding in a block or a tuple
    target, or a nested function keeps them."""
    out = simplify_source(textwrap.dedent("""
        def f(x, x_dot):
            x_bar = zeros_like(x)
            x_bar_dot = zeros_like(x)
            x_bar = index_add(x_bar, 0, x)
            x_bar_dot = index_add(x_bar_dot, 0, x_dot)
            x_bar = index_add(x_bar, 1, x)
            return x_bar_dot
    """), {"zeros_like", "index_add"})
    assert "x_bar =" not in out and out.count("x_bar_dot = index_add") == 1
    kept = simp("""
        def f(x):
            a = x * 2
            b = a + 1
            a = a * 3
            for i in range(2):
                a = a + i
            c, a = a, x
            return b
    """)
    assert "a = x * 2" in kept and "a = a * 3" in kept  # (a bound in a loop and by a tuple: not straight-line)
    closure = simp("""
        def f(x):
            a = x * 2
            g = lambda: a
            a = x * 3
            return g()
    """)
    assert "a = x * 2" in closure and "a = x * 3" in closure
    read = simp("""
        def f(x):
            a = x * 2
            b = np.sin(a)
            a = x * 3
            return b + a
    """)
    assert "a = x * 2" in read and "a = x * 3" in read


def test_a_tangent_alike_its_primal_and_np_s_slices() -> None:
    """``alike``: a tangent parameter of its primal's shape (and dtype whenever both are floating point), as a
    Jacobian's basis is; ``x_dot[getitem]`` of a name bound to ``np.s_[1:]`` is ``x_dot[1:]``: the tangent's
    ``broadcast_like`` to the result's shape is the tangent itself. Without ``alike``, kept."""
    src = textwrap.dedent("""
        def f(x, x_dot):
            getitem = np.s_[1:]
            a = x_dot[getitem]
            b = x_dot[np.s_[:-1]]
            sub = x[1:] - x[:-1] ** 2
            return broadcast_like(a, sub) + broadcast_like(b, sub)
    """)
    pure = {"broadcast_like"}
    out = simplify_source(src, pure, {"f": frozenset({"x", "x_dot"})}, alike={"f": (("x_dot", "x"),)})
    assert "broadcast_like" not in out
    assert out.count("broadcast_like(") == 0
    kept = simplify_source(src, pure, {"f": frozenset({"x", "x_dot"})})
    assert kept.count("broadcast_like(") == 2
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal(6), rng.standard_normal(6)
    from srcjax.adjoint import broadcast_like
    for text in (out, kept):
        ns: dict[str, Any] = {"np": np, "broadcast_like": broadcast_like}
        exec(text, ns)
        np.testing.assert_array_equal(ns["f"](x, t), t[1:] + t[:-1])


def test_no_array_folding():
    out = simp("""
        def f(x):
            zero = 0 * x
            return zero
    """)
    assert "0 * x" in out  # 0 * x has x's shape: never folded to a scalar


def test_common_subexpressions():
    out = simp("""
        def f(x, y):
            a = np.tanh(x) * y
            b = np.tanh(x) * y
            c = a + b
            return c
    """)
    assert out.count("np.tanh(x) * y") == 1
    assert "c = a + a" in out


def test_an_in_place_check_is_kept_though_its_value_is_dead():
    """(session 44) ``in_place(r, add, alias="t[0]")`` refuses while specializing where NumPy's change reaches ``t``
    (frontend/item_views.py): big25's dead rebindings dropped ``r = in_place(...)`` (r unread after it) from grad's
    and vmap's source, which then ran with the old ``m`` where NumPy's changed (tests/test_item_views.py's
    row_of_a_view_then_add under vmap: silently the old value). ``in_place(y, new)`` refuses where ``new`` does not
    fit ``y`` (NumPy's error for ``y += np.ones((2, 3))`` of a 3-vector ``y``, which grad and vmap then ran): dead
    only where ``new`` provably has ``y``'s shape and dtype."""
    text = """
        def f(m):
            t = m[1:]
            r = t[0]
            add = r + 1.0
            r = in_place(r, add, alias="t[0]")
            y = np.sin(m)
            y = in_place(y, np.ones((2, 3)))
            z = np.sin(m)
            z = in_place(z, z * 2.0)
            return m * 1.0
    """
    out = simplify_source(textwrap.dedent(text), {"in_place"})
    assert 'r = in_place(r, add, alias="t[0]")' in out and "y = in_place(y, np.ones((2, 3)))" in out, out
    assert "z =" not in out, out


def test_no_cse_across_rebinding():
    out = simp("""
        def f(x):
            a = x * 2
            x = x + 1
            b = x * 2
            return a + b
    """)
    assert out.count("x * 2") == 2  # x is rebound: the two x * 2 differ


def test_no_cse_of_mutable_containers():
    out = simp("""
        def f(x):
            _tape = []
            _tape_dot = []
            _tape.append(x)
            _tape_dot.append(x)
            return x
    """)
    assert "_tape_dot = []" in out and "_tape_dot.append(x)" in out


def test_an_empty_list_nothing_reads_is_dead_and_never_merged():
    """A VJP's ``_tape = []`` that nothing pushes on (a straight-line function) is dropped: it made every
    normalized VJP and its batched copy walk for list changes; an empty list read anywhere is kept, and two are
    never one list."""
    out = simp("""
        def f_vjp(x, out_bar):
            _tape = []
            b = out_bar * x
            return b
    """)
    assert out.strip() == textwrap.dedent("""
        def f_vjp(x, out_bar):
            b = out_bar * x
            return b
    """).strip()
    kept = simp("""
        def f(x):
            a = []
            b = []
            c = []
            a.append(x)
            def g():
                return c
            for k in range(2):
                b.append(k)
            return a, b, g
    """)
    assert "a = []" in kept and "b = []" in kept and "c = []" in kept
    dead_again = simp("""
        def f(x):
            a = []
            a = [x]
            return a
    """)
    assert "a = []" not in dead_again and "a = [x]" in dead_again
    ns: dict = {}
    exec(kept, ns)
    a, b, g = ns["f"](1.0)
    assert a == [1.0] and b == [0, 1] and g() == [] and a is not b


# -- folding proven by the shape/dtype analysis ------------------------------------------------------

ADJ = {"unbroadcast", "broadcast_like", "ones_like", "zeros_like", "expand_reduced", "reduced_size"}


def simp_all(text: str, floats: set[str] | None = None) -> str:
    """Simplified with every adjoint helper pure; ``floats``: parameters of ``f`` known floating point."""
    return simplify_source(textwrap.dedent(text), ADJ, {"f": frozenset(floats or ())})


def test_unbroadcast_of_same_shape_is_dropped():
    out = simp_all("""
        def f(x, g):
            t = np.tanh(x)
            a = t * 2.0 + x
            a_bar = unbroadcast(g * a, a)
            t_bar = unbroadcast(a_bar * 2.0, t)
            return t_bar
    """)
    assert "unbroadcast(g * a, a)" in out  # g may broadcast a: kept
    assert "t_bar = a_bar * 2.0" in out  # a_bar has a's shape, which is t's (x and t have x's shape)


def test_unbroadcast_kept_where_broadcasting_may_happen():
    out = simp_all("""
        def f(p, y, g):
            sub = p - y
            sub_bar = unbroadcast(g, sub)
            p_bar = unbroadcast(sub_bar, p)
            y_bar = unbroadcast(-sub_bar, y)
            return p_bar, y_bar
    """)
    assert "unbroadcast(sub_bar, p)" in out and "unbroadcast(-sub_bar, y)" in out  # p (3,), y (2, 3)
    assert "unbroadcast(g, sub)" in out


def test_shapes_are_read_from_a_value_that_stays_alive():
    """A helper that reads only an argument's shape and dtype reads a value of provably the same
    shape and dtype that is read for its value anyway, so the temporary can be folded (#20)."""
    out = simp_all("""
        def f(x, g):
            t = np.tanh(x)
            p = t ** 2
            s = np.sum(p)
            p_bar = expand_reduced(g, p, None, False) * ones_like(p)
            t_bar = 2 * p_bar * t
            return s, t_bar
    """, {"x"})
    assert "expand_reduced(g, t, None, False) * ones_like(t)" in out
    out = simp_all("""
        def f(x, g):
            t = np.tanh(x)
            p = t ** 2
            s = np.sum(p)
            p_bar = expand_reduced(g, p, None, False)
            return s, p_bar
    """, {"x"})
    assert "expand_reduced(g, p, None, False)" in out  # t read once: moving the read there keeps both alive
    out = simp_all("""
        def f(x, g):
            c = x * 2.0
            s = np.sum(c)
            c_bar = unbroadcast(g, c) / reduced_size(c, None)
            return s, c_bar * x
    """)
    # an integer x: c is float64 and x is not, so only the shape may be read from x
    assert "unbroadcast(g, c) / reduced_size(x, None)" in out


def test_scalar_seed_and_reductions():
    out = simp_all("""
        def f(x):
            t = np.tanh(x)
            s = np.sum(t)
            s_bar = ones_like(s)
            t_bar = expand_reduced(s_bar, t, None, False)
            x_bar = unbroadcast(t_bar * (1 - t * t), x)
            return x_bar
    """)
    # s has t's dtype (a strong float: np.tanh's result), so broadcasting its ones is ones_like(t),
    # and ones_like(t) * (1 - t * t) is 1 - t * t (t's shape and dtype), which has x's shape
    assert "x_bar = 1 - t * t" in out and "s_bar" not in out and "t_bar" not in out


def test_keepdims_reduction_is_absorbed():
    out = simp_all("""
        def f(a, g):
            m = np.max(a, axis=1, keepdims=True)
            d = a - m
            e = np.exp(d)
            d_bar = unbroadcast(g * e, d)
            a_bar = unbroadcast(d_bar, a)
            m_bar = unbroadcast(-d_bar, m)
            return a_bar, m_bar
    """, floats={"a", "g"})  # (d_bar has d's dtype, which is a's: a floating a and g, as derivative code has)
    assert "a_bar = d_bar" not in out  # d_bar is a copy: propagated
    assert "return d_bar, m_bar" in out
    assert "unbroadcast(-d_bar, m)" in out  # m has 1s where a does not: must be summed
    assert "unbroadcast(g * e, d)" in out


def test_slices_of_equal_length():
    out = simp_all("""
        def f(x, g):
            a = x[1:]
            b = x[:-1]
            c = x[2:]
            s = a - b
            s_bar = g * 1.0
            b_bar = unbroadcast(s * 0.5, b)
            c_bar = unbroadcast(s * 0.5, c)
            return b_bar, c_bar
    """)
    assert "b_bar = s * 0.5" in out  # x[1:] and x[:-1] have the same length (and dtype), always
    assert "unbroadcast(s * 0.5, c)" in out  # x[2:] is shorter


def test_ones_and_zeros_identities_need_the_same_dtype():
    out = simp_all("""
        def f(x, w):
            t = np.tanh(x)
            s = np.sum(t)
            o = ones_like(s)
            a = o * t
            z = zeros_like(t)
            b = t + z
            c = z - t
            mo = -o
            d = t * mo
            q = np.sum(w)
            e = ones_like(q) * t
            k = o * w
            return a, b, c, d, e, k
    """)
    assert "return t, t, c, c, e, k" in out and "c = -t" in out
    assert "e = ones_like(q) * t" in out  # q's dtype is w's (unknown): float64 ones may promote a float32 t
    assert "k = o * w" in out  # w may be an integer array or a Python float: the product is not w


def test_weak_python_scalars_are_not_strong():
    out = simp_all("""
        def f(x):
            h = x * 2.0
            o = ones_like(h)
            a = o * h
            return a
    """)
    assert "a = o * h" in out  # h may be a Python float (weak); o * h is a strong float64


def test_expand_reduced_of_ones_keeps_dtypes():
    out = simp_all("""
        def f(x):
            m = np.mean(x)
            m_bar = ones_like(m)
            x_bar = expand_reduced(m_bar, x, None, False)
            return x_bar
    """)
    assert "expand_reduced(m_bar, x, None, False)" in out  # x may be an int array: mean is float64, x not


def test_minus_ones_seed():
    out = simp_all("""
        def f(x):
            t = np.tanh(x)
            s = np.mean(t)
            n = -s
            n_bar = ones_like(n)
            s_bar = -n_bar
            t_bar = expand_reduced(s_bar, t, None, False) / reduced_size(t, None)
            return t_bar
    """)
    assert "t_bar = -ones_like(t) / reduced_size(x, None)" in out  # (a size: read from the parameter)


def test_parentheses_of_folded_expressions():
    out = simp_all("""
        def f(x, g, h):
            t = np.tanh(x)
            a = (unbroadcast(g, h)) + (unbroadcast(t * 2, t))
            b = unbroadcast(t + 1.0, t) * 3
            c = unbroadcast(t + 1.0, t) ** 2
            return a, b, c
    """)
    assert "a = (unbroadcast(g, h)) + t * 2" in out
    assert "b = (t + 1.0) * 3" in out
    assert "c = (t + 1.0) ** 2" in out


def test_no_folding_inside_loops_and_after_calls():
    out = simp_all("""
        def f(x, _tape):
            t = np.tanh(x)
            z = zeros_like(t)
            helper_fwd(z, _tape)
            a = t + z
            for i in range(3):
                b = unbroadcast(t, t)
                t = t * 2
            return a, b
    """)
    assert "a = t + z" in out  # helper_fwd may have written into z
    assert "b = unbroadcast(t, t)" in out  # loops are left alone


def test_unicode_and_multiline_statements():
    out = simp("""
        def f(x):
            a = x
            s = 'é'
            b = np.sum(a,
                       axis=0)
            return b, s
    """)
    assert "b = np.sum(x,\n" in out and "return b, s" in out
    out = simp_all("""
        def f(x):
            t = np.tanh(x)
            a = unbroadcast(t +
                            1.0, t)
            return a
    """)
    assert "a = (t +\n" in out


# -- generated derivatives -----------------------------------------------------------------------------

def _loss(w, x, y):
    p = np.tanh(x @ w)
    return np.mean((p - y) ** 2)


def test_loss_gradient_reads_like_hand_written():
    import srcjax

    src = srcjax.source(srcjax.grad(_loss), form="anf")  # (as simplified; readable.py folds it further)
    assert "sub_bar = unbroadcast(" not in src and "sub_bar = pow_1_bar * 2 * sub" in src
    assert "unbroadcast(sub_bar, p)" in src  # y may broadcast p
    assert "expand_reduced" not in src


_RAW: dict[str, str] = {}
_FLOATS: dict[str, Any] = {}


def _sources(fn: Any, argnums: tuple[int, ...]) -> tuple[Any, Any]:
    """The generated gradient of ``fn`` before and after simplification, as NumPy functions."""
    import srcjax
    import srcjax.autodiff as ad_mod

    key = fn.__name__
    if key not in _RAW:
        seen: list[str] = []
        orig = ad_mod.simplify_source

        def spy(text: str, pure: set[str], floats: Any = None, keep: frozenset[str] = frozenset(),
                alike: Any = None) -> str:
            seen.append(text)
            floats_seen.append((floats, keep))
            return orig(text, pure, floats, keep, alike)

        floats_seen: list[Any] = []
        ad_mod.simplify_source = spy
        try:
            ad_mod.derivative_function(fn, "grad", argnums)
        finally:
            ad_mod.simplify_source = orig
        _RAW[key] = seen[-1]
        _FLOATS[key] = floats_seen[-1]
    raw = _RAW[key]
    name = f"{fn.__name__}_grad"
    pure = set(srcjax.transforms.ad.ADJOINT_IMPORTS)
    fns = []
    for text in (raw, simplify_source(raw, pure, *_FLOATS[key])):
        ns: dict[str, Any] = {}
        exec(compile(text, f"<{name}>", "exec"), ns)
        fns.append(ns[name])
    return fns[0], fns[1]


def _bce(p, y):
    return np.mean((np.tanh(p) - y) ** 2)


def _gated(x, c):
    y = x * c + np.sin(c) * 3.0
    z = np.where(x > 0, y, 0.0)
    return np.sum(z * z)


def _softmax_dot(a, b):
    m = np.max(a, axis=-1, keepdims=True)
    return np.sum(np.exp(a - m) * b) + np.mean(a * 2.0)


def _sigmoid_xent(z, y):
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.sum(y * np.log(p) + (1.0 - y) * np.log(1.0 - p)) + np.mean((z - y) ** 2)


@st.composite
def broadcast_pair(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast together (dropped leading axes, axes of length 1); the first 1-D or more."""
    base = draw(st.lists(st.sampled_from([2, 3]), min_size=1, max_size=3))

    def derive(lo: int) -> tuple[int, ...]:
        lead = draw(st.integers(0, len(base) - lo))
        return tuple(1 if draw(st.booleans()) else d for d in base[lead:])

    return derive(1), derive(0)


@settings(max_examples=40 * _SCALE, deadline=None, derandomize=True)
@given(broadcast_pair(), st.sampled_from(["float32", "float64"]), st.integers(0, 3), st.booleans(),
       st.integers(0, 2 ** 31 - 1), st.sampled_from(["float32", "float64"]))
def test_simplified_equals_unsimplified(shapes, dtype, which, swap, seed, dtype2):
    """Same values, shapes and dtypes on random broadcasting shapes, float32 and float64, mixed too
    (the gradients' casts back to each argument's dtype are never folded away)."""
    fn = (_bce, _gated, _softmax_dot, _sigmoid_xent)[which]
    s1, s2 = shapes[::-1] if swap and which != 2 else shapes
    rng = np.random.default_rng(seed)
    args = (rng.standard_normal(s1).astype(dtype), rng.standard_normal(s2).astype(dtype2))
    raw, simplified = _sources(fn, (0, 1))
    expected = raw(*args)
    actual = simplified(*args)
    for e, a, arg in zip(expected, actual, args):
        assert np.shape(a) == np.shape(e) and np.result_type(a) == np.result_type(e) == arg.dtype
        np.testing.assert_allclose(a, e, rtol=1e-6 if dtype == "float32" else 1e-12)


def test_f_strings_and_nested_scopes():
    out = simp("""
        def f(x):
            a = x
            b = f"{a}"
            g = lambda b: a + b
            return b, g
    """)
    assert "a = x" not in out and "lambda b: x + b" in out  # the lambda's own b is not a
    ns: dict[str, Any] = {}
    exec(out, ns)
    assert ns["f"](2)[0] == "2" and ns["f"](2)[1](1) == 3


# -- constant cotangents: issue 20 (the generic print of a gradient) ------------------------------------


def test_a_constant_cotangent_cast_like_a_floating_value_is_its_ones_like():
    """``unbroadcast(ones, x)`` with ``ones`` of ``x``'s shape, both floating point, is
    ``ones_like(x)`` (the helper's cast of 1 is exact, ``ones_like`` has ``x``'s dtype); the same for
    minus ones, zeros, and ``expand_reduced``. Not where ``x`` may be an integer, nor where ``x``
    may be broadcast."""
    out = simp_all("""
        def f(z, y):
            m = y * np.log(z)
            s = np.sum(m + z)
            a = m + z
            a_bar = -ones_like(a)
            m_bar = unbroadcast(a_bar, m)
            z_bar = unbroadcast(a_bar, z)
            y_bar = unbroadcast(a_bar, y)
            t = np.log(z)
            q = np.sum(t)
            q_bar = expand_reduced(ones_like(q), t, None, False)
            k = y * 2
            k_bar = expand_reduced(ones_like(q), k, None, False)
            return m_bar, z_bar, y_bar, k_bar, q_bar
    """, {"z"})
    assert "m_bar = -ones_like(m)" in out  # m: y * a float, floating (y float, int, bool) or complex
    assert "y_bar = unbroadcast(a_bar, y)" in out  # y may be broadcast against z
    assert "z_bar = unbroadcast(a_bar, z)" in out  # z may be broadcast against y
    assert "q_bar = ones_like(t)" in out
    assert "k_bar = expand_reduced(ones_like(q), k, None, False)" in out  # k may be an integer


def test_minus_zeros_are_not_written_as_zeros_like():
    """``-zeros_like(a)`` is -0.0: ``unbroadcast`` of it is not ``zeros_like(x)`` (+0.0; ``1 / g``
    would tell them apart), though ones and minus ones are written as what they are."""
    out = simp_all("""
        def f(z, y):
            m = y * np.log(z)
            a = m + z
            a_bar = -zeros_like(a)
            m_bar = unbroadcast(a_bar, m)
            return m_bar
    """, {"z"})
    assert "m_bar = unbroadcast(a_bar, m)" in out


def test_ones_times_a_number_times_a_value_is_the_number_times_the_value():
    out = simp_all("""
        def f(x, w):
            t = np.tanh(x)
            o = ones_like(t)
            a = o * 2 * t
            b = o * 2.5 * w
            return a, b
    """)
    assert "a = 2 * t" in out  # o * 2 is 2 in t's dtype, as in 2 * t
    assert "b = o * 2.5 * w" in out  # w may be an integer or a Python float


def test_a_number_times_a_full_reductions_seed_is_the_number_times_ones_like():
    """``expand_reduced(k * ones, w, None, False)`` for 0-d ``ones`` of ``w``'s family (``ones_like``
    of ``0.1 * np.sum(w ** 2)``): ``k * ones_like(w)`` (no cast: the same dtype whenever both are
    floating point), so the regularizer folds into the loss. Not for another family."""
    out = simp_all("""
        def f(w, y):
            s = np.sum(w ** 2)
            m = 0.1 * s
            m_bar = ones_like(m)
            s_bar = 0.1 * m_bar
            w_bar = expand_reduced(s_bar, w, None, False)
            q = np.sum(y * w)
            q_bar = 0.5 * ones_like(q)
            y_bar = expand_reduced(q_bar, y, None, False)
            return w_bar, y_bar
    """, {"w"})
    assert "w_bar = 0.1 * ones_like(w)" in out and "m_bar" not in out
    assert "y_bar = expand_reduced(q_bar, y, None, False)" in out  # q may be float64 for a float32 y


def _constants(z, y):
    m = y * np.log(z)
    return -np.sum(m + (1.0 - y) * np.log(1.0 - z)) + 0.1 * np.sum(z ** 2) + np.sum(np.tanh(z) ** 2)


def test_constant_cotangent_rewrites_are_exact() -> None:
    """The rewrites above on a gradient, bit for bit the unsimplified program's numbers, shapes and
    dtypes: float16 to float64 ``z``, a Python float ``z``, an integer or boolean ``y``, ``y``
    broadcast against ``z`` and ``z`` against ``y``."""
    raw, simplified = _sources(_constants, (0,))
    rng = np.random.default_rng(0)
    cases: list[tuple[Any, Any]] = [(0.25, 3), (0.5, np.arange(3)), (np.float32(0.3), True)]
    for zd in (np.float16, np.float32, np.float64):
        for yd in (np.float32, np.float64, np.int8, np.int64, np.bool_):
            for zs, ys in (((4,), (4,)), ((4,), (2, 4)), ((2, 4), (4,)), ((1, 4), (3, 1)), ((), (3,))):
                z = rng.uniform(0.1, 0.9, zs).astype(zd)
                y = (rng.uniform(-2, 2, ys) > 0).astype(yd) if yd is np.bool_ else rng.uniform(-2, 2, ys).astype(yd)
                cases.append((z, y))
    with np.errstate(all="ignore"):
        for z, y in cases:
            (want,), (got,) = raw(z, y), simplified(z, y)
            assert np.shape(got) == np.shape(want) and np.result_type(got) == np.result_type(want), (z, y)
            np.testing.assert_array_equal(got, want)
    text = simplify_source(_RAW["_constants"], set(ADJ), *_FLOATS["_constants"])
    assert "-ones_like(m)" in text and "0.1 * ones_like(z)" in text, text


def _binds_recursive(fdef: ast.FunctionDef) -> Counter[str]:
    """simplify_syntax._binds as first written (a recursive visit): the reference for the stack walk."""
    from srcjax.transforms.simplify_syntax import _SCOPES

    out: Counter[str] = Counter()
    a = fdef.args
    for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []),
              *([a.kwarg] if a.kwarg else [])]:
        out[p.arg] += 1

    def visit(node: ast.AST, w: int) -> None:
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                out[node.id] += w
            return
        if isinstance(node, ast.arg):
            out[node.arg] += 2
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] += 2
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for n in node.names:
                out[n] += 2
        elif isinstance(node, ast.alias):
            out[(node.asname or node.name).split(".")[0]] += 2
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out[node.name] += 2
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            out[node.name] += 2
        elif isinstance(node, ast.MatchMapping) and node.rest:
            out[node.rest] += 2
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, *_SCOPES)):
            w = 2
        for child in ast.iter_child_nodes(node):
            visit(child, w)

    for s in fdef.body:
        visit(s, 1)
    return out


def test_binds_counts_as_the_recursive_visit():
    from pathlib import Path

    from srcjax.transforms.simplify_syntax import _binds

    every = (
        "def f(x, *a, k=1, **kw):\n    global g\n    import os.path as p, numpy\n    y = x\n    y += 1\n"
        "    (u, [v, *w]) = x\n    for i in range(3):\n        z = i\n    while y:\n        y = y - 1\n"
        "    q = [t for t in x if (s := t)]\n    h = lambda m, n=2: m\n    def inner(c):\n        nonlocal y\n"
        "    class K:\n        attr = 1\n    try:\n        pass\n    except ValueError as err:\n        pass\n"
        "    match x:\n        case [1, *rest]:\n            pass\n        case {'a': aa, **more}:\n            pass\n"
        "        case bb:\n            pass\n    with open(p) as fh:\n        x[0] = fh\n    return y\n")
    texts = [every] + [p.read_text() for p in sorted(Path(__file__).parent.joinpath("golden").glob("*grad.txt"))[:40]]
    seen = 0
    for text in texts:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for fdef in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            assert _binds(fdef) == _binds_recursive(fdef), ast.unparse(fdef)
            seen += 1
    assert seen > 40
