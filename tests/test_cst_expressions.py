"""``frontend.cst_expressions.parse_expression`` and ``frontend.cst_functions.parse_function_module``: the tree
libcst's parser builds, node type for node type and field for field (whitespace, tuples and sentinels included),
for every rule template of the primitive table, a corpus of expressions srcjax writes (those the derivative and
batching writers parsed in test_golden, test_ad, test_vmap and test_print, one per form) and of the straight-line
functions it writes and reads back; forms they do not build go to libcst."""

from __future__ import annotations

import ast
from typing import Any

import libcst as cst
import pytest

import srcjax  # noqa: F401  (registers the primitive table)
from srcjax.frontend.cst_expressions import ExpressionBuilder, assign, line, parse_expression
from srcjax.frontend.cst_functions import _function, function_module, parse_function_module  # (_function: built)
from srcjax.frontend.library_cache import _identical  # (the field-for-field comparison test_first_call uses)
from srcjax.frontend.names import names_in
from srcjax.frontend.read import _positions, parse_module  # (_positions: libcst's code generation's positions)
from srcjax.frontend.resolve import local_names
from srcjax.primitives.registry import PRIMITIVES

CORPUS = [
    '0',
    'a',
    '()',
    '-1',
    '[]',
    '"b"',
    "'C'",
    '[t]',
    '(0,)',
    '(a,)',
    '1e-5',
    '(-1,)',
    'np.s_',
    '"ii->"',
    '(2, 1)',
    '(a, b)',
    '-x_dot',
    '[g, b]',
    '"ii->i"',
    '(2, -1)',
    '(k, -1)',
    'x_3, k_3',
    '(1, 0, 2)',
    '(a, b, c)',
    '(x.size,)',
    '[a, b, c]',
    'np.s_[1:]',
    'x_dot / x',
    '[mul, [x]]',
    'carry_2[0]',
    'np.s_[:-1]',
    'np.s_[::2]',
    'x.shape[1]',
    'x_dot[key]',
    'np.s_[:, 0]',
    'np.s_[::-1]',
    'range(0, 3)',
    'x1 * x2_dot',
    'x1 @ x2_dot',
    '(x.ndim - 1)',
    '[g, b, c, d]',
    'batch_len(x)',
    '"ij,jk,ik->i"',
    '_tape_dot[-1]',
    'np.s_[..., 0]',
    'np.s_[:, -2:]',
    'x_dot * (out)',
    'np.s_[:, None]',
    'np.s_[::-1, 2]',
    'np.s_[None, :]',
    '(add, (b_bar,))',
    '(p_bar, q_bar,)',
    'np.s_[::-1, :2]',
    'np.shape(a)[1:]',
    '(np.ndim(a) - 1)',
    'np.s_[..., 0, :]',
    'np.s_[..., None]',
    'np.s_[::2, 1::3]',
    'y_3, __3, stop_3',
    'np.s_[:, None, :]',
    '-out * x2_dot / x2',
    'np.s_[-3:-1, ::-2]',
    'abs_share(x_dot, x)',
    'np.s_[..., None, :]',
    'np.s_[None, ..., 1]',
    'x_dot * (0.5 / out)',
    'x_dot * (np.cos(x))',
    'x_dot * (-np.sin(x))',
    '{"h": h, "s": sum_1}',
    '(x.size // batch_size)',
    '(x_bar, y_bar, z_bar,)',
    '[zeros_like(g), b_dot]',
    'np.flip(out_bar, axis)',
    'x_dot * (1 - out * out)',
    '(var, std, var_1, std_1)',
    'atleast_dots(arys_dot, 1)',
    'unbroadcast(-out_bar, x2)',
    '(np.size(a) // batch_size)',
    'tile_bar(out_bar, A, reps)',
    'unbroadcast(out_bar[key], g)',
    '(slice(None, None, None), k,)',
    '[zeros_like(g), b_dot, c_dot]',
    'unbroadcast(out_bar * x2, x1)',
    'unbroadcast(out_bar / x2, x1)',
    'np.reshape(out_bar, np.shape(a))',
    'np.swapaxes(a_dot, axis1, axis2)',
    '(sum_1, {"h": h, "n": getitem_1})',
    'v1_before_1, v1_2, gt_1, stop_1_2',
    'pack_like(d["u"], (p_bar, q_bar,))',
    '(add, mul, floordiv, mod, neg, div)',
    '(pow_1, pow_2, pow_3, power, pow_4)',
    '[zeros_like(g), b_dot, c_dot, d_dot]',
    'index_add(zeros_like(z), key, g_dot)',
    'unbroadcast(-out_bar * out / x2, x2)',
    '((stack, stack_1, items_2), (x_bar,))',
    '[a_dot, zeros_like(b), zeros_like(c)]',
    'repeat_bar(out_bar, a, repeats, axis)',
    'unbroadcast(-out_bar * out * out, x2)',
    '(slice(None, None, None), np.newaxis,)',
    '(y_bar, (p_bar_1, (q_bar_1, s_bar_1)))',
    '({"h": h, "s": sum_1}, (getitem, mul))',
    '(w1_bar, unbroadcast_2, w2_bar, b2_bar,)',
    "join_bars(out_bar, arrays, axis, 'stack')",
    'var_bar(out_bar, a, axis, ddof, keepdims)',
    'unbroadcast(max_share(out_bar, x1, x2), x1)',
    'np.stack(arrays_dot, axis=axis, dtype=dtype)',
    '(log, log2, log10, sqrt, exp2, expm1, arctan2)',
    'std_bar(out_bar, a, out, axis, ddof, keepdims)',
    '((argmax_1, argmin, argmax_2, argmax), (x_bar,))',
    '((einsum_term_bar_1,), (einsum_term_bar_1_dot,))',
    'unbroadcast(np.where(condition, 0.0, out_bar), y)',
    'unbroadcast(np.where(condition, out_bar, 0.0), x)',
    'x2_dot * np.log(np.where(x1 == 0, 1.0, x1)) * out',
    '(slice(None, None, None), slice(None, rows, None),)',
    'x1_dot * x2 * np.where(x2 == 0, 1.0, x1) ** (x2 - 1)',
    '(neg_3, y_before_1, batch_broadcast(y_2, batch_size))',
    'np.transpose(out_bar, inverse_perm(np.ndim(a), axes))',
    'unbroadcast(clip_share(out_bar, a, a_min, a_max, 0), a)',
    'np.sum(a_dot, axis=axis, dtype=dtype, keepdims=keepdims)',
    'a_1_3, b_1_3, tanh_1_3, tanh_1_dot_2, y_2, y_dot_2, a_2_3',
    '(v1_before_2, v1_3, batch_broadcast(gt_2, batch_size), stop_1_3)',
    'expand_reduced(out_bar, a, axis, keepdims) / reduced_size(a, axis)',
    '(slice(None, None, None), np.newaxis, slice(None, None, None), -1,)',
    'unbroadcast(out_bar * x2 * np.where(x2 == 0, 1.0, x1) ** (x2 - 1), x1)',
    'expand_reduced(out_bar, a, axis, keepdims) * prod_others(a, axis, initial)',
    'unbroadcast(np.where(winning_writes(x, key), tree_get(out_bar, key), 0.0), value)',
    '((einsum_term_bar_2, einsum_term_bar_3), (einsum_term_bar_2_dot, einsum_term_bar_3_dot))',
    'np.sum(a_dot * prod_others(a, axis, initial), axis=axis, dtype=dtype, keepdims=keepdims)',
    'div_9_2, div_dot_1_2, add_4_2, add_dot_1_2, x_before_1_2, x_before_dot_1_2, x_2_3, x_dot_2_3, it_2_3',
]

