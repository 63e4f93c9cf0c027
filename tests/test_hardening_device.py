"""Failed device / stream calls leave the thread's device as it was, guards restore or report
consistently (fault injection on the emulator), device-count failures are not cached, and both twins
treat bad device arguments and half-constructed objects alike (issue 12, items 3-8, 10, 13, 14)."""
import ctypes
import gc
import importlib.util
import json
import pathlib
import textwrap
import warnings

import pytest

from accel import _lib
from accel.errors import CudaDriverError, CudaError

_spec = importlib.util.spec_from_file_location("stream_fixtures", pathlib.Path(__file__).with_name("stream_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
NDEV, emu = _fx.NDEV, _fx.emu


@pytest.fixture
def dev(twin, emu):
    """The twin's _device module on device 0, no pending target, no primary context anywhere."""
    mod = twin.mod("_device")
    mod.set_device(0)
    emu.accelEmuResetContexts()
    yield mod
    emu.accelEmuSetFail(None)
    emu.accelEmuResetContexts()
    mod.set_device(0)


@pytest.fixture
def sm(twin, dev):
    """The twin's _stream module with accel.cuda's device parser, default streams current."""
    from accel.cuda import _stream_api
    mod = twin.mod("_stream")
    mod.set_index_parser(_stream_api._parse_device)
    for d in range(NDEV):
        mod.set_stream(mod.default_stream(d))
    dev.set_device(0)
    yield mod
    for d in range(NDEV):
        mod.set_stream(mod.default_stream(d))


def pending_target_on_0(dev, emu):
    """Leave this thread on device 0 by a pending target (runtime device 1): a guard's exit to 0, which
    has no context."""
    dev.set_device(0)
    emu.accelEmuResetContexts()
    with dev.device(1):
        pass
    assert dev.current_device() == 0 and dev.has_primary_context(0) is False


def run_json(subprocess_python, backend, code, **env):
    proc = subprocess_python(textwrap.dedent(code), env={"ACCEL_BACKEND": backend, **env})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- item 3: a failed switch keeps the pending target ---------------------------------------------------------

@pytest.mark.devices(2)
@pytest.mark.parametrize("call", ["set_device", "exchange_device", "guard", "Stream"])
def test_failed_switch_keeps_pending_target(dev, sm, emu, call):
    pending_target_on_0(dev, emu)
    fail = {"set_device": lambda: dev.set_device(99), "exchange_device": lambda: dev.exchange_device(99),
            "guard": lambda: dev.device(99).__enter__(), "Stream": lambda: sm.Stream(99)}[call]
    with pytest.raises((CudaError, ValueError), match="99"):
        fail()
    assert dev.current_device() == 0
    assert dev.has_primary_context(0) is False  # still a target: nothing was switched


@pytest.mark.devices(2)
def test_failed_set_device_keeps_runtime_device_and_target(dev, twin, emu):
    pending_target_on_0(dev, emu)
    emu.accelEmuSetFail(b"cudaSetDevice:1")
    with pytest.raises(CudaError):
        dev.set_device(3)
    emu.accelEmuSetFail(None)
    assert dev.current_device() == 0 and twin.mod("_cudart").cudaGetDevice() == 1


# -- item 4: guard-like paths restore, or raise with nothing changed ------------------------------------------

# Every call a Stream(d) construction or a wait_stream makes that can fail, at the first few positions.
FAULTS = [f"{sym}:{n}" for sym in ("cudaGetDevice", "cudaSetDevice", "cuDevicePrimaryCtxGetState")
          for n in (1, 2, 3)] + ["cudaStreamCreateWithPriority:1", "cudaGetDeviceCount:1"]

STREAM_FAULTS = """
    import ctypes, json, warnings
    import accel.cuda as cuda
    from accel import _lib
    lib = _lib.cudart().cdll
    lib.accelEmuSetFail.argtypes = [ctypes.c_char_p]
    cuda.init()
    out = []
    for ctx0 in (False, True):
        if ctx0:
            cuda.set_device(0)      # device 0 gets a context: a restore really switches back
        for i, spec in enumerate(%r):
            d = 1 + i %% 3          # each Stream(d) call creates a new pool stream (32 per device)
            live = lib.accelEmuLiveStreams()
            lib.accelEmuSetFail(spec.encode())
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                try:
                    s = cuda.Stream(d)
                    res = ["ok", s.device_index == d]
                except Exception as exc:
                    res = [type(exc).__name__]
            lib.accelEmuSetFail(None)
            res += [cuda.current_device(), lib.accelEmuLiveStreams() - live, len(w)]
            out.append([ctx0, spec, res])
    print(json.dumps(out))
"""


@pytest.mark.emu_only("accelEmuSetFail")
@pytest.mark.devices(4)
def test_stream_construction_faults_restore_the_device(subprocess_python, twin):
    out = run_json(subprocess_python, twin.name, STREAM_FAULTS % (FAULTS,))
    for ctx0, spec, res in out:
        if res[0] == "ok":  # completed: the device is restored (a failed restore becomes a target)
            assert res[1:4] == [True, 0, 1], (ctx0, spec, res)
        else:  # raised: the device as before and no stream made
            assert res[1:3] == [0, 0], (ctx0, spec, res)
    by_spec = {(c, s): r for c, s, r in out}
    # the faults of the issue: the restore's probe and its cudaGetDevice; the stream is made, with a warning
    assert by_spec[(True, "cuDevicePrimaryCtxGetState:1")] == ["ok", True, 0, 1, 1]
    assert by_spec[(True, "cudaGetDevice:2")] == ["ok", True, 0, 1, 1]
    assert by_spec[(True, "cudaStreamCreateWithPriority:1")][0] == "CudaError"


@pytest.mark.devices(3)
@pytest.mark.parametrize("spec", FAULTS[:-2] + ["cudaEventRecord:1", "cudaStreamWaitEvent:1"])
@pytest.mark.parametrize("ctx0", [False, True])
def test_wait_stream_faults_restore_the_device(sm, dev, emu, spec, ctx0):
    a, b = sm.Stream(1), sm.Stream(2)
    b.wait_stream(a)  # the per-thread event of device 1 exists from here on
    dev.set_device(0)
    if not ctx0:
        emu.accelEmuResetContexts()  # no context on 0: each restore records a target instead
    gc.collect()                     # earlier tests' Events in cycles must not be destroyed inside the count
    gc.disable()
    try:
        live = emu.accelEmuLiveEvents()
        emu.accelEmuSetFail(spec.encode())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                b.wait_stream(a)
            except (CudaError, CudaDriverError):
                pass
        emu.accelEmuSetFail(None)
        live_after = emu.accelEmuLiveEvents()
    finally:
        gc.enable()
    assert dev.current_device() == 0 and live_after == live
    b.wait_stream(a)
    b.synchronize()
    assert dev.current_device() == 0


@pytest.mark.devices(3)
@pytest.mark.parametrize("spec", ["cudaGetDevice:1", "cuDevicePrimaryCtxGetState:1", "cudaSetDevice:1"])
def test_device_guard_exit_fault_raises_and_restores(dev, emu, spec):
    dev.set_device(0)  # a context on 0: the exit probes it, then switches back
    g = dev.device(2)
    with pytest.raises((CudaError, CudaDriverError)):
        with g:
            assert dev.current_device() == 2
            emu.accelEmuSetFail(spec.encode())
    emu.accelEmuSetFail(None)
    assert dev.current_device() == 0
    with g:  # the guard is usable again
        assert dev.current_device() == 2
    assert dev.current_device() == 0


@pytest.mark.devices(3)
@pytest.mark.parametrize("ctx", ["stream", "context"])
@pytest.mark.parametrize("spec", ["cudaGetDevice:1", "cudaSetDevice:1"])
def test_stream_context_exit_fault_raises_and_restores(sm, dev, emu, ctx, spec):
    dev.set_device(0)
    s = sm.Stream(2)
    cm = s if ctx == "stream" else sm.stream(s)
    with pytest.raises(CudaError):
        with cm:
            assert dev.current_device() == 2 and sm.current_stream() == s
            emu.accelEmuSetFail(spec.encode())
    emu.accelEmuSetFail(None)
    assert dev.current_device() == 0
    assert sm.current_stream(2) == sm.default_stream(2) and sm.current_stream(0) == sm.default_stream(0)
    with cm:  # usable again (no half-entered state left behind)
        assert dev.current_device() == 2
    assert dev.current_device() == 0


@pytest.mark.devices(3)
@pytest.mark.parametrize("spec", ["cudaGetDevice:1", "cudaGetDevice:2", "cudaSetDevice:1"])
def test_stream_context_enter_fault_changes_nothing(sm, dev, emu, spec):
    pending_target_on_0(dev, emu)  # the entry materialises the target first
    s = sm.Stream(2)
    ctx = sm.stream(s)
    emu.accelEmuSetFail(spec.encode())
    with pytest.raises(CudaError):
        with ctx:
            pass
    emu.accelEmuSetFail(None)
    assert dev.current_device() == 0 and sm.current_stream(2) == sm.default_stream(2)
    ctx.__exit__(None, None, None)  # not entered: a no-op (the failed entry left nothing half-done)
    assert dev.current_device() == 0 and sm.current_stream(2) == sm.default_stream(2)
    with ctx:
        assert dev.current_device() == 2
    assert dev.current_device() == 0 and sm.current_stream(2) == sm.default_stream(2)


# -- item 5: a failed device count is not cached ---------------------------------------------------------------

@pytest.mark.emu_only("ACCEL_EMU_FAIL")
@pytest.mark.devices(1)
def test_failed_device_count_is_retried_and_warned_once(subprocess_python, twin):
    out = run_json(subprocess_python, twin.name, """
        import json, warnings
        import accel.cuda as cuda
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            counts = [cuda.device_count(), cuda.device_count(), cuda.device_count(), cuda.is_available()]
        print(json.dumps([counts, [str(x.message)[:39] for x in w], cuda.get_device_name(0) != ""]))
    """, ACCEL_EMU_FAIL="cudaGetDeviceCount:1,cudaGetDeviceCount:2")
    assert out == [[0, 0, NDEV, True], ["CUDA initialization: CUDA unknown error"], True]


# -- item 6: a failed count during a guard's exit reports the real error -----------------------------------------

@pytest.mark.emu_only("accelEmuSetFail")
@pytest.mark.devices(2)
def test_count_failure_in_guard_exit_reports_cuda_error(subprocess_python, twin):
    out = run_json(subprocess_python, twin.name, """
        import ctypes, json
        import accel.cuda as cuda
        from accel import _lib
        lib = _lib.cudart().cdll
        lib.accelEmuSetFail.argtypes = [ctypes.c_char_p]
        cuda.init()
        lib.accelEmuSetFail(b"cudaGetDeviceCount:1")   # the exit's hasPrimaryContext counts first
        try:
            with cuda.device(1):
                pass
            err = None
        except Exception as exc:
            err = [type(exc).__name__, getattr(exc, "code", None), str(exc).splitlines()[0]]
        lib.accelEmuSetFail(None)
        after = cuda.current_device()
        with cuda.device(1):
            inside = cuda.current_device()
        print(json.dumps([err, after, inside, cuda.current_device()]))
    """)
    assert out == [["CudaError", 999, "CUDA error: unknown error"], 0, 1, 0]


# -- item 7: re-entering one guard object ------------------------------------------------------------------------

@pytest.mark.devices(4)
def test_reentered_guard_restores_each_level(dev):
    g = dev.device(2)
    with g:
        with dev.device(3):
            with g:
                assert dev.current_device() == 2
            assert dev.current_device() == 3
        assert dev.current_device() == 2
    assert dev.current_device() == 0
    with g:  # and once more, sequentially
        with g:
            with g:
                assert dev.current_device() == 2
            assert dev.current_device() == 2
    assert dev.current_device() == 0


@pytest.mark.devices(4)
def test_reentered_guard_after_a_failed_entry(dev):
    g = dev.device(1)
    with g:
        g.idx = 9
        with pytest.raises(CudaError):
            g.__enter__()  # fails: nothing is pushed
        g.idx = 1
        with dev.device(3):
            with g:
                assert dev.current_device() == 1
            assert dev.current_device() == 3
        assert dev.current_device() == 1
    assert dev.current_device() == 0


@pytest.mark.devices(4)
def test_device_interface_guard_reentry():
    import accel.cuda as cuda
    from accel import device_interface as di
    cuda.set_device(0)
    g = di.DeviceGuard(di.CudaInterface, 2)
    with g:
        with di.DeviceGuard(di.CudaInterface, 3):
            with g:
                assert cuda.current_device() == 2
            assert cuda.current_device() == 3
    assert cuda.current_device() == 0


# -- item 8: the compile-worker property cache validates its index -----------------------------------------------

@pytest.mark.parametrize("bad, exc, text", [
    (-1, ValueError, rf"Invalid device id -1: expected 0 <= device < device_count\(\) = {NDEV}"),
    (NDEV, ValueError, rf"Invalid device id {NDEV}: expected 0 <= device < device_count\(\) = {NDEV}"),
    (f"cuda:{NDEV + 3}", ValueError, f"Invalid device id {NDEV + 3}"),
    (True, TypeError, "got bool: True"),
    (1.0, TypeError, "got float: 1.0"),
])
@pytest.mark.devices(1)
def test_worker_get_device_properties_validates(bad, exc, text):
    from accel import device_interface as di
    with pytest.raises(exc, match=text):
        di.CudaInterface.Worker.get_device_properties(bad)
    import accel.cuda as cuda
    with pytest.raises(exc, match=text):
        cuda.get_device_properties(bad)


# -- item 10: bools are not device indices -------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda sm: sm.Stream(True), lambda sm: sm.Stream(device=False), lambda sm: sm.ExternalStream(0, device=True),
    lambda sm: sm.current_stream(True), lambda sm: sm.default_stream(True), lambda sm: sm.current_raw_stream(False),
])
def test_bool_device_is_rejected_by_streams(sm, call):
    with pytest.raises(TypeError, match="bool: (True|False)"):
        call(sm)


