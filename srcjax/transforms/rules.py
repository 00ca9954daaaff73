"""Derivative rules: short templates, one per primitive operand.

A JVP template is the tangent contribution of one operand; a VJP template is
the cotangent contribution to one operand. Templates are Python expressions
over the primitive's parameter names, ``out`` (its result), ``out_bar`` (the
result's cotangent) and ``<param>_dot`` (an operand's tangent); helpers come
from :mod:`srcjax.adjoint`. They read like the math and are instantiated by
substituting the atoms of the statement being differentiated.

Primitives listed in ``NONDIFF`` have zero derivatives (comparisons, integer
results, rounding, ...), as in JAX; ``NONDIFF_ARGS`` names the array operands
that carry no derivative (``where``'s condition, ``full_like``'s template).

Sequence operands (``concatenate``'s ``arrays``, ``einsum``'s ``operands``): the
JVP template sees ``<param>_dot`` as a list literal of all the elements'
tangents; the VJP template evaluates to a tuple with one cotangent per element.
Multiple results (``split``, ``atleast_*d`` of several arrays): the JVP gives a
list of tangents, ``out_bar`` is a tuple of cotangents.

Conventions at non-differentiable points follow JAX (tests/test_ad_rules.py
checks each against jax): ``abs`` has derivative 1 at 0; ``maximum``/``minimum``
split a tie 0.5/0.5, and so does ``clip`` on a bound; ``max``/``min`` reductions
split the gradient equally among tied extrema; ``sqrt``/``cbrt`` have an
infinite derivative at 0; ``prod`` is exact with zeros. One deliberate
difference: ``linalg.norm`` has gradient 0 at the zero vector (JAX: nan).

Dtypes follow JAX: a cotangent has its primal's dtype and a tangent its result's, so
float32 gradients stay float32 and the adjoint of an implicit upcast (``w32 * x64``,
``w32 * np.arange(3)``, ``np.sum(w32, dtype=np.float64)``) is a downcast. The shape moves
``unbroadcast``/``broadcast_like``/``expand_reduced`` cast to their reference operand's dtype
(both being floating point), so a template that can change dtypes ends in one of them.
Constants in templates are Python numbers (weak: ``0.5 * g`` keeps float32), never NumPy
scalars (``np.log(2.0)`` is a float64 that would upcast), and helpers select on the
cotangent with ``np.where`` rather than multiply by a float64 mask.
tests/test_ad_rules.py checks both for every case with float32/float64 mixes.
"""

from __future__ import annotations

JVP: dict[str, dict[str, str]] = {}
VJP: dict[str, dict[str, str]] = {}
NONDIFF: set[str] = set()


def defjvp(name: str, **templates: str) -> None:
    JVP[name] = templates


def defvjp(name: str, **templates: str) -> None:
    VJP[name] = templates


def deflinear(name: str, jvp: dict[str, str], vjp: dict[str, str]) -> None:
    JVP[name] = jvp
    VJP[name] = vjp


NONDIFF.update({
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert",
    "isfinite", "isnan", "isinf", "sign", "floor", "ceil", "rint", "trunc", "round",
    "floor_divide", "argmax", "argmin", "all", "any",
    "zeros", "ones", "eye", "identity", "arange", "linspace", "zeros_like", "ones_like",
})

# Array operands that carry no derivative although their primitive has rules (the completeness
# test checks every other array operand has both a JVP and a VJP template).
NONDIFF_ARGS: dict[str, set[str]] = {
    "where": {"condition"},
    "heaviside": {"x1"},
    "take": {"indices"},  # integers
    "take_along_axis": {"indices"},  # a step: zero derivative in x1; x2 is the value at x1 == 0
    "full_like": {"a"},  # only a's shape/dtype are used
    "unbroadcast": {"x"}, "broadcast_like": {"y"}, "expand_reduced": {"a"},  # (shapes, for derivative code)
}

# -- elementwise arithmetic ------------------------------------------------------------
deflinear("add", {"x1": "broadcast_like(x1_dot, out)", "x2": "broadcast_like(x2_dot, out)"},
          {"x1": "unbroadcast(out_bar, x1)", "x2": "unbroadcast(out_bar, x2)"})
