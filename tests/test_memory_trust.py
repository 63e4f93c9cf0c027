"""Regression tests of issue 17 section A (device memory must never silently corrupt, crash or hang), on both
twins: copies refused, release from garbage-collected cycles in any order, object dtypes, fork, statistics
before initialisation, DLPack consumer streams, record_stream as a set, host_register exports, pinned
shapes, the OOM retry, validate-then-queue copies, huge device indices, the CUDA Array Interface's stream
and read-only rules.  One test (or a few) per item, named after it: test_a<N>_...

What depends on process state (fork, initialisation, a small device) runs in a fresh interpreter with
ACCEL_BACKEND set to the twin; the rest uses the twin's modules directly (the ``api`` fixture points
accel.cuda's pure-Python memory API at the twin for the duration of a test).
"""
import copy
import gc
import importlib.util
import json
import os
import pathlib
import pickle
import re
import textwrap
import threading
import tracemalloc

import numpy as np
import pytest

from accel import _memory_interop as _mi
from accel.errors import CudaError

pytestmark = pytest.mark.emu_only

_spec = importlib.util.spec_from_file_location("memory_fixtures", pathlib.Path(__file__).with_name("memory_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
Gate, mem, rt, streams, emu = _fx.Gate, _fx.mem, _fx.rt, _fx.streams, _fx.emu
USED, NDEV = _fx.USED, _fx.NDEV

FORK_MSG = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use "
            "the 'spawn' start method")


@pytest.fixture
def api(twin, monkeypatch):
    """accel.cuda's memory API (accel/cuda/_memory_api.py) over the twin's _memory and _cudart."""
    from accel import _impl
    from accel.cuda import _memory_api
    raw = twin.mod("_cudart")
    raw.load()
    monkeypatch.setattr(_impl, "cudart", raw)
    monkeypatch.setattr(_memory_api, "_memory", twin.mod("_memory"))
    return _memory_api


def _run(subprocess_python, twin, code, timeout=60, **env):
    from accel import _build_config
    if twin.name == "native" and not _build_config.NATIVE:
        pytest.skip("installed with -Dnative=false")
    r = subprocess_python(textwrap.dedent(code), env={"ACCEL_BACKEND": twin.name, **env}, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


class _CAI:
    """A foreign CUDA array: only ``__cuda_array_interface__`` (and whatever attributes a test adds)."""

    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


class _DLProducer:
    """A foreign DLPack producer over an accel buffer (delegates ``__dlpack__``)."""

    def __init__(self, buf):
        self.buf = buf

    def __dlpack__(self, **kw):
        return self.buf.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.buf.__dlpack_device__()


def _cai_of(buf, readonly=False, stream=None):
    return {"shape": (buf.nbytes,), "typestr": "|u1", "data": (buf.ptr, readonly), "version": 3,
            "stream": stream}


# -- A1: copy / deepcopy / pickle -------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_a1_copy_refused(mem, rt, streams, api, how):
    op = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": pickle.dumps}[how]
    buf = mem.alloc(4096, device=0)
    buf.memset(7)
    view = _mi.as_buffer(rt, mem, streams, _CAI(_cai_of(buf)))
    reg = api.host_register(np.zeros(64))
    pinned = api.pinned_empty(64)
    block = pinned
    while isinstance(block, np.ndarray):
        block = block.base                  # the pinned block the array (and every view) keeps alive
    before = mem.memory_allocated(0)
    for obj, name in ((buf, "DeviceBuffer"), (view, "DeviceBuffer"), (reg, "HostRegistration"),
                      (block, "_PinnedHost")):
        with pytest.raises(TypeError, match=rf"^cannot pickle <accel\.cuda\.{name}\b.*>: "):
            op(obj)
    assert mem.memory_allocated(0) == before and not buf.closed and reg.registered
    assert (buf.copy_to_host() == 7).all()
    view.free()
    reg.unregister()
    buf.free()
    assert mem.memory_allocated(0) == before - 4096


def test_a1_host_registration_refused_with_a_clear_message(api):
    reg = api.host_register(np.zeros(8))
    with pytest.raises(TypeError, match=r"^cannot pickle <accel\.cuda\.HostRegistration nbytes=64 ptr=0x[0-9a-f]+>: "
                                        r"it owns a CUDA resource of this process that a copy would release twice$"):
        copy.copy(reg)
    reg.unregister()


# -- A2: release from garbage-collected cycles, in any collection order --------------------------------------

def _collect():
    gc.collect()
    gc.collect()


@pytest.fixture
def no_gc():
    """Automatic collection off: a test decides when its cycles are collected."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


@pytest.mark.parametrize("kind", ["cai", "dlpack"])
@pytest.mark.parametrize("order", ["owner_first", "view_first", "through_list"])
def test_a2_view_in_a_cycle_never_frees_the_producer(mem, rt, streams, emu, no_gc, kind, order):
    d = 0
    other = mem.alloc(8192, device=d)
    other.copy_from_host(np.arange(8192, dtype=np.uint8))
    prod = mem.alloc(8192, device=d)
    prod.memset(0x5A)
    allocated, live = mem.memory_allocated(d), emu.accelEmuLiveAllocations()
    pool = mem.pool_handle(d)
    used = rt.cudaMemPoolGetAttribute(pool, USED)
    holder = _CAI(_cai_of(prod)) if kind == "cai" else _DLProducer(prod)
    view = _mi.as_buffer(rt, mem, streams, holder) if kind == "cai" else _mi.from_dlpack(mem, streams, holder)
    if order == "through_list":
        holder.cycle = [view, holder]       # view -> owner -> holder -> list -> view
    else:
        holder.view = view                  # view -> owner -> holder -> view
    if order == "view_first":
        # a collection while only the view is referenced moves what it reaches behind it: the collector
        # then clears the view before its owner
        del holder
        _collect()
    del view
    holder = None
    _collect()
    assert mem.memory_allocated(d) == allocated
    assert emu.accelEmuLiveAllocations() == live
    assert rt.cudaMemPoolGetAttribute(pool, USED) == used
    fresh = [mem.alloc(8192, device=d) for _ in range(3)]   # must not be handed the producer's block
    assert prod.ptr not in [f.ptr for f in fresh]
    for f in fresh:
        f.memset(0xEE)
        f.free()
    assert (prod.copy_to_host() == 0x5A).all()
    assert (other.copy_to_host() == np.arange(8192, dtype=np.uint8)).all()
    prod.free()
    other.free()
    assert mem.memory_allocated(d) == allocated - 16384


@pytest.mark.devices(2)
@pytest.mark.parametrize("order", ["buffer_first", "stream_first"])
@pytest.mark.parametrize("where", ["record_stream", "alloc_stream", "both"])
def test_a2_record_stream_wait_survives_a_cycle(mem, rt, streams, emu, no_gc, where, order):
    d = 1
    gate = Gate()

    class Side(streams.Stream):
        pass

    side, home = Side(device=d), Side(device=d)
    live = emu.accelEmuLiveAllocations()
    allocated = mem.memory_allocated(d)
    buf = mem.alloc(4096, device=d, stream=home)
    gate.block(rt, side)
    buf.memset(3, stream=side)              # queued behind the gate; records `side` on the buffer
    if where in ("record_stream", "both"):
        side.buf = buf                      # buffer -> recorded streams -> side -> buffer
    if where in ("alloc_stream", "both"):
        home.buf = buf                      # buffer -> its stream -> buffer
    h = home.cuda_stream
    del home, side
    if order == "stream_first":
        _collect()                          # only the buffer referenced: what it reaches moves behind it
    del buf
    _collect()
    assert mem.memory_allocated(d) == allocated     # the free was issued (counted at free time)...
    try:
        assert rt.cudaStreamQuery(h) is False       # ... ordered after the gated work on `side`
    finally:
        gate.open()
    rt.cudaStreamSynchronize(h)
    assert emu.accelEmuLiveAllocations() == live


# -- A3: dtypes with Python objects ----------------------------------------------------------------------

OBJECT_DTYPES = [np.dtype(object), np.dtype([("a", "<i4"), ("o", "O")])]


@pytest.mark.parametrize("dt", OBJECT_DTYPES, ids=str)
def test_a3_object_dtype_refused(mem, api, dt):
    arr = np.empty(4096 // dt.itemsize, dtype=dt)
    buf = mem.alloc(arr.nbytes, device=0)
    buf.memset(0)
    before = mem.memory_allocated(0)
    with pytest.raises(TypeError, match=f"^{re.escape(f'array must not hold Python objects, got dtype {dt}')}$"):
        buf.copy_from_host(arr)
    with pytest.raises(TypeError, match=f"^{re.escape(f'array must not hold Python objects, got dtype {dt}')}$"):
        api.to_device(arr, device=0)
    with pytest.raises(TypeError, match=f"^{re.escape(f'array must not hold Python objects, got dtype {dt}')}$"):
        api.host_register(arr)
    assert mem.memory_allocated(0) == before
    assert (buf.copy_to_host() == 0).all()
    buf.free()


def test_a3_copy_to_host_into_objects_refused(subprocess_python, twin):
    # before the fix this wrote device bytes into PyObject* slots: a crash, hence a fresh interpreter
    out = _run(subprocess_python, twin, """
        import json, numpy as np, accel.cuda as c
        buf = c.alloc(64)
        buf.memset(0xFF)
        msgs = []
        for dt in (np.dtype(object), np.dtype([("a", "<i8"), ("o", "O")])):
            out = np.empty(64 // dt.itemsize, dt)
            try:
                buf.copy_to_host(out)
                msgs.append("copied")
            except TypeError as e:
                msgs.append(str(e))
        print(json.dumps(msgs))
    """)
    assert out == ["out must not hold Python objects, got dtype object",
                   "out must not hold Python objects, got dtype [('a', '<i8'), ('o', 'O')]"]


# -- A4: fork -------------------------------------------------------------------------------------------

FORK = """
import json, os, time, numpy as np, accel.cuda as c
buf = c.alloc(4096)
buf.memset(9)
other = c.alloc(4096)
host = np.zeros(4096, np.uint8)
ops = {
    "memset": lambda: buf.memset(1),
    "copy_from_host": lambda: buf.copy_from_host(host),
    "copy_to_host": lambda: buf.copy_to_host(),
    "copy_to_host_out": lambda: buf.copy_to_host(host),
    "copy_from": lambda: buf.copy_from(other),
    "record_stream": lambda: buf.record_stream(c.default_stream()),
    "cuda_array_interface": lambda: buf.__cuda_array_interface__,
    "dlpack": lambda: buf.__dlpack__(),
    "free": lambda: buf.free(),
    "alloc": lambda: c.alloc(16, device=0),
}
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    res = {}
    for name, op in ops.items():
        try:
            op()
            res[name] = "ok"
        except RuntimeError as e:
            res[name] = str(e)
        except BaseException as e:
            res[name] = type(e).__name__ + ": " + str(e)
    os.write(w, json.dumps(res).encode())
    os._exit(0)
os.close(w)
deadline = time.time() + 20
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.time() > deadline:          # a regression hangs the child: report it, do not hang the suite
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        break
data = b""
while True:
    chunk = os.read(r, 65536)
    if not chunk:
        break
    data += chunk
child = json.loads(data) if data else "hung"
parent = bool((buf.copy_to_host() == 9).all())
buf.free()
other.free()
print(json.dumps({"child": child, "parent": parent}))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a4_fork_child_gets_the_torch_error(subprocess_python, twin):
    out = _run(subprocess_python, twin, FORK)
    assert out["parent"] is True
    assert out["child"] != "hung"
    assert out["child"] == {name: FORK_MSG for name in out["child"]}


# -- A5: statistics before initialisation ----------------------------------------------------------------

STATS_UNINIT = """
import json, os, accel.cuda as c
res = {
    "memory_allocated": c.memory_allocated(), "max_memory_allocated": c.max_memory_allocated(),
    "memory_reserved": c.memory_reserved(), "max_memory_reserved": c.max_memory_reserved(),
    "memory_stats": c.memory_stats(), "memory_stats_as_nested_dict": c.memory_stats_as_nested_dict(),
    "empty_cache": c.empty_cache(), "memory_allocated(1)": c.memory_allocated(1),
    "memory_stats(cuda:1)": c.memory_stats("cuda:1"),
}
res["initialized"] = c.is_initialized()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    try:
        b = c.alloc(64)
        b.memset(1)
        msg = "ok %d" % int(b.copy_to_host().sum())
    except BaseException as e:
        msg = str(e)
    os.write(w, msg.encode())
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
res["child"] = os.read(r, 4096).decode()
b = c.alloc(64)
res["after_init"] = c.memory_allocated()
b.free()
print(json.dumps(res))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a5_statistics_do_not_initialise(subprocess_python, twin):
    out = _run(subprocess_python, twin, STATS_UNINIT)
    assert out == {"memory_allocated": 0, "max_memory_allocated": 0, "memory_reserved": 0,
                   "max_memory_reserved": 0, "memory_stats": {}, "memory_stats_as_nested_dict": {},
                   "empty_cache": None, "memory_allocated(1)": 0, "memory_stats(cuda:1)": {},
                   "initialized": False, "child": "ok 64", "after_init": 64}


# -- A6: the DLPack consumer's stream is waited on, not tied to the buffer ---------------------------------

def test_a6_dlpack_consumer_stream_destroyed_then_free(mem, rt, emu):
    d = 0
    live, allocated = emu.accelEmuLiveAllocations(), mem.memory_allocated(d)
    buf = mem.alloc(1024, device=d)
    h = rt.cudaStreamCreate()
    cap = buf.__dlpack__(stream=h)
    del cap
    rt.cudaStreamSynchronize(h)
    rt.cudaStreamDestroy(h)
    buf.free()
    assert buf.closed and mem.memory_allocated(d) == allocated
    rt.cudaDeviceSynchronize()
    assert emu.accelEmuLiveAllocations() == live


def test_a6_dlpack_consumer_stream_still_waits(mem, rt, streams):
    gate = Gate()
    s = streams.Stream(device=0)
    buf = mem.alloc(1024, device=0, stream=s)
    h = rt.cudaStreamCreate()
    try:
        gate.block(rt, s)
        cap = buf.__dlpack__(stream=h)
        assert rt.cudaStreamQuery(h) is False      # the consumer's stream waits for the producer's work
        gate.open()
        rt.cudaStreamSynchronize(h)
        del cap
    finally:
        gate.open()
        rt.cudaStreamSynchronize(h)
        rt.cudaStreamDestroy(h)
    buf.free()


# -- A7: record_stream keeps a set ------------------------------------------------------------------------

@pytest.mark.parametrize("sym", ["cudaEventCreateWithFlags", "cudaEventRecord", "cudaStreamWaitEvent"])
def test_a2_collected_buffer_whose_event_wait_fails_is_freed_after_a_host_wait(mem, rt, streams, emu, sym):
    """A buffer recorded on another stream and dropped (freed by the collector) when the event that would
    order its free after that stream cannot be made: its memory goes back to the pool once the stream's work
    is done (a host wait), neither leaked nor freed under the work (red-team of issue 20)."""
    d = 0
    gate = Gate()
    side = streams.Stream(device=d)
    allocated = mem.memory_allocated(d)
    buf = mem.alloc(4096, device=d)
    buf.memset(1)
    gate.block(rt, side)
    buf.record_stream(side)
    t = threading.Timer(0.2, gate.open)     # the host wait below returns once the gate opens
    t.start()
    assert emu.accelEmuSetFail(f"{sym}:1".encode()) == 0
    try:
        del buf
        gc.collect()
    finally:
        emu.accelEmuSetFail(None)
        t.join()
    assert rt.cudaStreamQuery(side.cuda_stream) is True      # the side stream's work ran before the free
    rt.cudaDeviceSynchronize()
    assert mem.memory_allocated(d) == allocated


def test_a7_record_stream_does_not_grow(mem, streams):
    buf = mem.alloc(256, device=0)
    side = streams.Stream(device=0)
    buf.record_stream(side)
    buf.record_stream(buf.stream)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(20000):
            buf.record_stream(side)
            buf.record_stream(buf.stream)
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown < 4096
    host = np.zeros(256, np.uint8)
    for _ in range(2000):                    # a copy on a side stream records it once
        buf.copy_from_host(host, stream=side)
    buf.free()


# -- A8: host_register holds a buffer export --------------------------------------------------------------

def test_a8_registered_bytearray_cannot_be_resized(api):
    ba = bytearray(8192)
    reg = api.host_register(ba)
    with pytest.raises(BufferError):
        ba.extend(b"x" * 100000)
    with pytest.raises(BufferError):
        del ba[100:]
    assert len(ba) == 8192
    reg.unregister()
    ba.extend(b"x" * 10)         # the export ends with the registration
    assert len(ba) == 8202


def test_a8_failed_registration_holds_nothing(api, emu):
    ba = bytearray(4096)
    assert emu.accelEmuSetFail(b"cudaHostRegister:1") == 0
    with pytest.raises(CudaError):
        api.host_register(ba)
    ba.extend(b"x")
    assert len(ba) == 4097


# -- A9: pinned_empty has np.empty's shape and dtype --------------------------------------------------------

PINNED_DTYPES = ["(2,)f4", "(2,3)i2", np.dtype([("a", "u1"), ("b", "<f8")], align=True),
                 np.dtype([("a", "u1"), ("b", "<f8")]), np.dtype([("v", "<f4", (3,)), ("i", "<i2")], align=True),
                 "<f8", ">i4", "c8", "V5", "S3", "U2", "bool"]


@pytest.mark.parametrize("dtype", PINNED_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(3,), (2, 5), 4, ()], ids=str)
def test_a9_pinned_empty_matches_np_empty(api, dtype, shape):
    want = np.empty(shape, dtype)
    got = api.pinned_empty(shape, dtype)
    assert (got.shape, got.dtype, got.strides, got.nbytes) == (want.shape, want.dtype, want.strides, want.nbytes)
    assert got.flags.c_contiguous and got.flags.writeable
    raw = np.frombuffer(np.random.default_rng(1).bytes(want.nbytes), np.uint8)
    got.reshape(-1).view(np.uint8)[:] = raw
    assert got.tobytes() == raw.tobytes()


# -- A10: OOM retry synchronises what holds memory, message numbers are true ------------------------------

OOM = """
import json, threading, time, accel.cuda as c
MiB = 1 << 20
side = c.Stream()
gate = threading.Event()
side.launch_host_func(lambda: gate.wait(30))
a = c.alloc(12 * MiB, stream=side)
a.free()                                  # cudaFreeAsync queued on `side`, behind the gate
opener = threading.Timer(0.3, gate.set)
opener.start()
res = {}
t0 = time.time()
try:
    b = c.alloc(12 * MiB)                 # on the current stream: needs the block `side` still holds
    res["second"] = "ok"
except c.OutOfMemoryError as e:
    res["second"] = str(e)
res["waited"] = time.time() - t0 >= 0.2
res["retries"] = c.memory_stats()["num_alloc_retries"]
try:
    c.alloc(12 * MiB)                     # a real OOM: b holds 12 of the 16 MiB
except c.OutOfMemoryError as e:
    res["oom"] = str(e)
res["reserved"] = c.memory_reserved()
res["allocated"] = c.memory_allocated()
b.free()
print(json.dumps(res))
"""


def test_a10_oom_retry_waits_for_frees_on_other_streams(subprocess_python, twin):
    out = _run(subprocess_python, twin, OOM, ACCEL_EMU_MEMORY="16M")
    assert out["second"] == "ok"
    assert out["waited"] is True and out["retries"] >= 1
    assert out["allocated"] == 12 << 20 and out["reserved"] == 12 << 20
    assert out["oom"] == ("CUDA out of memory. Tried to allocate 12.00 MiB. GPU 0 has a total capacity of 16.00 MiB "
                          "of which 4.00 MiB is free. Of the allocated memory 12.00 MiB is allocated by accel, and "
                          "0 bytes is reserved by accel but unallocated.")


# -- A11: validate, then queue ----------------------------------------------------------------------------

def test_a11_failed_pointer_query_queues_no_copy(mem, rt, emu):
    buf = mem.alloc(4096, device=0)
    buf.memset(0x11)
    src = np.full(4096, 0x22, np.uint8)
    assert emu.accelEmuSetFail(b"cudaPointerGetAttributes:1") == 0
    with pytest.raises(CudaError):
        buf.copy_from_host(src)
    emu.accelEmuSetFail(None)
    buf.stream.synchronize()
    assert (buf.copy_to_host() == 0x11).all()
    out = np.full(4096, 0x33, np.uint8)
    assert emu.accelEmuSetFail(b"cudaPointerGetAttributes:1") == 0
    with pytest.raises(CudaError):
        buf.copy_to_host(out)
    emu.accelEmuSetFail(None)
    buf.stream.synchronize()
    assert (out == 0x33).all()
    buf.free()


# -- A12: device indices beyond a C int ---------------------------------------------------------------------

HUGE = [2**31, 2**32 + 1, 2**63, 2**64, -2**31 - 1, -2**63 - 5]


@pytest.mark.parametrize("d", HUGE)
def test_a12_huge_device_index_is_a_value_error(mem, streams, d):
    s = streams.current_stream(0)
    calls = [lambda: mem.alloc(16, device=d), lambda: mem.memory_allocated(d), lambda: mem.max_memory_allocated(d),
             lambda: mem.counters(d), lambda: mem.pool_handle(d), lambda: mem.reset_peak(d),
             lambda: mem.reset_accumulated(d), lambda: mem.set_limit(None, d), lambda: mem.get_limit(d),
             lambda: mem.wrap(0, 0, d, s, object())]
    for call in calls:
        with pytest.raises(ValueError, match=rf"^device index {d} is out of range: expected 0 <= device < {NDEV}$"):
            call()


# -- A13: the CUDA Array Interface's and DLPack's rules -------------------------------------------------------

def test_a13_cai_stream_zero_refused(mem, rt, streams):
    buf = mem.alloc(64, device=0)
    with pytest.raises(ValueError, match=r"^the CUDA array's stream must not be 0 \(CUDA Array Interface v3: "):
        _mi.as_buffer(rt, mem, streams, _CAI(_cai_of(buf, stream=0)))
    buf.free()


def test_a13_null_data_with_bytes_refused(mem, rt, streams):
    cai = {"shape": (4,), "typestr": "<f4", "data": (0, False), "version": 3}
    with pytest.raises(ValueError, match=r"^the CUDA array's data pointer is 0 but its shape \(4,\) holds 16 bytes$"):
        _mi.as_buffer(rt, mem, streams, _CAI(cai))
    empty = _mi.as_buffer(rt, mem, streams, _CAI({**cai, "shape": (0,)}))
    assert empty.nbytes == 0 and empty.ptr == 0
    empty.free()


def test_a13_read_only_views_refuse_writes(mem, rt, streams):
    buf = mem.alloc(64, device=0)
    buf.memset(4)
    other = mem.alloc(64, device=0)
    ro = _mi.as_buffer(rt, mem, streams, _CAI(_cai_of(buf, readonly=True)))
    rw = _mi.as_buffer(rt, mem, streams, _CAI(_cai_of(buf, readonly=False)))
    assert ro.readonly and not rw.readonly and not buf.readonly
    assert ro.__cuda_array_interface__["data"] == (buf.ptr, True)
    ro2 = _mi.from_dlpack(mem, streams, _DLProducer(ro))         # DLPack's read-only flag
    assert ro2.readonly
    for view in (ro, ro2):
        for write in (lambda: view.memset(1), lambda: view.copy_from_host(np.zeros(64, np.uint8)),
                      lambda: view.copy_from(other)):
            with pytest.raises(ValueError, match=r"^the DeviceBuffer is read-only$"):
                write()
        with pytest.raises(BufferError, match="read-only"):
            view.__dlpack__()                                   # a legacy capsule cannot say read-only
        assert (view.copy_to_host() == 4).all()                  # reading is fine
        other.copy_from(view)
    rw.memset(5)
    assert (buf.copy_to_host() == 5).all()
    for v in (ro2, ro, rw):
        v.free()
    buf.free()
    other.free()


# -- the same messages on both twins -----------------------------------------------------------------------

def test_messages_are_the_same_on_both_twins(both_twins):
    from accel import _memory_interop as mi
    msgs = []
    for twin in both_twins:
        m, s, r = twin.mod("_memory"), twin.mod("_stream"), twin.mod("_cudart")
        r.load()
        buf = m.alloc(64, device=0)
        got = []
        for call in (lambda: copy.copy(buf), lambda: buf.copy_from_host(np.empty(8, object)),
                     lambda: buf.copy_to_host(np.empty(8, object)), lambda: m.memory_allocated(2**31),
                     lambda: m.alloc(1, device=2**40),
                     lambda: mi.as_buffer(r, m, s, _CAI(_cai_of(buf, stream=0))),
                     lambda: mi.as_buffer(r, m, s, _CAI(_cai_of(buf, readonly=True))).memset(0)):
            try:
                call()
                got.append(None)
            except Exception as e:  # noqa: BLE001
                got.append((type(e).__name__, str(e).replace(repr(buf), "<buf>")))
        buf.free()
        msgs.append(got)
    assert msgs[0] == msgs[1]
    assert None not in msgs[0]