@pytest.mark.parametrize("fn", ["set_device", "device", "has_primary_context", "get_device_properties",
                                "current_stream", "Stream", "synchronize", "mem_get_info"])
@pytest.mark.devices(1)
def test_bool_device_is_rejected_by_the_public_api(fn):
    import accel.cuda as cuda
    with pytest.raises(TypeError, match="bool: True"):
        f = getattr(cuda, fn)
        f(True).__enter__() if fn == "device" else f(True)
    assert cuda.current_device() == 0


# -- item 13: __index__ returning a non-int ----------------------------------------------------------------------

class StrIndex:
    def __index__(self):
        return "1"

    def __repr__(self):
        return "StrIndex()"


@pytest.mark.parametrize("fn", ["set_device", "exchange_device", "maybe_exchange_device", "has_primary_context",
                                "device"])
def test_index_returning_str_is_a_clear_type_error(dev, fn):
    with pytest.raises(TypeError, match=r"StrIndex.__index__\(\) returned str '1', expected an int"):
        getattr(dev, fn)(StrIndex())


@pytest.mark.parametrize("call", [lambda sm: sm.Stream(StrIndex()), lambda sm: sm.current_stream(StrIndex()),
                                  lambda sm: sm.Stream(priority=StrIndex()),
                                  lambda sm: sm.ExternalStream(StrIndex())])
