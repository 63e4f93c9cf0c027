"""C-level semantics of the emulated CUDA runtime (accel/_emu), driven through ctypes.

The library is located as ``ACCEL_EMU_LIB`` if set, else next to the installed ``accel`` package.
In-process tests load a private copy of it, so that their state (primary contexts, fault specs,
live-handle counters) is independent of any instance accel itself has loaded in this process.
Behaviour that depends on environment variables (read once per process) runs in subprocesses.
Needs no conftest fixture.
"""
import ctypes
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time

import pytest

c_int, c_uint, c_size_t, c_void_p, c_char_p = (ctypes.c_int, ctypes.c_uint, ctypes.c_size_t,
                                               ctypes.c_void_p, ctypes.c_char_p)
HOSTFN = ctypes.CFUNCTYPE(None, c_void_p)
INVALID_VALUE, OOM, INIT_ERR, NO_DEVICE, INVALID_DEVICE = 1, 2, 3, 100, 101
INVALID_HANDLE, NOT_READY, NOT_PERMITTED, UNKNOWN = 400, 600, 800, 999
LEGACY, PER_THREAD = c_void_p(0), c_void_p(2)


def _lib_path():
    path = os.environ.get("ACCEL_EMU_LIB")
    if not path:
        import accel._lib as lib

        if hasattr(lib, "emu_path"):
            path = lib.emu_path()
        else:
            path = os.path.join(os.path.dirname(os.path.abspath(lib.__file__)), "_emu",
                                "libaccel_cudart_emu.so")
    return path


LIB_PATH = _lib_path()
if not os.path.exists(LIB_PATH):
    pytest.skip(f"emulated runtime not built: {LIB_PATH}", allow_module_level=True)


class IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


class PtrAttr(ctypes.Structure):   # CUDA 13's 88 bytes: the emulator writes all of them
    _fields_ = [("type", c_int), ("device", c_int), ("devicePointer", c_void_p),
                ("hostPointer", c_void_p), ("reserved", ctypes.c_long * 8)]