deflinear("subtract", {"x1": "broadcast_like(x1_dot, out)", "x2": "broadcast_like(-x2_dot, out)"},
          {"x1": "unbroadcast(out_bar, x1)", "x2": "unbroadcast(-out_bar, x2)"})
defjvp("multiply", x1="x1_dot * x2", x2="x1 * x2_dot")
defvjp("multiply", x1="unbroadcast(out_bar * x2, x1)", x2="unbroadcast(x1 * out_bar, x2)")
defjvp("true_divide", x1="x1_dot / x2", x2="-out * x2_dot / x2")
defvjp("true_divide", x1="unbroadcast(out_bar / x2, x1)", x2="unbroadcast(-out_bar * out / x2, x2)")
# JAX convention for d(x1 ** x2)/dx2 = log(x1) * out: log(x1) is taken as 0 where x1 == 0 (so the
# derivative is 0 there, not 0 * -inf = nan), and is nan for x1 < 0 (log of a negative number).
# d/dx1 = x2 * x1 ** (x2 - 1) is nan at x1 == 0 for x2 == 0.0 and inf for 0 < x2 < 1, as in JAX.
defjvp("power", x1="x1_dot * x2 * x1 ** (x2 - 1)", x2="x2_dot * np.log(np.where(x1 == 0, 1.0, x1)) * out")
defvjp("power", x1="unbroadcast(out_bar * x2 * x1 ** (x2 - 1), x1)",
       x2="unbroadcast(out_bar * np.log(np.where(x1 == 0, 1.0, x1)) * out, x2)")
defjvp("remainder", x1="broadcast_like(x1_dot, out)", x2="-x2_dot * np.floor(x1 / x2)")
defvjp("remainder", x1="unbroadcast(out_bar, x1)", x2="unbroadcast(-out_bar * np.floor(x1 / x2), x2)")
# JAX convention: at a tie (x1 == x2) each operand gets half of the gradient (0.5/0.5).
# max_share selects on the tangent itself, so float32 stays float32.
defjvp("maximum", x1="broadcast_like(max_share(x1_dot, x1, x2), out)",
       x2="broadcast_like(max_share(x2_dot, x2, x1), out)")
defvjp("maximum", x1="unbroadcast(max_share(out_bar, x1, x2), x1)", x2="unbroadcast(max_share(out_bar, x2, x1), x2)")
defjvp("minimum", x1="broadcast_like(max_share(x1_dot, x2, x1), out)",
       x2="broadcast_like(max_share(x2_dot, x1, x2), out)")
defvjp("minimum", x1="unbroadcast(max_share(out_bar, x2, x1), x1)", x2="unbroadcast(max_share(out_bar, x1, x2), x2)")
defjvp("arctan2", x1="x1_dot * x2 / (x1 ** 2 + x2 ** 2)", x2="-x2_dot * x1 / (x1 ** 2 + x2 ** 2)")
defvjp("arctan2", x1="unbroadcast(out_bar * x2 / (x1 ** 2 + x2 ** 2), x1)",
       x2="unbroadcast(-out_bar * x1 / (x1 ** 2 + x2 ** 2), x2)")
defjvp("float_power", **JVP["power"])
defvjp("float_power", **VJP["power"])
# log(exp(x1) + exp(x2)): each operand's softmax weight exp(x - out), with +inf read as 0 (JAX's rule).
defjvp("logaddexp", x1="x1_dot * logaddexp_weight(x1, out, 'e')", x2="x2_dot * logaddexp_weight(x2, out, 'e')")
defvjp("logaddexp", x1="unbroadcast(out_bar * logaddexp_weight(x1, out, 'e'), x1)",
       x2="unbroadcast(out_bar * logaddexp_weight(x2, out, 'e'), x2)")
defjvp("logaddexp2", x1="x1_dot * logaddexp_weight(x1, out, 2)", x2="x2_dot * logaddexp_weight(x2, out, 2)")
defvjp("logaddexp2", x1="unbroadcast(out_bar * logaddexp_weight(x1, out, 2), x1)",
       x2="unbroadcast(out_bar * logaddexp_weight(x2, out, 2), x2)")