def test_stream_index_returning_str_is_a_clear_type_error(sm, call):
    with pytest.raises(TypeError, match=r"StrIndex.__index__\(\) returned str '1', expected an int"):
        call(sm)


# -- item 14: immutable streams, usable half-constructed objects ----------------------------------------------

@pytest.mark.devices(2)
@pytest.mark.parametrize("cls", ["Stream", "ExternalStream"])
@pytest.mark.parametrize("name, text", [
    ("device_index", "attribute 'device_index' of 'accel._{twin}._stream.Stream' objects is not writable"),
    ("stream_id", "attribute 'stream_id' of 'accel._{twin}._stream.Stream' objects is not writable"),
    ("cuda_stream", "attribute 'cuda_stream' of 'accel._{twin}._stream.Stream' objects is not writable"),
    ("_ptr", "'accel._{twin}._stream.{cls}' object has no attribute '_ptr'"),
    ("foo", "'accel._{twin}._stream.{cls}' object has no attribute 'foo'"),
    ("query", "'accel._{twin}._stream.{cls}' object attribute 'query' is read-only"),
])
def test_streams_are_immutable(sm, twin, cls, name, text):
    s = sm.Stream(1) if cls == "Stream" else sm.ExternalStream(sm.Stream(1))
    before = (s.device_index, s.stream_id, s.cuda_stream)
    msg = text.format(twin=twin.name, cls=cls)
    for op in (lambda: setattr(s, name, 2 ** 40), lambda: delattr(s, name)):
        with pytest.raises(AttributeError) as info:
            op()
        assert str(info.value) == msg
    assert (s.device_index, s.stream_id, s.cuda_stream) == before
    with sm.stream(s):
        assert dev_of(twin) == 1


