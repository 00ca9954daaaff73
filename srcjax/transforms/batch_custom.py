"""vmap of a custom_vjp/custom_jvp function: its rules batched alike (the batcher's :meth:`Batcher.custom_rules`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..custom import custom_jvp, custom_vjp, owner_of
from .batch_state import State, Tree, any_batched

if TYPE_CHECKING:
    from ..frontend.normalize import NormalizedFunction
    from .batch import Batcher

__all__ = ["custom_rules"]


def custom_rules(b: Batcher, name: str, nf: NormalizedFunction, states: tuple[State, ...], ret: State) -> None:
    """The batched rules of a custom_vjp/custom_jvp function batched as ``name``: derivatives of the
    batched program call them (``vmap.batched_function`` makes ``name`` a custom function again)."""
    if name in b.customs:
        return
    owner = owner_of(nf.fn)
    assert owner is not None
    nondiff = [states[i] for i in owner.nondiff_argnums]
    diff = [s for i, s in enumerate(states) if i not in owner.nondiff_argnums]
    if isinstance(owner, custom_vjp):
        assert owner.fwd is not None and owner.bwd is not None
        fwd_nf = b.program.functions[b.program.add_rule(owner.fwd)]
        bwd_nf = b.program.functions[b.program.add_rule(owner.bwd)]
        fwd, fwd_ret, _, _ = b.function(fwd_nf, states, force=True)
        res = fwd_ret.items[1][1] if isinstance(fwd_ret, Tree) and len(fwd_ret.items) == 2 else any_batched(fwd_ret)
        out = fwd_ret.items[0][1] if isinstance(fwd_ret, Tree) and len(fwd_ret.items) == 2 else ret
        bwd, _, _, _ = b.function(bwd_nf, (*nondiff, res, out), force=True, want_return=Tree(
            "tuple", tuple((str(i), s) for i, s in enumerate(diff))))
        b.customs[name] = ("vjp", owner.nondiff_argnums, (fwd, bwd))
    else:
        assert isinstance(owner, custom_jvp) and owner.jvp is not None
        jvp_nf = b.program.functions[b.program.add_rule(owner.jvp)]
        prim = Tree("tuple", tuple((str(i), s) for i, s in enumerate(diff)))
        jvp, _, _, _ = b.function(jvp_nf, (*nondiff, prim, prim), force=True,
                                     want_return=Tree("tuple", (("0", ret), ("1", ret))))
        b.customs[name] = ("jvp", owner.nondiff_argnums, (jvp,))