FORMS = [  # each form the builder reads, and its neighbours that go to libcst
    "x[1:] - x[:-1] ** 2", "100.0 * (a - b) ** 2", "np.sum(out_bar * x, axis=0)", "a and b and c", "a or b and c",
    "not a", "not (a)", "a if b else c", "a if b else c if d else e", "-x", "- x", "~x", "+x", "x is None",
    "x is not None", "a not in b", "a in b", "a < b < c", "a<b", "f()", "f(*a)", "f(a, *b, c=1)", "x[::2]",
    "x[1:2:3]", "x[:, None]", "x[(a, b)]", "x[(a), b]", "x[a, (b)]", "((a, b))", "(a,)", "()", "[]", "[a, b]",
    "[a]", "a, b", "a,", "(a)", "((a))", "( a )", "x[ 1]", "f (a)", "f( a)", "1e-3", "1.", ".5", "0x1f", "1j",
    "1_000", "True", "None", "...", "x.T", "x . T", "np.linalg.norm(x)", "(x).T", "f(a)(b)", "x[1][2]", "a ** -b",
    "a ** b ** c", "(a ** b) ** c", "-a ** b", "(-a) ** b", "a @ b", "a // b % c", "a << b >> c", "a | b & c ^ d",
    "lambda: 1", "f(a,)", "f(a, )", "f(a ,b)", "f(a )", "[a, ]", "x[a,]", "x[a ]", "f(**k)", "f(x for x in y)",
    "{a: b}", "{a}", "'s'", '"ii->i"', "'a' 'b'", "'(a'", "f'{a}'", "b'x'", "np.float64(2.0)", "x[..., 0]",
    "x[None]", "x[1 : 2]", "tuple(a for a in b)", "a.b.c(d)[e].f", "f(a=(b, c))", "f(a = b)", "[*a, b]",
    "(*a, b)", "a if(b)else c", "x  +  y", "(a)(b)", "not(a)", "a is not(b)", "a not in(b)", "x[-1]", "-(-x)",
    "a # comment", "a\\\n+ b", "ä + b", "a\t+ b", "(a\n+ b)", "a +", "",
]


