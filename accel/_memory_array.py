"""DeviceArray's layout and copies, shared by the memory twins (accel._native._memory / accel._python._memory).

A DeviceArray is a typed view (numpy dtype, shape, byte strides, the address of element 0) over the memory
of a DeviceBuffer, which it keeps alive.  The twins keep the hot paths (properties, ``a[i]``, ``a[i:j]``,
``.T``) in their own code; everything else is here, once, so that both give the same results and
messages: argument checks, basic indexing in general (numpy's own rules, computed on a zero-byte stand-in
array that is never read), ``reshape`` / ``view(dtype)`` without copies, and the typed host copies.
"""
import operator

from accel import _graph_common as _gc
from accel import _memory_common as _mc

__all__ = ["dtype_arg", "shape_arg", "strides_arg", "offset_arg", "c_strides", "is_c_contiguous", "span", "check_shape",
           "check_view", "overlaps", "index",
           "reshape", "view", "copy_to_host", "copy_from_host", "copy_from", "memset", "out_of_bounds"]


def _np():
    import numpy as np
    return np


def dtype_arg(dtype):
    """``dtype`` as a numpy dtype a DeviceArray can hold (no Python objects, a size, no subarray)."""
    np = _np()
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"dtype must be a numpy dtype (or a name numpy accepts), got {type(dtype).__name__}: "
                        f"{dtype!r}") from None
    if dt.hasobject:
        raise TypeError(f"a DeviceArray cannot hold Python objects, got dtype {dt}")
    if dt.itemsize == 0 or dt.subdtype is not None:
        raise TypeError(f"a DeviceArray needs a dtype of fixed item size without subarray dimensions, "
                        f"got dtype {dt}")
    return dt


def _entry(x):
    if isinstance(x, bool) or not hasattr(type(x), "__index__"):
        raise TypeError(f"shape entries must be ints, got {type(x).__name__}: {x!r}")
    return operator.index(x)


def strides_arg(strides):
    """Byte ``strides`` (a sequence of ints, any sign) as a tuple."""
    if not isinstance(strides, (tuple, list)):
        raise TypeError(f"strides must be a tuple of ints, got {type(strides).__name__}: {strides!r}")
    out = []
    for x in strides:
        if isinstance(x, bool) or not hasattr(type(x), "__index__"):
            raise TypeError(f"strides must hold ints, got {type(x).__name__}: {x!r}")
        out.append(operator.index(x))
    return tuple(out)


def offset_arg(offset):
    if isinstance(offset, bool) or not hasattr(type(offset), "__index__"):
        raise TypeError(f"offset must be an int, got {type(offset).__name__}: {offset!r}")
    return operator.index(offset)


MAXDIMS = 64     # numpy's NPY_MAXDIMS


def shape_arg(shape):
    """``shape`` (an int, a sequence of ints or a 1-d integer numpy array, as numpy takes) as a tuple of
    non-negative ints."""
    if isinstance(shape, (tuple, list)):
        out = tuple(_entry(s) for s in shape)
    elif isinstance(shape, _np().ndarray) and shape.ndim == 1:
        out = tuple(_entry(s) for s in shape.tolist())
    else:
        out = (_entry(shape),)
    if any(s < 0 for s in out):
        raise ValueError(f"negative dimensions are not allowed, got shape {out}")
    return out


def c_strides(shape, itemsize):
    """The byte strides of a C-contiguous array of ``shape``."""
    out = []
    n = itemsize
    for s in reversed(shape):
        out.append(n)
        n *= s
    return tuple(reversed(out))


def is_c_contiguous(shape, strides, itemsize):
    """numpy's C-contiguity: unit dimensions' strides do not matter, an empty array is contiguous."""
    expect = itemsize
    for dim, st in zip(reversed(shape), reversed(strides)):
        if dim == 0:
            return True
        if dim != 1 and st != expect:
            return False
        expect *= dim
    return True


def span(shape, strides, itemsize):
    """(lowest, end) byte offsets from element 0 of the memory the layout touches ((0, 0) when empty)."""
    lo = hi = 0
    for dim, st in zip(shape, strides):
        if dim == 0:
            return 0, 0
        if st < 0:
            lo += (dim - 1) * st
        else:
            hi += (dim - 1) * st
    return lo, hi + itemsize


