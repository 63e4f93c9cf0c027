"""torch.cuda.set_device's semantics in the twins' ``set_current_device`` (which accel.cuda.set_device is,
with no Python layer in front), and the native guard's vectorcall constructor against the default one."""
import sys

import pytest

import accel.cuda as cuda
from accel import _impl
from accel._stream_common import CudaDevice
from accel.errors import CudaError


@pytest.fixture
def dev(twin, a_device):
    mod = twin.mod("_device")
    mod.set_device(0)
    yield mod
    mod.set_device(0)


def test_public_set_device_is_the_twin_function():
    assert cuda.set_device is _impl.module("_device").set_current_device


@pytest.mark.devices(3)
@pytest.mark.parametrize("arg", [-1, -128, -129, -(2**63), -(10**30)])
def test_negative_index_is_a_noop(dev, arg):
    dev.set_current_device(2)
    assert dev.set_current_device(arg) is None
    assert dev.current_device() == 2


@pytest.mark.devices(2)
@pytest.mark.parametrize("arg", [128, 2**63, 10**30])
def test_index_beyond_int8_names_the_value(dev, arg):
    dev.set_current_device(1)
    with pytest.raises(ValueError, match=rf"^Overflow when unpacking DeviceIndex: {arg} is outside \[-128, 127\]$"):
        dev.set_current_device(arg)
    assert dev.current_device() == 1


@pytest.mark.devices(4)
def test_out_of_range_index_leaves_the_device(dev):
    dev.set_current_device(3)
    with pytest.raises(CudaError) as info:
        dev.set_current_device(7)
    assert info.value.code == 101 and "7" in str(info.value)
    assert dev.current_device() == 3


@pytest.mark.devices(3)
def test_sets_and_creates_context(dev, twin):
    dev.set_current_device(2)
    assert dev.current_device() == 2 and twin.mod("_cudart").cudaGetDevice() == 2
    assert dev.has_primary_context(2)


class Index:
    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


@pytest.mark.devices(3)
def test_public_parser_handles_other_arguments():
    # accel.cuda registered torch's strict parser on the selected twin: strings, __index__, None
    cuda.set_device("cuda:2")
    assert cuda.current_device() == 2
    cuda.set_device(Index(1))
    assert cuda.current_device() == 1
    with pytest.raises(ValueError, match="Invalid device string: 'cuda:-1'"):
        cuda.set_device("cuda:-1")
    with pytest.raises(ValueError, match="Expected a torch.device with a specified index or an integer"):
        cuda.set_device(None)
    with pytest.raises(TypeError):
        cuda.set_device(True)
    assert cuda.current_device() == 1
    cuda.set_device(0)


def test_parser_must_be_callable(dev):
    with pytest.raises(TypeError, match="parser must be callable or None, got int: 3"):
        dev.set_index_parser(None, strict=3)


# -- the native guard's constructor ---------------------------------------------------------------------

@pytest.fixture
def guard(twin):
    return twin.mod("_device").device


@pytest.mark.devices(2)
def test_guard_construction_paths_agree(guard, twin):
    g = guard(2)
    assert type(g) is guard and g.idx == 2 and g.prev_idx == -1
    assert guard(device=3).idx == 3
    for arg in (0, 3, -1, None, 10**20):  # the constructor's result is __init__'s
        slow = guard.__new__(guard)
        slow.__init__(arg)
        assert guard(arg).idx == slow.idx and guard(arg).prev_idx == slow.prev_idx == -1

    class Sub(guard):
        pass
    s = Sub(1)
    assert type(s) is Sub and s.idx == 1
    with Sub(1):
        assert twin.mod("_device").current_device() == 1
    for bad in ((), (1, 2)):
        with pytest.raises(TypeError):
            guard(*bad)
    with pytest.raises(TypeError):
        guard(1, device=1)


def test_guard_construction_keeps_reference_counts(guard):
    idx = 10**20  # a fresh int object: stored as idx, validated only on entry
    before = sys.getrefcount(idx)
    guards = [guard(idx) for _ in range(1000)]
    assert sys.getrefcount(idx) == before + 1000
    del guards
    for _ in range(1000):
        guard(idx)
    assert sys.getrefcount(idx) == before
    with pytest.raises(ValueError, match="Overflow when unpacking DeviceIndex"):
        with guard(idx):
            pass


def _outcome(fn, arg):
    try:
        g = fn(arg)
    except Exception as exc:  # noqa: BLE001 - compared below
        return type(exc), str(exc)
    return type(g), g.idx, g.prev_idx


@pytest.mark.parametrize("with_parser", [False, True], ids=["no_parser", "parser"])
def test_guard_constructor_is_init_for_every_argument_kind(twin, with_parser):
    mod = twin.mod("_device")
    registered = _impl.module("_device") is mod  # the twin accel.cuda registered its parsers on

    def init(arg):
        g = mod.device.__new__(mod.device)
        g.__init__(arg)
        return g

    def register(on):
        if on:
            mod.set_index_parser(lambda d: cuda._get_device_index(d, optional=True), strict=cuda._get_device_index)
        else:
            mod.set_index_parser(None)

    register(with_parser)
    try:
        for arg in (0, 2, -1, 127, 128, -129, 10**20, None, True, False, "cuda:1", "cuda", "cpu", "x",
                    Index(2), Index(True), 1.5, object(), CudaDevice(3)):
            assert _outcome(mod.device, arg) == _outcome(init, arg), arg
    finally:
        register(registered)


def test_guard_constructor_error_paths_keep_reference_counts(guard):
    k = object()
    before = sys.getrefcount(k)
    for _ in range(1000):
        for args, kwargs in (((k, k), {}), ((k,), {"device": k}), ((), {"other": k}), ((k,), {})):
            with pytest.raises(TypeError):
                guard(*args, **kwargs)
    del args, kwargs
    assert sys.getrefcount(k) == before
