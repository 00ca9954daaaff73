"""Programs as users write them with Python containers of arrays and builtins (dict iteration, zip, enumerate,
reversed, comprehensions, ``*`` unpacking, min/max/sum/any/all, ``dict(zip(...))``, ``{**a, **b}``, append/pop,
list slices, ``NamedTuple._replace``, dataclasses, ``functools.reduce``, ``map``, f-string keys, ``isinstance``,
``len``, ``d.get(k, default)``), checked by tests/test_container_programs.py. Each has a jax.numpy twin built from
the same source (``np`` bound to jax.numpy, ``srcjax.tree_util`` to jax's)."""

import dataclasses
import functools
from typing import NamedTuple

import numpy as np

import srcjax

NAMES = ("a", "b", "c")


class Layer(NamedTuple):
    w: np.ndarray
    b: np.ndarray


@srcjax.tree_util.register_dataclass
@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: np.ndarray


# -- dicts of parameters -------------------------------------------------------------------------------------

def dict_items(params, x):
    s = 0.0
    for k, v in params.items():
        s = s + np.sum(np.tanh(x * v)) * len(k)
    return s


def dict_keys(params, x):
    s = 0.0
    for k in params.keys():
        s = s + np.sum(params[k] ** 2 * x)
    return s


def dict_values_product(params, x):
    s = 1.0
    for v in params.values():
        s = s * np.sum(np.sin(v * x))
    return s


def sorted_keys_chain(params, x):
    for k in sorted(params):  # order matters: a chain of layers by name
        x = np.tanh(x * params[k] + 0.1)
    return np.sum(x ** 2)


def sorted_keys_reverse(params, x):
    out = [params[k] * x for k in sorted(params.keys(), reverse=True)]
    return np.sum(out[0] * 2.0 + out[1]) + np.sum(out[-1] ** 3)


def dict_comprehension(params, x):
    sq = {k: v ** 2 for k, v in params.items()}
    return np.sum(sq["a"] * x) + np.sum(sq["b"]) - np.sum(sq["c"] * x ** 2)


def dict_from_zip(ws, x):
    d = dict(zip(NAMES, ws))
    return np.sum(d["a"] * d["c"] * x) + np.sum(d["b"] ** 2)


def merged_dicts(a, x):
    defaults = {"a": x, "b": 2.0 * x}
    d = {**defaults, **a}  # a's entries win
    return np.sum(d["a"] * d["b"]) + np.sum(np.cos(d["c"]) * x)


def dict_get_default(params, x):
    w = params.get("a", 1.0)
    b = params.get("missing", 0.5)
    return np.sum(np.tanh(w * x + b)) + np.sum(params.get("c", x) ** 2)


def dict_copy_update(params, x):
    d = dict(params)
    d["a"] = d["a"] * 2.0
    d.update(b=d["b"] + x)
    return np.sum(d["a"] * d["b"]) + np.sum(params["a"] * d["c"])


def nested_dicts(tree, x):
    s = 0.0
    for name, sub in tree.items():
        for k, v in sub.items():
            s = s + np.sum(np.tanh(v * x)) * (len(name) + len(k))
    return s


def fstring_keys(params, x):
    for i in range(2):
        x = np.tanh(x * params[f"w{i}"] + params[f"b{i}"])
    return np.sum(x ** 2)


def dict_of_rebuilt(params, x):
    doubled = dict((k, v * 2.0) for k, v in params.items())
    return np.sum(doubled["a"] * x) * np.sum(doubled["b"])


def max_key_by_len(params, x):
    k = max(params, key=len)  # a static choice over the keys
    return np.sum(params[k] * x) + len(params)


# -- lists and tuples ----------------------------------------------------------------------------------------

def zip_layers(ws, bs, x):
    for w, b in zip(ws, bs):
        x = np.tanh(x * w + b)
    return np.sum(x)


def enumerate_weights(ws, x):
    s = 0.0
    for i, w in enumerate(ws, start=1):
        s = s + i * np.sum(w * x)
    return s


def reversed_chain(ws, x):
    for w in reversed(ws):
        x = np.sin(x * w)
    return np.sum(x ** 2)


def list_comprehension_stack(ws, x):
    return np.sum(np.stack([np.tanh(w * x) for w in ws]) ** 2)


def filtered_comprehension(ws, x):
    even = [w for i, w in enumerate(ws) if i % 2 == 0]
    return np.sum(np.stack(even) * x)