# d hypot / d x1 = x1 / out; 0 at the origin (a subgradient, like linalg.norm; JAX splits it 0.5/0.5).
defjvp("hypot", x1="x1_dot * x1 / np.where(out == 0, 1.0, out)", x2="x2_dot * x2 / np.where(out == 0, 1.0, out)")
defvjp("hypot", x1="unbroadcast(out_bar * x1 / np.where(out == 0, 1.0, out), x1)",
       x2="unbroadcast(out_bar * x2 / np.where(out == 0, 1.0, out), x2)")
# JAX: fmax(x1, x2) = where((x1 > x2) | isnan(x2), x1, x2), so a tie goes to x2 (fmin: x1 < x2).
defjvp("fmax", x1="broadcast_like(np.where((x1 > x2) | np.isnan(x2), x1_dot, 0.0), out)",
       x2="broadcast_like(np.where((x1 > x2) | np.isnan(x2), 0.0, x2_dot), out)")
defvjp("fmax", x1="unbroadcast(np.where((x1 > x2) | np.isnan(x2), out_bar, 0.0), x1)",
       x2="unbroadcast(np.where((x1 > x2) | np.isnan(x2), 0.0, out_bar), x2)")
defjvp("fmin", x1="broadcast_like(np.where((x1 < x2) | np.isnan(x2), x1_dot, 0.0), out)",
       x2="broadcast_like(np.where((x1 < x2) | np.isnan(x2), 0.0, x2_dot), out)")
defvjp("fmin", x1="unbroadcast(np.where((x1 < x2) | np.isnan(x2), out_bar, 0.0), x1)",
       x2="unbroadcast(np.where((x1 < x2) | np.isnan(x2), 0.0, out_bar), x2)")
# a step in x1 (zero derivative, as JAX); x2 passes through where x1 == 0
defjvp("heaviside", x2="broadcast_like(np.where(x1 == 0, x2_dot, 0.0), out)")
defvjp("heaviside", x2="unbroadcast(np.where(x1 == 0, out_bar, 0.0), x2)")

deflinear("negative", {"x": "-x_dot"}, {"x": "-out_bar"})
deflinear("positive", {"x": "x_dot"}, {"x": "out_bar"})
# JAX convention: d|x|/dx = 1 at x == 0 (JAX selects on x >= 0; not sign(x), which is 0 there).
defjvp("absolute", x="abs_share(x_dot, x)")
defvjp("absolute", x="abs_share(out_bar, x)")
defjvp("square", x="2 * x * x_dot")
defvjp("square", x="2 * x * out_bar")
defjvp("reciprocal", x="-x_dot * out * out")
defvjp("reciprocal", x="-out_bar * out * out")

# -- transcendental ------------------------------------------------------------------
_UNARY = {
    # (log 2 and log 10 as Python floats: np.log(2.0) is a float64 scalar, which would upcast float32)
    "exp": "out", "exp2": "out * 0.6931471805599453", "expm1": "out + 1", "log": "1 / x",
    "log2": "1 / (x * 0.6931471805599453)", "log10": "1 / (x * 2.302585092994046)", "log1p": "1 / (1 + x)",
    "sqrt": "0.5 / out", "cbrt": "1 / (3 * out * out)",
    "sin": "np.cos(x)", "cos": "-np.sin(x)", "tan": "1 + out * out", "tanh": "1 - out * out",
    "arcsin": "1 / np.sqrt(1 - x * x)", "arccos": "-1 / np.sqrt(1 - x * x)", "arctan": "1 / (1 + x * x)",
    "sinh": "np.cosh(x)", "cosh": "np.sinh(x)", "arcsinh": "1 / np.sqrt(x * x + 1)",
    "arccosh": "1 / np.sqrt(x * x - 1)", "arctanh": "1 / (1 - x * x)",
    "deg2rad": "np.pi / 180", "rad2deg": "180 / np.pi",
    # JAX: d sinc / dx = 0 at x == 0 (sinc is even); elsewhere (cos(pi x) - sinc(x)) / x
    "sinc": "sinc_slope(x, out)",
}
for _name, _deriv in _UNARY.items():
    defjvp(_name, x=f"x_dot * ({_deriv})")
    defvjp(_name, x=f"out_bar * ({_deriv})")

