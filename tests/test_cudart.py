"""The binding twins on the emulated runtime: every function, success and error paths, both twins."""
import ctypes
import os
import threading
import time

import pytest

from accel import _lib
from accel.errors import CudaDriverError, CudaError

INVALID_VALUE, INVALID_DEVICE, INVALID_HANDLE, MEMORY_ALLOCATION, UNKNOWN = 1, 101, 400, 2, 999
HOSTFN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
FOREIGN = 0xDEADBEEF000


@pytest.fixture
def emu():
    if os.environ.get("ACCEL_CUDART") != "emu":
        pytest.skip("needs the emulated runtime (absent from -Dnative=false installs)")
    lib = _lib.cudart()
    cdll = lib.cdll
    cdll.accelEmuSetFail.argtypes = [ctypes.c_char_p]
    cdll.accelEmuLiveAllocations.restype = ctypes.c_size_t
    yield cdll
    cdll.accelEmuSetFail(None)


@pytest.fixture
def rt(twin, emu):
    mod = twin.mod("_cudart")
    mod.load()
    before = mod.cudaGetDevice()
    yield mod
    mod.cudaGetLastError()
    mod.cudaSetDevice(before)


class HostLog:
    """A C-callable host function appending its user-data tag to a list (keeps the callback alive)."""

    def __init__(self, delay=0.0):
        self.seen = []
        self.delay = delay

        def cb(user_data):
            if self.delay:
                time.sleep(self.delay)
            self.seen.append(user_data or 0)
        self.cfunc = HOSTFN(cb)
        self.ptr = ctypes.cast(self.cfunc, ctypes.c_void_p).value


def test_load_returns_emulator_path(rt):
    assert rt.load() == _lib.emu_path()


def test_versions_and_count(rt):
    assert rt.cudaRuntimeGetVersion() >= 12000
    assert rt.cudaDriverGetVersion() >= 12000
    assert rt.cudaGetDeviceCount() == int(os.environ["ACCEL_TEST_DEVICE_COUNT"])


@pytest.mark.devices(3)
def test_set_get_device_and_invalid(rt):
    rt.cudaSetDevice(2)
    assert rt.cudaGetDevice() == 2
    with pytest.raises(CudaError) as info:
        rt.cudaSetDevice(7)
    err = info.value
    assert (err.code, err.name, err.string) == (INVALID_DEVICE, "cudaErrorInvalidDevice", "invalid device ordinal")
    assert str(err) == "CUDA error: invalid device ordinal\nGPU device may be out of range, do you have enough GPUs?"
    assert isinstance(err, RuntimeError)
    assert rt.cudaGetLastError() == 0, "the binding must clear the sticky error"
    assert rt.cudaGetDevice() == 2


def test_error_text_other_than_invalid_device(rt):
    with pytest.raises(CudaError) as info:
        rt.cudaStreamQuery(FOREIGN)
    assert info.value.code == INVALID_HANDLE
    assert str(info.value).startswith("CUDA error: invalid resource handle\nSearch for `cudaErrorInvalidResourceHandle'")


def test_last_error_peek_and_clear(rt, emu):
    emu.accelEmuSetFail(b"cudaGetDevice:1")
    raw = _lib.cudart().cdll.cudaGetDevice
    raw.argtypes = [ctypes.POINTER(ctypes.c_int)]
    assert raw(ctypes.byref(ctypes.c_int())) == UNKNOWN  # bypass the binding: the error stays sticky
    assert rt.cudaPeekAtLastError() == UNKNOWN
    assert rt.cudaGetLastError() == UNKNOWN
    assert rt.cudaGetLastError() == 0


def test_error_strings(rt):
    assert rt.cudaGetErrorName(0) == "cudaSuccess"
    assert rt.cudaGetErrorString(2) == "out of memory"
    assert rt.cudaGetErrorName(600) == "cudaErrorNotReady"


