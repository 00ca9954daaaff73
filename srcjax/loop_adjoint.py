"""``trip_bound``: the trip count of a counted loop in reverse-mode source (``transforms/bounded.py``
writes it); ``adjoint`` exports it with its own helpers (``LOOP_HELPERS``: its ``__module__`` is
``srcjax.adjoint``).

Reverse mode writes ``while i < n:`` (``i`` counting from a literal ``i0`` by ``c``) as
``for _ in range(i0, n, c):`` with every iteration guarded by the loop's test. With ``max_iters``
given and ``n`` not a literal, the bound is ``trip_bound(n, i0 + c * max_iters)``: ``n`` itself where it
is a Python int, so the loop runs exactly as written; where ``n`` is array data (an integer argument, or
per example under vmap) the loop runs ``max_iters`` times (an iteration past ``n`` does nothing: its test
failed; vmap's rule is in ``transforms/batch_containers.py``).
"""

from __future__ import annotations

LOOP_HELPERS = ["trip_bound"]


def trip_bound(n: int, most: int) -> int:
    """The bound ``n`` where it is a Python int; ``most`` (from the ``max_iters`` given) where ``n`` is array
    data (an integer argument, per example under vmap): every iteration is guarded by the loop's own test,
    so one past ``n`` does nothing."""
    return n if isinstance(n, int) else most


for _name in LOOP_HELPERS:  # (transpiled as srcjax.adjoint's, as linalg_adjoint's)
    globals()[_name].__module__ = "srcjax.adjoint"