def _declare(lib):
    P = ctypes.POINTER
    sigs = {
        "cudaGetErrorName": (c_char_p, [c_int]), "cudaGetErrorString": (c_char_p, [c_int]),
        "cudaGetDeviceCount": (c_int, [P(c_int)]), "cudaGetDevice": (c_int, [P(c_int)]),
        "cudaSetDevice": (c_int, [c_int]), "cudaDeviceSynchronize": (c_int, []),
        "cudaDriverGetVersion": (c_int, [P(c_int)]), "cudaRuntimeGetVersion": (c_int, [P(c_int)]),
        "cudaGetLastError": (c_int, []), "cudaPeekAtLastError": (c_int, []),
        "cudaDeviceGetStreamPriorityRange": (c_int, [P(c_int), P(c_int)]),
        "cudaStreamCreate": (c_int, [P(c_void_p)]),
        "cudaStreamCreateWithFlags": (c_int, [P(c_void_p), c_uint]),
        "cudaStreamCreateWithPriority": (c_int, [P(c_void_p), c_uint, c_int]),
        "cudaStreamDestroy": (c_int, [c_void_p]), "cudaStreamQuery": (c_int, [c_void_p]),
        "cudaStreamSynchronize": (c_int, [c_void_p]),
        "cudaStreamGetPriority": (c_int, [c_void_p, P(c_int)]),
        "cudaStreamGetFlags": (c_int, [c_void_p, P(c_uint)]),
        "cudaStreamGetId": (c_int, [c_void_p, P(ctypes.c_ulonglong)]),
        "cudaStreamGetDevice": (c_int, [c_void_p, P(c_int)]),
        "cudaStreamWaitEvent": (c_int, [c_void_p, c_void_p, c_uint]),
        "cudaStreamIsCapturing": (c_int, [c_void_p, P(c_int)]),
        "cudaThreadExchangeStreamCaptureMode": (c_int, [P(c_int)]),
        "cudaEventCreate": (c_int, [P(c_void_p)]),
        "cudaEventCreateWithFlags": (c_int, [P(c_void_p), c_uint]),
        "cudaEventDestroy": (c_int, [c_void_p]), "cudaEventRecord": (c_int, [c_void_p, c_void_p]),
        "cudaEventRecordWithFlags": (c_int, [c_void_p, c_void_p, c_uint]),
        "cudaEventQuery": (c_int, [c_void_p]), "cudaEventSynchronize": (c_int, [c_void_p]),
        "cudaEventElapsedTime": (c_int, [P(ctypes.c_float), c_void_p, c_void_p]),
        "cudaIpcGetEventHandle": (c_int, [P(IpcHandle), c_void_p]),
        "cudaIpcOpenEventHandle": (c_int, [P(c_void_p), IpcHandle]),
        "cudaMalloc": (c_int, [P(c_void_p), c_size_t]), "cudaFree": (c_int, [c_void_p]),
        "cudaMemGetInfo": (c_int, [P(c_size_t), P(c_size_t)]),
        "cudaMemcpyAsync": (c_int, [c_void_p, c_void_p, c_size_t, c_int, c_void_p]),
        "cudaMemsetAsync": (c_int, [c_void_p, c_int, c_size_t, c_void_p]),
        "cudaPointerGetAttributes": (c_int, [P(PtrAttr), c_void_p]),
        "cudaLaunchHostFunc": (c_int, [c_void_p, HOSTFN, c_void_p]),
        "cudaDeviceGetAttribute": (c_int, [P(c_int), c_int, c_int]),
        "cudaGetDeviceProperties": (c_int, [c_void_p, c_int]),
        "cudaGetDeviceProperties_v2": (c_int, [c_void_p, c_int]),
        "cudaDeviceCanAccessPeer": (c_int, [P(c_int), c_int, c_int]),
        "cudaDeviceGetPCIBusId": (c_int, [ctypes.c_char_p, c_int, c_int]),
        "cuDevicePrimaryCtxGetState": (c_int, [c_int, P(c_uint), P(c_int)]),
        "cuGetErrorName": (c_int, [c_int, P(c_char_p)]),
        "cuGetErrorString": (c_int, [c_int, P(c_char_p)]),
        "cuDriverGetVersion": (c_int, [P(c_int)]), "cuInit": (c_int, [c_uint]),
        "accelEmuLiveStreams": (c_int, []), "accelEmuLiveEvents": (c_int, []),
        "accelEmuLiveAllocations": (c_size_t, []), "accelEmuSetFail": (c_int, [c_char_p]),
        "accelEmuResetContexts": (c_int, []), "accelEmuDeviceCount": (c_int, []),
        "cudaHostAlloc": (c_int, [P(c_void_p), c_size_t, c_uint]), "cudaFreeHost": (c_int, [c_void_p]),
        "cudaMemcpy2DAsync": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t, c_size_t, c_size_t, c_int, c_void_p]),
        "cudaStreamBeginCapture": (c_int, [c_void_p, c_int]),
        "cudaStreamEndCapture": (c_int, [c_void_p, P(c_void_p)]), "cudaGraphDestroy": (c_int, [c_void_p]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    private = tmp_path_factory.mktemp("emu") / "libaccel_cudart_emu_private.so"
    shutil.copyfile(LIB_PATH, private)
    lib = _declare(ctypes.CDLL(str(private), mode=ctypes.RTLD_LOCAL))
    if lib.accelEmuDeviceCount() < 1:
        pytest.skip("ACCEL_EMU_DEVICES configures no usable device in this process")
    return lib


@pytest.fixture
def cu(emu):
    """The library in a clean per-test state: no fault spec, device 0, no pending error."""
    assert emu.accelEmuSetFail(None) == 0
    assert emu.cudaSetDevice(0) == 0
    emu.cudaGetLastError()
    yield emu
    emu.accelEmuSetFail(None)
    emu.cudaSetDevice(0)
    emu.cudaGetLastError()


def ndev(cu):
    return cu.accelEmuDeviceCount()


def need_devices(cu, n):
    if ndev(cu) < n:
        pytest.skip(f"needs {n} emulated devices")


def ok(rc):
    assert rc == 0, rc


def stream(cu, flags=0, prio=0):
    s = c_void_p()
    ok(cu.cudaStreamCreateWithPriority(ctypes.byref(s), flags, prio))
    return s


def event(cu, flags=0):
    e = c_void_p()
    ok(cu.cudaEventCreateWithFlags(ctypes.byref(e), flags))
    return e


class Host:
    """Host functions as ctypes callbacks; keeps them alive while queued."""

    def __init__(self, cu):
        self.cu, self.keep, self.log = cu, [], []

    def launch(self, s, fn):
        cb = HOSTFN(lambda _arg: fn())
        self.keep.append(cb)
        ok(self.cu.cudaLaunchHostFunc(s, cb, None))

    def append(self, s, value):
        self.launch(s, lambda: self.log.append(value))

    def sleep(self, s, seconds):
        self.launch(s, lambda: time.sleep(seconds))

    def gate(self, s):
        g = threading.Event()
        self.launch(s, lambda: g.wait(10))
        return g


# --------------------------------------------------------------------------- basics

def test_error_texts(cu):
    cases = {0: ("cudaSuccess", "no error"), 1: ("cudaErrorInvalidValue", "invalid argument"),
             2: ("cudaErrorMemoryAllocation", "out of memory"),
             35: ("cudaErrorInsufficientDriver",
                  "CUDA driver version is insufficient for CUDA runtime version"),
             100: ("cudaErrorNoDevice", "no CUDA-capable device is detected"),
             101: ("cudaErrorInvalidDevice", "invalid device ordinal"),
             400: ("cudaErrorInvalidResourceHandle", "invalid resource handle"),
             600: ("cudaErrorNotReady", "device not ready"),
             999: ("cudaErrorUnknown", "unknown error")}
    for code, (name, text) in cases.items():
        assert cu.cudaGetErrorName(code).decode() == name
        assert cu.cudaGetErrorString(code).decode() == text
    for code in (12345, -1, 1000):
        assert cu.cudaGetErrorName(code) == b"unrecognized error code"
        assert cu.cudaGetErrorString(code) == b"unrecognized error code"
    s = c_char_p()
    ok(cu.cuGetErrorName(101, ctypes.byref(s)))
    assert s.value == b"CUDA_ERROR_INVALID_DEVICE"
    ok(cu.cuGetErrorString(101, ctypes.byref(s)))
    assert s.value == b"invalid device ordinal"
    ok(cu.cuGetErrorName(400, ctypes.byref(s)))
    assert s.value == b"CUDA_ERROR_INVALID_HANDLE"
    assert cu.cuGetErrorName(4242, ctypes.byref(s)) == INVALID_VALUE and s.value is None


def test_versions_and_counts(cu):
    v = c_int()
    for fn in (cu.cudaDriverGetVersion, cu.cudaRuntimeGetVersion, cu.cuDriverGetVersion):
        ok(fn(ctypes.byref(v)))
        assert v.value == 13000
    n = c_int()
    ok(cu.cudaGetDeviceCount(ctypes.byref(n)))
    assert n.value == ndev(cu) >= 1
    ok(cu.cuInit(0))
    least, greatest = c_int(7), c_int(7)
    ok(cu.cudaDeviceGetStreamPriorityRange(ctypes.byref(least), ctypes.byref(greatest)))
    assert (least.value, greatest.value) == (0, -5)
    ok(cu.cudaDeviceGetStreamPriorityRange(None, None))
    assert cu.cudaSetDevice(ndev(cu)) == INVALID_DEVICE
    assert cu.cudaSetDevice(-1) == INVALID_DEVICE


def test_device_attributes_and_properties(cu):
    expect = {1: 1024, 10: 32, 16: 132, 75: 9, 76: 0, 38: 52428800, 39: 2048, 37: 5120, 9: 65536,
              82: 65536, 83: 1, 84: 0, 31: 1, 17: 0, 18: 0, 20: 0, 95: 1, 50: 0}
    v = c_int()
    for attr, value in expect.items():
        ok(cu.cudaDeviceGetAttribute(ctypes.byref(v), attr, 0))
        assert v.value == value, attr
    assert cu.cudaDeviceGetAttribute(ctypes.byref(v), 100000, 0) == INVALID_VALUE
    assert cu.cudaDeviceGetAttribute(ctypes.byref(v), 1, ndev(cu)) == INVALID_DEVICE
    free, total = c_size_t(), c_size_t()
    ok(cu.cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total)))
    uuids = set()
    for d in range(ndev(cu)):
        buf = ctypes.create_string_buffer(b"\xff" * 1024, 1024)
        ok(cu.cudaGetDeviceProperties_v2(buf, d))
        name = buf.raw[:256].split(b"\0")[0].decode()
        assert "emu" in name and "H100" in name
        uuids.add(buf.raw[256:272])
        assert int.from_bytes(buf.raw[288:296], sys.byteorder) == total.value
        # the whole cudaDeviceProp in the CUDA 13 layout (1008 bytes; major/minor at 360/364) and nothing past it
        assert [int.from_bytes(buf.raw[o:o + 4], sys.byteorder) for o in (360, 364, 384)] == [9, 0, 132]
        assert buf.raw[1008:] == b"\xff" * (1024 - 1008)
        ok(cu.cudaGetDeviceProperties(buf, d))
        assert buf.raw[256:272] in uuids
    assert len(uuids) == ndev(cu)
    assert cu.cudaGetDeviceProperties(ctypes.create_string_buffer(1024), ndev(cu)) == INVALID_DEVICE
    can = c_int()
    ok(cu.cudaDeviceCanAccessPeer(ctypes.byref(can), 0, 0))
    assert can.value == 0
    if ndev(cu) > 1:
        ok(cu.cudaDeviceCanAccessPeer(ctypes.byref(can), 0, 1))
        assert can.value == 1
    bus = ctypes.create_string_buffer(32)
    ok(cu.cudaDeviceGetPCIBusId(bus, 32, 0))
    assert bus.value.startswith(b"0000")


