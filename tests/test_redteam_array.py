"""Red-team probes of DeviceArray (issue 21) through its public surface, on both twins (emulator).

Each test is one defect found by a hostile probe (numpy, the CUDA Array Interface v3 and DLPack 1.x as the
oracles), or pins a documented deviation.  A failed call must change nothing: the memory counters, the
array's bytes and the exports' registry are checked after each refusal.
"""
import importlib
import importlib.util
import pathlib
import re

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
mem, rt, streams = _fx.mem, _fx.rt, _fx.streams


def _dev(mem, host, device=0):
    a = mem.as_array(mem.alloc(host.nbytes, device=device), host.dtype, host.shape)
    a.copy_from_host(host)
    return a


class _CAI:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


def _cai(a, **kw):
    """A foreign producer of ``a``'s memory through the CUDA Array Interface (``kw`` overrides entries)."""
    d = dict(a.__cuda_array_interface__)
    d.update(kw)
    return _CAI(d)


def _capsule(cap):
    m = _mi._DLManagedVersioned.from_address(_mi._api.PyCapsule_GetPointer(cap, b"dltensor_versioned"))
    return m, m.dl_tensor


# -- shapes numpy refuses --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(0, 2**62, 2**62), (0, 2**30, 2**30, 2**30), (2**40, 0, 2**40)])
def test_shape_too_big_is_refused_even_when_empty(mem, shape):
    """numpy refuses an array whose non-zero dimensions multiply past 2**63 bytes, even with a 0 in the shape
    ("array is too big"); accepted, its byte strides pass 2**63 and the DLPack export truncated them."""
    before = mem.memory_allocated(0)
    buf = mem.alloc(0)
    with pytest.raises(ValueError, match=r"too big"):
        np.empty(shape, np.float64)
    with pytest.raises(ValueError, match=rf"^a DeviceArray of shape {re.escape(str(shape))} and item size 8 is too big"):
        mem.as_array(buf, np.float64, shape)
    x = mem.as_array(mem.alloc(8), np.float64, (1,))
    with pytest.raises(ValueError, match=r"too big"):
        _mi.as_buffer(rt_of(mem), mem, streams_of(mem), _CAI({"shape": shape, "typestr": "<f8", "data": (0, False),
                                                                "version": 3}), True)
    buf.free()
    x.free()
    assert mem.memory_allocated(0) == before


def rt_of(mem):
    m = importlib.import_module(mem.__name__.replace("_memory", "_cudart"))
    m.load()
    return m


def streams_of(mem):
    return importlib.import_module(mem.__name__.replace("_memory", "_stream"))


def test_more_than_64_dimensions_are_refused(mem):
    """numpy's limit is 64 dimensions; a 65-dimensional DeviceArray could not be copied to the host."""
    buf = mem.alloc(8)
    with pytest.raises(ValueError, match=r"at most 64 dimensions"):
        mem.as_array(buf, np.float64, (1,) * 65)
    with pytest.raises(ValueError, match=r"at most 64 dimensions"):
        mem.as_array(buf, np.float64, (1,) * 65, (8,) * 65)
    a = mem.as_array(buf, np.float64, (1,) * 64)
    assert a.copy_to_host().shape == (1,) * 64
    buf.free()


def test_public_empty_refuses_what_numpy_refuses():
    before = cuda.memory_allocated(0)
    for shape in ((0, 2**62, 2**62), (1,) * 65):
        with pytest.raises(ValueError):
            np.empty(shape, np.float64)
        with pytest.raises(ValueError):
            cuda.empty(shape)
    assert cuda.memory_allocated(0) == before


def test_dlpack_capsule_with_more_than_64_dims_is_refused_unread(mem):
    """A capsule's ndim beyond numpy's 64 is refused before its shape is read (a lying ndim would read
    past the producer's shape array); the capsule stays unconsumed for its producer to delete."""
    a = _dev(mem, np.arange(4, dtype=np.float32))
    cap = a.__dlpack__(max_version=(1, 0))
    _, t = _capsule(cap)
    t.ndim = 65
    with pytest.raises(BufferError, match=r"ndim must be at most 64, got 65"):
        _mi.from_dlpack(mem, streams_of(mem), F.CapsuleProducer(cap, 0), True)
    assert _mi._api.PyCapsule_IsValid(cap, b"dltensor_versioned")     # not consumed
    del cap, t
    F.collect()
    assert not _mi._exports
    a.free()


