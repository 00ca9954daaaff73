"""The names derivative code gives the lists it saves values on (tapes, cotangent tapes, tangent tapes) and their
readers; :mod:`srcjax.adjoint` exports them too (most of srcjax reads them there)."""

from __future__ import annotations

import re

__all__ = ["SAVED_LIST_NAME", "TAPE_NAME", "TAPE_PREFIX", "is_saved_list_name", "is_tape_name"]

TAPE_PREFIX = "_tape"
"""How every list derivative code saves values on is named (reverse_ad makes ``_tape``; :data:`TAPE_NAME`,
:data:`SAVED_LIST_NAME` and their readers recognise it)."""

TAPE_NAME = re.compile(rf"{TAPE_PREFIX}(_bar)?(_\d+)?$")
"""The names derivative code gives its tapes (``_tape``, ``_tape_1``: the values saved for the
adjoint sweep) and their cotangent tapes (``_tape_bar``, reverse over reverse)."""


def is_tape_name(name: str) -> bool:
    """A tape or a cotangent tape (:data:`TAPE_NAME`): what derivative code passes its helpers,
    which only push to it and pop from it."""
    return TAPE_NAME.match(name) is not None


SAVED_LIST_NAME = re.compile(rf"{TAPE_PREFIX}(_bar|_dot|_\d+)*$")
"""Every name derivative code gives a list of saved values: the tapes of :data:`TAPE_NAME` and their
tangent tapes (``_tape_dot``, ``_tape_1_dot``, ``_tape_bar_dot``). Reserved: user code may not bind one."""


def is_saved_list_name(name: str) -> bool:
    """A list of saved values that a reversed loop pops: a tape, a cotangent tape, and also a tangent
    tape (``_tape_dot``, ``_tape_1_dot``, ``_tape_bar_dot``: forward over reverse, as in a Hessian),
    which the adjoint pops in step with its tape (:data:`SAVED_LIST_NAME`).

    Wider than :func:`is_tape_name` on purpose. A rolled loop keeps such a list's rows stacked for
    the reversed loop to pop (``lower/rolled_for.py``): a tangent tape taken for a user's list would
    unroll a Hessian's adjoint loops. A tangent tape passed to a helper still counts as read there
    (:func:`is_tape_name`), which unrolls the loop that calls the helper."""
    return SAVED_LIST_NAME.match(name) is not None
