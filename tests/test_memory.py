"""Device memory on both twins (emulator): buffers, copies, stream order, record_stream, counters, errors.

Counters are process-wide per twin, so the tests compare deltas.  Pool-level checks use the twin's raw
bindings (``_cudart``) on the same device pool.
"""
import importlib.util
import pathlib
import gc
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import accel.cuda as cuda
from accel.errors import CudaError, OutOfMemoryError

pytestmark = pytest.mark.emu_only

_spec = importlib.util.spec_from_file_location("memory_fixtures", pathlib.Path(__file__).with_name("memory_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
Gate, mem, rt, streams, emu = _fx.Gate, _fx.mem, _fx.rt, _fx.streams, _fx.emu
RESERVED, USED = _fx.RESERVED, _fx.USED


DTYPES = ["uint8", "int8", "int16", "uint16", "int32", "int64", "float16", "float32", "float64", "complex64",
          "complex128", "bool", [("a", "<i4"), ("b", "<f8")]]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip_every_dtype(mem, dtype):
    dt = np.dtype(dtype)
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 256, size=37 * dt.itemsize, dtype=np.uint8)
    if dt == np.bool_:
        raw = raw % 2
    host = raw.view(dt)
    with mem.alloc(host.nbytes) as buf:
        buf.copy_from_host(host)
        back = buf.copy_to_host()
        assert back.dtype == np.uint8 and back.nbytes == host.nbytes
        assert back.view(dt).tobytes() == host.tobytes()
        out = np.empty_like(host)
        assert buf.copy_to_host(out) is out
        assert out.tobytes() == host.tobytes()


@pytest.mark.devices(4)
def test_device_to_device_same_and_across_devices(mem):
    data = np.arange(1000, dtype=np.int64)
    src = mem.alloc(data.nbytes, device=0)
    src.copy_from_host(data)
    for d in (0, 1, 3):
        dst = mem.alloc(data.nbytes, device=d)
        assert dst.device.index == d and dst.stream.device_index == d
        dst.copy_from(src)
        assert np.array_equal(dst.copy_to_host().view(np.int64), data)
        dst.free()
    src.free()


def test_memset_and_partial_values(mem):
    buf = mem.alloc(4096)
    buf.memset(0xAB)
    assert set(buf.copy_to_host().tolist()) == {0xAB}
    buf.memset(0)
    assert not buf.copy_to_host().any()
    buf.free()


def test_zero_byte_buffer(mem):
    before = mem.counters(0)
    buf = mem.alloc(0, device=0)
    assert buf.ptr == 0 and buf.nbytes == 0
    buf.copy_from_host(np.empty(0, np.float32))
    assert buf.copy_to_host().nbytes == 0
    buf.memset(1)
    buf.free()
    assert buf.closed
    assert mem.counters(0) == before


@pytest.mark.devices(3)
def test_buffer_properties_and_lifetime(mem, streams):
    s = streams.Stream(device=2)
    buf = mem.alloc(100, device=2, stream=s)
    assert buf.nbytes == 100 and buf.device.index == 2 and buf.device.type == "cuda"
    assert buf.stream == s and buf.ptr != 0 and not buf.closed
    assert "nbytes=100" in repr(buf) and "cuda:2" in repr(buf)
    buf.free()
    buf.free()   # a second free does nothing
    assert buf.closed and "freed" in repr(buf)
    with pytest.raises(ValueError, match="freed"):
        buf.copy_to_host()
    with pytest.raises(TypeError, match="use accel.cuda.alloc"):
        mem.DeviceBuffer()


def test_garbage_collection_frees(mem):
    before = mem.memory_allocated(0)
    buf = mem.alloc(1 << 20, device=0)
    assert mem.memory_allocated(0) == before + (1 << 20)
    del buf
    assert mem.memory_allocated(0) == before


@pytest.mark.devices(2)
def test_default_device_and_stream_follow_the_current_ones(mem, streams):
    s = streams.Stream(device=1)
    with streams.stream(s):
        buf = mem.alloc(64)
        assert buf.device.index == 1 and buf.stream == s
        buf.free()


def _error_outcomes(mem, streams):
    buf = mem.alloc(16, device=0)
    other = mem.alloc(32, device=0)
    cases = [
        lambda: mem.alloc(-1),
        lambda: mem.alloc(1.5),
        lambda: mem.alloc(True),
        lambda: mem.alloc("8"),
        lambda: mem.alloc(2**64),
        lambda: mem.alloc(8, device=99),
        lambda: mem.alloc(8, stream=7),
        lambda: mem.alloc(8, device=1, stream=streams.default_stream(0)),
        lambda: buf.copy_from_host(np.zeros(3, np.float32)),
        lambda: buf.copy_from_host(np.zeros((4, 4), np.uint8)[:, ::4]),
        lambda: buf.copy_from_host(object()),
        lambda: buf.copy_to_host(np.zeros(16, np.uint8)[::1].view(np.uint8)[:8]),
        lambda: buf.copy_to_host(np.frombuffer(bytes(16), np.uint8)),
        lambda: buf.copy_from(other),
        lambda: buf.copy_from(b"x" * 16),
        lambda: buf.memset(256),
        lambda: buf.memset(-1),
        lambda: buf.memset(1.0),
        lambda: buf.copy_from_host(bytes(16), stream="s"),
        lambda: buf.record_stream(3),
    ]
    out = []
    for case in cases:
        with pytest.raises(Exception) as info:
            case()
        out.append((type(info.value).__name__, str(info.value)))
    buf.free()
    other.free()
    return out


def test_bad_arguments_give_clear_errors(mem, streams):
    outcomes = _error_outcomes(mem, streams)
    kinds = [k for k, _ in outcomes]
    assert kinds == ["ValueError", "TypeError", "TypeError", "TypeError", "OverflowError", "ValueError",
                     "TypeError", "ValueError", "ValueError", "ValueError", "TypeError", "ValueError",
                     "ValueError", "ValueError", "TypeError", "ValueError", "ValueError", "TypeError",
                     "TypeError", "TypeError"]
    assert "nbytes must be >= 0, got -1" in outcomes[0][1]
    assert "device index 99 is out of range" in outcomes[5][1]
    assert "has 12 bytes but the DeviceBuffer has 16" in outcomes[8][1]
    assert "C-contiguous" in outcomes[9][1]
    assert "writable" in outcomes[12][1]


def test_twins_give_the_same_errors(both_twins):
    native, python = ([o for o in _error_outcomes(t.mod("_memory"), t.mod("_stream"))] for t in both_twins)
    assert native == python


def test_stream_order_copy_waits_for_a_blocked_host_function(mem, rt, streams):
    s = streams.Stream(device=0)
    buf = mem.alloc(1 << 16, device=0, stream=s)
    buf.memset(1, stream=s)
    src = cuda.pinned_empty(1 << 16, np.uint8)
    src[:] = 2
    out = cuda.pinned_empty(1 << 16, np.uint8)
    out[:] = 0
    gate = Gate()
    gate.block(rt, s)
    # on s (copies default to the current stream, torch's rule: issue 31 item 6), pinned: queued behind the
    # gate, returns at once
    buf.copy_from_host(src, stream=s)
    buf.copy_to_host(out, stream=s)
    assert not out.any(), "the copy ran before the host function it was queued after"
    gate.open()
    s.synchronize()
    assert (out == 2).all()
    buf.free()


def test_record_stream_delays_reuse(mem, rt, streams):
    nbytes = 777 * 512
    a, b = streams.Stream(device=0), streams.Stream(device=0)
    pool = mem.pool_handle(0)
    rt.cudaMemPoolTrimTo(pool, 0)
    # control: without record_stream the freed block is reused at once
    buf = mem.alloc(nbytes, device=0, stream=a)
    old = buf.ptr
    buf.free()
    again = mem.alloc(nbytes, device=0, stream=a)
    assert again.ptr == old
    # with record_stream on a blocked stream, the block is not reused until that stream got there
    gate = Gate()
    gate.block(rt, b)
    again.record_stream(b)
    again.free()
    other = mem.alloc(nbytes, device=0, stream=a)
    assert other.ptr != old
    gate.open()
    b.synchronize()
    a.synchronize()
    third = mem.alloc(nbytes, device=0, stream=a)
    assert third.ptr == old
    other.free()
    third.free()


@pytest.mark.devices(3)
def test_counters_against_hand_counted_values(mem, rt):
    d = 2
    pool = mem.pool_handle(d)
    base = mem.counters(d)
    bufs = [mem.alloc(n, device=d) for n in (1000, 2000, 3000)]
    c = mem.counters(d)
    assert c["bytes"] - base["bytes"] == 6000
    assert c["count"] - base["count"] == 3
    assert c["bytes_alloc"] - base["bytes_alloc"] == 6000
    assert mem.memory_allocated(d) == c["bytes"]
    assert rt.cudaMemPoolGetAttribute(pool, USED) >= 6000
    bufs[1].free()
    c = mem.counters(d)
    assert c["bytes"] - base["bytes"] == 4000
    assert c["bytes_freed"] - base["bytes_freed"] == 2000
    assert c["count_freed"] - base["count_freed"] == 1
    assert mem.max_memory_allocated(d) >= base["bytes"] + 6000
    mem.reset_peak(d)
    assert mem.max_memory_allocated(d) == mem.memory_allocated(d)
    for b in bufs:
        b.free()
    assert mem.counters(d)["bytes"] == base["bytes"]
    mem.reset_accumulated(d)
    c = mem.counters(d)
    assert c["bytes_alloc"] == c["bytes_freed"] == c["count_alloc"] == c["retries"] == c["ooms"] == 0


@pytest.mark.devices(4)
def test_pool_is_warm_and_trimmed_by_empty_cache(mem, rt):
    d = 3
    pool = mem.pool_handle(d)
    assert rt.cudaMemPoolGetAttribute(pool, 4) == 2**64 - 1   # release threshold: keep everything
    rt.cudaMemPoolTrimTo(pool, 0)
    base = rt.cudaMemPoolGetAttribute(pool, RESERVED)
    buf = mem.alloc(1 << 20, device=d)
    buf.free()
    assert rt.cudaMemPoolGetAttribute(pool, RESERVED) == base + (1 << 20)   # cached
    rt.cudaMemPoolTrimTo(pool, 0)
    assert rt.cudaMemPoolGetAttribute(pool, RESERVED) == base


@pytest.mark.devices(2)
def test_retry_after_trim_then_out_of_memory(mem, rt, emu):
    d = 1
    base = mem.counters(d)
    live = emu.accelEmuLiveAllocations()
    # one injected failure: the retry (after trimming) succeeds
    assert emu.accelEmuSetFail(b"cudaMallocAsync:1") == 0
    buf = mem.alloc(4096, device=d)
    assert mem.counters(d)["retries"] == base["retries"] + 1
    buf.free()
    # two: OutOfMemoryError, nothing allocated or counted
    assert emu.accelEmuSetFail(b"cudaMallocAsync:1,cudaMallocAsync:2") == 0
    with pytest.raises(OutOfMemoryError, match=r"^CUDA out of memory\. Tried to allocate 4\.00 KiB\. GPU 1 has a "
                                              r"total capacity of .* of which .* is free\. Of the allocated memory"):
        mem.alloc(4096, device=d)
    c = mem.counters(d)
    assert c["ooms"] == base["ooms"] + 1 and c["bytes"] == base["bytes"] and c["count"] == base["count"]
    assert emu.accelEmuLiveAllocations() == live
    assert rt.cudaGetLastError() == 0


def test_out_of_memory_is_a_cuda_and_runtime_error(mem):
    with pytest.raises(OutOfMemoryError) as info:
        mem.alloc(1 << 50, device=0)
    assert isinstance(info.value, CudaError) and isinstance(info.value, RuntimeError)
    assert "Tried to allocate 1048576.00 GiB" in str(info.value)
    assert cuda.OutOfMemoryError is OutOfMemoryError
    import pickle
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is OutOfMemoryError and str(again) == str(info.value)
    assert (again.code, again.name) == (2, "cudaErrorMemoryAllocation")


@pytest.mark.devices(3)
def test_limit_is_enforced_before_cuda(mem, emu):
    d = 2
    base = mem.memory_allocated(d)
    mem.set_limit(base + 1000, d)
    try:
        assert mem.get_limit(d) == base + 1000
        ok = mem.alloc(1000, device=d)
        # armed fault: a CUDA call would consume it; the limit refuses first
        assert emu.accelEmuSetFail(b"cudaMallocAsync:1") == 0
        with pytest.raises(OutOfMemoryError, match="memory fraction limit allows"):
            mem.alloc(1, device=d)
        emu.accelEmuSetFail(None)
        ok.free()
    finally:
        mem.set_limit(None, d)
    assert mem.get_limit(d) is None


def test_fault_injection_on_free_keeps_the_buffer(mem, emu):
    buf = mem.alloc(512, device=0)
    before = mem.memory_allocated(0)
    assert emu.accelEmuSetFail(b"cudaFreeAsync:1") == 0
    with pytest.raises(CudaError):
        buf.free()
    assert not buf.closed and mem.memory_allocated(0) == before
    buf.free()
    assert buf.closed and mem.memory_allocated(0) == before - 512


def test_fault_injection_on_other_allocating_calls(rt, emu):
    for spec, call in ((b"cudaHostAlloc:1", lambda: cuda.pinned_empty(100)),
                       (b"cudaHostRegister:1", lambda: cuda.host_register(np.zeros(100)))):
        assert emu.accelEmuSetFail(spec) == 0
        with pytest.raises(CudaError, match="out of memory"):
            call()
        emu.accelEmuSetFail(None)
    assert rt.cudaGetLastError() == 0


def test_many_cycles_keep_the_pool_flat(mem, rt, twin, emu):
    d = 0
    pool = mem.pool_handle(d)
    buf = mem.alloc(4096, device=d)
    buf.free()
    reserved = rt.cudaMemPoolGetAttribute(pool, RESERVED)
    live = emu.accelEmuLiveAllocations()
    alloc = mem.alloc
    for _ in range(1_000_000 if twin.name == "native" else 100_000):
        alloc(4096).free()
    assert rt.cudaMemPoolGetAttribute(pool, RESERVED) == reserved
    assert emu.accelEmuLiveAllocations() == live


@pytest.mark.devices(2)
def test_sixteen_threads_allocate_and_free(mem):
    d = 1
    base = mem.counters(d)
    errors = []

    def work(k):
        try:
            for i in range(300):
                n = 512 * (1 + (i * 7 + k) % 13)
                with mem.alloc(n, device=d) as b:
                    if i % 50 == 0:
                        b.memset(k)
                        assert set(b.copy_to_host().tolist()) == {k}
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    c = mem.counters(d)
    assert c["bytes"] == base["bytes"] and c["count"] == base["count"]
    assert c["count_alloc"] - base["count_alloc"] == 16 * 300


def test_emulator_rejects_bad_pool_and_host_calls(rt):
    pool = rt.cudaDeviceGetDefaultMemPool(0)
    assert rt.cudaDeviceGetMemPool(0) == pool
    p = rt.cudaMallocAsync(100, 0)
    with pytest.raises(CudaError) as info:               # one byte past the allocation
        rt.cudaMemsetAsync(p, 0, 101, 0)
    assert info.value.code == 1
    rt.cudaFreeAsync(p, 0)
    for call in (lambda: rt.cudaFreeAsync(p, 0),                   # double free
                 lambda: rt.cudaMemsetAsync(p, 0, 1, 0),           # use after free
                 lambda: rt.cudaMemPoolGetAttribute(pool, 99),
                 lambda: rt.cudaMemPoolSetAttribute(pool, 6, 5),   # watermarks reset only to 0
                 lambda: rt.cudaMemPoolSetAttribute(pool, 5, 0),
                 lambda: rt.cudaMemPoolGetAttribute(12345, 5),
                 lambda: rt.cudaHostAlloc(16, 0x100)):
        with pytest.raises(CudaError) as info:
            call()
        assert info.value.code == 1
    with pytest.raises(CudaError) as info:
        rt.cudaDeviceGetDefaultMemPool(99)
    assert info.value.code == 101
    arr = np.zeros(1024, np.uint8)
    addr = arr.ctypes.data
    rt.cudaHostRegister(addr, 1024, 0)
    assert rt.cudaPointerGetAttributes(addr + 10)[0] == 1
    with pytest.raises(CudaError) as info:
        rt.cudaHostRegister(addr + 512, 16, 0)
    assert info.value.code == 712
    rt.cudaHostUnregister(addr)
    with pytest.raises(CudaError) as info:
        rt.cudaHostUnregister(addr)
    assert info.value.code == 713
    assert rt.cudaPointerGetAttributes(addr)[0] == 0
    h = rt.cudaHostAlloc(4096, 0)
    rt.cudaFreeHost(h)
    with pytest.raises(CudaError) as info:
        rt.cudaFreeHost(h)
    assert info.value.code == 1
    assert rt.cudaGetLastError() == 0


@pytest.mark.devices(4)
def test_pool_watermarks_reset(rt):
    pool = rt.cudaDeviceGetDefaultMemPool(3)
    rt.cudaMemPoolSetAttribute(pool, 6, 0)
    rt.cudaMemPoolSetAttribute(pool, 8, 0)
    assert rt.cudaMemPoolGetAttribute(pool, 6) == rt.cudaMemPoolGetAttribute(pool, RESERVED)
    assert rt.cudaMemPoolGetAttribute(pool, 8) == rt.cudaMemPoolGetAttribute(pool, USED)


def test_emulator_pool_release_threshold_and_copy_ranges(rt):
    pool = rt.cudaDeviceGetDefaultMemPool(0)
    saved = rt.cudaMemPoolGetAttribute(pool, 4)
    rt.cudaMemPoolSetAttribute(pool, 4, 0)          # CUDA's default: release what is freed
    try:
        base = rt.cudaMemPoolGetAttribute(pool, RESERVED)
        p = rt.cudaMallocAsync(3 << 20, 0)
        assert rt.cudaMemPoolGetAttribute(pool, RESERVED) >= base + (3 << 20)
        host = np.zeros(101, np.uint8)
        with pytest.raises(CudaError) as info:      # a device->host copy one byte past the allocation
            rt.cudaMemcpyAsync(host.ctypes.data, p + (3 << 20) - 100, 101, 2, 0)
        assert info.value.code == 1
        with pytest.raises(CudaError) as info:      # host->device into memory that is not device memory
            rt.cudaMemcpyAsync(host.ctypes.data, host.ctypes.data, 1, 1, 0)
        assert info.value.code == 1
        rt.cudaFreeAsync(p, 0)
        rt.cudaStreamSynchronize(0)
        assert rt.cudaMemPoolGetAttribute(pool, RESERVED) <= base
    finally:
        rt.cudaMemPoolSetAttribute(pool, 4, saved)


MEM_OPS = st.lists(st.one_of(
    st.tuples(st.just("alloc"), st.integers(0, 3), st.integers(0, 5000)),
    st.tuples(st.just("free"), st.integers(0, 15), st.just(0)),
    st.tuples(st.just("memset"), st.integers(0, 15), st.integers(0, 255)),
    st.tuples(st.just("copy"), st.integers(0, 15), st.integers(0, 15)),
    st.tuples(st.just("read"), st.integers(0, 15), st.just(0)),
), max_size=30)


def _mem_trace(twin, ops):
    # Buffers of earlier tests freed by the garbage collector in the middle of a trace would move the
    # counters compared below: collect them first and keep the collector off during the trace.
    gc.collect()
    gc.disable()
    try:
        return _mem_trace_inner(twin, ops)
    finally:
        gc.enable()


def _mem_trace_inner(twin, ops):
    mem = twin.mod("_memory")
    for d in range(4):
        mem.reset_peak(d)   # peaks left by earlier tests differ between the twins: start both at "now"
    base = [mem.counters(d) for d in range(4)]
    bufs, trace = [], []
    for op, a, b in ops:
        try:
            if op == "alloc":
                bufs.append(mem.alloc(b, device=a))
                bufs[-1].memset(b % 251)     # pool memory starts uninitialised: give it known bytes
                r = bufs[-1].nbytes
            elif not bufs:
                r = "none"
            else:
                buf = bufs[a % len(bufs)]
                if op == "free":
                    buf.free()
                    r = buf.closed
                elif op == "memset":
                    buf.memset(b)
                    r = None
                elif op == "copy":
                    buf.copy_from(bufs[b % len(bufs)])
                    r = None
                else:
                    r = bytes(buf.copy_to_host()).hex()
        except Exception as exc:  # noqa: BLE001 - the outcome is compared, whatever it is
            r = (type(exc).__name__, str(exc))
        trace.append(r)
    deltas = [{k: v - base[d][k] for k, v in mem.counters(d).items()} for d in range(4)]
    for buf in bufs:
        buf.free()
    return trace, deltas


@pytest.mark.devices(4)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=MEM_OPS)
def test_twins_agree_on_random_memory_operations(both_twins, ops):
    native, python = (_mem_trace(t, ops) for t in both_twins)
    assert native == python