def _same(text: str) -> None:
    try:
        ref = cst.parse_expression(text)
    except Exception as e:  # libcst refuses it: so does parse_expression, with libcst's error
        with pytest.raises(type(e)):
            parse_expression(text)
        return
    assert _identical(parse_expression(text), ref), text


@pytest.mark.parametrize("text", CORPUS + FORMS)
def test_same_tree_as_libcst(text: str) -> None:
    _same(text)


def test_rule_templates() -> None:
    templates = {t for p in PRIMITIVES.values() for t in (*p.jvp.values(), *p.vjp.values(), p.jvp_joint) if t}
    assert len(templates) > 100
    for t in sorted(templates):
        _same(t)


def test_builds_what_srcjax_writes() -> None:
    """The builder, not libcst, reads the corpus (else it would be no faster): all but the strings with
    brackets in them and dict displays."""
    built = 0
    for text in CORPUS:
        b = ExpressionBuilder(text)
        try:
            b.expr(ast.parse(text, mode="eval").body)
            built += b.i == len(text)
        except Exception:  # noqa: BLE001 - a form left to libcst
            pass
    assert built >= len(CORPUS) - 12


def test_new_tree_each_call() -> None:
    assert parse_expression("a + b") is not parse_expression("a + b")


def _nodes(node: cst.CSTNode) -> list[int]:
    out: list[int] = []
    stack: list[cst.CSTNode] = [node]
    while stack:
        n = stack.pop()
        out.append(id(n))
        stack.extend(n.children)
    return out


def test_lines_and_assignments_made_as_libcst_makes_them() -> None:
    """The normalizer's lines and assignments (``line``, ``assign``): the nodes libcst's constructors make, field for
    field (lists as lists), fresh nodes each call (libcst's defaults are never shared: metadata is keyed by node)."""
    target, value = cst.Name("y"), parse_expression("np.sin(x) * 2")
    made, ref = line(assign(target, value)), cst.SimpleStatementLine(
        body=[cst.Assign(targets=[cst.AssignTarget(target=target)], value=value)])
    assert _identical(made, ref)
    assert cst.Module(body=[made]).code == "y = np.sin(x) * 2\n"
    ret = cst.Return(value=target)
    assert _identical(line(ret), cst.SimpleStatementLine(body=[ret]))
    again = line(assign(target, value))
    shared = {id(target), id(value)} | set(_nodes(value))
    assert not (set(_nodes(made)) & set(_nodes(again))) - shared