@pytest.mark.devices(2)
def test_priority_range_and_attributes(rt):
    least, greatest = rt.cudaDeviceGetStreamPriorityRange()
    assert least == 0 and greatest < 0
    assert rt.cudaDeviceGetAttribute(10, 0) == 32          # warp size
    assert (rt.cudaDeviceGetAttribute(75, 1), rt.cudaDeviceGetAttribute(76, 1)) == (9, 0)
    with pytest.raises(CudaError) as info:
        rt.cudaDeviceGetAttribute(10, 9)
    assert info.value.code == INVALID_DEVICE
    with pytest.raises(CudaError) as info:
        rt.cudaDeviceGetAttribute(123456, 0)
    assert info.value.code == INVALID_VALUE


@pytest.mark.devices(4)
def test_device_properties_head(rt):
    names = set()
    uuids = set()
    for d in range(4):
        name, uuid, total = rt.cudaGetDeviceProperties(d)
        assert "emu" in name.lower() and isinstance(uuid, bytes) and len(uuid) == 16 and total > 2**30
        names.add(name)
        uuids.add(uuid)
    assert len(uuids) == 4
    with pytest.raises(CudaError):
        rt.cudaGetDeviceProperties(4)


@pytest.mark.devices(2)
def test_peer_access(rt):
    assert rt.cudaDeviceCanAccessPeer(0, 1) is True
    assert rt.cudaDeviceCanAccessPeer(0, 0) is False


@pytest.mark.devices(2)
def test_streams_create_query_destroy(rt, emu):
    live = emu.accelEmuLiveStreams()
    rt.cudaSetDevice(1)
    s = rt.cudaStreamCreateWithPriority(1, -3)
    assert s not in (0, 1, 2)
    assert rt.cudaStreamGetPriority(s) == -3
    assert rt.cudaStreamGetFlags(s) == 1
    assert rt.cudaStreamGetDevice(s) == 1
    assert isinstance(rt.cudaStreamGetId(s), int)
    assert rt.cudaStreamIsCapturing(s) == 0
    assert rt.cudaStreamQuery(s) is True
    rt.cudaStreamSynchronize(s)
    s2 = rt.cudaStreamCreateWithPriority(0, -100)       # clamped to the greatest priority
    assert rt.cudaStreamGetPriority(s2) == rt.cudaDeviceGetStreamPriorityRange()[1]
    s3, s4 = rt.cudaStreamCreate(), rt.cudaStreamCreateWithFlags(0)
    assert emu.accelEmuLiveStreams() == live + 4
    for h in (s, s2, s3, s4):
        rt.cudaStreamDestroy(h)
    assert emu.accelEmuLiveStreams() == live
    for call in (rt.cudaStreamQuery, rt.cudaStreamSynchronize, rt.cudaStreamGetPriority, rt.cudaStreamDestroy):
        with pytest.raises(CudaError) as info:
            call(s)
        assert info.value.code == INVALID_HANDLE, call


def test_stream_bad_flags(rt):
    with pytest.raises(CudaError) as info:
        rt.cudaStreamCreateWithFlags(0x80)
    assert info.value.code == INVALID_VALUE


def test_default_stream_handles(rt):
    for h in (0, 1, 2):
        assert rt.cudaStreamQuery(h) is True
        rt.cudaStreamSynchronize(h)


def test_capture_mode_exchange(rt):
    prev = rt.cudaThreadExchangeStreamCaptureMode(2)
    assert rt.cudaThreadExchangeStreamCaptureMode(prev) == 2


def test_host_func_fifo_and_query(rt):
    log = HostLog(delay=0.002)
    s = rt.cudaStreamCreateWithFlags(1)
    for i in range(1, 21):
        rt.cudaLaunchHostFunc(s, log.ptr, i)
    assert rt.cudaStreamQuery(s) is False or log.seen == list(range(1, 21))
    rt.cudaStreamSynchronize(s)
    assert log.seen == list(range(1, 21))
    assert rt.cudaStreamQuery(s) is True
    rt.cudaStreamDestroy(s)


