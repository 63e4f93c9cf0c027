"""Streams on the emulated runtime, both twins: current stream, pool, contexts, external streams, host functions."""
import ctypes
import gc
import importlib.util
import pathlib
import sys
import threading
import time
import weakref

import pytest

from accel import _lib
from accel.errors import CudaError

_spec = importlib.util.spec_from_file_location("stream_fixtures", pathlib.Path(__file__).with_name("stream_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
NDEV, Gate, emu, sm, dev, rt = _fx.NDEV, _fx.Gate, _fx.emu, _fx.sm, _fx.dev, _fx.rt
INVALID_HANDLE = 400


# -- current stream ---------------------------------------------------------------------------------

@pytest.mark.devices(4)
def test_default_and_current_stream(sm, dev):
    for d in range(NDEV):
        s = sm.default_stream(d)
        assert (s.device_index, s.stream_id, s.cuda_stream) == (d, 0, 0)
        assert s.device.index == d and s.device.type == "cuda" and str(s.device) == f"cuda:{d}"
        assert sm.current_stream(d) == s
    assert sm.current_stream() == sm.default_stream() == sm.default_stream(0)
    dev.set_device(2)
    assert sm.current_stream() == sm.default_stream(2) and sm.current_stream() is sm.current_stream()
    assert sm.current_raw_stream() == 0
    assert sm.current_stream("cuda:3") == sm.default_stream(3)


@pytest.mark.devices(2)
def test_set_stream_switches_device_and_only_its_devices_stream(sm, dev):
    s1 = sm.Stream(device=1)
    sm.set_stream(s1)
    assert dev.current_device() == 1
    assert sm.current_stream() is s1 and sm.current_stream(1) is s1
    assert sm.current_raw_stream(1) == s1.cuda_stream != 0
    assert sm.current_stream(0) == sm.default_stream(0)
    sm.set_stream(None)  # no-op
    assert sm.current_stream() is s1


def test_new_thread_sees_default_streams(sm):
    streams = [sm.Stream(device=d) for d in range(NDEV)]
    for s in streams:
        sm.set_stream(s)
    seen = []
    t = threading.Thread(target=lambda: seen.extend(sm.current_stream(d) for d in range(NDEV)))
    t.start()
    t.join()
    assert seen == [sm.default_stream(d) for d in range(NDEV)]
    assert [sm.current_stream(d) for d in range(NDEV)] == streams


def test_threads_keep_separate_current_streams(sm, dev):
    errors = []

    def work(k):
        try:
            mine = [sm.Stream(device=d) for d in range(NDEV)]
            for i in range(300):
                s = mine[(i + k) % NDEV]
                with sm.stream(s):
                    assert sm.current_stream() is s and dev.current_device() == s.device_index
                    sm.set_stream(mine[(i + k + 1) % NDEV])
                assert dev.current_device() == 0 and sm.current_stream(0) == sm.default_stream(0)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


# -- stream contexts --------------------------------------------------------------------------------

def test_context_same_device_restores(sm, dev):
    a = sm.Stream()
    with sm.stream(a) as got:
        assert got is a and sm.current_stream() is a
    assert sm.current_stream() == sm.default_stream(0) and dev.current_device() == 0
    with sm.stream(None) as got:
        assert got is None and sm.current_stream() == sm.default_stream(0)


@pytest.mark.devices(3)
def test_context_other_device_restores_device_and_both_streams(sm, dev):
    prev2 = sm.Stream(device=2)
    sm.set_stream(prev2)
    dev.set_device(0)
    s = sm.Stream(device=2)
    with sm.stream(s):
        assert dev.current_device() == 2
        assert sm.current_stream() is s and sm.current_stream(0) == sm.default_stream(0)
    assert dev.current_device() == 0
    assert sm.current_stream(2) is prev2 and sm.current_stream() == sm.default_stream(0)


@pytest.mark.devices(2)
def test_context_nested_and_reentered(sm, dev):
    a, b, c = sm.Stream(device=0), sm.Stream(device=1), sm.Stream(device=0)
    ctx = sm.stream(a)
    with ctx:
        with sm.stream(b):
            assert sm.current_stream() is b and dev.current_device() == 1
            with sm.stream(c):
                assert sm.current_stream() is c and dev.current_device() == 0
                with ctx:  # the same context object, entered again
                    assert sm.current_stream() is a
                assert sm.current_stream() is c
            assert sm.current_stream() is b and sm.current_stream(0) is a
        assert sm.current_stream() is a and dev.current_device() == 0
    assert sm.current_stream() == sm.default_stream(0)


@pytest.mark.devices(4)
def test_set_stream_inside_context(sm, dev):
    a, b = sm.Stream(device=0), sm.Stream(device=0)
    with sm.stream(a):
        sm.set_stream(b)
        assert sm.current_stream() is b
    assert sm.current_stream() == sm.default_stream(0)
    s1, s3 = sm.Stream(device=1), sm.Stream(device=3)
    with sm.stream(s1):
        sm.set_stream(s3)  # switches to device 3
        assert dev.current_device() == 3
    # torch: the entry device and its stream come back, and the stream's device gets its previous
    # stream; a stream set on a third device stays.
    assert dev.current_device() == 0
    assert sm.current_stream(1) == sm.default_stream(1) and sm.current_stream(3) is s3


@pytest.mark.devices(4)
def test_context_restores_on_exception(sm, dev):
    s = sm.Stream(device=3)
    with pytest.raises(KeyError):
        with sm.stream(s):
            raise KeyError("x")
    assert dev.current_device() == 0 and sm.current_stream(3) == sm.default_stream(3)


@pytest.mark.devices(2)
def test_stream_object_as_context(sm, dev):
    s = sm.Stream(device=1)
    with s:
        assert sm.current_stream() is s and dev.current_device() == 1
        with pytest.raises(RuntimeError, match="Stream's context should not be initialized."):
            s.__enter__()
    assert dev.current_device() == 0 and sm.current_stream(1) == sm.default_stream(1)


@pytest.mark.devices(3)
def test_context_does_not_create_context_on_exit_to_pending_target(sm, dev, emu):
    # Entering a stream context from a pending target device materialises it (torch's SetTargetDevice),
    # and the exit returns there.
    dev.set_device(1)
    with dev.device(2):
        pass
    s = sm.Stream(device=1)
    with sm.stream(s):
        assert dev.current_device() == 1
    assert dev.current_device() == 1


# -- pool and priorities ----------------------------------------------------------------------------

@pytest.mark.devices(2)
def test_pool_round_robin(sm):
    ids = [sm.Stream(device=1).stream_id for _ in range(64)]
    assert len(set(ids[:32])) == 32 and ids[32:] == ids[:32]
    assert {i & 0x1f for i in ids} == {3} and sorted(i >> 5 for i in ids[:32]) == list(range(32))
    ptrs = {sm.Stream(device=1).cuda_stream for _ in range(32)}
    assert len(ptrs) == 32 and 0 not in ptrs


@pytest.mark.devices(4)
def test_pool_created_lazily_and_non_blocking(sm, rt, emu):
    before = emu.accelEmuLiveStreams()
    first = [sm.Stream(device=3, priority=-2) for _ in range(32)]
    made = emu.accelEmuLiveStreams() - before
    assert 0 < made <= 32, made
    again = [sm.Stream(device=3, priority=-2) for _ in range(32)]
    assert emu.accelEmuLiveStreams() - before == made
    assert {s.cuda_stream for s in first} == {s.cuda_stream for s in again}
    assert all(rt.cudaStreamGetFlags(s.cuda_stream) == 1 for s in first[:4])


@pytest.mark.devices(3)
@pytest.mark.parametrize("priority, expected, type_bits", [(0, 0, 1), (-1, -1, 2), (-3, -3, 4), (-100, -3, 4),
                                                            (7, 0, 1)])
def test_priorities_clamped(sm, priority, expected, type_bits):
    s = sm.Stream(device=2, priority=priority)
    assert s.priority == expected
    assert (s.stream_id >> 1) & 0xF == type_bits and s.stream_id & 1
    assert sm.Stream.priority_range() == sm.priority_range() == (0, -3)


@pytest.mark.devices(3)
def test_stream_on_other_device_keeps_current_device(sm, dev):
    s = sm.Stream(device="cuda:2")
    assert s.device_index == 2 and dev.current_device() == 0
    assert s.query() is True and dev.current_device() == 0
    s.synchronize()
    assert dev.current_device() == 0


# -- external streams and the protocol --------------------------------------------------------------

class Foreign:
    def __init__(self, ptr, version=0):
        self.ptr, self.version = ptr, version

    def __cuda_stream__(self):
        return (self.version, self.ptr)


@pytest.mark.devices(2)
def test_cuda_stream_protocol_both_ways(sm):
    s = sm.Stream(device=1)
    assert s.__cuda_stream__() == (0, s.cuda_stream)
    assert isinstance(s._as_parameter_, ctypes.c_void_p) and s._as_parameter_.value == s.cuda_stream
    f = Foreign(s.cuda_stream)
    x = sm.ExternalStream(f)
    assert x == s and hash(x) == hash(s) and x.device_index == 1 and x.stream_id == s.cuda_stream
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is not None, "ExternalStream keeps the foreign object alive"
    del x
    gc.collect()
    assert ref() is None
    assert sm.ExternalStream(s) == s  # our own streams speak the protocol too
    with sm.stream(Foreign(s.cuda_stream)):
        assert sm.current_stream() == s


@pytest.mark.devices(4)
def test_external_stream_device_from_runtime(sm, rt, dev):
    rt.cudaSetDevice(2)
    raw = rt.cudaStreamCreateWithFlags(1)
    dev.set_device(0)
    try:
        x = sm.ExternalStream(raw)
        assert x.device_index == 2 and x.cuda_stream == raw and x.query() is True
        assert sm.ExternalStream(raw, device=2) == x
        with pytest.raises(ValueError, match="belongs to device 2"):
            sm.ExternalStream(raw, device=1)
        sm.set_stream(x)
        assert sm.current_stream() is x and dev.current_device() == 2
        sm.set_stream(sm.default_stream(2))
    finally:
        rt.cudaStreamDestroy(raw)
    with pytest.raises(CudaError) as info:
        sm.ExternalStream(raw)  # destroyed
    assert info.value.code == INVALID_HANDLE
    dev.set_device(1)
    assert sm.ExternalStream(0) == sm.default_stream(1)  # the legacy stream of the current device
    assert sm.ExternalStream(0, device=3) == sm.default_stream(3)


@pytest.mark.emu_only("a real runtime does not validate stream handles: a bogus or destroyed one is undefined behaviour (it crashed the first GPU run)")
def test_external_stream_bad_input(sm):
    with pytest.raises(CudaError) as info:
        sm.ExternalStream(0xDEADBEEF000)
    assert info.value.code == INVALID_HANDLE
    with pytest.raises(TypeError, match="'abc'"):
        sm.ExternalStream("abc")
    with pytest.raises(TypeError):
        sm.ExternalStream(True)
    with pytest.raises(ValueError, match="version 1"):
        sm.ExternalStream(Foreign(0, version=1))
    with pytest.raises(ValueError, match=r"\[0, 2\*\*64\)"):
        sm.ExternalStream(-5)


def test_ctypes_accepts_stream_as_argument(sm):
    fn = _lib.cudart().cdll.cudaStreamQuery
    fn.argtypes = [ctypes.c_void_p]
    assert fn(sm.Stream(device=0)) == 0


# -- ordering with host functions -------------------------------------------------------------------

@pytest.mark.devices(2)
def test_wait_stream_orders_host_functions(sm):
    a, b = sm.Stream(device=0), sm.Stream(device=1)
    log = []
    gate = Gate()
    a.launch_host_func(gate)
    a.launch_host_func(lambda: log.append("a"))
    b.wait_stream(a)
    b.launch_host_func(lambda: log.append("b"))
    time.sleep(0.05)
    assert log == [] and b.query() is False and a.query() is False
    gate.open()
    b.synchronize()
    assert log == ["a", "b"]


@pytest.mark.emu_only("a real runtime (H200, driver 580) answered query() True for a stream whose host function was still blocked; the emulator answers not ready")
def test_without_wait_streams_run_independently(sm):
    # The control experiment for the test above: without wait_stream, b does not wait for a.
    a, b = sm.Stream(), sm.Stream()
    gate, log = Gate(), []
    a.launch_host_func(gate)
    b.launch_host_func(lambda: log.append("b"))
    b.synchronize()
    assert log == ["b"] and a.query() is False
    gate.open()
    a.synchronize()


@pytest.mark.devices(3)
def test_wait_stream_reuses_one_event(sm, emu):
    a, b = sm.Stream(device=2), sm.Stream(device=2)
    b.wait_stream(a)
    live = emu.accelEmuLiveEvents()
    for _ in range(100):
        b.wait_stream(a)
        a.wait_stream(b)
    assert emu.accelEmuLiveEvents() == live


def test_host_func_exception_is_reported(sm, monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda args: seen.append(args.exc_value))
    s, log = sm.Stream(), []
    s.launch_host_func(lambda: 1 / 0)
    s.launch_host_func(lambda: log.append("after"))
    s.synchronize()
    assert len(seen) == 1 and isinstance(seen[0], ZeroDivisionError)
    assert log == ["after"]


def test_host_func_kept_alive_until_it_ran(sm):
    s, gate, ran = sm.Stream(), Gate(), []

    class Fn:
        def __call__(self):
            ran.append(1)

    fn = Fn()
    ref = weakref.ref(fn)
    s.launch_host_func(gate)
    s.launch_host_func(fn)
    del fn
    gc.collect()
    assert ref() is not None
    gate.open()
    s.synchronize()
    assert ran == [1]
    gc.collect()
    assert ref() is None


def test_host_func_failure_to_launch(sm, emu):
    emu.accelEmuSetFail(b"cudaLaunchHostFunc:1")
    with pytest.raises(CudaError):
        sm.Stream().launch_host_func(lambda: None)


# -- identity and bad input -------------------------------------------------------------------------

@pytest.mark.devices(2)
def test_eq_hash_repr(sm):
    s = sm.Stream(device=1)
    same = sm.ExternalStream(s.cuda_stream, device=1)
    assert s == same and not (s != same) and hash(s) == hash(same) and len({s, same}) == 1
    assert s != sm.default_stream(1) and s != s.cuda_stream and s != "x"
    assert repr(s) == f"<accel.cuda.Stream device=cuda:1 cuda_stream={s.cuda_stream:#x}>"
    with pytest.raises(TypeError, match="pickle"):
        import pickle
        pickle.dumps(s)


@pytest.mark.parametrize("call, exc, text", [
    (lambda sm: sm.Stream(device=NDEV + 3), ValueError,
     rf"Device index value {NDEV + 3} is out of index range \[0, {NDEV}\)"),
    (lambda sm: sm.Stream(device="cuda:9"), ValueError, "9"),
    (lambda sm: sm.Stream(device=1.5), TypeError, "1.5"),
    (lambda sm: sm.Stream(priority="high"), TypeError, "'high'"),
    (lambda sm: sm.current_stream(-2), ValueError, "-2"),
    (lambda sm: sm.current_stream(NDEV), ValueError, rf"\[0, {NDEV}\)"),
    (lambda sm: sm.default_stream(99), ValueError, "99"),
    (lambda sm: sm.set_stream(42), TypeError, "42"),
    (lambda sm: sm.stream("s"), TypeError, "'s'"),
    (lambda sm: sm.Stream().launch_host_func(3), TypeError, "3"),
    (lambda sm: sm.Stream().wait_stream(None), TypeError, "None"),
    (lambda sm: sm.Stream().wait_event(5), TypeError, "5"),
    (lambda sm: sm.Stream().record_event("e"), TypeError, "'e'"),
])
def test_bad_input(sm, call, exc, text):
    with pytest.raises(exc, match=text):
        call(sm)


def test_index_parser_validation(sm):
    with pytest.raises(TypeError, match="parser"):
        sm.set_index_parser(3)


@pytest.mark.devices(3)
def test_current_stream_with_device_makes_no_cuda_call(sm, rt, emu):
    s = sm.Stream(device=2)
    sm.set_stream(s)
    armed = [f"{sym}:1".encode() for sym in ("cudaGetDevice", "cudaSetDevice", "cudaStreamQuery")]
    emu.accelEmuSetFail(b",".join(armed))
    for _ in range(100):
        assert sm.current_stream(2) is s and sm.current_stream(0) == sm.default_stream(0)
        assert sm.current_raw_stream(2) == s.cuda_stream
    with pytest.raises(CudaError):  # the armed failure is still pending: nothing above called cudaGetDevice
        rt.cudaGetDevice()
    emu.accelEmuSetFail(None)


@pytest.mark.devices(3)
def test_public_layer():
    import accel.cuda as cuda
    s = cuda.Stream(device="cuda:1", priority=-1)
    assert isinstance(s, cuda.Stream) and s.priority == -1
    with cuda.stream(s):
        assert cuda.current_stream() is s and cuda.current_device() == 1
        assert cuda.current_stream("cuda") is s and cuda.current_stream(s.device) is s
    assert cuda.current_device() == 0
    e = cuda.Event(enable_timing=True)
    e.record(s)
    e.synchronize()
    assert isinstance(cuda.ExternalStream(s), cuda.Stream)
    assert cuda.ExternalStream(s) == s and cuda.default_stream("cuda:2").device_index == 2
    with pytest.raises(ValueError):
        cuda.Stream(device="cpu")
    cuda.set_stream(cuda.default_stream(1))
    cuda.set_device(0)


@pytest.mark.devices(2)
def test_current_stream_inside_host_functions(sm):
    # Host functions run on CUDA threads whose Python thread state is created and dropped per call:
    # the per-thread stream state must be rebuilt every time (default streams), never reused stale.
    s, seen = sm.Stream(device=1), []

    def probe():
        seen.append(sm.current_stream(1) == sm.default_stream(1))
        sm.set_stream(sm.ExternalStream(s.cuda_stream, device=1))  # dropped with the thread state
        seen.append(sm.current_stream(1) == s)

    for _ in range(50):
        s.launch_host_func(probe)
    s.synchronize()
    assert seen == [True, True] * 50