def dev_of(twin):
    return twin.mod("_device").current_device()


@pytest.mark.parametrize("name, text", [
    ("device", "attribute 'device' of 'accel._{twin}._stream.Event' objects is not writable"),
    ("cuda_event", "attribute 'cuda_event' of 'accel._{twin}._stream.Event' objects is not writable"),
    ("_as_parameter_", "attribute '_as_parameter_' of 'accel._{twin}._stream.Event' objects is not writable"),
    ("_h", "'accel._{twin}._stream.Event' object has no attribute '_h'"),
    ("foo", "'accel._{twin}._stream.Event' object has no attribute 'foo'"),
    ("query", "'accel._{twin}._stream.Event' object attribute 'query' is read-only"),
])
def test_events_are_immutable(sm, twin, name, text):
    e = sm.Event(enable_timing=True)
    e.record()
    before = (e.cuda_event, e.device)
    for op in (lambda: setattr(e, name, 2 ** 40), lambda: delattr(e, name)):
        with pytest.raises(AttributeError) as info:
            op()
        assert str(info.value) == text.format(twin=twin.name)
    assert (e.cuda_event, e.device) == before
    e.synchronize()
    assert e.query() is True


def test_event_subclasses_keep_their_own_attributes(sm):
    class Tagged(sm.Event):
        pass
    t = Tagged()
    t.tag = "mine"
    t.record()
    assert t.tag == "mine" and t.query() in (True, False)
    with pytest.raises(AttributeError):
        t.cuda_event = 5


def test_half_constructed_objects_behave_alike(sm, dev):
    s = sm.Stream.__new__(sm.Stream)
    assert (s.device_index, s.stream_id, s.cuda_stream, s.query()) == (0, 0, 0, True)
    assert s == sm.default_stream(0) and repr(s) == "<accel.cuda.Stream device=cuda:0 cuda_stream=0x0>"
    with s:
        assert sm.current_stream() == s
    x = sm.ExternalStream.__new__(sm.ExternalStream)
    assert (x.device_index, x.cuda_stream) == (0, 0)
    e = sm.Event.__new__(sm.Event)
    assert (e.query(), e.device, e.cuda_event, repr(e)) == (True, None, 0, "<accel.cuda.Event uninitialized>")
    e.synchronize()
    g = dev.device.__new__(dev.device)
    assert (g.idx, g.prev_idx, repr(g)) == (None, -1, "device(None)")
    with g:
        assert dev.current_device() == 0
