"""``trip_bound``: the trip count of a counted loop in reverse-mode source (``bounded.py`` writes it).

Reverse mode writes ``while i < n:`` (``i`` counting from a literal) as ``for _ in range(0, n, 1):``
with every iteration guarded by the loop's test. With ``max_iters`` given and ``n`` not a literal,
the bound is ``trip_bound(n, i0 + c * max_iters)``: ``n`` itself, so the loop runs exactly as written, except
under vmap, where ``n`` differs per example and the batched loop runs ``max_iters`` times for all of
them (an example past its own count does nothing: its test failed; vmap's rule is in
``transforms/batch_containers.py``).
"""

from __future__ import annotations


def trip_bound(n: int, most: int) -> int:
    """The bound ``n`` (``most``, from the ``max_iters`` given, only where ``n`` is per example)."""
    return n
