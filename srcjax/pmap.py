"""``srcjax.pmap``: one program per device, JAX's way.

``srcjax.pmap(f, "i")`` does not rewrite ``f``: the program is ``f``'s own source (what
``srcjax.source`` prints, under a comment saying how it is mapped), lowered once with each
argument's *per-device* shape (its mapped axis removed) and compiled in XLA's replica mode for the
devices it runs on, replica ``k`` on device ``k``. Collectives over ``"i"`` in the body become
StableHLO's cross-replica collectives (``lower/replicas.py``). Derivatives and ``vmap`` inside the
body are source like any other, so they compose; ``pmap`` of a ``vmap``-ed or differentiated
function maps the function they wrote.

Arguments and results are global ``srcjax.Array``s laid out over a 1-D mesh of those devices named
after the axis: a mapped argument as ``NamedSharding(mesh, P(None, ..., "i"))`` (each device holds
its slice), an unmapped one (``in_axes=None``) replicated. A result goes straight back into the
next call without a trip through the host.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import reuse
from .api import Compiled, Lowered, _as_compiled, _clean, _key_aval  # (api's shared argument helpers)
from .core import ArgumentError, NeedStatic, ShapedArray, TranspileError
from .lower import replicas
from .sharding import Mesh, NamedSharding, PartitionSpec, Sharding

__all__ = ["Pmapped", "pmap"]

Axes = Any  # int | None | a tuple/list/dict prefix of the argument's structure


class Layout:
    """Where one specialization's arrays live: the devices' mesh, each argument leaf's sharding and
    each output's (what ``runtime/spmd.compile_sharded`` reads; ``replicas``: compile in replica mode)."""

    sharded = True
    replicas = True

    def __init__(self, mesh: Mesh, in_leaves: list[Sharding], out_leaves: list[Sharding]) -> None:
        self.mesh, self.in_leaves, self.out_leaves = mesh, in_leaves, out_leaves


_SPECS: dict[tuple[Mesh, int | None], NamedSharding] = {}


def _spec(mesh: Mesh, axis: int | None) -> NamedSharding:
    """The layout of an array mapped along ``axis`` (None: replicated); one object per layout, so a
    result fed back is recognised by identity."""
    hit = _SPECS.get((mesh, axis))
    if hit is None:
        name = mesh.axis_names[0]
        spec = PartitionSpec() if axis is None else PartitionSpec(*([None] * axis), name)
        hit = _SPECS[(mesh, axis)] = NamedSharding(mesh, spec)
    return hit