def test_shape_may_be_a_numpy_integer_array():
    """numpy takes a 1-d integer array as a shape; accel answered with numpy's internal message."""
    a = cuda.empty(np.array([2, 3]), np.float32)
    assert a.shape == (2, 3) and all(type(s) is int for s in a.shape)
    a.free()
    with pytest.raises(TypeError, match=r"^shape entries must be ints, got float: 2\.0$"):
        cuda.empty(np.array([2.0, 3.0]))


# -- writes through overlapping views --------------------------------------------------------------------------

def test_copy_from_host_into_a_self_overlapping_view_is_refused(mem, rt, streams):
    """A producer's broadcast view (stride 0, as torch's expand exports it) has elements sharing bytes:
    copy_from_host wrote each row over the last and kept only the last (torch refuses such writes)."""
    x = np.arange(4, dtype=np.float32)
    a = _dev(mem, x)
    for shape, strides in (((3, 4), (0, 4)), ((4, 2), (4, 4)), ((3,), (2,))):
        b = _mi.as_buffer(rt, mem, streams, _cai(a, shape=shape, strides=strides), True)
        with pytest.raises(ValueError, match=r"^cannot copy into a DeviceArray whose elements overlap in memory"):
            b.copy_from_host(np.full(shape, 7, np.float32))
        assert np.array_equal(a.copy_to_host(), x)          # nothing written
        b.free()
    # interleaved but disjoint: accepted, bytes right
    c = _dev(mem, np.zeros(12, np.float32))
    v = _mi.as_buffer(rt, mem, streams, _cai(c, shape=(3, 2), strides=(8, 12)), True)
    v.copy_from_host(np.array([[1, 2], [3, 4], [5, 6]], np.float32))
    got = c.copy_to_host()
    e = np.zeros(12, np.float32)
    np.lib.stride_tricks.as_strided(e, (3, 2), (8, 12))[...] = [[1, 2], [3, 4], [5, 6]]
    assert np.array_equal(got, e)
    v.free()
    c.free()
    a.free()


# -- the CUDA Array Interface ----------------------------------------------------------------------------------

def test_cai_of_an_empty_view_has_a_null_pointer(mem):
    """CAI v3: "For zero-size arrays, use 0 here" (the buffer's own export does; a[2:2] gave its address)."""
    a = _dev(mem, np.arange(24, dtype=np.float32).reshape(4, 6))
    for v in (a[2:2], a[:, 6:], a[1:1, ::2]):
        assert v.__cuda_array_interface__["data"] == (0, False)
    assert a.__cuda_array_interface__["data"] == (a.ptr, False)
    a.free()


def test_cai_mask_is_refused(mem, rt, streams):
    """CAI v3's ``mask`` marks invalid elements; accel ignored it and read them as data."""
    before = mem.memory_allocated(0)
    a = _dev(mem, np.arange(6, dtype=np.float32))
    m = _dev(mem, np.ones(6, np.bool_))
    with pytest.raises(BufferError, match=r"masked CUDA arrays are not supported"):
        _mi.as_buffer(rt, mem, streams, _cai(a, mask=m), True)
    b = _mi.as_buffer(rt, mem, streams, _cai(a, mask=None), True)       # None: every element valid
    assert np.array_equal(b.copy_to_host(), np.arange(6, dtype=np.float32))
    b.free()
    a.free()
    m.free()
    assert mem.memory_allocated(0) == before


STRUCT = np.dtype([("a", "<f4"), ("b", "u1"), ("c", "<i2", (2,))])
ALIGNED = np.dtype([("a", "u1"), ("b", "<f8")], align=True)


