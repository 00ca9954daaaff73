"""The primitive table (see ``registry``); importing this package registers every family."""

from . import (  # noqa: F401
    ad_prims,  # noqa: F401,E402  (after shape: it reuses the indexing plan)
    collectives,
    complex,
    construction,
    creation,
    decomp,
    dynamic_slicing,
    elementwise,
    fft,
    in_place,
    linalg,
    reductions,
    registry,
    shape,
    shape_ops,
    sorting,
    special,
    stop_gradient,
    take,  # noqa: F401  (after shape: it reuses the gather of integer-array indexing)
    windows,
)
