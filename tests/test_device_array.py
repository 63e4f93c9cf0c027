"""DeviceArray (issue 21): device memory that keeps its dtype, shape and strides, on both twins (emulator).

Layout: properties, basic indexing / reshape / view(dtype) / .T against numpy's own views of the same host
array; typed copies (non-contiguous views included); the CUDA Array Interface and DLPack capsules read
field by field with ctypes (no consumer needed), every dtype DLPack has and a clear error for the others;
typed import (from_dlpack / as_buffer) with the producer kept alive and its read-only flag honoured; the
exchange's stream rule (the consumer's stream waits, nothing is recorded on the buffer); the lifetime
matrix (copies refused, weak references, cycles, threads, fork, exit); consumers: torch when importable,
cuda.core's StridedMemoryView both ways (a fresh interpreter on the stand-ins).
"""
import copy
import gc
import importlib.util
import os
import pathlib
import pickle
import threading
import weakref

import numpy as np
import pytest

import accel.cuda as cuda
from accel import _memory_interop as _mi

pytestmark = pytest.mark.emu_only

_HERE = pathlib.Path(__file__).resolve().parent


def _load(name):
    spec = importlib.util.spec_from_file_location(name, _HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_fx = _load("memory_fixtures")
F = _load("lifetime_fixtures")
_sfx = _load("standin_fixtures")
Gate, mem, rt, streams, emu = _fx.Gate, _fx.mem, _fx.rt, _fx.streams, _fx.emu

HAVE_ML_DTYPES = importlib.util.find_spec("ml_dtypes") is not None


def _dev(mem, host, device=0, stream=None):
    """A DeviceArray of the twin holding ``host`` (a C-contiguous numpy array)."""
    a = mem.as_array(mem.alloc(host.nbytes, device=device, stream=stream), host.dtype, host.shape)
    a.copy_from_host(host)
    return a


def _same_view(v, e, a, x):
    """DeviceArray view ``v`` of ``a`` is numpy view ``e`` of ``x``: shape, strides, offset and elements."""
    assert v.shape == e.shape and v.strides == e.strides and v.dtype == e.dtype
    assert v.ptr - a.ptr == e.__array_interface__["data"][0] - x.__array_interface__["data"][0]
    h = v.copy_to_host()
    assert h.dtype == e.dtype and h.shape == e.shape and h.flags.c_contiguous
    assert np.array_equal(h, e)


# -- properties ----------------------------------------------------------------------------------------------

@pytest.mark.devices(2)
def test_properties(mem, streams):
    s = streams.Stream(device=1)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = _dev(mem, x, device=1, stream=s)
    assert type(a).__name__ == "DeviceArray"
    assert (a.dtype, a.shape, a.strides, a.ndim, a.size, a.itemsize, a.nbytes) == (
        np.dtype(np.float32), (2, 3, 4), (48, 16, 4), 3, 24, 4, 96)
    assert a.ptr == a.buffer.ptr and a.buffer.nbytes == 96 and type(a.buffer).__name__ == "DeviceBuffer"
    assert a.device.index == 1 and a.device.type == "cuda" and a.stream is s
    assert not a.readonly and not a.closed and len(a) == 2
    assert repr(a) == f"<accel.cuda.DeviceArray shape=(2, 3, 4) dtype=float32 device=cuda:1 ptr={a.ptr:#x}>"
    with pytest.raises(TypeError, match="cannot be created directly"):
        type(a)()
    z = mem.as_array(mem.alloc(8), np.float64, ())
    assert z.shape == () and z.strides == () and z.ndim == 0 and z.size == 1 and z.nbytes == 8
    with pytest.raises(TypeError, match=r"^len\(\) of unsized object$"):
        len(z)
    a.free()
    assert a.closed and repr(a).endswith("freed>")
    z.free()


def test_as_array_checks_its_layout(mem):
    buf = mem.alloc(64)
    for args, exc, match in (
            ((np.float32, (17,)), ValueError, r"reaches bytes \[0, 68\) outside its buffer of 64 bytes"),
            ((np.float32, (4,), (-4,)), ValueError, r"reaches bytes \[-12, 4\) outside"),
            ((np.float32, (4,), None, 60), ValueError, "outside its buffer"),
            ((np.float32, (2, 2), (4,)), ValueError, "one entry per dimension"),
            ((object, (2,)), TypeError, "cannot hold Python objects, got dtype object"),
            (("zz", (2,)), TypeError, "dtype must be a numpy dtype .* got str: 'zz'"),
            ((np.dtype(("f4", (2,))), (2,)), TypeError, "without subarray dimensions"),
            ((np.float32, (-1,)), ValueError, r"negative dimensions are not allowed, got shape \(-1,\)"),
            ((np.float32, ("3",)), TypeError, "shape entries must be ints, got str: '3'"),
            ((np.float32, (2,), ("4",)), TypeError, "strides must hold ints"),
            ((np.float32, (2,), None, 1.5), TypeError, "offset must be an int")):
        with pytest.raises(exc, match=match):
            mem.as_array(buf, *args)
    with pytest.raises(TypeError, match="buf must be a DeviceBuffer, got int"):
        mem.as_array(5, np.uint8, (1,))
    assert mem.as_array(buf, np.float32, (4,), (-4,), 12).ptr == buf.ptr + 12
    buf.free()


# -- views -----------------------------------------------------------------------------------------------------

KEYS = [0, -1, 1, slice(None), slice(1, 2), slice(None, None, -1), slice(5, 0, -2), slice(10, 20), slice(3, 3),
        (Ellipsis, 1), (slice(None), slice(None, None, 2)), (1, 2), (1, 2, 3), (-1, slice(None, None, -1), 0),
        (None, 0), (slice(None), None, slice(1, 3)), Ellipsis, (), np.int64(1), (0, Ellipsis, slice(None, None, -3)),
        (slice(None, None, 2), slice(None, None, -1), slice(1, None, 2))]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_basic_indexing_is_numpys(mem, key):
    x = np.arange(2 * 3 * 5, dtype=np.int16).reshape(2, 3, 5)
    a = _dev(mem, x)
    k = key if isinstance(key, tuple) else (key,)
    if not any(i is Ellipsis for i in k):
        k += (Ellipsis,)                   # numpy's view (not a scalar) when every index is an int
    _same_view(a[key], x[k], a, x)
    a.free()


def _random_key(rng, nd):
    def one():
        r = rng.random()
        if r < 0.35:
            return int(rng.integers(-8, 8))
        if r < 0.9:
            pick = lambda: None if rng.random() < 0.3 else int(rng.integers(-9, 9))   # noqa: E731
            step = None if rng.random() < 0.3 else int(rng.choice([-3, -2, -1, 1, 2, 3]))
            return slice(pick(), pick(), step)
        return None if r < 0.95 else Ellipsis
    key = tuple(one() for _ in range(int(rng.integers(0, nd + 2))))
    if sum(k is Ellipsis for k in key) > 1:
        key = tuple(k for k in key if k is not Ellipsis)
    return key if len(key) != 1 or rng.random() < 0.5 else key[0]


def test_random_basic_indexing_matches_numpy(mem):
    """500 random keys (ints, slices of any step, None, Ellipsis; the fast paths and the general one) on a
    (4, 5, 6) array: the same view as numpy, or the same exception and message."""
    rng = np.random.default_rng(21)
    x = np.arange(4 * 5 * 6, dtype=np.int32).reshape(4, 5, 6)
    a = _dev(mem, x)
    for _ in range(500):
        key = _random_key(rng, 3)
        k = key if isinstance(key, tuple) else (key,)
        try:
            e = x[k if any(i is Ellipsis for i in k) else k + (Ellipsis,)]
        except IndexError as exc:
            with pytest.raises(IndexError) as got:
                a[key]
            assert str(got.value) == str(exc), key
            continue
        _same_view(a[key], e, a, x)
    a.free()


def test_views_of_views_keep_the_layout(mem):
    x = np.arange(6 * 8, dtype=np.float64).reshape(6, 8)
    a = _dev(mem, x)
    _same_view(a[::-1][1:5, ::3][::-2], x[::-1][1:5, ::3][::-2], a, x)
    _same_view(a.T, x.T, a, x)
    _same_view(a[:, 1::2].T[::-1], x[:, 1::2].T[::-1], a, x)
    _same_view(a[2][3], x[2][3:4].reshape(()), a, x)          # ints down to 0-d
    for it, e in zip(a, x):                                     # iteration over the first axis, as numpy
        _same_view(it, e, a, x)
    a.free()


@pytest.mark.parametrize("key, exc, match", [
    (6, IndexError, "^index 6 is out of bounds for axis 0 with size 6$"),
    (-7, IndexError, "^index -7 is out of bounds for axis 0 with size 6$"),
    ((0, 8), IndexError, "^index 8 is out of bounds for axis 1 with size 8$"),
    ((0, 0, 0), IndexError, "too many indices"),
    (slice(None, None, 0), ValueError, "^slice step cannot be zero$"),
    ([0, 1], TypeError, r"basic indices only .*got list: \[0, 1\]"),
    (True, TypeError, "basic indices only .*got bool: True"),
    (1.0, TypeError, "basic indices only .*got float: 1.0"),
    (np.array([1]), TypeError, "basic indices only .*got ndarray"),
    ((Ellipsis, Ellipsis), IndexError, "single ellipsis"),
])
def test_bad_index_is_refused_as_numpy_does(mem, key, exc, match):
    a = _dev(mem, np.zeros((6, 8), np.float32))
    with pytest.raises(exc, match=match):
        a[key]
    a.free()


def test_reshape_and_view_without_copies(mem):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = _dev(mem, x)
    for args in ((6, 4), ((2, 2, 6),), (-1,), ((3, -1),), (24, 1)):
        _same_view(a.reshape(*args), x.reshape(*args), a, x)
    _same_view(a[:, ::2].reshape(-1), x[:, ::2].reshape(-1), a, x)      # still expressible without a copy
    _same_view(a[1:3].reshape(3, 4), x[1:3].reshape(3, 4), a, x)
    _same_view(a.view(np.int32), x.view(np.int32), a, x)
    _same_view(a.view(np.uint8), x.view(np.uint8), a, x)
    _same_view(a.view(np.complex64), x.view(np.complex64), a, x)
    _same_view(a[::2].view(np.float16), x[::2].view(np.float16), a, x)  # the last axis is contiguous
    with pytest.raises(ValueError, match=r"^cannot reshape a DeviceArray of shape \(6, 4\) and strides \(4, 24\) "
                                         r"into shape \(24,\) without a copy$"):
        a.T.reshape(24)
    with pytest.raises(ValueError, match=r"^cannot reshape a DeviceArray of shape \(4, 6\) \(size 24\) into shape "
                                         r"\(5, 5\)$"):
        a.reshape(5, 5)
    with pytest.raises(TypeError, match="shape entries must be ints, got float"):
        a.reshape(4.0, 6)
    with pytest.raises(ValueError, match=r"^cannot view a DeviceArray of dtype float32, shape \(6, 4\) and strides "
                                         r"\(4, 24\) as float64: "):
        a.T.view(np.float64)
    with pytest.raises(TypeError, match="cannot hold Python objects"):
        a.view(object)
    a.free()


# -- typed copies ---------------------------------------------------------------------------------------------

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16,
          np.float32, np.float64, np.complex64, np.complex128, np.dtype("datetime64[ns]"),
          np.dtype([("a", "<i4"), ("b", "<f8")]), np.dtype("S5"), np.dtype(">f4")]


