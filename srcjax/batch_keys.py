"""The helper vmap's source calls for ``for k in d`` where ``d`` is a dict whose values are mapped whole
(``in_axes=0`` of a dict of parameters): see srcjax/transforms/batch_dict_keys.py."""

from __future__ import annotations

from typing import Any


def batch_keys(d: Any) -> Any:
    """``d``, iterated for its keys: the same in every example. vmap read ``d`` as a dict (the function indexes
    it by a string); checked while specializing, so an array is never iterated over its batch axis here."""
    assert isinstance(d, dict), ("vmap: a loop over a name the function indexes by a string was read as a loop "
                                 "over a dict's keys, but the value is not a dict: pass in_axes=None for it")
    return d
