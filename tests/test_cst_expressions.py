"""``frontend.cst_expressions.parse_expression``: the tree ``cst.parse_expression`` builds, node type for node
type and field for field (whitespace, tuples and sentinels included), for every rule template of the primitive
table and for a corpus of texts srcjax writes (the expressions the derivative and batching writers parsed in
test_golden, test_ad, test_vmap and test_print, one per form); forms it does not build go to libcst."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

import srcjax  # noqa: F401  (registers the primitive table)
from srcjax.frontend.cst_expressions import _Builder, parse_expression
from srcjax.frontend.library_cache import _identical  # (the field-for-field comparison test_first_call uses)
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
        b = _Builder(text)
        try:
            b.expr(ast.parse(text, mode="eval").body)
            built += b.i == len(text)
        except Exception:  # noqa: BLE001 - a form left to libcst
            pass
    assert built >= len(CORPUS) - 12


def test_new_tree_each_call() -> None:
    assert parse_expression("a + b") is not parse_expression("a + b")
