"""Argument conversion for the binding twins: the one piece of logic per C type, shared by both.

The generated wrappers (``tools/gen_bindings.py``) take an in-range ``int`` inline and call ``convert``
for anything else, so the error path, and its messages, are this function in both twins.
"""
import operator

from accel._cudart_table import TYPES

__all__ = ["convert", "ipc_handle", "prop_head"]

IPC_HANDLE_SIZE = 64


def convert(value, func, param, ctype):
    """``value`` as an int that fits the C type ``ctype``, or TypeError / OverflowError naming ``param``.

    ``int`` (and bool) are taken as they are; other objects through ``__index__``, whose exceptions
    propagate unchanged.
    """
    if not isinstance(value, int):
        if not hasattr(type(value), "__index__"):
            raise TypeError(f"{func}() argument '{param}' must be an int, not {type(value).__name__}: {value!r}")
        value = operator.index(value)
    _, lo, hi = TYPES[ctype]
    if not lo <= value <= hi:
        raise OverflowError(f"{func}() argument '{param}' = {value} does not fit the C type {ctype} "
                            f"(expected {lo} <= {param} <= {hi})")
    return int(value)


def ipc_handle(value, func, param):
    """The bytes of a 64-byte IPC handle given as a bytes-like object."""
    try:
        raw = bytes(memoryview(value))
    except TypeError:
        raise TypeError(f"{func}() argument '{param}' must be a bytes-like object of {IPC_HANDLE_SIZE} bytes, "
                        f"not {type(value).__name__}: {value!r}") from None
    if len(raw) != IPC_HANDLE_SIZE:
        raise ValueError(f"{func}() argument '{param}' must be {IPC_HANDLE_SIZE} bytes, got {len(raw)}")
    return raw


def prop_head(raw):
    """(name, uuid, total_memory) from the stable head of a cudaDeviceProp buffer: name[256] at 0,
    uuid[16] at 256, totalGlobalMem (size_t) at 288."""
    return (raw[:256].split(b"\0", 1)[0].decode(errors="replace"), raw[256:272],
            int.from_bytes(raw[288:296], "little"))