def test_concurrent_frees_of_one_buffer_free_it_once(mem):
    import sys
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)      # switch threads as often as possible: widen any race window
    try:
        _free_concurrently(mem)
    finally:
        sys.setswitchinterval(old)


def _free_concurrently(mem):
    before = mem.counters(0)
    for _ in range(200):
        buf = mem.alloc(512, device=0)
        start = threading.Barrier(4)
        errors = []

        def free():
            start.wait()
            try:
                buf.free()
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=free) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and buf.closed
    after = mem.counters(0)
    assert after["bytes"] == before["bytes"] and after["count_freed"] - before["count_freed"] == 200


@pytest.mark.devices(4)
def test_a_failed_device_query_at_free_keeps_the_buffer(mem, emu, streams):
    # on the default stream of another device, free() asks for the current device first: make that fail
    buf = mem.alloc(512, device=3, stream=streams.default_stream(3))
    before = mem.memory_allocated(3)
    assert emu.accelEmuSetFail(b"cudaGetDevice:1") == 0
    with pytest.raises(CudaError):
        buf.free()
    emu.accelEmuSetFail(None)
    assert not buf.closed and mem.memory_allocated(3) == before
    buf.free()
    assert buf.closed and mem.memory_allocated(3) == before - 512


def test_twins_buffers_have_the_same_surface(both_twins):
    import inspect
    native, python = (t.mod("_memory").DeviceBuffer for t in both_twins)
    names = sorted(n for n in dir(python) if not n.startswith("_") or n in (
        "__cuda_array_interface__", "__dlpack__", "__dlpack_device__", "__enter__", "__exit__"))
    assert names == sorted(n for n in dir(native) if not n.startswith("_") or n in names)
    for n in names:
        a, b = getattr(native, n), getattr(python, n)
        assert (a.__doc__ or "").strip() == (b.__doc__ or "").strip(), n
        if callable(b) and not isinstance(b, property):
            assert str(inspect.signature(a)) == str(inspect.signature(b)), n