def test_sticky_last_error_is_per_thread(cu):
    assert cu.cudaPeekAtLastError() == 0
    assert cu.cudaSetDevice(9999) == INVALID_DEVICE
    ok(cu.cudaSetDevice(0))                              # success does not clear
    assert cu.cudaPeekAtLastError() == INVALID_DEVICE
    assert cu.cudaPeekAtLastError() == INVALID_DEVICE    # peek does not clear
    assert cu.cudaStreamQuery(c_void_p(0xDEADBEEF)) == INVALID_HANDLE
    seen = []
    t = threading.Thread(target=lambda: seen.append(cu.cudaGetLastError()))
    t.start()
    t.join()
    assert seen == [0]                                   # another thread's slot is untouched
    assert cu.cudaGetLastError() == INVALID_HANDLE       # the latest error, then cleared
    assert cu.cudaGetLastError() == 0


def test_per_thread_current_device(cu):
    need_devices(cu, 3)
    ok(cu.cudaSetDevice(1))
    seen = []

    def body():
        d = c_int(-1)
        ok(cu.cudaGetDevice(ctypes.byref(d)))
        seen.append(d.value)
        ok(cu.cudaSetDevice(2))
        ok(cu.cudaGetDevice(ctypes.byref(d)))
        seen.append(d.value)

    t = threading.Thread(target=body)
    t.start()
    t.join()
    d = c_int()
    ok(cu.cudaGetDevice(ctypes.byref(d)))
    assert seen == [0, 2] and d.value == 1


def test_primary_context_creation(cu):
    need_devices(cu, 3)
    flags, active = c_uint(7), c_int(7)

    def state(dev):
        ok(cu.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active)))
        assert flags.value == 0
        return active.value

    ok(cu.accelEmuResetContexts())
    assert [state(d) for d in range(ndev(cu))] == [0] * ndev(cu)
    d, n, v = c_int(), c_int(), c_int()
    ok(cu.cudaGetDevice(ctypes.byref(d)))
    ok(cu.cudaGetDeviceCount(ctypes.byref(n)))
    ok(cu.cudaDeviceGetAttribute(ctypes.byref(v), 16, 1))
    assert state(0) == 0 and state(1) == 0                # queries create nothing
    ok(cu.cudaSetDevice(1))
    assert state(1) == 1 and state(0) == 0
    ok(cu.cudaSetDevice(0))
    assert state(0) == 1                                  # SetDevice always creates

    ok(cu.accelEmuResetContexts())

    def other_thread():
        ok(cu.cudaSetDevice(2))
        ok(cu.accelEmuResetContexts())
        s = stream(cu)                                    # first work creates it
        ok(cu.cudaStreamDestroy(s))

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert state(2) == 1 and state(1) == 0
    assert cu.cuDevicePrimaryCtxGetState(ndev(cu), ctypes.byref(flags), ctypes.byref(active)) == 101
    assert cu.cuDevicePrimaryCtxGetState(-1, ctypes.byref(flags), ctypes.byref(active)) == 101
    assert cu.cuDevicePrimaryCtxGetState(0, None, None) == INVALID_VALUE


# --------------------------------------------------------------------------- streams

def test_stream_properties(cu):
    s = stream(cu, 1, -100)                              # priority clamps to the range
    p, f, d, cap = c_int(), c_uint(), c_int(), c_int(5)
    ok(cu.cudaStreamGetPriority(s, ctypes.byref(p)))
    ok(cu.cudaStreamGetFlags(s, ctypes.byref(f)))
    ok(cu.cudaStreamGetDevice(s, ctypes.byref(d)))
    ok(cu.cudaStreamIsCapturing(s, ctypes.byref(cap)))
    assert (p.value, f.value, d.value, cap.value) == (-5, 1, 0, 0)
    t = stream(cu, 0, 10)
    ok(cu.cudaStreamGetPriority(t, ctypes.byref(p)))
    assert p.value == 0
    i1, i2 = ctypes.c_ulonglong(), ctypes.c_ulonglong()
    ok(cu.cudaStreamGetId(s, ctypes.byref(i1)))
    ok(cu.cudaStreamGetId(t, ctypes.byref(i2)))
    assert i1.value != i2.value
    for special in (LEGACY, c_void_p(1), PER_THREAD):
        ok(cu.cudaStreamQuery(special))
        ok(cu.cudaStreamGetDevice(special, ctypes.byref(d)))
        assert d.value == 0
    bad = c_void_p()
    assert cu.cudaStreamCreateWithFlags(ctypes.byref(bad), 2) == INVALID_VALUE
    assert cu.cudaStreamCreateWithFlags(None, 0) == INVALID_VALUE
    mode = c_int(1)
    ok(cu.cudaThreadExchangeStreamCaptureMode(ctypes.byref(mode)))
    assert mode.value == 0
    ok(cu.cudaThreadExchangeStreamCaptureMode(ctypes.byref(mode)))
    assert mode.value == 1
    ok(cu.cudaStreamDestroy(s))
    ok(cu.cudaStreamDestroy(t))