@pytest.mark.parametrize("dtype", [STRUCT, ALIGNED], ids=["packed", "aligned"])
def test_cai_keeps_a_structured_dtype(mem, rt, streams, dtype):
    """A structured dtype went out as typestr '|V9' alone and came back as void: the export now carries
    ``descr`` (as numpy's array interface) and the import reads it."""
    x = np.zeros(3, dtype)
    x["a"] = [1, 2, 3]
    a = _dev(mem, x)
    cai = a.__cuda_array_interface__
    assert cai["typestr"] == f"|V{dtype.itemsize}" and np.lib.format.descr_to_dtype(cai["descr"]) == dtype
    b = _mi.as_buffer(rt, mem, streams, a, True)
    assert b.dtype == dtype and b.copy_to_host().tobytes() == x.tobytes()
    b.free()
    with pytest.raises(ValueError, match=r"descr .* has item size 4 but the typestr '\|V\d+' says \d+"):
        _mi.as_buffer(rt, mem, streams, _cai(a, descr=[("a", "<f4")]), True)
    a.free()


def test_cai_of_a_plain_dtype_has_no_descr(mem):
    a = _dev(mem, np.arange(3, dtype=np.float32))
    assert "descr" not in a.__cuda_array_interface__
    a.free()


def test_cai_byte_swapped_typestr_is_exported_as_is(mem):
    """Pinned: CAI can say byte order ('>f4'; DLPack cannot, a BufferError): the typestr is numpy's."""
    a = _dev(mem, np.arange(3, dtype=">f4"))
    assert a.__cuda_array_interface__["typestr"] == ">f4"
    with pytest.raises(BufferError, match="DLPack cannot express dtype >f4"):
        a.__dlpack__(max_version=(1, 0))
    a.free()


# -- DLPack producers that lie ---------------------------------------------------------------------------------

class _BadDevice:
    def __init__(self, dev, cap=None):
        self.dev, self.cap = dev, cap

    def __dlpack_device__(self):
        return self.dev

    def __dlpack__(self, **kw):
        return self.cap


@pytest.mark.parametrize("dev", ["cuda", (2,), (2, 0, 0), None, (2, "0")])
def test_malformed_dlpack_device_is_named(mem, dev):
    with pytest.raises(TypeError, match=r"^__dlpack_device__\(\) must return a tuple of two ints \(device type, "
                                        r"device id\), got "):
        _mi.from_dlpack(mem, streams_of(mem), _BadDevice(dev), True)


@pytest.mark.devices(2)
def test_capsule_on_another_device_than_dlpack_device_says_is_refused(mem):
    """The stream accel waits on is the one of the device __dlpack_device__ names; a capsule on another
    device got a DeviceArray whose stream was on the wrong device."""
    a = _dev(mem, np.arange(4, dtype=np.float32), device=0)
    cap = a.__dlpack__(max_version=(1, 0))
    with pytest.raises(BufferError, match=r"the capsule's tensor is on device 0 but __dlpack_device__\(\) said 1"):
        _mi.from_dlpack(mem, streams_of(mem), _BadDevice((2, 1), cap), True)
    assert _mi._api.PyCapsule_IsValid(cap, b"dltensor_versioned")
    del cap
    F.collect()
    assert not _mi._exports
    a.free()


# -- numpy conversion -----------------------------------------------------------------------------------------

def test_numpy_conversion_is_refused(mem):
    """np.asarray(a) iterated the sequence protocol into an object array of 0-d DeviceArrays (CuPy and
    torch refuse the implicit conversion); copy_to_host is the way."""
    a = _dev(mem, np.arange(6, dtype=np.float32).reshape(2, 3))
    for conv in (np.asarray, np.array, lambda o: np.asarray(o, dtype=np.float32)):
        with pytest.raises(TypeError, match=r"^a DeviceArray is device memory: use copy_to_host\(\) for a numpy "
                                            r"array$"):
            conv(a)
    a.free()


# -- documented behaviour, pinned -----------------------------------------------------------------------------

def test_out_of_another_shape_with_the_same_elements_is_taken(mem):
    """Documented: ``out`` needs the dtype and the number of elements, not the shape (filled in C order)."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = _dev(mem, x)
    out = np.empty((6, 4), np.float32)
    assert a.copy_to_host(out=out) is out and np.array_equal(out, x.reshape(6, 4))
    out = np.empty((3, 4), np.float32)
    assert np.array_equal(a[:, ::2].copy_to_host(out=out), x[:, ::2].reshape(3, 4))
    a.free()


def test_free_of_a_view_frees_every_view(mem):
    """Documented: ``free()`` of any view frees the buffer; every view is then closed."""
    before = mem.memory_allocated(0)
    a = _dev(mem, np.arange(8, dtype=np.float32))
    v = a[::2]
    v.free()
    assert a.closed and v.closed and mem.memory_allocated(0) == before
    with pytest.raises(ValueError, match="^the DeviceArray was freed$"):
        a.copy_to_host()


def test_view_none_is_numpys_float64(mem):
    """numpy's ``x.view(None)`` is ``x.view(np.dtype(None))``: float64; accel does the same."""
    x = np.arange(4, dtype=np.float32)
    a = _dev(mem, x)
    assert a.view(None).dtype == x.view(None).dtype == np.float64
    a.free()


