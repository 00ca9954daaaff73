"""The primitive table (see ``registry``); importing this package registers every family."""

from . import registry  # noqa: F401
from . import elementwise, linalg, reductions, shape  # noqa: F401

for _optional in ("shape_ops", "creation"):
    try:
        __import__(f"{__name__}.{_optional}")
    except ModuleNotFoundError as _e:  # pragma: no cover - during development only
        if _e.name != f"{__name__}.{_optional}":
            raise