FUNCTIONS = [  # generated straight-line functions (test_golden, test_ad, test_vmap), one per mix of features
    (
        'def vec(x):\n'
        '    return x * 2.0\n'
    ),
    (
        'def _th(x):\n'
        '    return np.tanh(x)\n'
    ),
    (
        'def vec(x):\n'
        '    return np.tanh(x) * x[::-1]\n'
    ),
    (
        'def penalty(x):\n'
        '    return np.sum(gf(x) ** 2)\n'
    ),
    (
        'def lambda_free_sq(b):\n'
        '    return np.sum(b ** 3)\n'
    ),
    (
        'def dense(p, x):\n'
        '    return np.tanh(x @ p["w"] + p["b"])\n'
    ),
    (
        'def const_vmap(w):\n'
        '    return batch_out(3.0 * w, 0, 4, False)\n'
    ),
    (
        'def _joins_tuples(x):\n'
        '    t = (x, x) + (x,)\n'
        '    return t[0] * t[-1]\n'
    ),
    (
        'def _clipped_bwd(res, g):\n'
        '    x, = res\n'
        '    return (np.clip(g * np.cos(x), -0.1, 0.1),)\n'
    ),
    (
        'def one_hot(rng, n, k):\n'
        '    return np.eye(k, dtype=np.float32)[rng.integers(0, k, size=n)]\n'
    ),
    (
        'def broadcasting(a, b):\n'
        '    return np.sum(np.maximum(a[:, None] * b, 0.1) / (1.0 + b ** 2))\n'
    ),
    (
        'def scaler(x):\n'
        '    return (x * scale) ** power  # `scale` and `power` come from the closure\n'
    ),
    (
        'def _th_bwd(out_bar, _tape):\n'
        '    tanh, = _tape.pop()\n'
        '    return (out_bar * (1 - tanh * tanh),)\n'
    ),
    (
        'def int_leaf(p, x):\n'
        '    return np.sum(p["w"] * x) * p["scale"]  # scale: a Python int, no derivative\n'
    ),
    (
        'def spread(x):\n'
        '    return np.sum(np.sin(x * np.arange(3.0)))  # x is broadcast: its cotangent is summed back\n'
    ),
    (
        'def batch_axes_vmap(x):\n'
        '    range_1 = range(1, np.ndim(x) - 1)\n'
        '    tuple_1 = tuple(range_1)\n'
        '    return tuple_1\n'
    ),
    (
        'def steep_tanh_vmap_jvp(x, x_dot):\n'
        '    out, out_dot = _steep_tanh_jvp_vmap((x,), (x_dot,))\n'
        '    return out, out_dot\n'
    ),
    (
        'def unpack_pair(p, x):\n'
        '    w, b = p  # tuple unpacking of a container argument\n'
        '    return np.sum(np.sin(x @ w + b))\n'
    ),
    (
        'def dist_vmap(a, b):\n'
        '    pow_1 = (a - batch_align(b, a)) ** 2\n'
        '    return np.sqrt(np.sum(pow_1, axis=batch_axes(pow_1)))\n'
    ),
    (
        'def list_of_a_tuple_vmap(x, w):\n'
        '    t = (x, w)\n'
        '    items = list(t)\n'
        '    return batch_align(items[0], items[1]) * items[1]\n'
    ),
    (
        'def join_bars_vmap(g, arrays, axis, kind):\n'
        '    seq_pieces_1 = seq_pieces_vmap(g, arrays, axis, kind)\n'
        '    return seq_pieces_1\n'
    ),
    (
        'def _scaled_bwd(out_bar, _tape):\n'
        '    mul, scale, x = _tape.pop()\n'
        '    return (unbroadcast(unbroadcast(out_bar, mul) * scale, x),)\n'
    ),
    (
        'def batch_axes_vmap(x):\n'
        '    ndim = (np.ndim(x) - 1)\n'
        '    range_1 = range(1, ndim)\n'
        '    tuple_1 = tuple(range_1)\n'
        '    return tuple_1\n'
    ),
    (
        'def inline_pairwise_vmap(a, b):\n'
        '    d = dist_vmap_vmap(a, b)\n'
        '    pow_1 = d ** 2\n'
        '    return np.sum(pow_1, axis=batch_axes(pow_1))\n'
    ),
    (
        'def stack_of_mixed(x, w):\n'
        '    outs = []\n'
        '    outs.append(w)  # shared\n'
        '    outs.append(x * w)  # per example\n'
        '    return np.stack(outs)\n'
    ),
    (
        'def stack_of_mixed_vmap(x, w):\n'
        '    outs = []\n'
        '    outs.append(w)\n'
        '    outs.append(x * batch_align(w, x))\n'
        '    return np.stack(outs, axis=1)\n'
    ),
    (
        'def _clipped_bwd_vmap(res, g):\n'
        '    x, = res\n'
        '    cos = np.cos(x)\n'
        '    return (np.clip(batch_align_b(g, cos) * batch_align_b(cos, g), -0.1, 0.1),)\n'
    ),
    (
        'def _mismatched_jvp(x, w, x_dot):\n'
        '    tanh = np.tanh(w @ x)\n'
        '    return np.sum(tanh), np.sum(w @ x_dot * (1 - tanh * tanh), axis=None, keepdims=False)\n'
    ),
    (
        'def vec_jvp(x, x_dot):\n'
        '    tanh = np.tanh(x)\n'
        '    mul_dot = (x_dot * (1 - tanh * tanh) * x[::-1]) + (tanh * x_dot[np.s_[::-1]])\n'
        '    return tanh * x[::-1], mul_dot\n'
    ),
    (
        'def lambda_free_sq_grad_bwd(out_bar, _tape):\n'
        '    b, expand_reduced_1, mul, pow_2 = _tape.pop()\n'
        '    return (unbroadcast(2 * unbroadcast(mul * out_bar, pow_2) * b, b),)\n'
    ),
    (
        'def clipped_sin_vmap_bwd(out_bar, _tape):\n'
        '    clipped_sin_vmap_1_res, = _tape.pop()\n'
        '    x_bar, = _clipped_bwd_vmap(clipped_sin_vmap_1_res, out_bar)\n'
        '    return (x_bar,)\n'
    ),
    (
        'def named_per_example(a, b):\n'
        '    per_row = srcjax.vmap(dist, in_axes=(0, None))\n'
        '    g = srcjax.grad(lambda_free_sq)(b)\n'
        '    return np.sum(per_row(a, b)) + np.sum(g * b)\n'
    ),
    (
        'def layer_pair_vmap(p, x):\n'
        '    h = batch_matmul(x, p.w, True, False)\n'
        '    Layer_1 = Layer(h, 2.0 * p.b)\n'
        "    return tree_set(Layer_1, 'w', batch_moveaxis(Layer_1.w, 0, 1))\n"
    ),
    (
        'def vec_grad(x):\n'
        '    mul = 2.0 * x\n'
        "    assert np.ndim(mul) == 0 and is_float(mul), 'grad requires a real scalar output; use jacrev or vjp'\n"
        '    return 2.0 * ones_like(mul)\n'
    ),
    (
        'def one_hot_via_arange_jvp(x, x_dot):\n'
        '    idx = np.argmax(x, axis=1)\n'
        '    astype = np.astype(idx[:, None] == np.arange(x.shape[1])[None, :], np.float32)\n'
        '    return astype, zeros_like(astype)\n'
    ),
    (
        'def join_bars_jvp(g, arrays, axis, kind, arrays_dot):\n'
        '    seq_pieces_out, seq_pieces_out_dot = seq_pieces_jvp(g, arrays, axis, kind, arrays_dot)\n'
        '    return seq_pieces_out, seq_pieces_out_dot\n'
    ),
    (
        'def spread_grad_grad(x):\n'
        "    assert not is_tree(x) and np.ndim(x) == 0, 'grad of a derivative needs scalar inputs: use jacfwd or hessian'\n"  # noqa: E501
        '    out, x_dot = spread_grad_jvp(x, ones_like(x))\n'
        '    return x_dot\n'
    ),
    (
        'def f_jvp(x, x_dot):\n'
        '    sin = np.sin(x)\n'
        '    sum_1 = np.sum(x ** 2)\n'
        '    sum_1_dot = np.sum(2 * x_dot * x, axis=None, keepdims=False)\n'
        '    return sin * sum_1, (x_dot * (np.cos(x)) * sum_1) + (sin * sum_1_dot)\n'
    ),
    (
        'def argmax_argmin_vjp(x, out_bar):\n'
        '    _tape = []\n'
        '    argmax = np.argmax(x, axis=-1, keepdims=True)\n'
        '    x_bar = zeros_like(x)\n'
        '    return (np.argmax(x, axis=1), np.argmin(x, axis=0), np.argmax(x), argmax), (x_bar,)\n'
    ),
    (
        'def module_constant_float64_array_grad(x):\n'
        '    add = x + OFFSET_F64\n'
        "    assert np.ndim(add) == 0 and is_float(add), 'grad requires a real scalar output; use jacrev or vjp'\n"
        '    return unbroadcast(ones_like(add), x)\n'
    ),
]

