"""``trip_bound``: the trip count of a counted loop in reverse-mode source (``transforms/bounded.py``
writes it); ``adjoint`` exports it with its own helpers (``LOOP_HELPERS``: its ``__module__`` is
``srcjax.adjoint``).

Reverse mode writes ``while i < n:`` (``i`` counting from a literal ``i0`` by ``c``) as
``for _ in range(i0, n, c):`` with every iteration guarded by the loop's test. With ``max_iters``
given and ``n`` not a literal, the bound is ``trip_bound(n, i0 + c * max_iters)``: ``n`` itself, so
the loop runs exactly as written, except under vmap, where ``n`` differs per example and the batched
loop runs ``max_iters`` times for all of them (an example past its own count does nothing: its test
failed; vmap's rule is in ``transforms/batch_containers.py``).
"""

from __future__ import annotations

LOOP_HELPERS = ["trip_bound"]


def trip_bound(n: int, most: int) -> int:
    """The bound ``n`` (``most``, from the ``max_iters`` given, only where ``n`` is per example)."""
    return n


for _name in LOOP_HELPERS:  # (transpiled as srcjax.adjoint's, as linalg_adjoint's)
    globals()[_name].__module__ = "srcjax.adjoint"
