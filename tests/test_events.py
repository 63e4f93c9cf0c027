"""Events on the emulated runtime, both twins: lazy creation, ordering, timing, IPC, errors, collection."""
import gc
import importlib.util
import pathlib
import pickle
import threading
import time

import pytest

from accel.errors import CudaError

_spec = importlib.util.spec_from_file_location("stream_fixtures", pathlib.Path(__file__).with_name("stream_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
NDEV, Gate, emu, sm, dev, rt = _fx.NDEV, _fx.Gate, _fx.emu, _fx.sm, _fx.dev, _fx.rt



INVALID_VALUE, INVALID_HANDLE = 1, 400


@pytest.mark.devices(3)
def test_created_lazily_on_first_record(sm, emu):
    live = emu.accelEmuLiveEvents()
    e = sm.Event()
    assert e.device is None and e.cuda_event == 0 and repr(e) == "<accel.cuda.Event uninitialized>"
    assert e.query() is True
    e.wait()
    e.synchronize()
    assert emu.accelEmuLiveEvents() == live
    s = sm.Stream(device=2)
    e.record(s)
    assert emu.accelEmuLiveEvents() == live + 1
    assert e.device.index == 2 and e.cuda_event != 0 and repr(e) == f"<accel.cuda.Event {e.cuda_event:#x}>"
    assert e._as_parameter_.value == e.cuda_event


@pytest.mark.devices(4)
def test_record_on_current_stream(sm, dev):
    s = sm.Stream(device=3)
    e = sm.Event()
    with sm.stream(s):
        e.record()
    assert e.device.index == 3 and dev.current_device() == 0
    assert s.record_event().device.index == 3


@pytest.mark.devices(3)
def test_device_mismatch(sm):
    e = sm.Event()
    e.record(sm.Stream(device=1))
    with pytest.raises(RuntimeError, match=r"^Event device 1 does not match recording stream's device 2\.$"):
        e.record(sm.Stream(device=2))


def test_query_never_raises_for_not_ready(sm):
    s, gate = sm.Stream(), Gate()
    s.launch_host_func(gate)
    e = s.record_event()
    assert e.query() is False and e.query() is False
    gate.open()
    e.synchronize()
    assert e.query() is True


@pytest.mark.devices(3)
def test_wait_event_orders_across_devices(sm, dev):
    a, b = sm.Stream(device=1), sm.Stream(device=2)
    gate, log = Gate(), []
    a.launch_host_func(gate)
    a.launch_host_func(lambda: log.append("a"))
    e = a.record_event()
    b.wait_event(e)
    b.launch_host_func(lambda: log.append("b"))
    time.sleep(0.05)
    assert log == [] and b.query() is False
    gate.open()
    b.synchronize()
    assert log == ["a", "b"] and dev.current_device() == 0


def test_wait_on_current_stream_and_never_recorded(sm):
    s = sm.Stream()
    never = sm.Event()
    never.wait(s)  # no-op
    s.synchronize()
    e = sm.Event()
    gate = Gate()
    s.launch_host_func(gate)
    e.record(s)
    other = sm.Stream()
    with sm.stream(other):
        e.wait()
    assert other.query() is False
    gate.open()
    other.synchronize()


@pytest.mark.devices(2)
def test_elapsed_time(sm):
    s = sm.Stream(device=1)
    start, end = sm.Event(enable_timing=True), sm.Event(enable_timing=True)
    start.record(s)
    s.launch_host_func(lambda: time.sleep(0.03))
    end.record(s)
    end.synchronize()
    ms = start.elapsed_time(end)
    assert 25 <= ms < 5000 and isinstance(ms, float)


def test_elapsed_time_errors(sm):
    s = sm.Stream()
    plain, t1, t2 = sm.Event(), sm.Event(enable_timing=True), sm.Event(enable_timing=True)
    plain.record(s)
    with pytest.raises(ValueError, match=r"^Both events must be created with argument 'enable_timing=True'\.$"):
        plain.elapsed_time(t1)
    with pytest.raises(ValueError, match=r"^Both events must be recorded before calculating elapsed time\.$"):
        t1.elapsed_time(t2)
    gate = Gate()
    t1.record(s)
    s.launch_host_func(gate)
    t2.record(s)
    with pytest.raises(RuntimeError, match=r"^Both events must be completed before calculating elapsed time\.$"):
        t1.elapsed_time(t2)
    gate.open()
    t2.synchronize()
    assert t1.elapsed_time(t2) >= 0
    with pytest.raises(TypeError, match="'x'"):
        t1.elapsed_time("x")


@pytest.mark.emu_only("the real runtime refuses to open an event IPC handle in the process that made it (cudaErrorDeviceUninitialized on an H200, driver 580); the emulator, whose devices live in one process, opens it there so that the round trip can be tested")
def test_ipc_handle_round_trip(sm, dev):
    e = sm.Event(interprocess=True)
    h = e.ipc_handle()  # creates it on the current device
    assert isinstance(h, bytes) and len(h) == 64 and e.device.index == 0
    assert e.ipc_handle() == h
    opened = sm.Event.from_ipc_handle(0, h)
    assert opened.device.index == 0 and opened.cuda_event not in (0, e.cuda_event)
    s, gate = sm.Stream(), Gate()
    s.launch_host_func(gate)
    e.record(s)
    assert opened.query() is False
    gate.open()
    opened.synchronize()
    assert opened.query() is True and e.query() is True
    assert sm.Event.from_ipc_handle("cuda:0", bytearray(h)).query() is True
    with pytest.raises(ValueError, match=r"'enable_timing=True'"):
        opened.elapsed_time(e)


def test_ipc_errors(sm):
    with pytest.raises(CudaError) as info:
        sm.Event().ipc_handle()  # not interprocess
    assert info.value.code == INVALID_VALUE
    with pytest.raises(ValueError, match="^cudaIpcEventHandle_t expects byte-like object of size 64, but got 3$"):
        sm.Event.from_ipc_handle(0, b"abc")
    with pytest.raises(TypeError, match="bytes-like"):
        sm.Event.from_ipc_handle(0, 12)
    with pytest.raises(CudaError) as info:
        sm.Event.from_ipc_handle(0, bytes(64))
    assert info.value.code == INVALID_HANDLE        # a real CUDA 13 runtime's answer (H200, driver 580), the emulator's
    with pytest.raises(ValueError, match="9"):
        sm.Event.from_ipc_handle(9, bytes(64))


@pytest.mark.devices(4)
def test_garbage_collection_frees_events(sm, dev, emu):
    s1, s3 = sm.Stream(device=1), sm.Stream(device=3)
    gc.collect()  # events of earlier tests still held by reference cycles (tracebacks)
    live = emu.accelEmuLiveEvents()
    events = [sm.Event() for _ in range(50)]
    for i, e in enumerate(events):
        e.record(s1 if i % 2 else s3)
    ipc = sm.Event(interprocess=True)
    opened = sm.Event.from_ipc_handle(0, ipc.ipc_handle())
    assert emu.accelEmuLiveEvents() == live + 52
    del events, ipc, opened, e
    gc.collect()
    assert emu.accelEmuLiveEvents() == live
    assert dev.current_device() == 0


def test_thread_exit_frees_wait_stream_event(sm, emu):
    gc.collect()
    live = emu.accelEmuLiveEvents()
    a, b = sm.Stream(), sm.Stream()
    t = threading.Thread(target=lambda: b.wait_stream(a))
    t.start()
    t.join()
    gc.collect()
    assert emu.accelEmuLiveEvents() == live


@pytest.mark.emu_only("a real runtime does not validate stream handles: a bogus or destroyed one is undefined behaviour (it crashed the first GPU run)")
def test_record_and_wait_bad_input(sm, rt):
    e = sm.Event()
    for bad in (5, "s", object()):
        with pytest.raises(TypeError):
            e.record(bad)
        with pytest.raises(TypeError):
            e.wait(bad)
    raw = rt.cudaStreamCreateWithFlags(1)
    x = sm.ExternalStream(raw)
    rt.cudaStreamDestroy(raw)
    with pytest.raises(CudaError) as info:
        e.record(x)  # destroyed stream
    assert info.value.code == INVALID_HANDLE
    with pytest.raises(TypeError, match="pickle"):
        pickle.dumps(e)


def test_record_failure_is_reported_not_crash(sm, emu):
    e = sm.Event()
    e.record(sm.Stream())
    emu.accelEmuSetFail(b"cudaEventRecord:1")
    with pytest.raises(CudaError):
        e.record(sm.Stream())
    emu.accelEmuSetFail(None)
    e.record(sm.Stream())
    e.synchronize()


def test_flags(sm, rt):
    # blocking / timing / interprocess flags reach cudaEventCreateWithFlags: the emulator rejects
    # interprocess together with timing, at the lazy creation.
    e = sm.Event(enable_timing=True, interprocess=True)
    with pytest.raises(CudaError) as info:
        e.record(sm.Stream())
    assert info.value.code == INVALID_VALUE and e.device is None
    b = sm.Event(blocking=True)
    b.record(sm.Stream())
    b.synchronize()