def test_host_func_null_is_invalid_value(rt):
    with pytest.raises(CudaError) as info:
        rt.cudaLaunchHostFunc(0, 0, 0)
    assert info.value.code == INVALID_VALUE


def test_events_and_cross_stream_wait(rt, emu):
    live = emu.accelEmuLiveEvents()
    log = HostLog()
    slow = HostLog(delay=0.05)
    a, b = rt.cudaStreamCreateWithFlags(1), rt.cudaStreamCreateWithFlags(1)
    ev = rt.cudaEventCreateWithFlags(2)
    assert rt.cudaEventQuery(ev) is True                    # never recorded: complete
    rt.cudaLaunchHostFunc(a, slow.ptr, 1)
    rt.cudaEventRecord(ev, a)
    rt.cudaStreamWaitEvent(b, ev, 0)
    rt.cudaLaunchHostFunc(b, log.ptr, 2)
    rt.cudaStreamSynchronize(b)
    assert slow.seen == [1] and log.seen == [2]             # b's host func ran after a's slow one
    rt.cudaEventSynchronize(ev)
    assert rt.cudaEventQuery(ev) is True
    rt.cudaEventRecordWithFlags(ev, b, 0)
    rt.cudaEventSynchronize(ev)
    rt.cudaEventDestroy(ev)
    with pytest.raises(CudaError) as info:
        rt.cudaEventQuery(ev)
    assert info.value.code == INVALID_HANDLE
    for s in (a, b):
        rt.cudaStreamDestroy(s)
    assert emu.accelEmuLiveEvents() == live


def test_event_query_not_ready(rt):
    gate = threading.Event()
    block = HOSTFN(lambda _: gate.wait(5))
    s = rt.cudaStreamCreateWithFlags(1)
    ev = rt.cudaEventCreate()
    rt.cudaLaunchHostFunc(s, ctypes.cast(block, ctypes.c_void_p).value, 0)
    rt.cudaEventRecord(ev, s)
    assert rt.cudaEventQuery(ev) is False
    assert rt.cudaStreamQuery(s) is False
    assert rt.cudaGetLastError() == 0
    gate.set()
    rt.cudaStreamSynchronize(s)
    assert rt.cudaEventQuery(ev) is True
    rt.cudaEventDestroy(ev)
    rt.cudaStreamDestroy(s)


def test_event_elapsed_time(rt):
    sleeper = HostLog(delay=0.03)
    s = rt.cudaStreamCreateWithFlags(1)
    start, end = rt.cudaEventCreate(), rt.cudaEventCreate()
    rt.cudaEventRecord(start, s)
    rt.cudaLaunchHostFunc(s, sleeper.ptr, 0)
    rt.cudaEventRecord(end, s)
    rt.cudaEventSynchronize(end)
    ms = rt.cudaEventElapsedTime(start, end)
    assert isinstance(ms, float) and 25.0 <= ms < 5000.0
    untimed = rt.cudaEventCreateWithFlags(2)
    rt.cudaEventRecord(untimed, s)
    rt.cudaStreamSynchronize(s)
    with pytest.raises(CudaError) as info:
        rt.cudaEventElapsedTime(start, untimed)
    assert info.value.code == INVALID_HANDLE
    for e in (start, end, untimed):
        rt.cudaEventDestroy(e)
    rt.cudaStreamDestroy(s)


def test_event_flags_validation(rt):
    with pytest.raises(CudaError) as info:
        rt.cudaEventCreateWithFlags(4)                       # interprocess needs disable-timing
    assert info.value.code == INVALID_VALUE