# -- selection -------------------------------------------------------------------------
defjvp("where", x="broadcast_like(np.where(condition, x_dot, 0.0), out)",
       y="broadcast_like(np.where(condition, 0.0, y_dot), out)")
defvjp("where", x="unbroadcast(np.where(condition, out_bar, 0.0), x)",
       y="unbroadcast(np.where(condition, 0.0, out_bar), y)")
# JAX convention: clip(a, lo, hi) == minimum(maximum(a, lo), hi), so a value on a bound shares the
# gradient 0.5/0.5 with that bound (JAX gives 0.5 at a == lo, not 1). The bounds are differentiable.
defjvp("clip", a="broadcast_like(clip_share(a_dot, a, a_min, a_max, 0), out)",
       a_min="broadcast_like(clip_share(a_min_dot, a, a_min, a_max, 1), out)",
       a_max="broadcast_like(clip_share(a_max_dot, a, a_min, a_max, 2), out)")
defvjp("clip", a="unbroadcast(clip_share(out_bar, a, a_min, a_max, 0), a)",
       a_min="unbroadcast(clip_share(out_bar, a, a_min, a_max, 1), a_min)",
       a_max="unbroadcast(clip_share(out_bar, a, a_min, a_max, 2), a_max)")

# -- reductions --------------------------------------------------------------------------
deflinear("sum", {"a": "np.sum(a_dot, axis=axis, dtype=dtype, keepdims=keepdims)"},
          {"a": "expand_reduced(out_bar, a, axis, keepdims)"})
deflinear("mean", {"a": "np.mean(a_dot, axis=axis, dtype=dtype, keepdims=keepdims)"},
          {"a": "expand_reduced(out_bar, a, axis, keepdims) / reduced_size(a, axis)"})
deflinear("cumsum", {"a": "np.cumsum(a_dot, axis=axis, dtype=dtype)"}, {"a": "cumsum_bar(out_bar, a, axis)"})
deflinear("diff", {"a": "np.diff(a_dot, n, axis)"}, {"a": "diff_bar(out_bar, a, n, axis)"})
deflinear("trace", {"a": "np.trace(a_dot, offset, axis1, axis2, dtype)"},
          {"a": "trace_bar(out_bar, a, offset, axis1, axis2)"})
# d out_i / d a_j is the product of a_0..a_i without a_j: exact with zeros (no division), as JAX
defjvp("cumprod", a="broadcast_like(cumprod_jvp(a_dot, a, axis), out)")
defvjp("cumprod", a="cumprod_bar(out_bar, a, axis)")
# d prod / d a_i is the product of the others, computed without dividing by a (exact with zeros,
# as JAX). Ties in max/min: the gradient is split equally among the maxima (JAX).
defjvp("prod", a="np.sum(a_dot * prod_others(a, axis, initial), axis=axis, dtype=dtype, keepdims=keepdims)")
defvjp("prod", a="expand_reduced(out_bar, a, axis, keepdims) * prod_others(a, axis, initial)")
defjvp("max", a="np.sum(a_dot * max_bar(ones_like(out), a, out, axis, keepdims, initial), axis=axis, "
                 "keepdims=keepdims)")
defvjp("max", a="max_bar(out_bar, a, out, axis, keepdims, initial)")
defjvp("min", a="np.sum(a_dot * max_bar(ones_like(out), a, out, axis, keepdims, initial), axis=axis, "
                 "keepdims=keepdims)")
defvjp("min", a="max_bar(out_bar, a, out, axis, keepdims, initial)")
defjvp("var", a="np.sum(a_dot * var_bar(ones_like(out), a, axis, ddof, keepdims), axis=axis, dtype=dtype, "
                 "keepdims=keepdims)")
defvjp("var", a="var_bar(out_bar, a, axis, ddof, keepdims)")
defjvp("std", a="np.sum(a_dot * std_bar(ones_like(out), a, out, axis, ddof, keepdims), axis=axis, dtype=dtype, "
                 "keepdims=keepdims)")
defvjp("std", a="std_bar(out_bar, a, out, axis, ddof, keepdims)")

