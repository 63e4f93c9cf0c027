"""Runs PTX kernels on the emulator's PTX engine through its test entry point (accelEmuPtxRun), with
device memory from the emulator's cudaMalloc; shared by the engine's tests and benches."""
import ctypes
import os
import pathlib

import numpy as np

from accel import _lib

DATA = pathlib.Path(__file__).resolve().parent / "data" / "ptx"
HAVE_EMU = os.path.exists(_lib.emu_path())

# ptx.h's codes
OK, INVALID_PTX, NOT_FOUND, ILLEGAL_ADDRESS, LAUNCH_TIMEOUT, MISALIGNED, LAUNCH_FAILED, NOT_SUPPORTED = \
    0, 218, 500, 700, 702, 716, 719, 801
ILLEGAL_INSTRUCTION = 715
UNSUPPORTED_PTX_VERSION = 222

_lib_handle = None


def lib():
    global _lib_handle
    if _lib_handle is None:
        h = ctypes.CDLL(_lib.emu_path())
        h.accelEmuPtxRun.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint), ctypes.c_size_t,
                                     ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
        h.accelEmuPtxBuild.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
        h.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        h.cudaFree.argtypes = [ctypes.c_void_p]
        h.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _lib_handle = h
    return _lib_handle


def ptx(name):
    return (DATA / f"{name}.ptx").read_text()


class Dev:
    """A device buffer holding a numpy array's bytes (cudaMalloc + cudaMemcpy)."""

    def __init__(self, arr):
        self.arr = np.ascontiguousarray(arr)
        self.ptr = ctypes.c_void_p()
        n = max(self.arr.nbytes, 1)
        assert lib().cudaMalloc(ctypes.byref(self.ptr), n) == 0
        if self.arr.nbytes:
            assert lib().cudaMemcpy(self.ptr, self.arr.ctypes.data, self.arr.nbytes, 1) == 0
        self.addr = ctypes.c_uint64(self.ptr.value)

    def get(self):
        out = np.empty_like(self.arr)
        if out.nbytes:
            assert lib().cudaMemcpy(out.ctypes.data, self.ptr, out.nbytes, 2) == 0
        return out

    def free(self):
        if self.ptr:
            lib().cudaFree(self.ptr)
            self.ptr = None

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass


def _arg(v):
    if isinstance(v, Dev):
        return v.addr
    if isinstance(v, (ctypes._SimpleCData, ctypes.Structure, ctypes.Array)):
        return v
    if isinstance(v, np.generic):
        return (ctypes.c_char * v.nbytes).from_buffer_copy(v.tobytes())
    if isinstance(v, bytes):
        return (ctypes.c_char * len(v)).from_buffer_copy(v)
    raise TypeError(f"kernel argument {v!r}: expected a Dev, a ctypes value, a numpy scalar or bytes")


def run(texts, kernel, grid, block, args, smem=0):
    """Builds `texts` (a PTX string or a list of them) and runs `kernel`; returns (code, message)."""
    if isinstance(texts, str):
        texts = [texts]
    grid = tuple(grid) + (1,) * (3 - len(grid))
    block = tuple(block) + (1,) * (3 - len(block))
    keep = [_arg(a) for a in args]
    ptrs = (ctypes.c_void_p * max(len(keep), 1))(*[ctypes.cast(ctypes.pointer(k), ctypes.c_void_p) for k in keep])
    arr = (ctypes.c_char_p * len(texts))(*[t.encode() for t in texts])
    err = ctypes.create_string_buffer(1024)
    rc = lib().accelEmuPtxRun(arr, len(texts), kernel.encode(), (ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block),
                              smem, ptrs, len(keep), err, len(err))
    return rc, err.value.decode()


def run_ok(texts, kernel, grid, block, args, smem=0):
    rc, msg = run(texts, kernel, grid, block, args, smem)
    assert rc == OK, f"launch of {kernel} failed with {rc}: {msg}"


def build(texts):
    if isinstance(texts, str):
        texts = [texts]
    arr = (ctypes.c_char_p * len(texts))(*[t.encode() for t in texts])
    err = ctypes.create_string_buffer(1024)
    rc = lib().accelEmuPtxBuild(arr, len(texts), err, len(err))
    return rc, err.value.decode()


def kernel_name(text):
    """The first .entry's name in a PTX text."""
    for line in text.splitlines():
        line = line.strip()
        if ".entry" in line:
            return line.split(".entry", 1)[1].strip().rstrip("(").strip()
    raise ValueError("no .entry")


def numba_array_args(arr_dev, n, itemsize):
    """numba's 7 parameters of a 1-D array: meminfo, parent, nitems, itemsize, data, shape, stride."""
    return [ctypes.c_uint64(0), ctypes.c_uint64(0), ctypes.c_int64(n), ctypes.c_int64(itemsize), arr_dev.addr,
            ctypes.c_int64(n), ctypes.c_int64(itemsize)]


def numba_nd_args(dev, arr):
    """numba's 5 + 2*ndim parameters of a C-contiguous array held by `dev`."""
    a = np.asarray(arr)
    return ([ctypes.c_uint64(0), ctypes.c_uint64(0), ctypes.c_int64(a.size), ctypes.c_int64(a.itemsize), dev.addr]
            + [ctypes.c_int64(s) for s in a.shape] + [ctypes.c_int64(s) for s in a.strides])
