"""The objects of the lifetime matrix (tests/test_lifetime_matrix.py) and the check of what ELSE changed.

Loaded by path (the suite runs with --import-mode=importlib).  Every object that owns a resource has a
``Kind``: how to make one on a twin (``make``), how to prove it still works (``use``), how to release it
explicitly (``release``, None when only the garbage collector releases it) and how to tell that its
resource is gone (``gone``).  ``Watch`` snapshots everything a case must NOT change (the emulator's
live-handle counters, the pools' used bytes, the twin's memory_allocated, the current device
and current streams, the exported DLPack tensors, and the bytes of canary buffers) and reports the
differences.
"""
import ctypes
import gc
import os
import threading
import time

import numpy as np
import pytest

import accel.cuda as cuda
from accel import _lib
from accel import _memory_interop as _mi
from accel.cuda import _stream_api

NDEV = int(os.environ["ACCEL_TEST_DEVICE_COUNT"])   # the runtime's devices (conftest: 4 on the emulator)
DEV = 1              # the device the cases run on (the canaries live on DEV and on 0)
N = 512              # bytes of every buffer a case makes
USED = 7             # cudaMemPoolAttrUsedMemCurrent (reserved bytes may grow: a cache, not a leak)
PATTERN = (np.arange(4096) * 7 % 251).astype(np.uint8)


def emu_lib():
    cdll = _lib.cudart().cdll
    cdll.accelEmuSetFail.argtypes = [ctypes.c_char_p]
    cdll.accelEmuLiveAllocations.restype = ctypes.c_size_t
    for name in ("accelEmuLiveGraphs", "accelEmuLiveGraphExecs", "accelEmuLiveCaptures"):
        getattr(cdll, name).restype = ctypes.c_int
    return cdll


class Ctx:
    """One twin's modules, set up like the stream tests' ``sm`` fixture (accel.cuda's device parser)."""

    def __init__(self, twin):
        self.twin = twin
        self.mem = twin.mod("_memory")
        self.sm = twin.mod("_stream")
        self.dev = twin.mod("_device")
        self.rt = twin.mod("_cudart")
        self.rt.load()
        self.sm.set_index_parser(_stream_api._parse_device)
        self.mem.set_index_parser(cuda._memory_api._parse_device)
        self.emu = emu_lib()

    def reset(self):
        for d in range(NDEV):
            self.sm.set_stream(self.sm.default_stream(d))
        self.dev.set_device(0)

    def as_buffer(self, obj):
        return _mi.as_buffer(self.rt, self.mem, self.sm, obj)

    def from_dlpack(self, obj):
        return _mi.from_dlpack(self.mem, self.sm, obj)


# -- what else changed ---------------------------------------------------------------------------------