# -- linear algebra ----------------------------------------------------------------------
deflinear("matmul", {"x1": "x1_dot @ x2", "x2": "x1 @ x2_dot"},
          {"x1": "matmul_lhs_bar(out_bar, x1, x2)", "x2": "matmul_rhs_bar(out_bar, x1, x2)"})
# Every order srcjax supports (vector p-norms; 1, -1, inf, -inf, fro matrix norms), as JAX defines them.
# One deliberate difference from JAX: the gradient of the 2-norm at x == 0 is 0 (a subgradient), not nan.
defjvp("norm", x="np.sum(x_dot * norm_bar(ones_like(out), x, out, axis, keepdims, ord), "
                 "axis=norm_axes(np.ndim(x), axis), keepdims=keepdims)")
defvjp("norm", x="norm_bar(out_bar, x, out, axis, keepdims, ord)")

# -- shapes -----------------------------------------------------------------------------------
deflinear("transpose", {"a": "np.transpose(a_dot, axes)"},
          {"a": "np.transpose(out_bar, inverse_perm(np.ndim(a), axes))"})
deflinear("reshape", {"a": "np.reshape(a_dot, shape)"}, {"a": "np.reshape(out_bar, np.shape(a))"})
deflinear("ravel", {"a": "np.ravel(a_dot, order)"}, {"a": "ravel_bar(out_bar, a, order)"})
deflinear("squeeze", {"a": "np.squeeze(a_dot, axis)"}, {"a": "np.reshape(out_bar, np.shape(a))"})
deflinear("expand_dims", {"a": "np.expand_dims(a_dot, axis)"}, {"a": "np.reshape(out_bar, np.shape(a))"})
deflinear("broadcast_to", {"array": "np.broadcast_to(array_dot, shape)"}, {"array": "unbroadcast(out_bar, array)"})
deflinear("copy", {"a": "a_dot"}, {"a": "out_bar"})
deflinear("getitem", {"x": "x_dot[key]"}, {"x": "index_add(zeros_like(x), key, out_bar)"})
deflinear("index_add", {"z": "broadcast_like(z_dot, out)", "g": "index_add(zeros_like(z), key, g_dot)"},
          {"z": "unbroadcast(out_bar, z)", "g": "unbroadcast(out_bar[key], g)"})
deflinear("index_update", {"x": "index_update(x_dot, key, 0.0)",
                           "value": "index_update(zeros_like(x), key, value_dot)"},
          {"x": "index_update(out_bar, key, 0.0)", "value": "unbroadcast(out_bar[key], value)"})
deflinear("astype", {"x": "x_dot.astype(dtype)"}, {"x": "out_bar.astype(np.result_type(x))"})

# -- creation: linear in the fill value ---------------------------------------------------------------
deflinear("full", {"fill_value": "np.full(shape, fill_value_dot, dtype)"},
          {"fill_value": "unbroadcast(out_bar, fill_value)"})
deflinear("full_like", {"fill_value": "np.full_like(out, fill_value_dot)"},
          {"fill_value": "unbroadcast(out_bar, fill_value)"})

# -- contractions: bilinear ------------------------------------------------------------------------
deflinear("dot", {"a": "np.dot(a_dot, b)", "b": "np.dot(a, b_dot)"},
          {"a": "dot_lhs_bar(out_bar, a, b)", "b": "dot_rhs_bar(out_bar, a, b)"})
deflinear("inner", {"a": "np.inner(a_dot, b)", "b": "np.inner(a, b_dot)"},
          {"a": "inner_lhs_bar(out_bar, a, b)", "b": "inner_rhs_bar(out_bar, a, b)"})
deflinear("outer", {"a": "np.outer(a_dot, b)", "b": "np.outer(a, b_dot)"},
          {"a": "unbroadcast(np.reshape(out_bar @ np.ravel(b), np.shape(a)), a)",
           "b": "unbroadcast(np.reshape(np.ravel(a) @ out_bar, np.shape(b)), b)"})
deflinear("tensordot", {"a": "np.tensordot(a_dot, b, axes)", "b": "np.tensordot(a, b_dot, axes)"},
          {"a": "tensordot_lhs_bar(out_bar, a, b, axes)", "b": "tensordot_rhs_bar(out_bar, a, b, axes)"})