# -- malformed CUDA Array Interface dicts ----------------------------------------------------------------------

_MALFORMED = [
    ("not a dict", [1, 2], TypeError, r"^__cuda_array_interface__ must be a dict, got list: \[1, 2\]$"),
    ("no data", {"data": KeyError}, ValueError, r"^the CUDA array interface has no 'data' entry \(shape, typestr "
                                                r"and data are required\)"),
    ("no shape", {"shape": KeyError}, ValueError, r"has no 'shape' entry"),
    ("no typestr", {"typestr": KeyError}, ValueError, r"has no 'typestr' entry"),
    ("data None", {"data": None}, TypeError, r"^the CUDA array's data must be a tuple \(pointer, read-only flag\), "
                                             r"got NoneType: None$"),
    ("data int", {"data": 4096}, TypeError, r"data must be a tuple \(pointer, read-only flag\), got int: 4096$"),
    ("data 1-tuple", {"data": (4096,)}, TypeError, r"got tuple: \(4096,\)$"),
    ("data str pointer", {"data": ("0x10", False)}, TypeError, r"^the CUDA array's data pointer must be an int, "
                                                               r"got str: '0x10'$"),
    ("data negative", {"data": (-1, False)}, ValueError, r"^the CUDA array's data pointer must be in "
                                                         r"\[0, 2\*\*64\), got -1$"),
    ("data huge", {"data": (2**70, False)}, ValueError, r"got 1180591620717411303424$"),
    ("shape int", {"shape": 6}, TypeError, r"^the CUDA array's shape must be a tuple of ints, got int: 6$"),
    ("shape None", {"shape": None}, TypeError, r"shape must be a tuple of ints, got NoneType: None$"),
    ("strides int", {"strides": 4}, TypeError, r"^the CUDA array's strides must be None or a tuple of ints, "
                                               r"got int: 4$"),
    ("version str", {"version": "3"}, TypeError, r"^the CUDA array's version must be an int, got str: '3'$"),
]


@pytest.mark.parametrize("typed", [True, False], ids=["array", "buffer"])
@pytest.mark.parametrize("case, change, exc, match", _MALFORMED, ids=[m[0] for m in _MALFORMED])
def test_malformed_cuda_array_interface_is_named(mem, rt, streams, typed, case, change, exc, match):
    """Each answered with Python's own KeyError / TypeError / IndexError / AttributeError ('NoneType' object is
    not subscriptable, 'list' object has no attribute 'get', ...); nothing changes."""
    a = _dev(mem, np.arange(6, dtype=np.float32))
    before = mem.memory_allocated(0)
    if isinstance(change, dict):
        cai = dict(a.__cuda_array_interface__, version=3)
        for k, v in change.items():
            if v is KeyError:
                del cai[k]
            else:
                cai[k] = v
    else:
        cai = change
    with pytest.raises(exc, match=match):
        _mi.as_buffer(rt, mem, streams, _CAI(cai), typed)
    assert mem.memory_allocated(0) == before
    assert np.array_equal(a.copy_to_host(), np.arange(6, dtype=np.float32))
    a.free()


@pytest.mark.parametrize("strides, data", [((-2**62,), 0), ((2**62,), 2**64 - 2**61)], ids=["below-0", "past-2**64"])
def test_import_reaching_outside_the_address_space_is_refused(mem, rt, streams, strides, data):
    """A producer's strides that take the layout below address 0 or past 2**64: the native twin answered
    "can't convert negative value to size_t", the Python twin made an array over a negative address."""
    a = _dev(mem, np.arange(6, dtype=np.float32))
    before = mem.memory_allocated(0)
    cai = dict(a.__cuda_array_interface__, shape=(2,), strides=strides, data=(data or a.ptr, False))
    with pytest.raises(ValueError, match=r"^the CUDA array's layout reaches bytes \[-?\d+, \d+\) outside the "
                                         r"address space \[0, 2\*\*64\)$"):
        _mi.as_buffer(rt, mem, streams, _CAI(cai), True)
    assert mem.memory_allocated(0) == before
    a.free()


