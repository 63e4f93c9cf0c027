"""Streams and events on the emulator, both twins, against a Python no-op and the raw binding calls.

Targets (SPEC §4): current_stream() <= ~60 ns native with no CUDA call when the device is given;
``with stream(s)`` <= ~200 ns; Event.record()/query() <= the raw binding call + ~60 ns; the python twin
within 2x of its own raw ctypes calls.
"""
import pytest

from accel._native import _cudart as native_rt
from accel._native import _stream as native
from accel._python import _cudart as python_rt
from accel._python import _stream as python

TWINS = {"native": native, "python": python}
RAW = {"native": native_rt, "python": python_rt}


def _noop(*args):
    pass


@pytest.fixture(scope="module", autouse=True)
def loaded():
    native_rt.load()
    python_rt.load()
    native_rt.cudaSetDevice(0)


# -- current_stream ---------------------------------------------------------------------------------

@pytest.mark.benchmark(group="current_stream")
def test_noop_python_call(bench):
    bench(_noop)


@pytest.mark.benchmark(group="current_stream")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_floor_raw_cudaGetDevice(bench, twin):
    bench(RAW[twin].cudaGetDevice)


@pytest.mark.benchmark(group="current_stream")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_current_stream(bench, twin):
    assert bench(TWINS[twin].current_stream).cuda_stream == 0


@pytest.mark.benchmark(group="current_stream")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_current_stream_device_given(bench, twin):
    bench(TWINS[twin].current_stream, 0)


@pytest.mark.benchmark(group="current_stream")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_current_raw_stream_device_given(bench, twin):
    bench(TWINS[twin].current_raw_stream, 0)


# -- with stream(s) ---------------------------------------------------------------------------------
# Timed in an inline loop of LOOP (as user code runs them), so no wrapper call is counted.
LOOP = 100


@pytest.mark.benchmark(group="with stream(s)")
def test_noop_with_block(bench):
    class Ctx:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def body():
        for _ in range(LOOP):
            with Ctx():
                pass
    bench(body, per=LOOP)


def _with_stream_loop(ctx, s):
    for _ in range(LOOP):
        with ctx(s):
            pass


@pytest.mark.benchmark(group="with stream(s)")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_with_stream_same_device(bench, twin):
    mod = TWINS[twin]
    bench(_with_stream_loop, mod.stream, mod.Stream(device=0), per=LOOP)
    assert mod.current_stream(0) == mod.default_stream(0)


@pytest.mark.benchmark(group="with stream(s)")
@pytest.mark.devices(2)
@pytest.mark.parametrize("twin", ["native", "python"])
def test_with_stream_other_device(bench, twin):
    mod = TWINS[twin]
    bench(_with_stream_loop, mod.stream, mod.Stream(device=1), per=LOOP)
    assert mod.current_stream(1) == mod.default_stream(1)


# -- events -----------------------------------------------------------------------------------------

@pytest.mark.benchmark(group="Event.record(s)")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_floor_raw_cudaEventRecord(bench, twin):
    rt = RAW[twin]
    e = rt.cudaEventCreateWithFlags(2)
    s = TWINS[twin].Stream(device=0).cuda_stream
    bench(rt.cudaEventRecord, e, s)
    rt.cudaStreamSynchronize(s)
    rt.cudaEventDestroy(e)


def _get_and_record(rt, e, s):
    rt.cudaGetDevice()
    rt.cudaEventRecord(e, s)


@pytest.mark.benchmark(group="Event.record(s)")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_floor_raw_cudaGetDevice_cudaEventRecord(bench, twin):
    # the C calls record(s) makes (torch's too: the stream's device guard, then the record), from Python
    rt = RAW[twin]
    e = rt.cudaEventCreateWithFlags(2)
    s = TWINS[twin].Stream(device=0).cuda_stream
    bench(_get_and_record, rt, e, s)
    rt.cudaStreamSynchronize(s)
    rt.cudaEventDestroy(e)


@pytest.mark.benchmark(group="Event.record(s)")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_event_record(bench, twin):
    mod = TWINS[twin]
    e, s = mod.Event(), mod.Stream(device=0)
    bench(e.record, s)
    s.synchronize()


@pytest.mark.benchmark(group="Event.record() on the current stream")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_event_record_current_stream(bench, twin):
    mod = TWINS[twin]
    e = mod.Event()
    bench(e.record)
    e.synchronize()


@pytest.mark.benchmark(group="Event.query")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_floor_raw_cudaEventQuery(bench, twin):
    rt = RAW[twin]
    e = rt.cudaEventCreateWithFlags(2)
    rt.cudaEventRecord(e, 0)
    rt.cudaEventSynchronize(e)
    assert bench(rt.cudaEventQuery, e) is True
    rt.cudaEventDestroy(e)


@pytest.mark.benchmark(group="Event.query")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_event_query(bench, twin):
    mod = TWINS[twin]
    e = mod.Event()
    e.record(mod.Stream(device=0))
    e.synchronize()
    assert bench(e.query) is True


@pytest.mark.benchmark(group="Stream() from the pool")
def test_noop_python_call_2args(bench):
    bench(_noop, 0, 0)


@pytest.mark.benchmark(group="Stream() from the pool")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_stream_from_pool(bench, twin):
    bench(TWINS[twin].Stream, 0, 0)