def test_stream_device_follows_creation(cu):
    need_devices(cu, 2)
    ok(cu.cudaSetDevice(1))
    s, e = stream(cu), event(cu)
    ok(cu.cudaSetDevice(0))
    d = c_int()
    ok(cu.cudaStreamGetDevice(s, ctypes.byref(d)))
    assert d.value == 1
    ok(cu.cudaEventRecord(e, s))                          # same device: fine from anywhere
    assert cu.cudaEventRecord(e, LEGACY) == INVALID_HANDLE  # device 0's legacy stream
    e0 = event(cu)
    assert cu.cudaEventRecord(e0, s) == INVALID_HANDLE
    ok(cu.cudaStreamWaitEvent(LEGACY, e, 0))              # cross-device waits are allowed
    ok(cu.cudaDeviceSynchronize())
    for h in (s,):
        ok(cu.cudaStreamDestroy(h))
    for h in (e, e0):
        ok(cu.cudaEventDestroy(h))


def test_fifo_order_of_host_functions(cu):
    h = Host(cu)
    s = stream(cu, 1)
    h.sleep(s, 0.02)
    for i in range(300):
        h.append(s, i)
    assert cu.cudaStreamQuery(s) == NOT_READY
    ok(cu.cudaStreamSynchronize(s))
    ok(cu.cudaStreamQuery(s))
    assert h.log == list(range(300))
    assert cu.cudaLaunchHostFunc(s, HOSTFN(), None) == INVALID_VALUE
    ok(cu.cudaStreamDestroy(s))


def test_cross_stream_wait(cu):
    h = Host(cu)
    a, b, e = stream(cu, 1), stream(cu, 1), event(cu)
    h.sleep(a, 0.1)
    h.append(a, "a")
    ok(cu.cudaEventRecord(e, a))
    ok(cu.cudaStreamWaitEvent(b, e, 0))
    h.append(b, "b")
    h.sleep(a, 0.05)                                     # after the record: not waited for
    h.append(a, "a-late")
    assert cu.cudaEventQuery(e) == NOT_READY
    assert cu.cudaStreamQuery(b) == NOT_READY
    ok(cu.cudaStreamSynchronize(b))
    assert h.log[:2] == ["a", "b"]
    ok(cu.cudaEventQuery(e))
    ok(cu.cudaStreamSynchronize(a))
    assert h.log == ["a", "b", "a-late"]
    never = event(cu)
    ok(cu.cudaStreamWaitEvent(b, never, 0))              # never recorded: no-op
    ok(cu.cudaEventQuery(never))
    ok(cu.cudaEventSynchronize(never))
    assert cu.cudaStreamWaitEvent(b, never, 2) == INVALID_VALUE
    for s in (a, b):
        ok(cu.cudaStreamDestroy(s))
    for ev in (e, never):
        ok(cu.cudaEventDestroy(ev))


def test_rerecord_refers_to_latest(cu):
    h = Host(cu)
    a, e = stream(cu, 1), event(cu)
    ok(cu.cudaEventRecord(e, a))
    ok(cu.cudaStreamSynchronize(a))
    ok(cu.cudaEventQuery(e))
    g = h.gate(a)
    ok(cu.cudaEventRecordWithFlags(e, a, 0))
    assert cu.cudaEventQuery(e) == NOT_READY
    g.set()
    ok(cu.cudaEventSynchronize(e))
    ok(cu.cudaEventQuery(e))
    assert cu.cudaEventRecordWithFlags(e, a, 4) == INVALID_VALUE
    ok(cu.cudaStreamDestroy(a))
    ok(cu.cudaEventDestroy(e))


def test_event_timing(cu):
    h = Host(cu)
    s = stream(cu)
    e0, e1, nt = event(cu), event(cu), event(cu, 2)
    ms = ctypes.c_float()
    assert cu.cudaEventElapsedTime(ctypes.byref(ms), e0, e1) == INVALID_HANDLE   # never recorded
    ok(cu.cudaEventRecord(e0, s))
    h.sleep(s, 0.05)
    ok(cu.cudaEventRecord(e1, s))
    ok(cu.cudaEventRecord(nt, s))
    ok(cu.cudaEventSynchronize(e1))
    ok(cu.cudaEventElapsedTime(ctypes.byref(ms), e0, e1))
    assert 49.0 <= ms.value < 5000.0
    assert cu.cudaEventElapsedTime(ctypes.byref(ms), e0, nt) == INVALID_HANDLE   # DisableTiming
    assert cu.cudaEventElapsedTime(None, e0, e1) == INVALID_VALUE
    g = h.gate(s)
    ok(cu.cudaEventRecord(e1, s))
    assert cu.cudaEventElapsedTime(ctypes.byref(ms), e0, e1) == NOT_READY
    g.set()
    ok(cu.cudaStreamSynchronize(s))
    ok(cu.cudaEventElapsedTime(ctypes.byref(ms), e0, e1))
    bad = c_void_p()
    assert cu.cudaEventCreateWithFlags(ctypes.byref(bad), 4) == INVALID_VALUE    # IPC needs 2
    assert cu.cudaEventCreateWithFlags(ctypes.byref(bad), 8) == INVALID_VALUE
    for ev in (e0, e1, nt):
        ok(cu.cudaEventDestroy(ev))
    ok(cu.cudaStreamDestroy(s))


@pytest.mark.parametrize("legacy", [LEGACY, c_void_p(1)], ids=["null", "cudaStreamLegacy"])
def test_legacy_stream_syncs_with_blocking_streams_only(cu, legacy):
    h = Host(cu)
    blocking, nonblocking = stream(cu, 0), stream(cu, 1)
    # legacy work waits for prior blocking-stream work ...
    g = h.gate(blocking)
    h.append(legacy, "legacy")
    h.append(nonblocking, "nonblocking")
    ok(cu.cudaStreamSynchronize(nonblocking))            # not held back by the legacy stream
    time.sleep(0.05)
    assert h.log == ["nonblocking"]
    assert cu.cudaStreamQuery(legacy) == NOT_READY
    g.set()
    ok(cu.cudaStreamSynchronize(legacy))
    assert h.log == ["nonblocking", "legacy"]
    # ... and later blocking-stream work waits for prior legacy work.
    h.log.clear()
    g = h.gate(legacy)
    h.append(blocking, "blocking")
    h.append(PER_THREAD, "per-thread")                   # the per-thread stream is blocking too
    h.append(nonblocking, "nonblocking")
    ok(cu.cudaStreamSynchronize(nonblocking))
    time.sleep(0.05)
    assert h.log == ["nonblocking"]
    g.set()
    ok(cu.cudaDeviceSynchronize())
    assert sorted(h.log) == ["blocking", "nonblocking", "per-thread"]
    ok(cu.cudaStreamDestroy(blocking))
    ok(cu.cudaStreamDestroy(nonblocking))