COMPOUND = [  # built too: branches, loops, nested defs and empty lines, as srcjax writes them (batched helpers,
    # functions with lax control flow's bodies); each the tree and positions libcst's parser gives
    "def f(x):\n    for i in range(3):\n        x = x + i\n    return x\n",
    "def f(x):\n    y = x\n\n    return y\n",
    "def f(x):\n    for i, v in enumerate(x):\n        y = v * i\n    return y\n",
    "def f(x):\n    while x > 0:\n        x = x - 1\n    return x\n",
    "def f(x):\n    while (x > 0) and x < 3:\n        x = x - 1\n        if x:\n            break\n    return x\n",
    "def f(a, b):\n    if a:\n        y = 1\n    elif b:\n        y = 3\n    elif b > 1:\n        y = 4\n"
    "    else:\n        y = 2\n    return y\n",
    "def f(a):\n    if a:\n        y = 1\n    else:\n        if a > 1:\n            y = 3\n        else:\n"
    "            y = 2\n    return y\n",
    "def f(a):\n    if a:\n        pass\n    return a\n",
    "def f(x, y=1):\n    return x\n",
    "def f(x):\n    def g(y=1):\n        return y\n    return g(x)\n",
    "def max_bar_vmap(g, a, y, axis, keepdims, initial=None):\n    is_not = initial is not None\n    if is_not:\n"
    "        a = a + initial\n    return g * a\n",
    "def f(x, k=-2, s='a', t=(1, 2), u=1.5e-3):\n    def g(v, w=None):\n        return v\n    return g(x)\n",
    "def newton_sqrt_vmap(a):\n    x = a\n    carry = x\n\n    def any_running(carry_1):\n        x_1 = carry_1\n"
    "        mul_2 = x_1 * x_1  # a comment\n        return np.any(mul_2 > a)\n\n    def step(carry_1):\n"
    "        x_2 = carry_1\n\n\n        return batch_select(x_2 > a, 0.5 * (x_2 + a / x_2), carry_1)\n\n"
    "    x = srcjax.lax.while_loop(any_running, step, carry)\n    return x\n",
    "def g(x):\n    def h(y):\n        def k(z):\n            return z\n        return k(y)\n    return h(x)\n",
    "def batch_align_vmap(x, y):\n    ndim = (np.ndim(y) - 1)\n    k = ndim - np.ndim(x) + 1\n    gt = k > 0\n"
    "    if gt:\n        shape = np.shape(x)\n        getitem = shape[:1]\n        mul = (1,) * k\n"
    "        select = np.reshape(x, shape=getitem + mul + shape[1:])\n    else:\n        select = x\n"
    "    return select\n",
]

