"""The hot paths' raw calls with every kind of object that reaches them, both twins.

The python twin calls cudaGetDevice, cudaSetDevice, cudaEventRecord and cudaEventQuery unprototyped
(``_cudart._unprototyped``): ctypes converts nothing, so a wrong argument kind would be a wrong C value
(an int where a pointer goes, a handle cut to 32 bits) rather than an exception.  These tests reach
those calls from every kind of stream and event there is, and from many threads at once."""
import dis
import gc
import importlib.util
import linecache
import pathlib
import sys
import threading

import pytest

_spec = importlib.util.spec_from_file_location("stream_fixtures", pathlib.Path(__file__).with_name("stream_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
NDEV, Gate, emu, sm, dev, rt = _fx.NDEV, _fx.Gate, _fx.emu, _fx.sm, _fx.dev, _fx.rt


def _ordered(sm, e, s):
    """``e`` recorded on ``s`` behind a gate: query() is False until the gate opens, then True."""
    gate = Gate()
    s.launch_host_func(gate)
    e.record(s)
    assert e.query() is False
    gate.open()
    e.synchronize()
    assert e.query() is True


@pytest.mark.devices(3)
def test_external_stream_record_and_query(sm, rt):
    raw = rt.cudaStreamCreateWithFlags(1)
    try:
        assert raw > 2**32  # a real pointer: a handle cut to a C int would be another value
        x = sm.ExternalStream(raw)
        e = sm.Event()
        _ordered(sm, e, x)
        assert e.device.index == 0
        y = sm.ExternalStream(sm.Stream(device=2))  # through __cuda_stream__, on another device
        e2 = sm.Event()
        _ordered(sm, e2, y)
        assert e2.device.index == 2
    finally:
        rt.cudaStreamSynchronize(raw)
        rt.cudaStreamDestroy(raw)


@pytest.mark.devices(4)
def test_external_legacy_stream_record(sm):
    x = sm.ExternalStream(0, device=3)  # the legacy stream: a null handle
    e = sm.Event()
    e.record(x)
    e.synchronize()
    assert e.query() is True and e.device.index == 3


def test_bare_objects(sm, dev):
    s = sm.Stream.__new__(sm.Stream)  # device 0, the null stream, as the compiled twin's zeroed object
    e = sm.Event.__new__(sm.Event)
    assert e.query() is True
    e.record(s)
    e.synchronize()
    assert e.query() is True and e.device.index == 0
    e2 = sm.Event()
    e2.record(s)
    assert e2.query() in (True, False)
    e2.synchronize()

    class Sub(sm.Stream):
        def __init__(self):  # never calls Stream.__init__: the zeroed fields
            pass
    e3 = sm.Event()
    e3.record(Sub())
    e3.synchronize()
    assert e3.query() is True and e3.device.index == 0


@pytest.mark.emu_only("the real runtime refuses to open an event IPC handle in the process that made it (cudaErrorDeviceUninitialized on an H200, driver 580); the emulator, whose devices live in one process, opens it there so that the round trip can be tested")
def test_ipc_opened_event_record(sm):
    e = sm.Event(interprocess=True)
    opened = sm.Event.from_ipc_handle(0, e.ipc_handle())
    _ordered(sm, opened, sm.Stream(device=0))


def test_threads_see_their_own_device(sm, dev):
    # Each thread has its own out buffer for cudaGetDevice: 16 threads, four per device, each asserting
    # its own device while the others switch theirs.
    n, rounds = 16, 300
    start = threading.Barrier(n)
    errors = []

    def work(i):
        try:
            d = i % NDEV
            dev.set_device(d)
            s = sm.Stream(device=d)
            e = sm.Event()
            start.wait()
            for r in range(rounds):
                assert dev.current_device() == d
                with dev.device((d + 1) % NDEV):
                    assert dev.current_device() == (d + 1) % NDEV
                assert dev.current_device() == d
                e.record(s)
                e.record()  # the current stream of d
                assert e.query() in (True, False)
                assert sm.current_stream().device_index == d
            e.synchronize()
            assert e.query() is True and e.device.index == d
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append((i, exc))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert dev.current_device() == 0


# -- a collection between the call and the read -----------------------------------------------------
# From Python 3.12 the cyclic collector runs at the interpreter's eval-breaker checks, one of which
# follows every call: right after the python twin's cudaGetDevice wrote this thread's out buffer and
# before the caller reads it.  A finalizer it runs that switches devices (accel's own Event.__del__,
# destroying an event of another device) writes the same buffer.  A line tracer puts the collection
# exactly there on any Python version.

def _after_get_device(code, action):
    """A tracer running ``action()`` once, on the first line that ``code`` executes after a line that
    calls ``_get(vp)`` (the unprototyped cudaGetDevice); ``fired`` says whether it ran."""
    lines = {ln for _, ln in dis.findlinestarts(code) if "_get(vp)" in linecache.getline(code.co_filename, ln)}
    fired, last = [], [None]

    def local(frame, event, arg):
        if event == "line":
            if last[0] in lines and not fired:
                fired.append(True)
                action()
            last[0] = frame.f_lineno
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code is code else None
    return tracer, fired


def _garbage_event_on(sm, d):
    """An event created on device ``d`` that only the cyclic collector frees (it sits in a cycle)."""
    e = sm.Event()
    e.record(sm.Stream(device=d))
    e.synchronize()
    box = [e]
    box.append(box)


def _traced(tracer, fn, *args):
    sys.settrace(tracer)
    try:
        return fn(*args)
    finally:
        sys.settrace(None)


@pytest.mark.devices(2)
def test_collection_after_get_device_keeps_current_device(sm, dev, twin):
    dev.set_device(0)
    code = getattr(dev.current_device, "__code__", None)  # None: compiled (a C local, nothing to trace)
    gc.collect()
    _garbage_event_on(sm, 1)
    tracer, fired = _after_get_device(code, gc.collect)
    assert _traced(tracer, dev.current_device) == 0
    assert fired or twin.name == "native"
    assert dev.current_device() == 0


@pytest.mark.devices(3)
def test_collection_in_guard_exit_restores_the_device(sm, dev, twin):
    dev.set_device(0)
    g = dev.device(2)
    exit_code = getattr(type(g).__exit__, "__code__", None)
    gc.collect()
    g.__enter__()
    _garbage_event_on(sm, 0)  # its finalizer switches to 0 and back: the buffer's last value is 0
    assert dev.current_device() == 2
    tracer, fired = _after_get_device(exit_code, gc.collect)
    _traced(tracer, g.__exit__, None, None, None)
    assert fired or twin.name == "native"
    assert dev.current_device() == 0