def _sample(dtype, shape):
    dtype = np.dtype(dtype)
    raw = (np.arange(int(np.prod(shape)) * dtype.itemsize) * 37 % 251).astype(np.uint8)
    if dtype.kind == "b":
        raw = raw % 2
    elif dtype.kind in "fc":                        # finite numbers: NaN payloads compare unequal
        return (np.arange(int(np.prod(shape))) * 1.25 - 3).astype(dtype).reshape(shape)
    return raw.view(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_copy_round_trip_keeps_dtype_and_shape(mem, dtype):
    x = _sample(dtype, (3, 4))
    a = _dev(mem, x)
    h = a.copy_to_host()
    assert h.dtype == x.dtype and h.shape == (3, 4) and h.tobytes() == x.tobytes()
    t = a[::-1, 1::2].copy_to_host()
    assert t.dtype == x.dtype and t.tobytes() == np.ascontiguousarray(x[::-1, 1::2]).tobytes()
    a.free()


def test_zero_d_and_empty(mem):
    z = _dev(mem, np.array(2.5, np.float64))
    assert z.copy_to_host().shape == () and z.copy_to_host() == 2.5
    z.copy_from_host(np.array(-1.0))
    assert z.copy_to_host() == -1.0
    z.free()
    for shape in ((0,), (3, 0), (0, 4, 5)):
        e = mem.as_array(mem.alloc(0), np.float32, shape)
        assert e.size == 0 and e.nbytes == 0 and e.copy_to_host().shape == shape
        e.copy_from_host(np.empty(shape, np.float32))
        assert e[1:].shape[0] == max(shape[0] - 1, 0)
        e.free()


def test_non_contiguous_copies_touch_only_the_view(mem):
    x = np.arange(6 * 8, dtype=np.int32).reshape(6, 8)
    a = _dev(mem, x)
    v = a[::-2, 1::3]
    v.copy_from_host(np.full(v.shape, -7, np.int32))
    want = x.copy()
    want[::-2, 1::3] = -7
    assert np.array_equal(a.copy_to_host(), want)
    assert np.array_equal(v.copy_to_host(), np.full(v.shape, -7))
    out = np.empty(v.size, np.int32)                        # any C-contiguous out of the same dtype and size
    assert v.copy_to_host(out) is out and (out == -7).all()
    a.free()


def test_copy_arguments_are_checked(mem):
    a = _dev(mem, np.zeros((4, 6), np.float32))
    cases = [
        (lambda: a.copy_from_host(np.zeros((4, 6), np.float64)), ValueError,
         r"^array has dtype float64 and shape \(4, 6\) but the DeviceArray has dtype float32 and shape \(4, 6\): "
         r"they must match$"),
        (lambda: a.copy_from_host(np.zeros(24, np.float32)), ValueError, r"shape \(24,\) but"),
        (lambda: a.copy_from_host(np.zeros((6, 4), np.float32).T), ValueError, "must be C-contiguous"),
        (lambda: a.copy_from_host("abc"), TypeError, "must be a host array"),
        (lambda: a.copy_to_host(np.zeros(24, np.float64)), ValueError,
         r"^out must have dtype float32 and 24 elements \(the DeviceArray's\), got dtype float64 and shape \(24,\)$"),
        (lambda: a.copy_to_host(np.zeros(25, np.float32)), ValueError, "24 elements"),
        (lambda: a[:, ::2].memset(0), ValueError,
         r"^memset needs a C-contiguous DeviceArray, got shape \(4, 3\) and strides \(24, 8\)$"),
        (lambda: a.copy_from(a.buffer), TypeError, "other must be a DeviceArray, got DeviceBuffer"),
        (lambda: a.copy_from(a.reshape(6, 4)), ValueError, "other has dtype float32 and shape"),
        (lambda: a[:, :3].copy_from(a[:, 3:]), ValueError, "copy_from needs a C-contiguous DeviceArray"),
    ]
    for call, exc, match in cases:
        with pytest.raises(exc, match=match):
            call()
    b = _dev(mem, np.arange(24, dtype=np.float32).reshape(4, 6))
    a.copy_from(b)
    assert np.array_equal(a.copy_to_host(), np.arange(24).reshape(4, 6))
    a[1:3].memset(0)
    assert (a.copy_to_host()[1:3] == 0).all() and a.copy_to_host()[3, 5] == 23
    a.free()
    for call in (a.copy_to_host, lambda: a.copy_from_host(np.zeros((4, 6), np.float32)), lambda: a[1:],
                 lambda: a.memset(0), lambda: a.__cuda_array_interface__, lambda: a.__dlpack__()):
        with pytest.raises(ValueError, match="^the DeviceArray was freed$"):
            call()
    b.free()


# -- the CUDA Array Interface ----------------------------------------------------------------------------------

@pytest.mark.devices(3)
def test_cuda_array_interface(mem, streams):
    s = streams.Stream(device=2)
    x = np.arange(12, dtype=np.complex64).reshape(3, 4)
    a = _dev(mem, x, device=2, stream=s)
    assert a.__cuda_array_interface__ == {"shape": (3, 4), "typestr": "<c8", "data": (a.ptr, False),
                                          "strides": None, "version": 3, "stream": s.cuda_stream}
    v = a[::-1, ::2]
    assert v.__cuda_array_interface__ == {"shape": (3, 2), "typestr": "<c8", "data": (a.ptr + 64, False),
                                          "strides": (-32, 16), "version": 3, "stream": s.cuda_stream}
    for dt, typestr in ((np.bool_, "|b1"), (np.float16, "<f2"), (np.uint64, "<u8"), (">i2", ">i2")):
        b = mem.as_array(mem.alloc(8), dt, (8 // np.dtype(dt).itemsize,))
        assert b.__cuda_array_interface__["typestr"] == typestr
        assert b.__cuda_array_interface__["stream"] == 1          # the legacy default stream is spelled 1
        b.free()
    a.free()


def test_as_buffer_typed_keeps_layout_and_read_only(mem, rt, streams):
    x = np.arange(40, dtype=np.float32).reshape(5, 8)
    a = _dev(mem, x)
    for v, e in ((a, x), (a[::-1, 1::3], x[::-1, 1::3]), (a[2], x[2]), (a[1:1], x[1:1])):
        alias = _mi.as_buffer(rt, mem, streams, v, True)
        assert type(alias) is type(a) and alias.ptr == (v.ptr if v.size else 0)   # CAI v3: 0 when empty
        assert (alias.shape, alias.strides, alias.dtype) == (e.shape, e.strides, e.dtype)
        assert np.array_equal(alias.copy_to_host(), e)
        alias.free()                                  # frees nothing of a
    ro = _mi.as_buffer(rt, mem, streams, _CAI(dict(a.__cuda_array_interface__, data=(a.ptr, True))), True)
    assert ro.readonly
    for write in (lambda: ro.memset(1), lambda: ro.copy_from_host(x), lambda: ro.copy_from(a)):
        with pytest.raises(ValueError, match="^the DeviceArray is read-only$"):
            write()
    with pytest.raises(BufferError, match="read-only DeviceArray needs a versioned"):
        ro.__dlpack__()
    for bad, exc, match in (({"typestr": "<x4"}, ValueError, "typestr '<x4' is not a dtype numpy knows"),
                            ({"typestr": "|O8"}, TypeError, "holds Python objects")):
        with pytest.raises(exc, match=match):
            _mi.as_buffer(rt, mem, streams, _CAI(dict(a.__cuda_array_interface__, **bad)), True)
    assert np.array_equal(a.copy_to_host(), x)
    a.free()


class _CAI:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


# -- DLPack, read with ctypes ---------------------------------------------------------------------------------

def _capsule(cap, versioned):
    name = b"dltensor_versioned" if versioned else b"dltensor"
    assert _mi._api.PyCapsule_IsValid(cap, name)
    m = (_mi._DLManagedVersioned if versioned else _mi._DLManaged).from_address(_mi._api.PyCapsule_GetPointer(cap, name))
    t = m.dl_tensor
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else None
    return m, t, shape, strides


DL = [(np.bool_, 6, 8), (np.int8, 0, 8), (np.int16, 0, 16), (np.int32, 0, 32), (np.int64, 0, 64),
      (np.uint8, 1, 8), (np.uint16, 1, 16), (np.uint32, 1, 32), (np.uint64, 1, 64), (np.float16, 2, 16),
      (np.float32, 2, 32), (np.float64, 2, 64), (np.complex64, 5, 64), (np.complex128, 5, 128)]


@pytest.mark.devices(4)
@pytest.mark.parametrize("dtype, code, bits", DL, ids=lambda v: getattr(v, "__name__", str(v)))
def test_dlpack_capsule_carries_dtype_shape_strides(mem, dtype, code, bits):
    x = _sample(dtype, (4, 6))
    a = _dev(mem, x, device=3)
    for v, e in ((a, x), (a[::-1, 1::2], x[::-1, 1::2]), (a[1, 2], x[1, 2:3].reshape(())), (a[:0], x[:0])):
        for versioned, max_version in ((True, (1, 0)), (True, (1, 3)), (False, None)):
            cap = v.__dlpack__(max_version=max_version)
            m, t, shape, strides = _capsule(cap, versioned)
            if versioned:
                assert (m.version.major, m.version.minor) == (1, 0) and m.flags == 0
            assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (code, bits, 1)
            assert (t.device.device_type, t.device.device_id) == (2, 3) and t.byte_offset == 0
            assert (t.data or 0) == v.ptr and t.ndim == e.ndim and shape == e.shape
            assert strides == tuple(st // e.itemsize for st in e.strides)
            del cap, m, t
    assert not _mi._exports
    back = _mi.from_dlpack(mem, _fx_streams(mem), a[::-1, 1::2], True)     # and read back by accel
    assert (back.dtype, back.shape, back.strides) == (x.dtype, (4, 3), (-6 * x.itemsize, 2 * x.itemsize))
    assert back.copy_to_host().tobytes() == np.ascontiguousarray(x[::-1, 1::2]).tobytes()
    back.free()
    a.free()
    assert not _mi._exports


def _fx_streams(mem):
    import importlib
    return importlib.import_module(mem.__name__.replace("_memory", "_stream"))


@pytest.mark.skipif(not HAVE_ML_DTYPES, reason="ml_dtypes is not installed")
def test_dlpack_bfloat16(mem):
    import ml_dtypes
    x = np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16)
    a = _dev(mem, x)
    m, t, shape, strides = _capsule(a.__dlpack__(max_version=(1, 0)), True)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes, shape) == (4, 16, 1, (6,))
    del m, t
    back = _mi.from_dlpack(mem, _fx_streams(mem), a, True)
    assert back.dtype == x.dtype and back.copy_to_host().tobytes() == x.tobytes()
    back.free()
    a.free()


@pytest.mark.parametrize("dtype", [np.dtype("datetime64[ns]"), np.dtype(">f4"), np.dtype([("a", "<i4")]),
                                   np.dtype("S4"), np.longdouble, np.dtype("V4")], ids=str)
def test_dlpack_refuses_what_it_cannot_express(mem, dtype):
    dtype = np.dtype(dtype)
    a = mem.as_array(mem.alloc(dtype.itemsize * 2), dtype, (2,))
    with pytest.raises(BufferError, match=rf"^DLPack cannot express dtype {__import__('re').escape(str(dtype))} "):
        a.__dlpack__(max_version=(1, 0))
    assert not _mi._exports
    assert a.__cuda_array_interface__["typestr"] == dtype.str          # the CAI can say it
    a.free()


def test_dlpack_refuses_strides_that_are_not_whole_items(mem):
    a = mem.as_array(mem.alloc(32), np.float32, (3,), (5,))
    with pytest.raises(BufferError, match=r"byte strides \(5,\) are not multiples of its item size 4"):
        a.__dlpack__()
    a.free()


def test_dlpack_import_refuses_dtypes_numpy_lacks(mem):
    a = _dev(mem, np.zeros(4, np.uint8))
    for code, bits, lanes, match in ((2, 8, 1, "code 2, bits 8, lanes 1"), (0, 32, 4, "lanes 4"),
                                     (3, 64, 1, "code 3")):
        cap = a.buffer.__dlpack__(max_version=(1, 0))
        _, t, _, _ = _capsule(cap, True)
        t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, lanes
        with pytest.raises(BufferError, match=match):
            _mi.from_dlpack(mem, _fx_streams(mem), F.CapsuleProducer(cap, 0), True)
        del cap, t
    F.collect()
    assert not _mi._exports
    a.free()


def test_from_dlpack_typed_keeps_the_producer_alive(mem, streams):
    before = mem.memory_allocated(0)
    x = np.arange(10, dtype=np.int32).reshape(2, 5)
    a = _dev(mem, x)
    alias = _mi.from_dlpack(mem, streams, a.T, True)
    del a                                            # the export holds the producer
    F.collect()
    assert mem.memory_allocated(0) == before + 40
    assert np.array_equal(alias.copy_to_host(), x.T)
    alias.free()                                     # the deleter runs: the producer is released and freed
    F.collect()
    assert not _mi._exports and mem.memory_allocated(0) == before


def test_read_only_flag_round_trips_through_dlpack(mem, rt, streams):
    a = _dev(mem, np.arange(8, dtype=np.float32))
    ro = _mi.as_buffer(rt, mem, streams, _CAI(dict(a.__cuda_array_interface__, data=(a.ptr, True))), True)
    m, t, _, _ = _capsule(ro.__dlpack__(max_version=(1, 0)), True)
    assert m.flags == 1
    del m, t
    ro2 = _mi.from_dlpack(mem, streams, ro, True)
    assert ro2.readonly and ro2.dtype == np.float32
    with pytest.raises(ValueError, match="^the DeviceArray is read-only$"):
        ro2.copy_from_host(np.zeros(8, np.float32))
    ro2.free()
    ro.free()
    a.free()


# -- the exchange's streams -----------------------------------------------------------------------------------

def test_consumer_stream_waits_and_nothing_is_recorded(mem, rt, streams):
    a_s, b_s = streams.Stream(device=0), streams.Stream(device=0)
    arr = _dev(mem, np.zeros((32, 32), np.float32), stream=a_s)
    a_s.synchronize()
    gate = Gate()
    gate.block(rt, a_s)
    arr.memset(0x3F)                                 # queued behind the gate on the producer's stream
    view = arr[::2]
    cap = view.__dlpack__(stream=b_s.cuda_stream, max_version=(1, 0))
    out = cuda.pinned_empty(4096, np.uint8)
    out[:] = 1
    rt.cudaMemcpyAsync(out.ctypes.data, arr.ptr, 4096, 2, b_s.cuda_stream)  # the consumer's work
    assert (out == 1).all(), "the consumer's stream did not wait for the producer's"
    gate.open()
    b_s.synchronize()
    assert (out == 0x3F).all()
    del cap
    # nothing recorded on the buffer: with the consumer's stream held, freeing completes on the producer's
    gate2 = Gate()
    gate2.block(rt, b_s)
    cai = arr.__cuda_array_interface__
    assert cai["stream"] == a_s.cuda_stream
    arr.free()
    try:
        assert F.wait_until(a_s.query, 2.0), "the free waited for the consumer's stream"
    finally:
        gate2.open()
    b_s.synchronize()


# -- lifetimes ------------------------------------------------------------------------------------------------

ctx, watch, _check = F.ctx, F.watch, F.check      # fixtures and the end of a case, shared with test_lifetime_matrix


@pytest.mark.devices(2)
@pytest.mark.parametrize("op", [copy.copy, copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))],
                         ids=["copy", "deepcopy", "pickle"])