class Pmapped(Compiled):
    """``srcjax.pmap(fn, ...)``: ``fn`` compiled once per set of argument shapes, run on each device."""

    def __init__(self, fn: Callable[..., Any], axis_name: Any, in_axes: Axes, out_axes: Axes,
                 static_broadcasted_argnums: Sequence[int], devices: Sequence[Any] | None,
                 axis_size: int | None) -> None:
        c = _as_compiled(fn)
        static = {i for i, p in enumerate(c.params) if p in c.static} | set(static_broadcasted_argnums)
        super().__init__(c.fn, static_argnums=tuple(sorted(static)), device=c.device)
        self.axis_name = axis_name
        self.in_axes, self.out_axes = in_axes, out_axes
        self._devices = list(devices) if devices is not None else None
        self._axis_size = axis_size
        self.static_argnums_set = set(static)
        self._as_vmap: Any = None

    # Inside a function srcjax compiles, differentiates or vmaps, a pmapped function is what it
    # computes: its vmap over the same axes with the same axis_name (the collectives reduce over the
    # mapped axis), one program; grad(lambda x: np.sum(pmap(f, "i")(x))) differentiates through it.
    @property  # type: ignore[override]
    def __srcjax_fn__(self) -> Any:
        from .vmap import batched_function

        if self._as_vmap is None:
            specs = tuple(None if i in self.static_argnums_set else s for i, s in enumerate(self._in_specs()))
            self._as_vmap = batched_function(self.fn, specs, self.out_axes, self._axis_size, self.axis_name)
        return self._as_vmap

    @__srcjax_fn__.setter
    def __srcjax_fn__(self, v: Any) -> None:  # (Compiled.__init__ sets it: the vmap is written on first use)
        self._as_vmap = None

    def as_transformed(self) -> Any:
        """What a transformation of this pmapped function transforms: its vmap (see above)."""
        return self.__srcjax_fn__

    def __repr__(self) -> str:
        return f"<srcjax.pmap of {self.fn.__qualname__}>"

    def __srcjax_source__(self, form: str = "readable") -> str:
        head = (f"# srcjax.pmap({self.fn.__name__}, axis_name={self.axis_name!r}, in_axes={self.in_axes!r}, "
                f"out_axes={self.out_axes!r}):\n# this program runs once on each device, on that device's slice of "
                f"each mapped argument;\n# collectives over {self.axis_name!r} run across the devices\n")
        return head + self.program.source(form)

    # -- one specialization -----------------------------------------------------------------------
    def _in_specs(self) -> list[Axes]:
        n = len(self.params)
        spec = self.in_axes
        if isinstance(spec, list):
            spec = tuple(spec)
        if not isinstance(spec, tuple):
            return [spec] * n
        if len(spec) != n:
            raise ArgumentError(f"pmap: in_axes has {len(spec)} entries but {self.fn.__name__} takes {n} arguments",
                                hint="give one entry per positional argument (None: not mapped, the same on "
                                     "every device)")
        return list(spec)

    def _per_device(self, values: list[Any]) -> tuple[list[Any], list[int | None], int]:
        """The argument specs as one device sees them, each dynamic leaf's mapped axis, and the
        mapped size (every mapped leaf's, checked equal)."""
        from .lower.specialize import ArgSpec
        from .pytree import flatten, unflatten

        specs = self._specs(values)
        out: list[Any] = []
        axes: list[int | None] = []
        sizes: list[tuple[str, int]] = []
        for name, s, spec in zip(self.params, specs, self._in_specs()):
            if s.static:
                out.append(s)
                continue
            is_aval = lambda v: isinstance(v, ShapedArray)  # noqa: E731
            leaves, tree = flatten(s.aval, is_leaf=is_aval, nodes=True)
            leaf_axes = replicas.prefix_leaves(s.aval, spec, f"in_axes for {name!r}", is_aval)
            new = []
            for j, (a, ax) in enumerate(zip(leaves, leaf_axes)):
                if not isinstance(a, ShapedArray):
                    new.append(a)
                    continue
                where = name if len(leaves) == 1 else f"{name} (leaf {j})"
                if ax is not None:
                    if not -a.ndim <= ax < a.ndim:
                        raise ArgumentError(f"pmap: in_axes {ax} for argument {where}, which has {a.ndim} "
                                            f"dimension{'s' * (a.ndim != 1)} (shape {a.shape})",
                                            hint="map an axis it has, or pass None to give every device all of it")
                    ax %= a.ndim
                    sizes.append((where, a.shape[ax]))
                    a = a.update(shape=a.shape[:ax] + a.shape[ax + 1:], weak_type=False)
                axes.append(ax)
                new.append(a)
            out.append(ArgSpec(False, aval=unflatten(tree, new)))
        if self._axis_size is not None:
            sizes.insert(0, ("axis_size", self._axis_size))
        if not sizes:
            raise ArgumentError("pmap: nothing is mapped (every in_axes is None) and no axis_size is given",
                                hint="map an argument (in_axes=0) or pass axis_size=n")
        for where, n in sizes[1:]:
            if n != sizes[0][1]:
                raise ArgumentError(f"pmap: mapped axes of different sizes: {sizes[0][0]} has {sizes[0][1]}, "
                                    f"{where} has {n}", hint="every mapped argument needs the same size along its "
                                                             "mapped axis: one slice per device")
        return out, axes, sizes[0][1]

    def _mesh(self, n: int, first: str) -> Mesh:
        from .spmd import devices as all_devices

        if self._devices is not None:
            devs = self._devices
            if n != len(devs):
                raise ArgumentError(f"pmap: argument {first} has size {n} along its mapped axis, but pmap was given "
                                    f"{len(devs)} devices", hint="the mapped size must be the number of devices: "
                                                                 "one slice per device")
        else:
            avail = all_devices()
            if n > len(avail) or n == 0:
                raise ArgumentError(f"pmap: argument {first} has size {n} along its mapped axis, but there "
                                    f"{'are' if len(avail) != 1 else 'is'} {len(avail)} device"
                                    f"{'s' * (len(avail) != 1)}",
                                    hint="the mapped size must be at most the number of devices (one slice per "
                                         "device); more CPU devices: SRCJAX_NUM_CPU_DEVICES=n, set before the "
                                         "process starts" if n else "map a non-empty axis")
            devs = avail[:n]
        return Mesh(np.array(devs, dtype=object), (self.axis_name if isinstance(self.axis_name, str) else "pmap",))

    def _lower_replicated(self, values: list[Any]) -> tuple[str, list[ShapedArray], Any, list[Any], Layout,
                                                            list[ShapedArray]]:
        """(module text, global output avals, output tree, template, layout, global input avals)."""
        from .lower.specialize import specialize

        while True:
            self._key(values)  # validates arguments; non-array ones become static
            specs, axes, n = self._per_device(values)
            first = next((p for p, s, sp in zip(self.params, specs, self._in_specs())
                          if not s.static and sp is not None), "axis_size")
            mesh = self._mesh(n, repr(first) if first != "axis_size" else "axis_size")
            plan = replicas.ReplicaPlan(self.axis_name, n, axes, self.out_axes, self.program)
            token = replicas.CURRENT.set(plan)
            try:
                text, out_avals, tree, template = specialize(self.program, specs, platform=self._platform())
                break
            except NeedStatic as ns:
                new = self.auto_static | {str(x) for x in ns.names}
                if new == self.auto_static:
                    raise
                self.auto_static = frozenset(new)
            finally:
                replicas.CURRENT.reset(token)
        in_avals = [_key_aval(k) for k in self._key(values)[2]]
        layout = Layout(mesh, [_spec(mesh, a) for a in axes], [_spec(mesh, a) for a in plan.out_leaf_axes])
        return text, out_avals, tree, template, layout, in_avals

    def _specialize(self, values: list[Any]) -> tuple[str, list[ShapedArray], Any, list[Any]]:
        """(module text, global output avals, output tree, template): what ``srcjax.eval_shape`` reads."""
        return self._lower_replicated(values)[:4]  # type: ignore[return-value]

    def _plan(self, values: list[Any]) -> tuple[Any, list[Any]]:
        from .api import _Plan  # (what Compiled's call path runs: the same for a pmapped program)
        from .runtime.spmd import compile_sharded

        if self.device == "numpy":
            raise ArgumentError("pmap: the numpy device runs one program on the host",
                                hint="run srcjax.vmap(f, axis_name=...) with device='numpy' for the same values")
        key, leaves, _ = self._key(values)
        plan = self._cache.get(key)
        if plan is None:
            text, out_avals, tree, template, layout, in_avals = self._lower_replicated(values)
            key, leaves, _ = self._key(values)
            exe = compile_sharded(text, in_avals, out_avals, self.device, layout)
            plan = self._cache[key] = _Plan(exe, tree, template, in_avals)
        return plan, leaves

    def _run_numpy(self, values: list[Any]) -> Any:
        self._plan(values)  # (refuses)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        try:
            values = self._bind(args, kwargs)
            text, out_avals, tree, template, layout, in_avals = self._lower_replicated(values)
        except TranspileError as e:
            raise _clean(e) from None
        lowered = Lowered(text, out_avals, tree, template, self, values)
        lowered.sharding, lowered.in_avals = layout, in_avals
        return lowered