NOT_BUILT = [  # parsed by libcst: a docstring, an annotation, a line break in a statement, a loop's else, ...
    "def f(x):\n    \"\"\"Doc.\"\"\"\n    return x\n",
    "def f(x: Any) -> Any:\n    return x\n",
    "def f(x):\n    y = (x +\n         1)\n    return y\n",
    "def f(x):\n    y = x; z = y\n    return z\n",
    "def f(x):\n    return x  \n",
    "def f(x):\n\treturn x\n",
    "def f(x, y = 1):\n    return x\n",
    "def f(x, *, y=1):\n    return x\n",
    "def f(x, y=1, /):\n    return x\n",
    "def f(x, y=1,):\n    return x\n",
    "@dec\ndef f(x):\n    return x\n",
    "def f(x):\n    for i in range(3):\n        x = x + i\n    else:\n        x = 0\n    return x\n",
    "def f(x):\n    while x:\n        x = x - 1\n    else:\n        x = 0\n    return x\n",
    "def f(x):\n    if x:  # c\n        x = 1\n    return x\n",
    "def f(x):\n    if x:\n        x = 1\n\n    else:\n        x = 2\n    return x\n",
    "def f(x):\n    y = x\n    \n    return y\n",
    "def f(x):\n    y = x\n    # c\n    return y\n",
    "def f(x):\n    if x:\n      x = 1\n    return x\n",
    "def f(x):\n    with x:\n        y = 1\n    return y\n",
    "def f(x):\n    for i in range(3): x = x + i\n    return x\n",
]