def test_copies_are_refused(ctx, watch, op):
    a = _dev(ctx.mem, np.arange(F.N // 4, dtype=np.float32), device=F.DEV)
    for obj in (a, a[::2]):
        with pytest.raises(TypeError, match=r"^cannot pickle <accel\.cuda\.DeviceArray shape=\(\d+,\) dtype=float32 "
                                            r"device=cuda:1 ptr=0x[0-9a-f]+>: it owns a CUDA resource"):
            op(obj)
    assert np.array_equal(a.copy_to_host(), np.arange(F.N // 4))
    a.free()
    del a, obj
    _check(watch)


@pytest.mark.devices(2)
def test_views_keep_the_buffer_alive_and_weakrefs(ctx, watch):
    before = ctx.mem.memory_allocated(F.DEV)
    a = _dev(ctx.mem, np.arange(64, dtype=np.int64).reshape(8, 8), device=F.DEV)
    v = a[2:4, ::-1]
    ref, bref = weakref.ref(a), weakref.ref(a.buffer)
    del a
    F.collect()
    assert ref() is None and bref() is not None          # the view holds the buffer, not the array
    assert np.array_equal(v.copy_to_host(), np.arange(64).reshape(8, 8)[2:4, ::-1])
    del v
    F.collect()
    assert bref() is None and ctx.mem.memory_allocated(F.DEV) == before
    _check(watch)


@pytest.mark.devices(2)
@pytest.mark.parametrize("order", ["creation", "reversed"])
def test_gc_cycles(ctx, watch, order):
    """Arrays and views in cycles with their holder, with a DLPack export and a typed import in the cycle:
    everything is released once, in either collection order."""
    was = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        h = F.Host()
        a = _dev(ctx.mem, np.arange(F.N, dtype=np.uint8).reshape(16, -1), device=F.DEV)
        if order == "reversed":
            gc.collect(0)
        h.me, h.view, h.arr = h, a[::2, 1:], a
        prod = F.DLPackProducer(a.buffer)                  # a producer over the array's buffer
        h.alias = _mi.from_dlpack(ctx.mem, ctx.sm, a.T, True)
        h.alias2 = _mi.as_buffer(ctx.rt, ctx.mem, ctx.sm, prod, True)
        prod.holder = h
        h.cap = a[1].__dlpack__()
        del h, a, prod
        gc.collect()
    finally:
        if was:
            gc.enable()
    _check(watch)


@pytest.mark.devices(2)
def test_threads_share_an_array(ctx, watch):
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    a = _dev(ctx.mem, x, device=F.DEV)
    errors = []
    barrier = threading.Barrier(8)

    def work(i):
        try:
            barrier.wait()
            for k in range(40):
                v = a[i::8, ::-(k % 3 + 1)]
                assert np.array_equal(v.copy_to_host(), x[i::8, ::-(k % 3 + 1)])
                alias = _mi.from_dlpack(ctx.mem, ctx.sm, v, True)
                assert alias.shape == v.shape and alias.strides == v.strides
                alias.free()
                assert a.T[i].reshape(8, 8).shape == (8, 8)
        except BaseException as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[:3]
    assert not any(t.is_alive() for t in threads)
    a.free()
    del a
    _check(watch)


FORK = r"""
import gc, json, os, signal, sys
import numpy as np
import accel.cuda as cuda
a = cuda.to_device(np.arange(12, dtype=np.float32).reshape(3, 4))
v = a[:, ::2]
pid = os.fork()
if pid == 0:
    signal.alarm(5)
    res = {}
    ops = {"copy_to_host": v.copy_to_host, "copy_from_host": lambda: v.copy_from_host(np.zeros((3, 2), np.float32)),
           "memset": lambda: a.memset(0), "dlpack": v.__dlpack__, "cai": lambda: v.__cuda_array_interface__,
           "to_device": lambda: cuda.to_device(np.zeros(3)), "empty": lambda: cuda.empty(3),
           "from_dlpack": lambda: cuda.from_dlpack(v), "free": a.free}
    for name, fn in ops.items():
        try:
            fn()
            res[name] = "ok"
        except Exception as e:
            res[name] = f"{type(e).__name__}: {e}"
    res["slice"] = str(a[1:].shape)          # metadata only: no CUDA call
    del a, v
    gc.collect()
    os.write(1, json.dumps(res).encode())
    os._exit(0)
_, status = os.waitpid(pid, 0)
print()
print(json.dumps({"status": status, "parent": v.copy_to_host().tolist()}))
keep = (a, v)       # alive at exit
"""


@pytest.mark.parametrize("backend", ["native", "python"])
def test_fork_and_exit(subprocess_python, backend):
    """In a forked child every operation that needs CUDA raises torch's error (none hangs); the parent keeps
    working; the interpreter exits with arrays alive, silently."""
    import json
    from accel import _build_config
    if backend == "native" and not _build_config.NATIVE:
        pytest.skip("installed with -Dnative=false")
    r = subprocess_python(FORK, env={"ACCEL_BACKEND": backend})
    assert r.returncode == 0 and r.stderr == "", r.stderr[-3000:]
    child_line, parent_line = r.stdout.strip().splitlines()
    child, parent = json.loads(child_line), json.loads(parent_line)
    assert parent == {"status": 0, "parent": [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]}
    assert child.pop("slice") == "(2, 4)"
    bad = {k: v for k, v in child.items() if not v.startswith("RuntimeError: Cannot re-initialize CUDA in forked")}
    assert not bad, bad


# -- the twins agree ------------------------------------------------------------------------------------------

def test_twins_have_the_same_surface_and_messages(both_twins):
    import inspect
    arrays = [t.mod("_memory").DeviceArray for t in both_twins]
    names = [sorted(n for n in dir(c) if not n.startswith("_") or n in ("__getitem__", "__dlpack__",
                                                                       "__cuda_array_interface__")) for c in arrays]
    assert names[0] == names[1]
    for name in names[0]:
        fns = [getattr(c, name) for c in arrays]
        if callable(fns[0]) and not name.startswith("__"):
            assert str(inspect.signature(fns[0])) == str(inspect.signature(fns[1])), name
    got = []
    for t in both_twins:
        m = t.mod("_memory")
        a = _dev(m, np.arange(24, dtype=np.int16).reshape(4, 6))
        out = []
        for call in (lambda: a[9], lambda: a[0, -7], lambda: a[::0], lambda: a[[1]], lambda: a.reshape(5),
                     lambda: a.T.reshape(24), lambda: a.T.view(np.int32), lambda: a.copy_from_host(np.zeros(3)),
                     lambda: a.copy_to_host(np.zeros(3)), lambda: a[:, ::2].memset(0), lambda: copy.copy(a),
                     lambda: a.view("datetime64[s]").__dlpack__(), lambda: m.as_array(a.buffer, "f4", (100,)),
                     lambda: a[2**70], lambda: a[::2**40], lambda: len(a[0, 0])):
            try:
                r = call()
                out.append(("ok", r.shape, r.strides, r.ptr - a.ptr) if type(r) is type(a) else ("ok", repr(r)))
            except Exception as e:  # noqa: BLE001
                out.append((type(e).__name__, str(e).replace(repr(a), "<a>")))
        a.free()
        got.append(out)
    assert got[0] == got[1]


# -- accel.cuda ------------------------------------------------------------------------------------------------

@pytest.mark.devices(3)
def test_public_api():
    x = np.arange(8, dtype=np.float32)
    a = cuda.to_device(x)
    assert isinstance(a, cuda.DeviceArray) and a.dtype == np.float32 and a.shape == (8,)
    cai = a.__cuda_array_interface__
    assert (cai["typestr"], cai["shape"]) == ("<f4", (8,))          # issue 21: was '|u1' of 32
    assert np.array_equal(a.copy_to_host(), x)
    assert cuda.to_device(b"abc").copy_to_host().tolist() == [97, 98, 99]
    e = cuda.empty((2, 3), np.int16, device=2)
    assert (e.shape, e.dtype, e.device.index, e.strides) == ((2, 3), np.int16, 2, (6, 2))
    assert cuda.empty(4).dtype == np.float64
    z = cuda.zeros((3, 3), np.complex128)
    assert (z.copy_to_host() == 0).all() and z.dtype == np.complex128
    like = cuda.empty_like(z)
    assert (like.shape, like.dtype, like.device.index) == ((3, 3), np.complex128, 0)
    assert cuda.empty_like(np.zeros((5,), np.uint8), dtype=np.float16).dtype == np.float16
    s = cuda.Stream(device=1)
    on = cuda.empty(16, np.uint8, device=1, stream=s)
    assert on.stream is s
    with pytest.raises(TypeError, match="empty_like needs an array with dtype and shape, got int"):
        cuda.empty_like(3)
    with pytest.raises(ValueError, match="negative dimensions"):
        cuda.empty((2, -1))
    with pytest.raises(ValueError, match="would hold"):
        cuda.empty((2**40, 2**40))
    for alias in (cuda.from_dlpack(a[::2]), cuda.as_buffer(a[::2])):
        assert isinstance(alias, cuda.DeviceArray) and alias.strides == (8,)
        assert np.array_equal(alias.copy_to_host(), x[::2])
        alias.free()
    with cuda.to_device(np.ones((2, 2))) as w:
        assert w.copy_to_host().sum() == 4
    assert w.closed


# -- consumers ------------------------------------------------------------------------------------------------

TORCH = r"""
import json
import numpy as np, torch, accel.cuda as ac
out = []
x = np.arange(24, dtype=np.float32).reshape(4, 6)
a = ac.to_device(x)
for v, e in ((a, x), (a[:, ::2], x[:, ::2]), (a[1, 2], x[1, 2]), (a.T, x.T)):      # accel -> torch
    for t in (torch.from_dlpack(v), torch.as_tensor(v, device="cuda")):
        out.append([str(t.dtype) == "torch.float32", tuple(t.shape) == e.shape,
                    tuple(s * 4 for s in t.stride()) == e.strides, t.data_ptr() == v.ptr,
                    # torch copies a strided tensor to the host with a kernel: only contiguous ones read back
                    not t.is_contiguous() or np.array_equal(t.cpu().numpy(), e),
                    np.array_equal(ac.from_dlpack(t).copy_to_host(), e)])                # and back to accel
h = np.arange(12, dtype=np.float16).reshape(3, 4)
t = torch.from_numpy(h).cuda().t()                                                  # torch -> accel (no kernel)
b = ac.from_dlpack(t)
out.append([b.dtype == np.float16, b.shape == (4, 3), b.strides == (2, 8), b.ptr == t.data_ptr(),
            np.array_equal(b.copy_to_host(), h.T)])
for dt in ("bool", "complex64", "int8", "uint8", "float64"):
    src = torch.from_numpy(np.ones(5, dt)).cuda()
    got = ac.from_dlpack(src).copy_to_host()
    out.append([got.dtype == np.dtype(dt), np.array_equal(got, np.ones(5, dt))])
print(json.dumps(out))
"""


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    return None if torch.version.cuda is not None else f"torch {torch.__version__} is a CPU build"


@_sfx.needs_standins
@pytest.mark.skipif(_torch_cuda() is not None, reason=f"needs torch's CUDA wheel ({_torch_cuda()})")
@pytest.mark.parametrize("backend", ["native", "python"])
def test_torch_both_ways(backend):
    """torch (CUDA wheel) on the stand-ins (`python -m accel emu`), sharing the emulated runtime with accel:
    typed views keep dtype, shape, strides and address both ways; bytes checked (copies only: the emulator
    runs no kernels)."""
    import json
    import subprocess
    import sys
    import tempfile
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEL_CUDART", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES")}
    env["ACCEL_BACKEND"] = backend
    r = subprocess.run([sys.executable, "-m", "accel", "emu", "--devices", "2", "--", sys.executable, "-c", TORCH],
                       env=env, capture_output=True, text=True, timeout=300, cwd=tempfile.gettempdir())
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(out) == 8 + 1 + 5 and all(all(row) for row in out), out


CUDA_CORE = r"""
import accel.emu; accel.emu.activate(devices=2)
import json
import numpy as np, accel.cuda as ac
from cuda.core.utils import StridedMemoryView
out = []
x = np.arange(24, dtype=np.float32).reshape(4, 6)
a = ac.to_device(x)
for src in (a, a[:, ::2], a[::-1, 1:], a[2, 3]):
    v = StridedMemoryView.from_dlpack(src, stream_ptr=-1)             # accel -> cuda.core
    back = ac.from_dlpack(v)                                          # cuda.core -> accel
    out.append([list(v.shape), list(v.strides or ()), str(v.dtype), v.ptr == src.ptr, v.device_id, v.readonly,
                list(back.shape), list(back.strides), back.ptr == src.ptr,
                back.copy_to_host().tolist() == src.copy_to_host().tolist()])
for dt in ("bool", "float16", "complex64", "int8", "uint64"):
    v = StridedMemoryView.from_dlpack(ac.to_device(np.ones((2, 3), dt)), stream_ptr=-1)
    out.append([str(v.dtype), list(v.shape)])
e = StridedMemoryView.from_dlpack(ac.empty((0, 3), np.float32), stream_ptr=-1)
out.append([list(e.shape), str(e.dtype)])
print(json.dumps(out))
"""


@_sfx.needs_standins
@_sfx.needs_cuda_core
@pytest.mark.parametrize("backend", ["native", "python"])
def test_cuda_core_strided_memory_view_both_ways(subprocess_python, backend):
    import json
    r = subprocess_python(CUDA_CORE, env={"ACCEL_BACKEND": backend})
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out[:4] == [
        [[4, 6], [6, 1], "float32", True, 0, False, [4, 6], [24, 4], True, True],
        [[4, 3], [6, 2], "float32", True, 0, False, [4, 3], [24, 8], True, True],
        [[4, 5], [-6, 1], "float32", True, 0, False, [4, 5], [-24, 4], True, True],
        [[], [], "float32", True, 0, False, [], [], True, True]]
    assert out[4:9] == [["bool", [2, 3]], ["float16", [2, 3]], ["complex64", [2, 3]], ["int8", [2, 3]],
                        ["uint64", [2, 3]]]
    assert out[9] == [[0, 3], "float32"]


NUMBA = r"""
import accel.emu; accel.emu.activate(devices=2)
import json
import numpy as np, accel.cuda as ac
from numba import cuda
x = np.arange(24, dtype=np.float32).reshape(4, 6)
a = ac.to_device(x)
out = []
for src in (a, a[:, ::2], a[::-1, 1:], a.T):
    d = cuda.as_cuda_array(src)                       # accel -> numba (CUDA Array Interface)
    b = ac.as_buffer(d)                               # numba -> accel: its bytes read back by accel
    out.append([list(d.shape), list(d.strides), str(d.dtype), d.device_ctypes_pointer.value == src.ptr,
                list(b.shape), list(b.strides), b.ptr == src.ptr,
                b.copy_to_host().tolist() == src.copy_to_host().tolist(),
                # numba's own copy (an async copy to pageable memory on the interface's stream): the bytes
                # have landed when it returns, as on a GPU (numba refuses negative strides)
                None if min(d.strides) < 0 else d.copy_to_host().tolist() == src.copy_to_host().tolist()])
print(json.dumps(out))
"""


@_sfx.needs_standins
@pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None, reason="numba-cuda is not installed")
def test_numba_cuda_as_cuda_array_both_ways(subprocess_python):
    """numba-cuda's as_cuda_array over accel's arrays and views, and accel over numba's; numba's own
    copy_to_host of accel's views reads the right bytes (issue 31: it read them before they landed)."""
    import json
    r = subprocess_python(NUMBA)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [
        [[4, 6], [24, 4], "float32", True, [4, 6], [24, 4], True, True, True],
        [[4, 3], [24, 8], "float32", True, [4, 3], [24, 8], True, True, True],
        [[4, 5], [-24, 4], "float32", True, [4, 5], [-24, 4], True, True, None],
        [[6, 4], [4, 24], "float32", True, [6, 4], [4, 24], True, True, True]]


def test_readme_hand_off_section(subprocess_python):
    """docs/memory.md's hand-off example: it names each consumer, and its accel lines (and the consumers'
    that are importable here, with a device) run on the emulator."""
    section = (_HERE.parent / "docs" / "memory.md").read_text()
    code = section[section.index("```py\n") + 6:section.index("```", section.index("```py\n") + 6)]
    for call in ("torch.from_dlpack(", "torch.as_tensor(", "cupy.from_dlpack(", "numba.cuda.as_cuda_array(",
                 "jax.dlpack.from_dlpack(", "cuda.from_dlpack(", "cuda.to_device("):
        assert call in code, call
    lines = []
    for line in code.splitlines():
        peer = line.split("=", 1)[-1].strip().split(".")[0].split("(")[0]
        if peer in ("torch", "cupy", "numba", "jax") or "t.T" in line:
            continue                       # consumers: tests of their own above, where importable
        lines.append(line)
    lines.append("assert (a.dtype.name, a.shape, v.shape, v.strides) == ('float32', (3, 4), (3, 2), (16, 8))")
    lines.append("assert v.__cuda_array_interface__['strides'] == (16, 8)")
    r = subprocess_python("\n".join(lines))
    assert r.returncode == 0, r.stderr