def test_legacy_sync_is_per_device(cu):
    need_devices(cu, 2)
    h = Host(cu)
    ok(cu.cudaSetDevice(1))
    other = stream(cu, 0)
    g = h.gate(other)
    ok(cu.cudaSetDevice(0))
    h.append(LEGACY, "dev0-legacy")
    ok(cu.cudaStreamSynchronize(LEGACY))
    assert h.log == ["dev0-legacy"]
    g.set()
    ok(cu.cudaStreamSynchronize(other))
    ok(cu.cudaStreamDestroy(other))


def test_host_function_may_call_the_api(cu):
    s, e = stream(cu), event(cu)
    results = []

    def body():
        results.append(cu.cudaEventRecord(e, s))
        results.append(cu.cudaStreamQuery(s))
        results.append(cu.cudaStreamSynchronize(s))      # would wait on itself: refused
        results.append(cu.cudaGetLastError())

    cb = HOSTFN(lambda _a: body())
    ok(cu.cudaLaunchHostFunc(s, cb, None))
    ok(cu.cudaStreamSynchronize(s))
    assert results == [0, NOT_READY, NOT_PERMITTED, NOT_PERMITTED]
    ok(cu.cudaEventQuery(e))
    ok(cu.cudaStreamDestroy(s))
    ok(cu.cudaEventDestroy(e))


def test_destroy_with_pending_work_completes_it(cu):
    h = Host(cu)
    s = stream(cu)
    h.sleep(s, 0.05)
    h.append(s, "done")
    ok(cu.cudaStreamDestroy(s))
    assert cu.cudaStreamQuery(s) == INVALID_HANDLE
    ok(cu.cudaDeviceSynchronize())
    assert h.log == ["done"]


# --------------------------------------------------------------------------- handles

def test_destroyed_and_foreign_handles(cu):
    s, e = stream(cu), event(cu)
    ok(cu.cudaStreamDestroy(s))
    ok(cu.cudaEventDestroy(e))
    foreign = [s, c_void_p(0xDEADBEEF), c_void_p(0x1234560), c_void_p(e.value), c_void_p(3)]
    cb = HOSTFN(lambda _a: None)
    p, f = c_int(), c_uint()
    for h in foreign:
        assert cu.cudaStreamQuery(h) == INVALID_HANDLE
        assert cu.cudaStreamSynchronize(h) == INVALID_HANDLE
        assert cu.cudaStreamDestroy(h) == INVALID_HANDLE
        assert cu.cudaStreamGetPriority(h, ctypes.byref(p)) == INVALID_HANDLE
        assert cu.cudaStreamGetFlags(h, ctypes.byref(f)) == INVALID_HANDLE
        assert cu.cudaLaunchHostFunc(h, cb, None) == INVALID_HANDLE
    live = event(cu)
    for h in [e, c_void_p(0xDEADBEEF), c_void_p(0), c_void_p(1), c_void_p(s.value)]:
        assert cu.cudaEventQuery(h) == INVALID_HANDLE
        assert cu.cudaEventSynchronize(h) == INVALID_HANDLE
        assert cu.cudaEventDestroy(h) == INVALID_HANDLE
        assert cu.cudaEventRecord(h, LEGACY) == INVALID_HANDLE
        assert cu.cudaStreamWaitEvent(LEGACY, h, 0) == INVALID_HANDLE
    assert cu.cudaEventRecord(live, s) == INVALID_HANDLE
    assert cu.cudaStreamDestroy(LEGACY) == INVALID_HANDLE
    assert cu.cudaStreamDestroy(PER_THREAD) == INVALID_HANDLE
    s2 = stream(cu)
    assert s2.value != s.value                            # never reused
    ok(cu.cudaStreamDestroy(s2))
    ok(cu.cudaEventDestroy(live))


def test_create_destroy_cycles_leave_no_handles(cu):
    base = (cu.accelEmuLiveStreams(), cu.accelEmuLiveEvents(), cu.accelEmuLiveAllocations())
    s, e, p = c_void_p(), c_void_p(), c_void_p()
    for i in range(20000):
        ok(cu.cudaStreamCreateWithFlags(ctypes.byref(s), i & 1))
        ok(cu.cudaEventCreateWithFlags(ctypes.byref(e), 2))
        ok(cu.cudaEventRecord(e, s))
        ok(cu.cudaMalloc(ctypes.byref(p), 64))
        ok(cu.cudaFree(p))
        ok(cu.cudaEventDestroy(e))
        ok(cu.cudaStreamDestroy(s))
    ok(cu.cudaDeviceSynchronize())
    assert (cu.accelEmuLiveStreams(), cu.accelEmuLiveEvents(),
            cu.accelEmuLiveAllocations()) == base


# --------------------------------------------------------------------------- memory

def test_memory_accounting_and_oom(cu):
    free0, total = c_size_t(), c_size_t()
    ok(cu.cudaMemGetInfo(ctypes.byref(free0), ctypes.byref(total)))
    p = c_void_p()
    ok(cu.cudaMalloc(ctypes.byref(p), 1 << 20))
    free1 = c_size_t()
    ok(cu.cudaMemGetInfo(ctypes.byref(free1), ctypes.byref(total)))
    assert free0.value - free1.value == 1 << 20
    assert p.value % 256 == 0
    assert cu.cudaMalloc(ctypes.byref(c_void_p()), total.value) == OOM
    assert cu.cudaGetLastError() == OOM
    ok(cu.cudaFree(p))
    ok(cu.cudaMemGetInfo(ctypes.byref(free1), ctypes.byref(total)))
    assert free1.value == free0.value
    assert cu.cudaFree(p) == INVALID_VALUE                # double free
    assert cu.cudaFree(c_void_p(0xDEAD0000)) == INVALID_VALUE
    ok(cu.cudaFree(None))
    z = c_void_p(1)
    ok(cu.cudaMalloc(ctypes.byref(z), 0))
    assert z.value is None


