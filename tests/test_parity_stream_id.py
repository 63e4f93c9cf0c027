"""Issue 8 item 1: torch's stream identity triple (stream_id, device_index, device_type), both twins."""
import importlib.util
import pathlib

import pytest

_spec = importlib.util.spec_from_file_location("stream_fixtures", pathlib.Path(__file__).with_name("stream_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
NDEV, emu, sm, dev, rt = _fx.NDEV, _fx.emu, _fx.sm, _fx.dev, _fx.rt


def _rebuild(sm, s):
    return sm.Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


@pytest.mark.devices(3)
def test_round_trip_default_pool_external(sm, rt, dev):
    for d in range(NDEV):
        s = sm.default_stream(d)
        assert s.device_type == 1 and s.stream_id == 0
        assert _rebuild(sm, s) == s
    for prio in (0, -1, -3):
        s = sm.Stream(device=2, priority=prio)
        r = _rebuild(sm, s)
        assert r == s and r.stream_id == s.stream_id and r.device_index == 2 and r.cuda_stream == s.cuda_stream
        assert s.stream_id & 1 == 1 and (s.stream_id >> 1) & 0xF == min(-prio, 3) + 1  # torch's encoding
    rt.cudaSetDevice(1)
    raw = rt.cudaStreamCreateWithFlags(1)
    dev.set_device(0)
    try:
        x = sm.ExternalStream(raw)
        assert x.stream_id == raw and x.device_type == 1
        r = _rebuild(sm, x)
        assert r == x and r.device_index == 1 and r.cuda_stream == raw and r.query() is True
    finally:
        rt.cudaStreamDestroy(raw)


@pytest.mark.devices(4)
def test_pool_slot_not_handed_out_yet_is_created(sm):
    # slot 31 of priority level 0 on device 3: (31 << 5) | (1 << 1) | 1
    s = sm.Stream(stream_id=(31 << 5) | 3, device_index=3, device_type=1)
    assert s.device_index == 3 and s.cuda_stream != 0 and s.query() is True
    assert sm.Stream(stream_id=(31 << 5) | 3, device_index=3, device_type=1) == s


@pytest.mark.devices(2)
def test_set_stream_by_id(sm, dev):
    s = sm.Stream(device=1)
    sm._set_stream_by_id(s.stream_id, s.device_index, s.device_type)
    assert sm.current_stream(1) == s and dev.current_device() == 1  # set_stream switches the device
    sm._set_stream_by_id(0, 1, 1)
    assert sm.current_stream(1) == sm.default_stream(1)


@pytest.mark.devices(2)
def test_public_names():
    import accel.cuda
    from accel.device_interface import CudaInterface, DeviceInterface
    s = accel.cuda.Stream(device=1)
    accel.cuda._set_stream_by_id(s.stream_id, s.device_index, s.device_type)
    assert accel.cuda.current_stream(1) == s
    CudaInterface._set_stream_by_id(0, 1, 1)
    assert accel.cuda.current_stream(1) == accel.cuda.default_stream(1)
    accel.cuda.set_device(0)
    with pytest.raises(NotImplementedError):
        DeviceInterface._set_stream_by_id(0, 0, 1)


@pytest.mark.parametrize("kw, exc, text", [
    (dict(stream_id=0, device_index=0, device_type=0), ValueError, "device_type must be 1"),
    (dict(stream_id=0, device_index=NDEV, device_type=1), ValueError,
     rf"Device index value {NDEV} is out of index range \[0, {NDEV}\)"),
    (dict(stream_id=0, device_index=-1, device_type=1), ValueError, "Device index value -1"),
    (dict(stream_id=1, device_index=0, device_type=1), ValueError, "invalid StreamId 1"),
    (dict(stream_id=(5 << 1) | 1, device_index=0, device_type=1), ValueError, "invalid StreamId"),
    (dict(stream_id=3), TypeError, "needs both stream_id and device_index"),
    (dict(stream_id="3", device_index=0), TypeError, "stream_id must be an int"),
    (dict(stream_id=3, device_index=True), TypeError, "device_index must be an int"),
    (dict(stream_id=3, device_index=0, priority=-1), ValueError, "priority cannot be given"),
    (dict(device=0, stream_id=3, device_index=0), ValueError, "device cannot be given"),
])
def test_bad_triples(sm, kw, exc, text):
    with pytest.raises(exc, match=text):
        sm.Stream(**kw)


def test_device_type_read_only(sm):
    s = sm.default_stream(0)
    with pytest.raises(AttributeError):
        s.device_type = 2
