"""An Event first recorded from several threads at once gets exactly one CUDA handle (both twins).

Events are created lazily on first record; threads that race into that first record must agree on one
handle, and every handle a losing thread made must be destroyed.  Counted with the emulator's live-event
counter, so this runs on the emulated runtime only.
"""
import gc
import importlib.util
import pathlib
import threading

import pytest

_spec = importlib.util.spec_from_file_location("stream_fixtures", pathlib.Path(__file__).with_name("stream_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
emu, sm, dev = _fx.emu, _fx.sm, _fx.dev

THREADS, EVENTS = 4, 3000


def _race(n_threads, events, first_use):
    """Every thread calls ``first_use(event, i)`` on each event, all threads released together per event."""
    barrier = threading.Barrier(n_threads)
    errors = []

    def body(i):
        try:
            for e in events:
                barrier.wait()
                first_use(e, i)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def _live_after(emu, make, first_use, n_threads=THREADS, n_events=EVENTS):
    gc.collect()
    base = emu.accelEmuLiveEvents()
    events = [make() for _ in range(n_events)]
    _race(n_threads, events, first_use)
    made = emu.accelEmuLiveEvents() - base
    handles = {e.cuda_event for e in events}
    del events
    gc.collect()
    return made, len(handles), emu.accelEmuLiveEvents() - base


@pytest.mark.devices(2)
def test_concurrent_first_record_creates_one_handle(sm, emu):
    streams = [sm.Stream(device=1) for _ in range(THREADS)]
    made, distinct, left = _live_after(emu, sm.Event, lambda e, i: e.record(streams[i]))
    assert (made, distinct, left) == (EVENTS, EVENTS, 0)


@pytest.mark.devices(3)
def test_concurrent_first_record_on_the_current_stream(sm, dev, emu):
    def first_use(e, i):
        dev.set_device(2)
        e.record()

    made, distinct, left = _live_after(emu, sm.Event, first_use, n_events=EVENTS // 3)
    assert (made, distinct, left) == (EVENTS // 3, EVENTS // 3, 0)


def test_concurrent_ipc_handle_creates_one_handle(sm, emu):
    made, distinct, left = _live_after(emu, lambda: sm.Event(interprocess=True),
                                       lambda e, i: e.ipc_handle(), n_events=EVENTS // 3)
    assert (made, distinct, left) == (EVENTS // 3, EVENTS // 3, 0)


@pytest.mark.devices(4)
def test_losing_thread_on_another_device_gets_the_mismatch_error(sm, emu):
    """Two threads first-record one event on different devices: one creates it, the other is told the
    devices differ (torch's message), and no second handle survives."""
    streams = [sm.Stream(device=0), sm.Stream(device=3)]
    outcomes = []

    def first_use(e, i):
        try:
            e.record(streams[i])
            outcomes.append("ok")
        except RuntimeError as exc:
            assert "does not match recording stream's device" in str(exc)
            outcomes.append("mismatch")

    made, distinct, left = _live_after(emu, sm.Event, first_use, n_threads=2, n_events=500)
    assert (made, distinct, left) == (500, 500, 0)
    assert outcomes.count("ok") == outcomes.count("mismatch") == 500
