"""The torch names of the lazy ops, derived from the op table: importing this module imports every op
family of accel.lazy.ops (which declare their ops in accel.lazy._optable), binds the declared methods and
operators to LazyTensor, and exports the declared module functions (torch.exp, torch.matmul, ...)."""
from accel.lazy import _optable
from accel.lazy.ops import (  # noqa: F401
    casts, elementwise, factories, indexing, inplace, linalg, nn, norms, optim, random, reductions, selection,
    sorting, views)
from accel.lazy.tensors import LazyTensor


def _bind():
    for name, f in _optable.METHODS.items():
        if name in LazyTensor.__dict__:
            raise RuntimeError(f"accel.lazy op table: LazyTensor already has {name!r}")
        setattr(LazyTensor, name, f)
    g = globals()
    for name, f in _optable.FUNCTIONS.items():
        g[name] = f
    return sorted(_optable.FUNCTIONS)


__all__ = _bind()