def test_cuda_free_of_a_stream_ordered_allocation(cu):
    """cudaFree of a cudaMallocAsync allocation gives its block back to the pool once: the device's
    free memory is as before (the pool's release threshold is 0), not counted back twice."""
    cu.cudaMallocAsync.restype, cu.cudaMallocAsync.argtypes = c_int, [ctypes.POINTER(c_void_p), c_size_t,
                                                                     c_void_p]
    free0, free1, total = c_size_t(), c_size_t(), c_size_t()
    ok(cu.cudaMemGetInfo(ctypes.byref(free0), ctypes.byref(total)))
    p = c_void_p()
    ok(cu.cudaMallocAsync(ctypes.byref(p), 1 << 20, LEGACY))
    ok(cu.cudaMemGetInfo(ctypes.byref(free1), ctypes.byref(total)))
    assert free0.value - free1.value == 1 << 20
    ok(cu.cudaFree(p))
    ok(cu.cudaMemGetInfo(ctypes.byref(free1), ctypes.byref(total)))
    assert free1.value == free0.value
    assert cu.cudaFree(p) == INVALID_VALUE                # double free


def test_memory_is_per_device(cu):
    need_devices(cu, 2)
    p = c_void_p()
    ok(cu.cudaSetDevice(1))
    ok(cu.cudaMalloc(ctypes.byref(p), 4096))
    ok(cu.cudaSetDevice(0))
    free, total = c_size_t(), c_size_t()
    ok(cu.cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total)))
    assert free.value == total.value
    attr = PtrAttr()
    ok(cu.cudaPointerGetAttributes(ctypes.byref(attr), c_void_p(p.value + 100)))
    assert (attr.type, attr.device, attr.devicePointer) == (2, 1, p.value + 100)
    ok(cu.cudaFree(p))