def test_dlpack_import_reaching_below_address_0_is_refused(mem):
    a = _dev(mem, np.arange(6, dtype=np.float32))
    cap = a[::2].__dlpack__(max_version=(1, 0))
    _, t = _capsule(cap)
    t.strides[0] = -2**60
    with pytest.raises(BufferError, match=r"^the DLPack tensor's layout reaches bytes \[-\d+, \d+\) outside the "
                                          r"address space \[0, 2\*\*64\)$"):
        _mi.from_dlpack(mem, streams_of(mem), F.CapsuleProducer(cap, 0), True)
    assert _mi._api.PyCapsule_IsValid(cap, b"dltensor_versioned")     # not consumed
    del cap, t
    F.collect()
    assert not _mi._exports
    a.free()


def test_iteration_is_numpys(mem):
    """Python's fallback iteration through __getitem__ ended at the 0-d array's IndexError: list(a[0, 0]) was
    [] where numpy raises."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = _dev(mem, x)
    with pytest.raises(TypeError):
        list(x[0, 0:1].reshape(()))
    with pytest.raises(TypeError, match=r"^iteration over a 0-d array$"):
        list(a[0, 0])
    rows = list(a)
    assert [(r.shape, r.ptr - a.ptr) for r in rows] == [((3,), 0), ((3,), 12)]
    assert list(a[:0]) == []
    assert [np.array_equal(r.copy_to_host(), e) for r, e in zip(a.T, x.T)] == [True] * 3
    a.free()


def test_membership_and_truth_are_not_silently_wrong(mem):
    """``5 in a`` iterated and compared 0-d views by identity: False for an array holding 5; ``bool(a)`` was
    ``len(a) > 0`` (True for [0.0], numpy: False; numpy refuses more than one element)."""
    a = _dev(mem, np.array([5.0], np.float32))
    with pytest.raises(TypeError, match=r"^a DeviceArray is device memory: use copy_to_host\(\) to test membership$"):
        5 in a                      # noqa: B015
    z = _dev(mem, np.zeros(1, np.float32))
    assert bool(z.reshape(())) is False and bool(z) is False and bool(a) is True     # numpy: one element's value
    b = _dev(mem, np.zeros((2, 3), np.float32))
    for v in (b, b[:0]):
        with pytest.raises(ValueError, match=r"^The truth value of a DeviceArray with "):
            bool(v)
    for x in (a, z, b):
        x.free()


def test_copy_from_a_partially_overlapping_view_is_refused(mem, rt, streams):
    """``a[1:].copy_from(a[:-1])`` was one device-to-device cudaMemcpyAsync over overlapping ranges, which
    CUDA leaves undefined (the emulator's memmove hid it); torch refuses such copies.  Nothing is written."""
    x = np.arange(8, dtype=np.int32)
    a = _dev(mem, x)
    for dst, src in ((a[1:], a[:-1]), (a[:-1], a[1:]), (a[:4], a.view(np.int16)[1:9].view(np.int32))):
        with pytest.raises(ValueError, match=r"^cannot copy between DeviceArrays whose memory overlaps \(bytes "
                                             r"\[\d+, \d+\) and \[\d+, \d+\) of device 0\)"):
            dst.copy_from(src)
        assert np.array_equal(a.copy_to_host(), x)
    alias = _mi.as_buffer(rt, mem, streams, a, True)          # another buffer over the same memory
    with pytest.raises(ValueError, match=r"overlaps"):
        alias[2:].copy_from(a[:-2])
    alias.free()
    a[4:].copy_from(a[:4])                                    # disjoint halves of one buffer: fine
    assert np.array_equal(a.copy_to_host(), np.r_[x[:4], x[:4]])
    a.copy_from(a)                                            # the same memory: a no-op, as before
    a.free()