@pytest.mark.parametrize("text", FUNCTIONS + COMPOUND + NOT_BUILT)
def test_functions_same_tree_as_libcst(text: str) -> None:
    assert _identical(parse_function_module(text, parse_module), cst.parse_module(text)), text


def test_functions_built() -> None:
    for text in FUNCTIONS + COMPOUND:
        assert _identical(_function(text), cst.parse_module(text)), text
    for text in NOT_BUILT:
        with pytest.raises(Exception):  # noqa: B017 - any refusal: then libcst parses it
            _function(text)


def test_function_positions() -> None:
    """The positions of a built module are those libcst's code generation finds in it (read._positions), for
    every node: the generated functions, and every expression form in an assignment, a return with a comment,
    an augmented assignment, an assert and a call."""
    texts = FUNCTIONS + COMPOUND
    for e in CORPUS + FORMS:
        texts += [f"def f(a, b):\n    y = {e}\n    return y\n", f"def f():\n    return {e}  # c\n",
                  f"def f(x):\n    x += {e}\n    assert {e}, 'm'\n    g({e})\n"]
    built = 0
    for text in texts + NOT_BUILT:
        try:
            module, places, names = function_module(text, parse_module, _positions)
        except cst.ParserSyntaxError:  # (a form that is no statement: `assert a, b, 'm'`)
            continue
        assert places == _positions(module), text
        assert names is None or names[:2] == (frozenset(names_in(module.body[0])), local_names(module.body[0])), text
        try:
            _function(text)
            built += 1
        except Exception:  # noqa: BLE001, S112 - a form left to libcst: its own positions, checked above
            continue
    assert built > 500