def tuple_generator(ws, x):
    t = tuple(w ** 2 for w in ws)
    return sum(np.sum(a * x) for a in t)


def star_unpacking(ws, x):
    first, *rest = ws
    return np.sum(first * x) + sum(np.sum(r ** 2) for r in rest)


def star_in_call(ws, x):
    return np.sum(np.stack([*ws, x]) ** 2) + np.sum(np.maximum(*ws[:2]))


def builtin_sum_of_arrays(ws, x):
    return np.sum(sum(ws) * x) + np.sum(sum(ws, x) ** 2)


def builtin_sum_of_scalars(ws, x):
    return sum(np.sum(w * x) ** 2 for w in ws)


def max_of_static_shapes(ws, x):
    n = max(w.shape[0] for w in ws)
    m = min(len(w) for w in ws)
    return np.sum(x * n) + np.sum(ws[0][:m] * x[:m])


def any_all_static(ws, x):
    if all(w.ndim == 1 for w in ws) and not any(w.shape[0] > 10 for w in ws):
        return np.sum(sum(ws) * x)
    return np.sum(x)


def builtin_max_of_arrays(ws, x):
    return max(np.sum(w * x) for w in ws) - min([np.sum(w) for w in ws])


def append_loop(ws, x):
    outs = []
    for w in ws:
        outs.append(np.sin(w * x))
    return np.sum(np.stack(outs) ** 2)


def pop_loop(ws, x):
    stack = list(ws)
    s = 0.0
    for _ in range(len(ws)):
        w = stack.pop()
        s = s + np.sum(w * x)
        x = x * 0.5
    return s


def list_slicing(ws, x):
    for w in ws[1:]:
        x = x * w
    for w in ws[::-1][:2]:
        x = x + w
    return np.sum(x) + np.sum(ws[0] ** 2)


def adjacent_pairs(ws, x):
    return sum(np.sum(a * b * x) for a, b in zip(ws, ws[1:]))


def list_concatenation(ws, x):
    all_ws = ws + [x * 2.0]
    all_ws.extend([x ** 2])
    return np.sum(np.stack(all_ws) * x) + len(all_ws)


def transpose_pairs(layers, x):
    ws, bs = zip(*layers)
    return np.sum(np.tanh(sum(ws) * x + sum(bs)))


def nested_comprehension(ws, x):
    grid = [[a * b for b in ws] for a in ws]
    return np.sum(np.stack([np.stack(row) for row in grid]) * x)


def list_of_dicts(layers, x):
    for layer in layers:
        x = np.tanh(x * layer["w"] + layer["b"])
    return np.sum(x ** 2)


def isinstance_dispatch(items, x):
    s = 0.0
    for v in items:
        if isinstance(v, tuple):
            a, b = v
            s = s + np.sum(a * b * x)
        elif isinstance(v, dict):
            s = s + np.sum(v["w"] * x)
        else:
            s = s + np.sum(v ** 2)
    return s


def len_of_containers(params, ws, x):
    return np.sum(x) * len(params) + len(ws) * np.sum(ws[0] * x) + np.sum(params["a"]) / len(x)


def map_builtin(ws, x):
    return np.sum(np.stack(list(map(np.tanh, ws)))) + sum(map(lambda w: np.sum(w * x), ws))


def reduce_product(ws, x):
    return np.sum(functools.reduce(lambda a, b: a * b, ws) * x)


def reduce_with_initial(ws, x):
    return np.sum(functools.reduce(lambda acc, w: np.tanh(acc * w), ws, x))


def values_list_index(params, x):
    vals = list(params.values())
    return np.sum(vals[0] * x) + np.sum(vals[-1] ** 2)


# -- NamedTuples and dataclasses -----------------------------------------------------------------------------

def namedtuple_replace(p, x):
    q = p._replace(b=p.b * 2.0)
    return np.sum(np.tanh(x * q.w + q.b)) + np.sum(p.b)


def namedtuple_layers(layers, x):
    for layer in layers:
        x = np.tanh(x * layer.w + layer.b)
    return np.sum(x ** 2)


def namedtuple_fields(p, x):
    s = 0.0
    for name in p._fields:
        s = s + np.sum(getattr(p, name) * x)
    return s + np.sum(p[0] * p[1])


def dataclass_params(p, x):
    return np.sum(np.tanh(x * p.w + p.b) ** 2)


def dataclass_replace(p, x):
    q = dataclasses.replace(p, w=p.w * 3.0)
    return np.sum(q.w * x) + np.sum(q.b * p.w)