def test_ipc_event_handles(rt):
    ev = rt.cudaEventCreateWithFlags(2 | 4)
    handle = rt.cudaIpcGetEventHandle(ev)
    assert isinstance(handle, bytes) and len(handle) == 64
    opened = rt.cudaIpcOpenEventHandle(handle)
    assert rt.cudaIpcOpenEventHandle(bytearray(handle)) > 0
    assert rt.cudaEventQuery(opened) is True
    rt.cudaEventDestroy(opened)
    with pytest.raises(ValueError, match=r"cudaIpcOpenEventHandle\(\) argument 'handle' must be 64 bytes, got 3"):
        rt.cudaIpcOpenEventHandle(b"abc")
    with pytest.raises(TypeError, match="bytes-like"):
        rt.cudaIpcOpenEventHandle(12)
    plain = rt.cudaEventCreate()
    with pytest.raises(CudaError):
        rt.cudaIpcGetEventHandle(plain)
    rt.cudaEventDestroy(plain)
    rt.cudaEventDestroy(ev)


@pytest.mark.devices(4)
def test_memory_roundtrip_and_accounting(rt, emu):
    rt.cudaSetDevice(3)
    free0, total = rt.cudaMemGetInfo()
    n = 1 << 20
    p = rt.cudaMalloc(n)
    assert rt.cudaMemGetInfo()[0] == free0 - n
    assert rt.cudaPointerGetAttributes(p)[:2] == (2, 3)
    assert rt.cudaPointerGetAttributes(p + 100)[1] == 3
    src = (ctypes.c_ubyte * 16)(*range(16))
    dst = (ctypes.c_ubyte * 16)()
    s = rt.cudaStreamCreateWithFlags(1)
    rt.cudaMemsetAsync(p, 7, 32, s)
    rt.cudaMemcpyAsync(p + 8, ctypes.addressof(src), 16, 1, s)
    rt.cudaMemcpyAsync(ctypes.addressof(dst), p, 16, 2, s)
    rt.cudaStreamSynchronize(s)
    assert list(dst) == [7] * 8 + list(range(8))
    rt.cudaFree(p)
    assert rt.cudaMemGetInfo()[0] == free0
    rt.cudaFree(0)
    with pytest.raises(CudaError) as info:
        rt.cudaFree(p)
    assert info.value.code == INVALID_VALUE
    with pytest.raises(CudaError) as info:
        rt.cudaMalloc(total + 1)
    assert (info.value.code, info.value.string) == (MEMORY_ALLOCATION, "out of memory")
    assert rt.cudaMalloc(0) == 0
    rt.cudaStreamDestroy(s)


# The structs the runtime writes through the bindings, as CUDA 13's driver_types.h / cuda_runtime_api.h
# declare them on LP64: cudaPointerAttributes is CUDA 12's 24 bytes and `long reserved[8]` (a binding with
# CUDA 12's struct let a real CUDA 13 runtime write 64 bytes past it: a crash on the first GPU run).
CUDA13_STRUCT_SIZES = {"cudaDeviceProp": 1008, "cudaIpcEventHandle_t": 64, "cudaPointerAttributes": 88}


def test_bindings_give_the_runtime_room_for_cuda13_structs(twin):
    sizes = twin.mod("_cudart").STRUCT_SIZES
    assert sorted(sizes) == sorted(CUDA13_STRUCT_SIZES)
    for name, need in CUDA13_STRUCT_SIZES.items():
        assert sizes[name] >= need, name


def test_cuda13_struct_sizes_are_the_headers(tmp_path):
    """CUDA13_STRUCT_SIZES against the installed toolkit's headers, where there are CUDA 13 headers and a C
    compiler (skipped otherwise)."""
    import shutil
    import subprocess
    include = next((p for p in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda")
                    if p and os.path.exists(os.path.join(p, "include", "cuda_runtime_api.h"))), None)
    cc = shutil.which("cc") or shutil.which("gcc")
    if not include or not cc:
        pytest.skip("no CUDA headers or no C compiler")
    src = tmp_path / "sizes.c"
    src.write_text("#include <cuda_runtime_api.h>\n#include <stdio.h>\nint main(void) {\n"
                   '    printf("%d %zu %zu %zu\\n", CUDART_VERSION, sizeof(struct cudaDeviceProp),\n'
                   "           sizeof(cudaIpcEventHandle_t), sizeof(struct cudaPointerAttributes));\n"
                   "    return 0;\n}\n")
    exe = tmp_path / "sizes"
    subprocess.run([cc, f"-I{include}/include", str(src), "-o", str(exe)], check=True, capture_output=True)
    version, *sizes = map(int, subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split())
    if version // 1000 != 13:
        pytest.skip(f"the installed headers are CUDA {version}")
    assert dict(zip(["cudaDeviceProp", "cudaIpcEventHandle_t", "cudaPointerAttributes"], sizes)) == \
        CUDA13_STRUCT_SIZES