def test_memcpy_memset_in_stream_order(cu):
    h = Host(cu)
    s = stream(cu, 1)
    n = 4096
    d = c_void_p()
    ok(cu.cudaMalloc(ctypes.byref(d), n))
    src = ctypes.create_string_buffer(bytes(range(256)) * (n // 256), n)
    out = ctypes.create_string_buffer(n)
    pinned = c_void_p()
    ok(cu.cudaHostAlloc(ctypes.byref(pinned), n, 0))
    ctypes.memset(pinned, 0, n)
    g = h.gate(s)
    ok(cu.cudaMemcpyAsync(d, src, n, 1, s))
    ok(cu.cudaMemsetAsync(c_void_p(d.value + 16), 0xAB, 16, s))
    ok(cu.cudaMemcpyAsync(pinned, d, n, 2, s))            # to pinned memory: queued
    assert ctypes.string_at(pinned, n) == b"\0" * n       # nothing ran yet
    g.set()
    ok(cu.cudaStreamSynchronize(s))
    expect = bytearray(src.raw)
    expect[16:32] = b"\xab" * 16
    assert ctypes.string_at(pinned, n) == bytes(expect)
    ok(cu.cudaFreeHost(pinned))
    host = ctypes.create_string_buffer(64)
    assert cu.cudaMemcpyAsync(host, src, 64, 1, s) == INVALID_VALUE      # dst is not device memory
    assert cu.cudaMemcpyAsync(d, src, n + 1, 1, s) == INVALID_VALUE      # runs past the end
    assert cu.cudaMemcpyAsync(d, src, 16, 7, s) == 21                    # bad kind
    assert cu.cudaMemsetAsync(host, 0, 16, s) == INVALID_VALUE
    ok(cu.cudaMemcpyAsync(host, src, 64, 4, s))                          # default kind
    ok(cu.cudaStreamSynchronize(s))
    assert host.raw == src.raw[:64]
    attr = PtrAttr()
    ok(cu.cudaPointerGetAttributes(ctypes.byref(attr), host))
    assert (attr.type, attr.device) == (0, -2)
    ok(cu.cudaFree(d))
    ok(cu.cudaStreamDestroy(s))


def test_pageable_copies_follow_cuda(cu):
    """CUDA's "API synchronization behavior": an asynchronous copy to pageable host memory (or between host
    buffers) has landed when the call returns, and one from pageable memory to the device has consumed
    its source (staged) though it runs in stream order; device-to-device and pinned copies stay queued."""
    h = Host(cu)
    s = stream(cu, 1)
    n = 4096
    d, d2, pinned = c_void_p(), c_void_p(), c_void_p()
    ok(cu.cudaMalloc(ctypes.byref(d), n))
    ok(cu.cudaMalloc(ctypes.byref(d2), n))
    ok(cu.cudaHostAlloc(ctypes.byref(pinned), n, 0))
    ctypes.memset(d, 0, n)
    ctypes.memset(d2, 0, n)
    ctypes.memset(pinned, 0, n)
    pattern = bytes(range(256)) * (n // 256)

    def opened_later(g):
        threading.Timer(0.2, g.set).start()

    # device -> pageable: done when the call returns, after the work queued before it
    g = h.gate(s)
    ok(cu.cudaMemsetAsync(d, 0x5A, n, s))
    out = ctypes.create_string_buffer(n)
    opened_later(g)
    ok(cu.cudaMemcpyAsync(out, d, n, 2, s))
    assert out.raw == b"\x5a" * n
    ok(cu.cudaStreamSynchronize(s))
    # pageable -> device: the source is read at the call (reused at once), the copy still in stream order
    g = h.gate(s)
    src = ctypes.create_string_buffer(pattern, n)
    ok(cu.cudaMemcpyAsync(d, src, n, 1, s))
    ok(cu.cudaMemcpyAsync(d2, ctypes.addressof(src) + 16, 16, 4, s))     # default kind, pageable source
    assert ctypes.string_at(d, n) == b"\x5a" * n        # not run yet: the stream is held
    ctypes.memset(src, 0xEE, n)                            # the caller reuses its buffer
    del src
    g.set()
    ok(cu.cudaStreamSynchronize(s))
    assert ctypes.string_at(d, n) == pattern and ctypes.string_at(d2, 16) == pattern[16:32]
    # a 2-D copy to pageable memory lands too; host to host (pageable or pinned) is synchronous
    g = h.gate(s)
    ok(cu.cudaMemsetAsync(d, 0x11, 128, s))
    rows = ctypes.create_string_buffer(64)
    opened_later(g)
    ok(cu.cudaMemcpy2DAsync(rows, 16, d, 32, 8, 4, 2, s))
    assert [rows.raw[16 * i:16 * i + 8] for i in range(4)] == [b"\x11" * 8] * 4
    g = h.gate(s)
    a, b = ctypes.create_string_buffer(pattern[:64], 64), ctypes.create_string_buffer(64)
    opened_later(g)
    ok(cu.cudaMemcpyAsync(b, a, 64, 0, s))
    assert b.raw == pattern[:64]
    g = h.gate(s)
    opened_later(g)
    ok(cu.cudaMemcpyAsync(pinned, a, 64, 4, s))
    assert ctypes.string_at(pinned, 64) == pattern[:64]
    ok(cu.cudaStreamSynchronize(s))
    # device -> device and device -> pinned stay asynchronous
    g = h.gate(s)
    ok(cu.cudaMemcpyAsync(d2, d, n, 3, s))
    ok(cu.cudaMemcpyAsync(c_void_p(pinned.value + 64), d, 64, 2, s))
    assert ctypes.string_at(d2, 32) == pattern[16:32] + b"\0" * 16
    assert ctypes.string_at(pinned.value + 64, 64) == b"\0" * 64
    g.set()
    ok(cu.cudaStreamSynchronize(s))
    assert ctypes.string_at(d2, n) == ctypes.string_at(d, n)
    # captured: recorded as a node, not run (and not waited for)
    out = ctypes.create_string_buffer(n)
    graph = c_void_p()
    ok(cu.cudaStreamBeginCapture(s, 2))                    # relaxed
    ok(cu.cudaMemcpyAsync(out, d, n, 2, s))
    ok(cu.cudaMemcpyAsync(d, out, n, 1, s))
    ok(cu.cudaStreamEndCapture(s, ctypes.byref(graph)))
    assert out.raw == b"\0" * n
    ok(cu.cudaGraphDestroy(graph))
    # from a host function, a copy that would wait is refused, as a synchronous one is
    got = []
    h.launch(s, lambda: got.append(cu.cudaMemcpyAsync(out, d, 16, 2, LEGACY)))
    ok(cu.cudaStreamSynchronize(s))
    assert got == [NOT_PERMITTED]
    cu.cudaGetLastError()
    ok(cu.cudaFree(d))
    ok(cu.cudaFree(d2))
    ok(cu.cudaFreeHost(pinned))
    ok(cu.cudaStreamDestroy(s))


def test_free_while_copy_queued_is_safe(cu):
    h = Host(cu)
    s = stream(cu, 1)
    d = c_void_p()
    ok(cu.cudaMalloc(ctypes.byref(d), 1 << 16))
    base = cu.accelEmuLiveAllocations()
    g = h.gate(s)
    ok(cu.cudaMemsetAsync(d, 1, 1 << 16, s))
    ok(cu.cudaFree(d))                                    # the queued memset keeps the memory
    assert cu.accelEmuLiveAllocations() == base - 1
    g.set()
    ok(cu.cudaStreamSynchronize(s))
    ok(cu.cudaStreamDestroy(s))


# --------------------------------------------------------------------------- IPC

def test_ipc_event_handles(cu):
    plain, ipc = event(cu), event(cu, 2 | 4)
    handle = IpcHandle()
    assert cu.cudaIpcGetEventHandle(ctypes.byref(handle), plain) == INVALID_VALUE
    assert cu.cudaIpcGetEventHandle(ctypes.byref(handle), c_void_p(0xDEADBEEF)) == INVALID_HANDLE
    ok(cu.cudaIpcGetEventHandle(ctypes.byref(handle), ipc))
    live = cu.accelEmuLiveEvents()
    alias = c_void_p()
    ok(cu.cudaIpcOpenEventHandle(ctypes.byref(alias), handle))
    assert alias.value not in (None, ipc.value)
    assert cu.accelEmuLiveEvents() == live + 1
    h = Host(cu)
    s = stream(cu)
    g = h.gate(s)
    ok(cu.cudaEventRecord(ipc, s))
    assert cu.cudaEventQuery(alias) == NOT_READY          # the alias sees the original's record
    g.set()
    ok(cu.cudaEventSynchronize(alias))
    ok(cu.cudaEventQuery(ipc))
    ok(cu.cudaEventDestroy(ipc))
    ok(cu.cudaEventQuery(alias))                          # the alias keeps the event alive
    garbage = IpcHandle()
    garbage.reserved = b"x" * 64
    assert cu.cudaIpcOpenEventHandle(ctypes.byref(c_void_p()), garbage) == INVALID_HANDLE   # a real runtime's answer
    ok(cu.cudaEventDestroy(alias))
    assert cu.cudaIpcOpenEventHandle(ctypes.byref(c_void_p()), handle) == INVALID_VALUE  # gone
    ok(cu.cudaEventDestroy(plain))
    ok(cu.cudaStreamDestroy(s))


# --------------------------------------------------------------------------- fault injection

def test_fault_injection(cu):
    s = c_void_p()
    assert cu.accelEmuSetFail(b"cudaStreamCreateWithFlags:2,cudaEventQuery:1") == 0
    ok(cu.cudaStreamCreateWithFlags(ctypes.byref(s), 0))
    bad = c_void_p()
    assert cu.cudaStreamCreateWithFlags(ctypes.byref(bad), 0) == OOM
    assert cu.cudaGetLastError() == OOM
    assert bad.value is None
    ok(cu.cudaStreamDestroy(s))
    e = event(cu)
    assert cu.cudaEventQuery(e) == UNKNOWN
    ok(cu.cudaEventQuery(e))
    assert cu.accelEmuSetFail(b"cudaMalloc:1,cuDevicePrimaryCtxGetState:1") == 0
    assert cu.cudaMalloc(ctypes.byref(c_void_p()), 16) == OOM
    assert cu.cuDevicePrimaryCtxGetState(0, ctypes.byref(c_uint()), ctypes.byref(c_int())) == 999
    for spec in (b"nonsense", b"cudaMalloc", b"cudaMalloc:0", b"cudaMalloc:x", b"cudaNope:1",
                 b"cudaMalloc:1,", b"cudaMalloc:-1"):
        assert cu.accelEmuSetFail(spec) == 1, spec
    assert cu.accelEmuSetFail(b"cudaGetDevice:3") == 0
    d = c_int()
    ok(cu.cudaGetDevice(ctypes.byref(d)))
    ok(cu.cudaGetDevice(ctypes.byref(d)))
    assert cu.cudaGetDevice(ctypes.byref(d)) == UNKNOWN
    ok(cu.cudaGetDevice(ctypes.byref(d)))
    assert cu.accelEmuSetFail(b"") == 0
    ok(cu.cudaEventDestroy(e))


# --------------------------------------------------------------------------- threads

def test_many_threads_mixed_operations(cu):
    ndevs = ndev(cu)
    libc = ctypes.CDLL(None)
    usleep = ctypes.cast(libc.usleep, HOSTFN)            # a GIL-free host function
    errors, iters = [], 400

    def body(tid):
        try:
            s, e, p = c_void_p(), c_void_p(), c_void_p()
            buf = ctypes.create_string_buffer(256)
            for i in range(iters):
                dev = (tid + i) % ndevs
                ok(cu.cudaSetDevice(dev))
                ok(cu.cudaStreamCreateWithPriority(ctypes.byref(s), i & 1, -(i % 6)))
                ok(cu.cudaEventCreateWithFlags(ctypes.byref(e), (i & 2)))
                target = (s, LEGACY, PER_THREAD)[i % 3]
                ok(cu.cudaLaunchHostFunc(target, usleep, c_void_p(i % 50)))
                ok(cu.cudaEventRecord(e, target))
                ok(cu.cudaStreamWaitEvent(s, e, 0))
                ok(cu.cudaMalloc(ctypes.byref(p), 256))
                ok(cu.cudaMemsetAsync(p, tid, 256, s))
                ok(cu.cudaMemcpyAsync(buf, p, 256, 2, s))
                assert cu.cudaEventQuery(e) in (0, NOT_READY)
                assert cu.cudaStreamQuery(s) in (0, NOT_READY)
                ok(cu.cudaStreamSynchronize(s))
                assert buf.raw == bytes([tid]) * 256
                ok(cu.cudaFree(p))
                ok(cu.cudaEventDestroy(e))
                ok(cu.cudaStreamDestroy(s))
                if i % 50 == 0:
                    ok(cu.cudaDeviceSynchronize())
            for dev in range(ndevs):
                ok(cu.cudaSetDevice(dev))
                ok(cu.cudaDeviceSynchronize())
            cu.cudaGetLastError()
        except BaseException as exc:                      # reported by the main thread
            errors.append(exc)

    base = (cu.accelEmuLiveStreams(), cu.accelEmuLiveEvents(), cu.accelEmuLiveAllocations())
    threads = [threading.Thread(target=body, args=(t,)) for t in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors, errors[0]
    assert (cu.accelEmuLiveStreams(), cu.accelEmuLiveEvents(),
            cu.accelEmuLiveAllocations()) == base


# --------------------------------------------------------------------------- environment

def _run(env_extra, body):
    """Runs `body` in a fresh interpreter where `lib` is the emulator and `P` is ctypes.pointer."""
    prelude = textwrap.dedent(f"""
        import ctypes
        lib = ctypes.CDLL({str(LIB_PATH)!r}, mode=ctypes.RTLD_LOCAL)
        def ptr(t):
            return ctypes.byref(t)
        i = ctypes.c_int
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_EMU_")}
    env.update(env_extra)
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(body)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_env_device_count():
    out = _run({"ACCEL_EMU_DEVICES": "2"}, """
        n = i(-1)
        print(lib.cudaGetDeviceCount(ptr(n)), n.value, lib.cudaSetDevice(1), lib.cudaSetDevice(2),
              lib.accelEmuDeviceCount())
    """)
    assert out.split() == ["0", "2", "0", "101", "2"]


def test_env_default_device_count():
    out = _run({}, """
        n = i(-1)
        print(lib.cudaGetDeviceCount(ptr(n)), n.value)
    """)
    assert out.split() == ["0", "4"]


def test_env_zero_devices():
    out = _run({"ACCEL_EMU_DEVICES": "0"}, """
        n = i(-1)
        v = i()
        print(lib.cudaGetDeviceCount(ptr(n)), n.value, lib.cudaGetDevice(ptr(i())),
              lib.cudaSetDevice(0), lib.cudaDriverGetVersion(ptr(v)), v.value,
              lib.cudaGetLastError())
    """)
    assert out.split() == ["100", "0", "100", "100", "0", "13000", "100"]


@pytest.mark.parametrize("var,value,which", [
    ("ACCEL_EMU_DEVICES", "two", 1), ("ACCEL_EMU_DEVICES", "-1", 1), ("ACCEL_EMU_DEVICES", "128", 1),
    ("ACCEL_EMU_MEMORY", "lots", 3), ("ACCEL_EMU_FAIL", "bogus", 4),
    ("ACCEL_EMU_FAIL", ",".join(["cudaMalloc:1"] * 65), 4), ("ACCEL_EMU_PROFILE", "h100:120,a10:8", 5)])
def test_env_bad_configuration_fails_every_call(var, value, which):
    # every call fails; accelEmuConfigError says which variable (accelEmuCheckConfig's number) and its value
    out = _run({var: value}, """
        n = i(-1)
        s = ctypes.c_void_p()
        v = ctypes.c_char_p()
        lib.accelEmuConfigError.argtypes = [ctypes.POINTER(ctypes.c_char_p)]
        print(lib.cudaGetDeviceCount(ptr(n)), lib.cudaGetDevice(ptr(n)),
              lib.cudaStreamCreate(ptr(s)), lib.cudaGetLastError(), lib.accelEmuDeviceCount(),
              lib.accelEmuConfigError(ptr(v)), v.value.decode())
    """)
    assert out.split() == ["3", "3", "3", "3", "-1", str(which), value]


def test_env_limits_are_accepted():
    # 127 devices (torch's device index is 8 bits) and 64 fault points are the most the emulator takes
    out = _run({"ACCEL_EMU_DEVICES": "127", "ACCEL_EMU_FAIL": ",".join(["cudaMalloc:1000"] * 64)}, """
        n = i(-1)
        print(lib.cudaGetDeviceCount(ptr(n)), n.value, lib.accelEmuConfigError(None))
    """)
    assert out.split() == ["0", "127", "0"]


def test_env_fail_spec_and_memory_budget():
    out = _run({"ACCEL_EMU_FAIL": "cudaMalloc:2,cudaGetDevice:1", "ACCEL_EMU_MEMORY": "1M"}, """
        p = ctypes.c_void_p()
        f, t = ctypes.c_size_t(), ctypes.c_size_t()
        r = [lib.cudaGetDevice(ptr(i())), lib.cudaGetDevice(ptr(i())),
             lib.cudaMalloc(ptr(p), 1000), lib.cudaMalloc(ptr(p), 1000),
             lib.cudaMalloc(ptr(p), 2 << 20), lib.cudaMemGetInfo(ptr(f), ptr(t)), t.value,
             t.value - f.value]
        print(*r)
    """)
    assert out.split() == ["999", "0", "0", "2", "2", "0", str(1 << 20), "1000"]