def pmap(fn: Callable[..., Any] | None = None, axis_name: Any = None, *, in_axes: Axes = 0, out_axes: Axes = 0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices: Sequence[Any] | None = None,
         axis_size: int | None = None, donate_argnums: int | Sequence[int] = (), backend: str | None = None) -> Any:
    """JAX's ``pmap``: ``fn`` run on several devices at once, each on its slice of the mapped arguments.

    ``in_axes``: for each positional argument, the axis split over the devices (one slice per
    device), ``None`` for an argument every device gets whole, or a tuple/list/dict prefix of the
    argument's structure; one int or None applies to every argument. The mapped size must equal
    the number of devices used: ``devices`` (a list of ``srcjax.devices()``), or by default the
    first that many. ``out_axes``: where the device axis goes in each output (``None``: an output
    that is the same on every device, e.g. after a ``psum``). ``axis_name``: the name the body's
    collectives (``srcjax.lax.psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
    ``psum_scatter``, ``ppermute``, ``axis_index``) give the device axis.
    ``static_broadcasted_argnums``: arguments passed to every device as Python values (hashable;
    one compilation per value). ``axis_size``: the number of devices when nothing is mapped.
    ``donate_argnums`` is accepted (JAX's signature) and changes nothing.

    Results are ``srcjax.Array``s laid out over the devices (``.sharding``, ``.addressable_shards``;
    ``np.asarray`` assembles them). Usable as ``@srcjax.pmap`` or ``@functools.partial(srcjax.pmap,
    axis_name="i")``.
    """
    if fn is None or isinstance(fn, str):
        name = fn if isinstance(fn, str) else axis_name
        return lambda f: pmap(f, name, in_axes=in_axes, out_axes=out_axes,
                              static_broadcasted_argnums=static_broadcasted_argnums, devices=devices,
                              axis_size=axis_size, donate_argnums=donate_argnums, backend=backend)
    if axis_name is not None and not isinstance(axis_name, str):
        raise _clean(ArgumentError(f"pmap: axis_name must be a string, not {axis_name!r}"))
    if isinstance(fn, Pmapped):
        raise _clean(ArgumentError(f"pmap of a pmapped function ({fn!r}): nested pmap is not supported",
                                   hint="map the devices once: a 2-D layout is srcjax.compile with a 2-D mesh "
                                        "(docs/many_devices.md), or vmap the inner axis inside the pmap"))
    if axis_size is not None and (isinstance(axis_size, bool) or not isinstance(axis_size, int) or axis_size < 1):
        raise _clean(ArgumentError(f"pmap: axis_size must be a positive int, not {axis_size!r}"))
    if isinstance(static_broadcasted_argnums, int):
        static_broadcasted_argnums = (static_broadcasted_argnums,)
    from .frontend.normalize import NormalizedFunction

    if isinstance(fn, NormalizedFunction):  # pragma: no cover - refused by the reader first
        fn = fn.fn
    from .vmap import _freeze

    statics = tuple(static_broadcasted_argnums)
    options = (axis_name, _freeze(in_axes), _freeze(out_axes), statics,
               tuple(devices) if isinstance(devices, (list, tuple)) else devices, axis_size, backend)
    return reuse.reused(fn, "pmap", options, lambda: _pmap(fn, axis_name, in_axes, out_axes, statics, devices,
                                                          axis_size))


def _pmap(fn: Callable[..., Any], axis_name: Any, in_axes: Axes, out_axes: Axes, statics: tuple[int, ...],
          devices: Sequence[Any] | None, axis_size: int | None) -> Any:
    try:
        return Pmapped(fn, axis_name, in_axes, out_axes, statics, devices, axis_size)
    except TranspileError as e:
        raise _clean(e) from None


pmap.__srcjax_transform__ = True  # type: ignore[attr-defined]  # (inside transformed code: its vmap)