def check_shape(shape, itemsize):
    """numpy's limits on a shape: at most 64 dimensions, and its non-zero dimensions times the item size
    below 2**63 bytes, even when another dimension is 0 (numpy's "array is too big")."""
    if len(shape) > MAXDIMS:
        raise ValueError(f"a DeviceArray has at most {MAXDIMS} dimensions (numpy's limit), got {len(shape)}")
    n = itemsize
    for s in shape:
        if s:
            n *= s
    if n >= 2**63:
        raise ValueError(f"a DeviceArray of shape {shape} and item size {itemsize} is too big: its non-zero "
                         f"dimensions hold {n} bytes (at most 2**63 - 1, as numpy)")


def check_view(nbytes, offset, shape, strides, itemsize):
    """Refuse a layout (element 0 at byte ``offset``) reaching outside a buffer of ``nbytes``, or a shape
    numpy refuses (check_shape)."""
    check_shape(shape, itemsize)
    if len(strides) != len(shape):
        raise ValueError(f"strides {strides} must have one entry per dimension of shape {shape}")
    lo, hi = span(shape, strides, itemsize)
    if hi > lo and (offset + lo < 0 or offset + hi > nbytes):
        raise ValueError(f"a DeviceArray of shape {shape}, strides {strides} and item size {itemsize} at byte "
                         f"offset {offset} reaches bytes [{offset + lo}, {offset + hi}) outside its buffer of "
                         f"{nbytes} bytes")


def out_of_bounds(i, axis, n):
    """numpy's IndexError for an integer index out of range."""
    return IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")


def _stand_in(shape, strides, itemsize):
    """A numpy array with the layout (item type ``V<itemsize>``) over one item of host memory that nothing
    reads: numpy computes the views' layouts on it.  Returns it and the address of its element 0."""
    np = _np()
    base = np.empty(1, dtype=f"V{itemsize}")
    arr = np.lib.stride_tricks.as_strided(base, shape=shape, strides=strides)
    return arr, arr.__array_interface__["data"][0]


def _basic_key(key):
    """``key`` as a tuple of basic indices (ints, slices, Ellipsis, None), else a TypeError naming it."""
    items = key if isinstance(key, tuple) else (key,)
    out = []
    for k in items:
        if k is None or k is Ellipsis or isinstance(k, slice):
            out.append(k)
        else:
            try:
                if isinstance(k, bool) or not hasattr(type(k), "__index__"):
                    raise TypeError
                out.append(operator.index(k))       # an int, numpy's integers and 0-d integer arrays
            except TypeError:
                raise TypeError(f"a DeviceArray takes basic indices only (ints, slices, ..., None), got "
                                f"{type(k).__name__}: {k!r}") from None
    return tuple(out)


def index(shape, strides, itemsize, key):
    """(byte offset of the new element 0, shape, strides) of ``a[key]`` for basic indexing, as numpy."""
    key = _basic_key(key)
    arr, base = _stand_in(shape, strides, itemsize)
    if not any(k is Ellipsis for k in key):
        key += (Ellipsis,)        # every index an int: a 0-d view, not a scalar
    v = arr[key]
    return v.__array_interface__["data"][0] - base, v.shape, v.strides