def test_pointer_attributes_unregistered(rt):
    buf = ctypes.create_string_buffer(8)
    assert rt.cudaPointerGetAttributes(ctypes.addressof(buf))[0] == 0


@pytest.mark.devices(3)
def test_primary_context_state(rt, emu):
    emu.accelEmuResetContexts()
    assert rt.cuDevicePrimaryCtxGetState(2) == (0, False)
    rt.cudaSetDevice(2)
    assert rt.cuDevicePrimaryCtxGetState(2) == (0, True)
    assert rt.driver_loaded() is True
    with pytest.raises(CudaDriverError) as info:
        rt.cuDevicePrimaryCtxGetState(99)
    assert info.value.code == INVALID_DEVICE and info.value.name == "CUDA_ERROR_INVALID_DEVICE"


def test_driver_init_version_and_error_names(rt):
    """cuInit and cuDriverGetVersion: each was added to both twins by one row of accel/_cudart_table.py."""
    assert rt.cuInit(0) is None
    assert rt.cuDriverGetVersion() == rt.cudaDriverGetVersion() > 0
    with pytest.raises(CudaDriverError) as info:
        rt.cuInit(1)
    assert info.value.code == INVALID_VALUE and info.value.name == "CUDA_ERROR_INVALID_VALUE"
    assert rt.cuGetErrorName(INVALID_DEVICE) == "CUDA_ERROR_INVALID_DEVICE"
    assert rt.cuGetErrorString(INVALID_VALUE)
    with pytest.raises(CudaDriverError) as info:
        rt.cuGetErrorName(123456)
    assert info.value.code == INVALID_VALUE


def test_fault_injection(rt, emu):
    assert emu.accelEmuSetFail(b"cudaStreamCreateWithFlags:2") == 0
    s = rt.cudaStreamCreateWithFlags(1)
    with pytest.raises(CudaError) as info:
        rt.cudaStreamCreateWithFlags(1)
    assert info.value.code == MEMORY_ALLOCATION
    s2 = rt.cudaStreamCreateWithFlags(1)
    rt.cudaStreamDestroy(s)
    rt.cudaStreamDestroy(s2)
    assert emu.accelEmuSetFail(b"nonsense") != 0


@pytest.mark.parametrize("call, args, param", [
    ("cudaSetDevice", ("0",), "device"),
    ("cudaStreamQuery", (1.5,), "stream"),
    ("cudaEventRecord", (None, 0), "event"),
    ("cudaStreamWaitEvent", (0, "e", 0), "event"),
    ("cudaMalloc", ([1],), "size"),
    ("cudaDeviceGetAttribute", (10, "0"), "device"),
])
def test_bad_argument_types(rt, call, args, param):
    bad = next(a for a in args if not isinstance(a, int))
    with pytest.raises(TypeError) as info:
        getattr(rt, call)(*args)
    assert str(info.value) == (f"{call}() argument '{param}' must be an int, not {type(bad).__name__}: "
                               f"{bad!r}")


@pytest.mark.devices(2)
def test_int_like_arguments_accepted(rt):
    class Idx:
        def __index__(self):
            return 1
    rt.cudaSetDevice(Idx())
    assert rt.cudaGetDevice() == 1
    rt.cudaSetDevice(True)
    assert rt.cudaGetDevice() == 1


