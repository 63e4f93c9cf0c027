"""``torch.linalg`` forms of the lazy ops (``accel.lazy.linalg.vector_norm``): what the op table declares for
this namespace."""
from accel.lazy import _optable
from accel.lazy import functions as _functions  # noqa: F401  (fills the op table)


def _export():
    g = globals()
    for name, f in _optable.LINALG.items():
        g[name] = f
    return sorted(_optable.LINALG)


__all__ = _export()