# operands is a sequence: the JVP sees all tangents at once, the VJP gives a list of cotangents
deflinear("einsum", {"operands": "einsum_jvp(subscripts, operands, operands_dot)"},
          {"operands": "einsum_bars(out_bar, subscripts, operands)"})

# -- shapes: linear; the VJP undoes the data movement ------------------------------------------------
deflinear("swapaxes", {"a": "np.swapaxes(a_dot, axis1, axis2)"}, {"a": "np.swapaxes(out_bar, axis1, axis2)"})
deflinear("moveaxis", {"a": "np.moveaxis(a_dot, source, destination)"},
          {"a": "np.moveaxis(out_bar, destination, source)"})
deflinear("diag", {"v": "np.diag(v_dot, k)"}, {"v": "diag_bar(out_bar, v, k)"})
deflinear("triu", {"m": "np.triu(m_dot, k)"}, {"m": "unbroadcast(np.triu(out_bar, k), m)"})
deflinear("tril", {"m": "np.tril(m_dot, k)"}, {"m": "unbroadcast(np.tril(out_bar, k), m)"})
deflinear("roll", {"a": "np.roll(a_dot, shift, axis)"}, {"a": "np.roll(out_bar, negated(shift), axis)"})
# gathers: the VJP scatters with np.add.at semantics (repeated indices accumulate)
deflinear("take", {"a": "np.take(a_dot, indices, axis)"}, {"a": "take_bar(out_bar, a, indices, axis)"})
deflinear("take_along_axis", {"arr": "np.take_along_axis(arr_dot, indices, axis)"},
          {"arr": "take_along_axis_bar(out_bar, arr, indices, axis)"})
deflinear("flip", {"m": "np.flip(m_dot, axis)"}, {"m": "np.flip(out_bar, axis)"})
deflinear("tile", {"A": "np.tile(A_dot, reps)"}, {"A": "tile_bar(out_bar, A, reps)"})
deflinear("repeat", {"a": "np.repeat(a_dot, repeats, axis)"}, {"a": "repeat_bar(out_bar, a, repeats, axis)"})
for _n in (1, 2, 3):
    deflinear(f"atleast_{_n}d", {"arys": f"atleast_dots(arys_dot, {_n})"}, {"arys": "atleast_bars(out_bar, arys)"})
deflinear("concatenate", {"arrays": "np.concatenate(arrays_dot, axis=axis, dtype=dtype)"},
          {"arrays": "join_bars(out_bar, arrays, axis, 'concatenate')"})
deflinear("stack", {"arrays": "np.stack(arrays_dot, axis=axis, dtype=dtype)"},
          {"arrays": "join_bars(out_bar, arrays, axis, 'stack')"})
deflinear("hstack", {"tup": "np.hstack(tup_dot, dtype=dtype)"}, {"tup": "join_bars(out_bar, tup, None, 'hstack')"})
deflinear("vstack", {"tup": "np.vstack(tup_dot, dtype=dtype)"}, {"tup": "join_bars(out_bar, tup, None, 'vstack')"})
# multiple outputs: the tangent is the list of the pieces' tangents; out_bar is a tuple of cotangents
deflinear("split", {"ary": "np.split(ary_dot, indices_or_sections, axis)"},
          {"ary": "split_bar(out_bar, ary, indices_or_sections, axis)"})
deflinear("array_split", {"ary": "np.array_split(ary_dot, indices_or_sections, axis)"},
          {"ary": "split_bar(out_bar, ary, indices_or_sections, axis)"})

# -- derivative code's shape moves (srcjax.adjoint): linear, each the transpose of the other ---------------
deflinear("unbroadcast", {"g": "unbroadcast(g_dot, x)"}, {"g": "broadcast_like(out_bar, g)"})
deflinear("broadcast_like", {"t": "broadcast_like(t_dot, y)"}, {"t": "unbroadcast(out_bar, t)"})
deflinear("expand_reduced", {"g": "expand_reduced(g_dot, a, axis, keepdims)"},
          {"g": "unbroadcast(np.sum(out_bar, axis=axis, keepdims=keepdims), g)"})