def test_user_functions_same_tree_and_positions() -> None:
    """``read.read_function`` builds the user's straight-line functions from ``ast`` too: for every function of
    the test corpora (the user code the tests transform), the tree and the positions are libcst's, and many of
    them are built (300 of them, 2026-12-05; the others go to libcst, as a loop or a docstring does)."""
    import importlib
    import inspect
    import textwrap

    built = 0
    for name in ("ad_programs", "corpus_programs", "field_programs", "jax_style_programs", "user_programs",
                 "vmap_user_programs", "unseen_programs", "container_programs", "linalg_programs"):
        mod = importlib.import_module(f"tests.{name}")
        for fn in vars(mod).values():
            if not inspect.isfunction(fn) or fn.__module__ != mod.__name__ or fn.__name__ == "<lambda>":
                continue
            text = textwrap.dedent("".join(inspect.getsourcelines(fn)[0]))
            try:
                module = _function(text)
            except Exception:  # noqa: BLE001, S112 - left to libcst: its own tree
                continue
            assert _identical(module, cst.parse_module(text)), text
            module, places, names = function_module(text, parse_module, _positions)
            assert places == _positions(module), text
            assert names[:2] == (frozenset(names_in(module.body[0])), local_names(module.body[0])), text
            built += 1
    assert built > 200, built


def test_function_from_its_modules_parse() -> None:
    """``_function(text, node)``, ``node`` the ``def`` of ``text`` parsed as part of a module (a generated
    module's parse, which ``read.read_function`` reuses instead of parsing each function's text again): the
    same tree and positions as from the text alone, whatever line the ``def`` starts on; a node of another
    text's shape is refused (then the text is parsed)."""
    texts = [t for t in FUNCTIONS + COMPOUND if t.startswith("def ")]
    assert len(texts) >= 3
    module_text = "import numpy as np\n\n\n" + "\n\n".join(texts)
    tree = ast.parse(module_text)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert len(defs) == len(texts)
    lines = module_text.splitlines(True)
    for node, text in zip(defs, texts):
        assert node.lineno > 1
        assert "".join(lines[node.lineno - 1:node.end_lineno]) == text
        try:
            alone = _function(text)
        except Exception:  # noqa: BLE001 - a form left to libcst: refused from the module's node too
            with pytest.raises(Exception):  # noqa: B017
                _function(text, node)
            continue
        from_module = _function(text, node)
        assert _identical(from_module, alone), text
        assert _identical(from_module, cst.parse_module(text)), text
        module, places, names = function_module(text, parse_module, _positions, node)
        assert _identical(module, alone) and places == _positions(module), text
        assert names[:2] == (frozenset(names_in(module.body[0])), local_names(module.body[0])), text
    with pytest.raises(Exception):  # noqa: B017 - the node of another function
        _function(texts[0], defs[1])


def test_generated_functions_read_from_their_modules_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """A derivative's functions are read (``read.read_function``) from their module's parse, held since the
    module was written, to the same tree as from their own text."""
    import numpy as np

    from srcjax.frontend import cst_functions, read

    seen: list[tuple[str, Any]] = []
    built = cst_functions._function

    def spy(text: str, node: Any = None, places: Any = None, names: Any = None, bound: Any = None,
            refs: Any = None) -> Any:
        seen.append((text, node))
        return built(text, node, places, names, bound, refs)

    monkeypatch.setattr(cst_functions, "_function", spy)

    def cubic(x: Any) -> Any:
        return np.sum(x[1:] * x[:-1] ** 2 - 3.0 * x[:-1])

    h = srcjax.hessian(cubic)
    x = np.linspace(0.5, 1.5, 6)
    out = np.asarray(h(x))
    ref = np.zeros((6, 6))  # d2/dx_i dx_j of sum_i x[i+1] x[i]^2 - 3 x[i]
    for i in range(5):
        ref[i, i] = 2.0 * x[i + 1]
        ref[i, i + 1] = ref[i + 1, i] = 2.0 * x[i]
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    reused = [(text, node) for text, node in seen if node is not None]
    assert len(reused) >= 3, [t.split("(")[0] for t, _ in seen]
    for text, node in reused:
        assert _identical(built(text, node), built(text)), text
    assert read._DEF_NODES  # (held for the next stage)