@pytest.mark.devices(4)
def test_many_threads_mixed_operations(rt, emu):
    errors = []
    live_s, live_e = emu.accelEmuLiveStreams(), emu.accelEmuLiveEvents()

    def work(k):
        try:
            for i in range(200):
                rt.cudaSetDevice((k + i) % 4)
                assert rt.cudaGetDevice() == (k + i) % 4
                s = rt.cudaStreamCreateWithFlags(i & 1)
                e = rt.cudaEventCreateWithFlags(2)
                rt.cudaEventRecord(e, s)
                rt.cudaStreamWaitEvent(0, e, 0)
                rt.cudaEventQuery(e)
                rt.cudaStreamSynchronize(s)
                rt.cudaEventDestroy(e)
                rt.cudaStreamDestroy(s)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert errors == []
    assert (emu.accelEmuLiveStreams(), emu.accelEmuLiveEvents()) == (live_s, live_e)


@pytest.mark.devices(4)
def test_new_thread_starts_on_device_zero(rt):
    rt.cudaSetDevice(3)
    seen = []
    t = threading.Thread(target=lambda: seen.append(rt.cudaGetDevice()))
    t.start()
    t.join()
    assert seen == [0] and rt.cudaGetDevice() == 3


def test_legacy_stream_syncs_with_blocking_streams_only(rt):
    order = []
    slow = HOSTFN(lambda tag: (time.sleep(0.05), order.append(tag)))
    fast = HOSTFN(lambda tag: order.append(tag))
    slow_p, fast_p = (ctypes.cast(f, ctypes.c_void_p).value for f in (slow, fast))
    blocking, nonblocking = rt.cudaStreamCreateWithFlags(0), rt.cudaStreamCreateWithFlags(1)
    rt.cudaLaunchHostFunc(blocking, slow_p, 1)
    rt.cudaLaunchHostFunc(0, fast_p, 2)            # legacy stream: waits for the blocking stream
    rt.cudaStreamSynchronize(0)
    assert order == [1, 2]
    order.clear()
    rt.cudaLaunchHostFunc(nonblocking, slow_p, 3)
    rt.cudaLaunchHostFunc(0, fast_p, 4)            # does not wait for the non-blocking stream
    rt.cudaStreamSynchronize(0)
    rt.cudaStreamSynchronize(nonblocking)
    assert order == [4, 3]
    for s in (blocking, nonblocking):
        rt.cudaStreamDestroy(s)


@pytest.mark.parametrize("backend", ["native", "python"])
def test_fault_injection_from_environment(subprocess_python, backend):
    from accel import _build_config
    if backend == "native" and not _build_config.NATIVE:
        pytest.skip("no compiled twin")
    code = f"""
import accel._{backend}._cudart as rt
print(rt.cudaMalloc(16) != 0)
try:
    rt.cudaMalloc(16)
except RuntimeError as e:
    print(e.code, e.name)
print(rt.cudaMalloc(16) != 0)
"""
    if os.environ.get("ACCEL_CUDART") != "emu":
        pytest.skip("needs the emulated runtime")
    r = subprocess_python(code, env={"ACCEL_CUDART": "emu", "ACCEL_EMU_FAIL": "cudaMalloc:2"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["True", "2 cudaErrorMemoryAllocation", "True"]


def test_emulated_device_count_from_environment(subprocess_python):
    if os.environ.get("ACCEL_CUDART") != "emu":
        pytest.skip("needs the emulated runtime")
    r = subprocess_python("import accel.cuda as c\nrt = c.cudart()\nprint(rt.cudaGetDeviceCount())\n"
                          "try:\n rt.cudaSetDevice(2)\nexcept RuntimeError as e:\n print(e.code)",
                          env={"ACCEL_CUDART": "emu", "ACCEL_EMU_DEVICES": "2"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2", "101"]