class Watch:
    """A snapshot of the state no case may change; ``diff()`` names what changed since (synchronising
    every device first, so that stream-ordered frees have reached the pools)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.canaries = []
        for d in (0, DEV):
            b = ctx.mem.alloc(PATTERN.nbytes, device=d, stream=ctx.sm.default_stream(d))
            b.copy_from_host(PATTERN)
            self.canaries.append(b)
        self.host_canary = cuda.pinned_empty(PATTERN.nbytes)
        self.host_canary[:] = PATTERN
        self.before = self.state()

    def state(self, canaries=True):
        c = self.ctx
        for d in range(NDEV):
            with cuda.device(d):
                c.rt.cudaDeviceSynchronize()
        pools = [c.mem.pool_handle(d) for d in range(NDEV)]
        return {
            "live_streams": c.emu.accelEmuLiveStreams(),
            "live_events": c.emu.accelEmuLiveEvents(),
            "live_allocations": c.emu.accelEmuLiveAllocations(),
            "live_graphs": c.emu.accelEmuLiveGraphs(),
            "live_graph_execs": c.emu.accelEmuLiveGraphExecs(),
            "live_captures": c.emu.accelEmuLiveCaptures(),
            "pool_used": [c.rt.cudaMemPoolGetAttribute(p, USED) for p in pools],
            "memory_allocated": [c.mem.memory_allocated(d) for d in range(NDEV)],
            "dlpack_exports": len(_mi._exports),
            "current_device": c.dev.current_device(),
            "current_streams": [c.sm.current_stream(d) for d in range(NDEV)],
            "last_error": c.rt.cudaPeekAtLastError(),
            "canaries": [b.copy_to_host().tobytes() == PATTERN.tobytes() for b in self.canaries]
            + [self.host_canary.tobytes() == PATTERN.tobytes()] if canaries else None,
        }

    def diff(self, ignore=()):
        now = self.state()
        return sorted(k for k, v in now.items() if v != self.before[k] and k not in ignore)

    def close(self):
        for b in self.canaries:
            b.free()


# -- the objects ------------------------------------------------------------------------------------------

class Host:
    """A plain Python object: the owner / producer / holder end of a cycle."""


class CAIProducer:
    """A foreign producer (no numpy) exposing __cuda_array_interface__ over a DeviceBuffer it owns."""

    def __init__(self, buf):
        self.buf = buf

    @property
    def __cuda_array_interface__(self):
        return self.buf.__cuda_array_interface__


class DLPackProducer:
    """A foreign producer exposing __dlpack__ / __dlpack_device__ over a DeviceBuffer it owns."""

    def __init__(self, buf):
        self.buf = buf

    def __dlpack__(self, **kw):
        return self.buf.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.buf.__dlpack_device__()


class CapsuleProducer:
    """Hands out one given capsule (to consume a capsule made earlier, or to consume it twice)."""

    def __init__(self, cap, dev):
        self.cap, self.dev = cap, dev

    def __dlpack__(self, **kw):
        return self.cap

    def __dlpack_device__(self):
        return (2, self.dev)


class StreamRef:
    """A foreign object naming an accel stream through the __cuda_stream__ protocol."""

    def __init__(self, stream):
        self.stream = stream

    def __cuda_stream__(self):
        return (0, self.stream.cuda_stream)


class RawStream:
    """A stream made outside accel (cudaStreamCreate), destroyed with this object: what an ExternalStream
    wraps through the __cuda_stream__ protocol."""

    def __init__(self, rt):
        self.rt, self.pid = rt, os.getpid()
        with cuda.device(DEV):
            self.h = rt.cudaStreamCreateWithFlags(1)

    def __cuda_stream__(self):
        return (0, self.h)

    def __del__(self):
        h, self.h = self.h, 0
        if h and os.getpid() == self.pid:     # not in a fork child (CUDA refuses to work there)
            with cuda.device(DEV):
                self.rt.cudaStreamDestroy(h)


class Gate:
    """A host function (``stream.launch_host_func(gate)``) that holds its stream until ``open()``."""

    def __init__(self):
        self.ev = threading.Event()

    def __call__(self):
        self.ev.wait(10)

    def open(self):
        self.ev.set()


def _bytes_ok(buf, value):
    return buf.copy_to_host().tobytes() == bytes([value]) * buf.nbytes


FILL = 0x5A


def _filled(ctx, stream=None):
    b = ctx.mem.alloc(N, device=DEV, stream=stream)
    b.memset(FILL)
    return b


class Obj:
    """One made object: ``obj`` (the thing under test) and ``keep`` (its producer and the case's scaffolding)."""

    def __init__(self, obj, **keep):
        self.obj = obj
        self.keep = keep


class Kind:
    """``prepare`` makes the scaffolding (no faults injected there), ``create`` the object, ``ops`` runs the
    object's own operations (what its C calls are), ``check`` asserts that it works, ``release`` releases
    it explicitly (None: only the garbage collector does)."""
    name = ""
    release = None
    copies = False      # copy / deepcopy / pickle work (with independent ownership) rather than refuse
    calls = ("make", "use", "release")    # the phases that make C calls (fault injection expects a hit)

    def prepare(self, ctx):
        return {}

    def create(self, ctx, keep):
        raise NotImplementedError

    def ops(self, ctx, obj, keep):
        raise NotImplementedError

    def check(self, ctx, obj, keep):
        raise NotImplementedError

    def make(self, ctx):
        keep = self.prepare(ctx)
        return Obj(self.create(ctx, keep), **keep)

    def use(self, ctx, o):
        self.ops(ctx, o.obj, o.keep)
        self.check(ctx, o.obj, o.keep)

    def use_copy(self, ctx, c, o):
        """Exercise a copy ``c`` of ``o`` once ``o`` is released (kinds whose copies work)."""
        self.use(ctx, Obj(c, **o.keep))


class StreamKind(Kind):
    name = "stream"
    calls = ("use",)           # the pool streams of DEV exist already (the matrix's watch makes them)

    def create(self, ctx, keep):
        return ctx.sm.Stream(device=DEV)

    def ops(self, ctx, s, keep):
        s.query()
        s.synchronize()
        s.wait_stream(ctx.sm.default_stream(DEV))
        keep["event"] = s.record_event()     # kept: a fault in its destruction at collection would leak it

    def check(self, ctx, s, keep):
        b = ctx.mem.alloc(N, device=DEV, stream=s)
        try:
            b.memset(3)
            s.synchronize()
            assert _bytes_ok(b, 3)
        finally:
            b.free()


class ExternalStreamKind(StreamKind):
    name = "external_stream"
    calls = ("make", "use")

    def prepare(self, ctx):
        return {"raw": RawStream(ctx.rt)}

    def create(self, ctx, keep):
        return ctx.sm.ExternalStream(keep.pop("raw"))   # keeps the raw stream alive (its _owner)


class EventKind(Kind):
    name = "event"
    calls = ("use",)           # created lazily, by the first record

    def prepare(self, ctx):
        return {"s": ctx.sm.Stream(device=DEV)}

    def create(self, ctx, keep):
        return ctx.sm.Event()

    def ops(self, ctx, ev, keep):
        ev.record(keep["s"])
        ev.query()
        ev.synchronize()
        keep["s"].wait_event(ev)

    def check(self, ctx, ev, keep):
        ev.synchronize()
        assert ev.query() and ev.device.index == DEV


class RecordedEventKind(EventKind):
    name = "event_recorded"
    calls = ("make", "use")

    def create(self, ctx, keep):
        ev = ctx.sm.Event(enable_timing=True)
        ev.record(keep["s"])
        return ev

    def ops(self, ctx, ev, keep):
        EventKind.ops(self, ctx, ev, keep)
        ev.elapsed_time(ev)

    def check(self, ctx, ev, keep):
        EventKind.check(self, ctx, ev, keep)
        assert ev.elapsed_time(ev) == 0.0


class BufferKind(Kind):
    name = "buffer"

    def prepare(self, ctx):
        return {"src": np.full(N, FILL, np.uint8), "side": ctx.sm.Stream(device=DEV, priority=-1)}

    def create(self, ctx, keep):
        return ctx.mem.alloc(N, device=DEV)

    def ops(self, ctx, b, keep):
        b.memset(FILL)
        b.copy_from_host(keep["src"])
        b.copy_to_host()
        b.record_stream(keep["side"])
        b.memset(FILL, stream=keep["side"])
        keep["side"].synchronize()

    def check(self, ctx, b, keep):
        assert not b.closed and _bytes_ok(b, FILL)

    def release(self, ctx, o):
        o.obj.free()


class CAIViewKind(BufferKind):
    """A DeviceBuffer over a foreign producer's memory through __cuda_array_interface__ (as_buffer)."""
    name = "view_cai"
    calls = ("make", "use")    # its free only drops the producer

    def prepare(self, ctx):
        keep = BufferKind.prepare(self, ctx)
        keep["inner"] = _filled(ctx, keep["side"])     # on another stream: the view waits for it
        keep["producer"] = CAIProducer(keep["inner"])
        return keep

    def create(self, ctx, keep):
        return ctx.as_buffer(keep["producer"])


class DLPackViewKind(CAIViewKind):
    """A DeviceBuffer over a foreign producer's memory through DLPack (from_dlpack)."""
    name = "view_dlpack"

    def prepare(self, ctx):
        keep = CAIViewKind.prepare(self, ctx)
        keep["producer"] = DLPackProducer(keep["inner"])
        return keep

    def create(self, ctx, keep):
        return ctx.from_dlpack(keep["producer"])


class ArrayKind(BufferKind):
    """A DeviceArray over a buffer of its own (what to_device / empty return), used through its views."""
    name = "array"
    shape = (16, N // 16)

    def create(self, ctx, keep):
        return ctx.mem.as_array(ctx.mem.alloc(N, device=DEV), np.uint8, self.shape)

    def ops(self, ctx, a, keep):
        a.memset(FILL)
        a.copy_from_host(keep["src"].reshape(self.shape))
        a.copy_to_host()
        a[::2, 1::3].copy_to_host()                               # a strided view: its span read and gathered
        a[1::2, ::-1].copy_from_host(np.full((8, N // 16), FILL, np.uint8))   # one copy per contiguous run
        a.record_stream(keep["side"])
        a.memset(FILL, stream=keep["side"])
        keep["side"].synchronize()
        a.T.__cuda_array_interface__
        a.T.__dlpack__(max_version=(1, 0))                        # an export never consumed

    def check(self, ctx, a, keep):
        assert not a.closed and a.shape == self.shape and _bytes_ok(a, FILL)


class ArrayDLPackKind(ArrayKind):
    """A DeviceArray over a typed producer's memory through DLPack (from_dlpack of a DeviceArray)."""
    name = "array_dlpack"
    calls = ("make", "use")    # its free only drops the producer

    def prepare(self, ctx):
        keep = BufferKind.prepare(self, ctx)
        keep["inner"] = _filled(ctx, keep["side"])     # on another stream: the import waits for it
        keep["producer"] = DLPackProducer(ctx.mem.as_array(keep["inner"], np.uint8, self.shape))
        return keep

    def create(self, ctx, keep):
        return _mi.from_dlpack(ctx.mem, ctx.sm, keep["producer"], True)


class HostRegistrationKind(Kind):
    name = "host_registration"

    def prepare(self, ctx):
        return {"array": np.full(N, 7, np.uint8), "buf": ctx.mem.alloc(N, device=DEV)}

    def create(self, ctx, keep):
        return cuda.host_register(keep["array"])

    def ops(self, ctx, r, keep):
        keep["buf"].copy_from_host(r.array)       # asynchronous: the array is page-locked
        keep["buf"].copy_to_host(out=r.array)
        keep["buf"].stream.synchronize()

    def check(self, ctx, r, keep):
        assert r.registered and ctx.rt.cudaPointerGetAttributes(r.ptr)[0] == 1
        assert (r.array == 7).all() and _bytes_ok(keep["buf"], 7)

    def release(self, ctx, o):
        o.obj.unregister()


class PinnedKind(Kind):
    name = "pinned"
    copies = True     # a copy of a numpy array is a new (pageable) array with memory of its own
    calls = ("make", "use")

    def prepare(self, ctx):
        return {"buf": ctx.mem.alloc(N, device=DEV)}

    def create(self, ctx, keep):
        a = cuda.pinned_empty(N)
        a[:] = 9
        keep["ptr"] = a.ctypes.data
        return a

    def ops(self, ctx, a, keep):
        keep["buf"].copy_from_host(a)
        keep["buf"].copy_to_host(out=a)
        keep["buf"].stream.synchronize()

    def check(self, ctx, a, keep):
        assert ctx.rt.cudaPointerGetAttributes(a.ctypes.data)[0] == 1 and (a == 9).all()
        assert _bytes_ok(keep["buf"], 9)

    def use_copy(self, ctx, c, o):
        # a pageable array with memory of its own (the pinned original is gone by now)
        assert (c == 9).all() and c.ctypes.data != o.keep["ptr"]
        assert ctx.rt.cudaPointerGetAttributes(c.ctypes.data)[0] != 1


class GraphKind(Kind):
    """A CUDAGraph that captured a memset on a side stream of DEV (graph memory: tests/test_graphs.py).  Its
    release, reset(), reports failures as warnings (torch's), so it is not a phase faults must hit."""
    name = "cuda_graph"
    calls = ("make", "use")

    def prepare(self, ctx):
        s = ctx.sm.Stream(device=DEV)
        return {"s": s, "buf": ctx.mem.alloc(N, device=DEV, stream=s)}

    def create(self, ctx, keep):
        g = ctx.sm.CUDAGraph()
        s = keep["s"]
        with ctx.sm.stream(s):
            try:
                g.capture_begin()
                keep["buf"].memset(FILL, stream=s)
                g.capture_end()
            except BaseException:
                g.reset()            # ends a capture left open (as accel.cuda.graph's exit does)
                raise
        return g

    def ops(self, ctx, g, keep):
        with ctx.sm.stream(keep["s"]):
            g.replay()               # the buffer holds FILL only once a replay ran (the capture ran nothing)
        keep["s"].synchronize()

    def check(self, ctx, g, keep):
        assert _bytes_ok(keep["buf"], FILL) and isinstance(g.raw_cuda_graph_exec(), int)

    def release(self, ctx, o):
        o.obj.reset()


def _unconsumed(cap):
    return bool(_mi._api.PyCapsule_IsValid(cap, b"dltensor"))


class CapsuleKind(Kind):
    """A DLPack capsule of a DeviceBuffer, never consumed (it keeps the buffer exported)."""
    name = "capsule"
    # the export makes the consumer's (legacy) stream wait for the buffer's; from_dlpack makes the tensor's
    # device (DEV) current around the producer's export
    calls = ("make", "use")

    def prepare(self, ctx):
        return {"inner": _filled(ctx, ctx.sm.Stream(device=DEV, priority=-1))}

    def create(self, ctx, keep):
        return keep["inner"].__dlpack__()

    def ops(self, ctx, cap, keep):
        if _unconsumed(cap):
            keep["view"] = ctx.from_dlpack(CapsuleProducer(cap, DEV))    # consumes it

    def check(self, ctx, cap, keep):
        if _unconsumed(cap):
            self.ops(ctx, cap, keep)
        v = keep.pop("view")
        assert not _unconsumed(cap) and v.ptr == keep["inner"].ptr and _bytes_ok(v, FILL)
        v.free()


class ConsumedCapsuleKind(CapsuleKind):
    """A DLPack capsule already consumed by from_dlpack (its view alive in ``keep``); consuming it again is
    refused."""
    name = "capsule_consumed"
    calls = ("make", "use")

    def create(self, ctx, keep):
        cap = keep["inner"].__dlpack__()
        keep["view"] = ctx.from_dlpack(CapsuleProducer(cap, DEV))
        return cap

    def ops(self, ctx, cap, keep):
        try:
            ctx.from_dlpack(CapsuleProducer(cap, DEV))
        except BufferError as e:
            assert "unconsumed DLPack capsule" in str(e)
        else:
            raise AssertionError("a consumed capsule was consumed again")

    def check(self, ctx, cap, keep):
        assert not _unconsumed(cap) and _bytes_ok(keep["view"], FILL)


KINDS = [StreamKind(), ExternalStreamKind(), EventKind(), RecordedEventKind(), BufferKind(), CAIViewKind(),
         DLPackViewKind(), ArrayKind(), ArrayDLPackKind(), HostRegistrationKind(), PinnedKind(), CapsuleKind(),
         ConsumedCapsuleKind(), GraphKind()]
BY_NAME = {k.name: k for k in KINDS}


def collect():
    gc.collect()
    gc.collect()


def wait_until(pred, timeout=2.0):
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            return False
        time.sleep(0.002)
    return True


# -- the fixtures of the suites whose cases run under a Watch (test_lifetime_matrix.py, test_device_array.py);
# a test module takes them by name (`ctx, watch = F.ctx, F.watch`)

@pytest.fixture
def ctx(twin):
    c = Ctx(twin)
    c.reset()
    yield c
    c.emu.accelEmuSetFail(None)
    c.reset()


@pytest.fixture
def watch(ctx):
    gc.collect()
    for p in (0, -1):       # every pool stream of DEV exists: a case's Stream() creates none
        for _ in range(32):
            ctx.sm.Stream(device=DEV, priority=p)
    for d in range(NDEV):   # and this thread's cached wait_stream event of every device
        ctx.sm.default_stream(d).wait_stream(ctx.sm.default_stream(d))
    w = Watch(ctx)
    yield w
    w.close()


def check(watch, ignore=()):
    """A case's end: after a collection, nothing the watch covers changed (but `ignore`)."""
    collect()
    changed = watch.diff(ignore)
    assert not changed, f"the case changed {changed}"