def _reshape_args(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    out = []
    for x in args:
        if isinstance(x, bool) or not hasattr(type(x), "__index__"):
            raise TypeError(f"shape entries must be ints, got {type(x).__name__}: {x!r}")
        out.append(operator.index(x))
    return tuple(out)


def reshape(shape, strides, itemsize, args):
    """(shape, strides) of ``a.reshape(*args)`` without a copy (numpy's rules, -1 included), else ValueError."""
    new = _reshape_args(args)
    arr, _ = _stand_in(shape, strides, itemsize)
    try:
        try:
            v = arr.reshape(new, copy=False)
        except TypeError:                  # numpy < 2.1: setting the shape never copies
            v = arr.view()
            v.shape = new
    except (ValueError, AttributeError) as e:
        size = 1
        for s in shape:
            size *= s
        if "copy" in str(e) or isinstance(e, AttributeError):
            raise ValueError(f"cannot reshape a DeviceArray of shape {shape} and strides {strides} into shape "
                             f"{new} without a copy") from None
        raise ValueError(f"cannot reshape a DeviceArray of shape {shape} (size {size}) into shape {new}") from None
    return v.shape, v.strides


def view(shape, strides, dtype, new):
    """(shape, strides) of ``a.view(new)`` (numpy's rules: an item size change needs a contiguous last axis)."""
    np = _np()
    arr, _ = _stand_in(shape, strides, dtype.itemsize)
    try:
        v = arr.view(np.dtype(f"V{new.itemsize}"))
    except ValueError as e:
        raise ValueError(f"cannot view a DeviceArray of dtype {dtype}, shape {shape} and strides {strides} as "
                         f"{new}: {e}") from None
    return v.shape, v.strides


# -- typed copies ------------------------------------------------------------------------------------------

def _live(arr):
    if arr.closed:
        raise ValueError("the DeviceArray was freed")


def _writable(arr):
    if arr.readonly:
        raise ValueError("the DeviceArray is read-only")


def _host_array(array, what):
    """``array`` as a numpy array (the base class's view of a subclass; a buffer through memoryview)."""
    np = _np()
    if isinstance(array, np.ndarray):
        return np.ndarray.view(array, np.ndarray)
    try:
        mv = memoryview(array)
    except TypeError:
        raise TypeError(f"{what} must be a host array (numpy array or another buffer), "
                        f"got {type(array).__name__}") from None
    if "O" in mv.format:
        raise TypeError(f"{what} must not hold Python objects, got a buffer of format {mv.format!r}")
    return np.asarray(mv)


def _not_captured(cudart, arr, s, what):
    """A copy staged synchronously through the host (a non-contiguous view's) refused on a capturing stream,
    before anything is queued (synchronising the stream would invalidate the capture)."""
    if _mc.capture_of(cudart, arr, s)[0]:
        raise RuntimeError(_gc.STAGED_IN_CAPTURE.format(what, s))


def _staged(cudart, arr, s):
    """The bytes of a non-contiguous ``arr``'s span, read to the host on stream ``s`` (synchronised), as a
    numpy array of ``arr``'s layout over them."""
    np = _np()
    lo, hi = span(arr.shape, arr.strides, arr.itemsize)
    host = np.empty(hi - lo, np.uint8)
    if hi > lo:
        with _mc._Guard(cudart, arr.device.index, s.cuda_stream):
            cudart.cudaMemcpyAsync(host.ctypes.data, arr.ptr + lo, hi - lo, _mc.D2H, s.cuda_stream)
        _mc._use(arr, s)
        s.synchronize()
    return np.ndarray(arr.shape, arr.dtype, buffer=host, offset=-lo, strides=arr.strides)


def copy_to_host(cudart, arr, out, stream):
    """D2H into ``out`` (None: a new array of the DeviceArray's dtype and shape).  ``out``: C-contiguous, the
    same dtype and number of elements.  Contiguous arrays as DeviceBuffer.copy_to_host (asynchronous into
    pinned ``out``); a non-contiguous one reads its span and gathers it on the host (synchronous)."""
    np = _np()
    _live(arr)
    temp = out is None
    if temp:
        out = np.empty(arr.shape, arr.dtype)
    else:
        host = _host_array(out, "out")
        if host.dtype != arr.dtype or host.size != arr.size:
            raise ValueError(f"out must have dtype {arr.dtype} and {arr.size} elements (the DeviceArray's), got "
                             f"dtype {host.dtype} and shape {host.shape}")
    if is_c_contiguous(arr.shape, arr.strides, arr.itemsize):
        return _mc.copy_to_host(cudart, arr, out, stream, temp)
    s = _mc._stream_of(cudart, arr, stream)
    _not_captured(cudart, arr, s, "copy_to_host()")
    flat, _, _ = _mc._host_view(out, "out", True)
    staged = _staged(cudart, arr, s)
    np.copyto(flat.reshape(-1).view(arr.dtype).reshape(arr.shape), staged)
    return out


def _runs(shape, strides, itemsize):
    """(byte offset from element 0, bytes) of each contiguous run of a layout, in C order."""
    np = _np()
    inner = itemsize
    k = len(shape)
    while k and (shape[k - 1] == 1 or strides[k - 1] == inner):
        inner *= shape[k - 1]
        k -= 1
    outer_shape, outer_strides = shape[:k], strides[:k]
    if not outer_shape:
        yield 0, inner
        return
    for idx in np.ndindex(*outer_shape):
        yield sum(i * st for i, st in zip(idx, outer_strides)), inner


def overlaps(shape, strides, itemsize):
    """Whether two elements of a layout share a byte (a broadcast view's stride 0, a stride below the item
    size): nested strides are checked in O(ndim), other layouts element by element."""
    axes = sorted((abs(st), dim) for dim, st in zip(shape, strides) if dim > 1)
    if not axes or any(dim == 0 for dim in shape):
        return False
    reach = itemsize          # bytes spanned by one block of the axes with smaller strides
    for st, dim in axes:
        if st < reach:
            break
        reach = st * (dim - 1) + reach
    else:
        return False
    np = _np()
    size = 1
    for _, dim in axes:
        size *= dim
    if size > 2**24:
        return True           # not nested and too many elements to look at: refused as if they overlapped
    offs = np.zeros(1, np.int64)
    for st, dim in axes:
        offs = (offs[:, None] + np.arange(dim, dtype=np.int64) * st).reshape(-1)
    offs.sort()
    return bool((np.diff(offs) < itemsize).any())


def copy_from_host(cudart, arr, array, stream):
    """H2D of a host array of the DeviceArray's dtype and shape.  Contiguous: as DeviceBuffer.copy_from_host;
    non-contiguous: one copy per contiguous run of the view, synchronised before returning.  A view whose
    elements share bytes (a producer's broadcast) is refused: the copies would keep only the last."""
    _live(arr)
    _writable(arr)
    host = _host_array(array, "array")
    if host.dtype != arr.dtype or host.shape != arr.shape:
        raise ValueError(f"array has dtype {host.dtype} and shape {host.shape} but the DeviceArray has dtype "
                         f"{arr.dtype} and shape {arr.shape}: they must match")
    if is_c_contiguous(arr.shape, arr.strides, arr.itemsize):
        return _mc.copy_from_host(cudart, arr, array, stream)
    if overlaps(arr.shape, arr.strides, arr.itemsize):
        raise ValueError(f"cannot copy into a DeviceArray whose elements overlap in memory (shape {arr.shape}, "
                         f"strides {arr.strides}, item size {arr.itemsize}): more than one element refers to "
                         f"the same bytes")
    flat, addr, n = _mc._host_view(array, "array", False)
    s = _mc._stream_of(cudart, arr, stream)
    _not_captured(cudart, arr, s, "copy_from_host()")
    pos = 0
    try:
        with _mc._Guard(cudart, arr.device.index, s.cuda_stream):
            for off, nb in _runs(arr.shape, arr.strides, arr.itemsize):
                cudart.cudaMemcpyAsync(arr.ptr + off, addr + pos, nb, _mc.H2D, s.cuda_stream)
                pos += nb
    finally:
        if pos:
            _mc._use(arr, s)      # the runs queued before a failure are recorded too
            s.synchronize()       # and done before the host array may go
    del flat


def _contiguous(arr, what):
    if not is_c_contiguous(arr.shape, arr.strides, arr.itemsize):
        raise ValueError(f"{what} needs a C-contiguous DeviceArray, got shape {arr.shape} and strides "
                         f"{arr.strides}")


def copy_from(cudart, arr, other, stream):
    """D2D from another DeviceArray of the same dtype and shape (both C-contiguous, not partially overlapping)."""
    if type(other) is not type(arr):
        raise TypeError(f"other must be a DeviceArray, got {type(other).__name__}")
    _live(arr)
    _live(other)
    _writable(arr)
    if other.dtype != arr.dtype or other.shape != arr.shape:
        raise ValueError(f"other has dtype {other.dtype} and shape {other.shape} but the DeviceArray has dtype "
                         f"{arr.dtype} and shape {arr.shape}: they must match")
    _contiguous(arr, "copy_from")
    _contiguous(other, "copy_from")
    n = arr.nbytes
    if (n and arr.ptr != other.ptr and arr.device.index == other.device.index
            and arr.ptr < other.ptr + n and other.ptr < arr.ptr + n):
        # one cudaMemcpyAsync over overlapping ranges is undefined in CUDA (torch refuses such copies too)
        raise ValueError(f"cannot copy between DeviceArrays whose memory overlaps (bytes [{other.ptr}, "
                         f"{other.ptr + n}) and [{arr.ptr}, {arr.ptr + n}) of device {arr.device.index})")
    return _mc.copy_from(cudart, arr, other, stream)


def memset(cudart, arr, value, stream):
    """Every byte of a C-contiguous DeviceArray set to ``value``."""
    _live(arr)
    _writable(arr)
    _contiguous(arr, "memset")
    return _mc.memset(cudart, arr, value, stream)
