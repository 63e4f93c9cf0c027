"""accel.cuda's device layer on the selected backend: device arguments, CUDA_VISIBLE_DEVICES parsing,
the NVML count, properties, peers, memory info, check_error, NVML monitoring; plus a differential run of
the same script under ACCEL_BACKEND=python and native."""
import json
import os
import sys
import textwrap
import types
import uuid
import warnings

import numpy as np
import pytest

import accel.cuda as cuda
from accel.cuda import _visible
from accel.errors import CudaError

NDEV = int(os.environ["ACCEL_TEST_DEVICE_COUNT"])   # the runtime's devices (conftest: 4 on the emulator)


@pytest.fixture(autouse=True)
def home(device_count):
    if not device_count:   # the tests that need one say so (the parsers' do not)
        yield
        return
    cuda.set_device(0)
    yield
    cuda.set_device(0)


class TorchLikeDevice:
    def __init__(self, type, index=None):
        self.type, self.index = type, index

    def __repr__(self):
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


class CupyLikeDevice:
    def __init__(self, id):
        self.id = id


class CoreLikeDevice:
    def __init__(self, device_id):
        self.device_id = device_id


# -- _get_device_index --------------------------------------------------------------------------------

@pytest.mark.parametrize("arg, kwargs, expected", [   # optional: the current device's index
    pytest.param(*case, marks=pytest.mark.devices(1) if case[1].get("optional") else ()) for case in [
    (0, {}, 0), (3, {}, 3), (-1, {}, -1), (100, {}, 100),
    (np.int64(2), {}, 2), (np.int8(1), {}, 1),
    ("cuda:1", {}, 1), ("cuda:0", {}, 0), ("cuda:12", {}, 12),
    ("cuda", {"optional": True}, 0), (None, {"optional": True}, 0),
    ("cpu", {"allow_cpu": True}, -1),
    (TorchLikeDevice("cuda", 2), {}, 2), (TorchLikeDevice("cuda"), {"optional": True}, 0),
    (TorchLikeDevice("cpu"), {"allow_cpu": True}, -1), (TorchLikeDevice("cuda", np.int32(3)), {}, 3),
    (CupyLikeDevice(3), {}, 3), (CoreLikeDevice(1), {}, 1),
    (cuda.device(2), {}, 2),
]])
def test_get_device_index_accepts(arg, kwargs, expected):
    got = cuda._get_device_index(arg, **kwargs)
    assert got == expected and type(got) is type(expected) if not isinstance(arg, np.integer) else got == expected


@pytest.mark.parametrize("arg, kwargs, exc, text", [
    ("cuda", {}, ValueError, "Expected a torch.device with a specified index or an integer, but got:cuda"),
    (None, {}, ValueError, "Expected a torch.device with a specified index or an integer, but got:None"),
    (TorchLikeDevice("cuda"), {}, ValueError, "but got:cuda"),
    ("cpu", {}, ValueError, "Expected a cuda device, but got: cpu"),
    ("gpu:0", {}, ValueError, "Expected a cuda device, but got: gpu:0"),
    ("mps", {"allow_cpu": True}, ValueError, "Expected a cuda or cpu device, but got: mps"),
    (TorchLikeDevice("cpu"), {}, ValueError, "Expected a cuda device, but got: cpu"),
    (TorchLikeDevice("xpu", 0), {"allow_cpu": True}, ValueError, "Expected a cuda or cpu device, but got: xpu:0"),
    ("cuda:01", {}, ValueError, "Invalid device string: 'cuda:01'"),
    ("cuda:-1", {}, ValueError, "Invalid device string: 'cuda:-1'"),
    ("cuda:", {}, ValueError, "Invalid device string: 'cuda:'"),
    ("cuda:x", {}, ValueError, "Invalid device string: 'cuda:x'"),
    (" cuda", {}, ValueError, "Invalid device string: ' cuda'"),
    ("", {}, ValueError, "Invalid device string: ''"),
    (1.5, {}, TypeError, "got float: 1.5"),
    (True, {}, TypeError, "an int \\(not a bool\\).*got bool: True"),  # torch returns it as is
    (False, {"optional": True}, TypeError, "got bool: False"),
    (TorchLikeDevice("cuda", True), {}, TypeError, "Expected an integer device index, but got bool: True"),
    ([1], {"optional": True}, TypeError, r"got list: \[1\]"),
    (object(), {}, TypeError, "got object: <object object"),
    (CupyLikeDevice("x"), {}, TypeError, "Expected an integer device index, but got str: 'x'"),
    (TorchLikeDevice("cuda", 1.0), {}, TypeError, "Expected an integer device index, but got float: 1.0"),
])
def test_get_device_index_rejects(arg, kwargs, exc, text):
    with pytest.raises(exc, match=text.replace("(", r"\(").replace(")", r"\)") if exc is ValueError else text):
        cuda._get_device_index(arg, **kwargs)


# -- public selection with device arguments --------------------------------------------------------------

@pytest.mark.devices(4)
def test_set_device_arguments():
    cuda.set_device("cuda:2")
    assert cuda.current_device() == 2
    cuda.set_device(TorchLikeDevice("cuda", 1))
    assert cuda.current_device() == 1
    cuda.set_device(-1)  # a no-op, like torch
    cuda.set_device(np.int64(3))
    assert cuda.current_device() == 3
    for bad, exc in [("cuda", ValueError), (None, ValueError), ("cpu", ValueError), (1.0, TypeError)]:
        with pytest.raises(exc):
            cuda.set_device(bad)
    assert cuda.current_device() == 3
    with pytest.raises(CudaError, match=f"Device index {NDEV + 5} is out of range: {NDEV} CUDA device"):
        cuda.set_device(f"cuda:{NDEV + 5}")


@pytest.mark.parametrize("arg, inside", [
    pytest.param(arg, inside, marks=pytest.mark.devices(inside + 1))
    for arg, inside in [(1, 1), ("cuda:2", 2), ("cuda", 0), (None, 0), (-1, 0), (TorchLikeDevice("cuda", 3), 3),
                        (CupyLikeDevice(2), 2), (CoreLikeDevice(1), 1), (np.int16(3), 3)]])
def test_device_context_arguments(arg, inside):
    with cuda.device(arg):
        assert cuda.current_device() == inside
    assert cuda.current_device() == 0


@pytest.mark.parametrize("arg, exc", [("cuda:x", ValueError), ("cpu", ValueError), (1.5, TypeError),
                                      (True, TypeError)])
@pytest.mark.devices(1)
def test_device_context_bad_arguments(arg, exc):
    with pytest.raises(exc):
        with cuda.device(arg):
            pass
    assert cuda.current_device() == 0


@pytest.mark.devices(4)
def test_device_of():
    class Tensor:
        def __init__(self, dev):
            self.is_cuda, self.dev = dev >= 0, dev

        def get_device(self):
            return self.dev

    class CupyArray:
        device = CupyLikeDevice(3)

    with cuda.device_of(Tensor(2)):
        assert cuda.current_device() == 2
        with cuda.device_of(Tensor(-1)):  # a CPU tensor: no-op
            assert cuda.current_device() == 2
        with cuda.device_of(CupyArray()):
            assert cuda.current_device() == 3
        with cuda.device_of(np.zeros(2)) if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else cuda.device(-1):
            assert cuda.current_device() == 2
    assert cuda.current_device() == 0
    with pytest.raises(TypeError, match="device_of expects"):
        cuda.device_of(42)


@pytest.mark.devices(2)
def test_has_primary_context_public():
    cuda.set_device(1)
    assert cuda.has_primary_context("cuda:1") is True
    with pytest.raises(RuntimeError, match=rf"device_index={NDEV + 1} \(device count is {NDEV}\)"):
        cuda.has_primary_context(NDEV + 1)


# -- CUDA_VISIBLE_DEVICES -------------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    (None, list(range(64))),
    ("", []), ("0,1,2", [0, 1, 2]), ("1gpu2,2ampere", [1, 2]), (" 1 , 2 ", [1, 2]), ("007", [7]),
    ("+3", [3]), ("0,0", []), ("1,2,1", []), ("0,-1,2", [0]), ("-1", []), ("2,x,3", [2]),
    ("0,1,,2", [0, 1]), ("3,2,1,0", [3, 2, 1, 0]), ("1-2", [1]), ("-1,-1", []),
    ("GPU-abc,GPU-def", ["GPU-abc", "GPU-def"]), ("GPU-abc,1", ["GPU-abc"]), ("GPU-a,GPU-a", []),
    ("GPU-a,GPU-b,GPU-a", []), ("MIG-x,MIG-y", ["MIG-x", "MIG-y"]), ("MIG-x,GPU-y", ["MIG-x"]),
    ("gpu-abc", []), (" GPU-abc", []), ("GPU-a, GPU-b", ["GPU-a"]),
])
def test_parse_visible_devices(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert cuda._parse_visible_devices() == expected


@pytest.mark.parametrize("value", ["3,+", "-", "1,-x"])
def test_parse_visible_devices_lone_sign_is_a_value_error(monkeypatch, value):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    with pytest.raises(ValueError, match="CUDA_VISIBLE_DEVICES entry"):
        cuda._parse_visible_devices()


UUIDS = ["GPU-aaa1", "GPU-aaa2", "GPU-bbb"]


@pytest.mark.parametrize("candidates, expected", [
    (["GPU-b"], [2]), (["GPU-aaa"], []), (["GPU-aaa2", "GPU-bbb"], [1, 2]),
    (["GPU-bbb", "GPU-zzz", "GPU-aaa1"], [2]), (["GPU-bbb", "GPU-b"], []), ([], []),
])
def test_transform_uuid_to_ordinals(candidates, expected):
    assert cuda._transform_uuid_to_ordinals(candidates, UUIDS) == expected


@pytest.mark.parametrize("visible, raw, expected", [
    (None, 4, 4), ("0,1", 4, 2), ("0,5,1", 4, 1), ("", 4, 0), ("3", 4, 1), ("0", -1, -1), ("0", 0, 0),
    ("MIG-abc", 4, -1),
])
def test_device_count_nvml(monkeypatch, visible, raw, expected):
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    monkeypatch.setattr(_visible, "_raw_device_count_nvml", lambda: raw)
    assert cuda._device_count_nvml() == expected


@pytest.mark.parametrize("uuids, expected", [(UUIDS, 2), (None, -1)])
def test_device_count_nvml_by_uuid(monkeypatch, uuids, expected):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbb,GPU-aaa1,GPU-q")
    monkeypatch.setattr(_visible, "_raw_device_uuid_nvml", lambda: uuids)
    assert cuda._device_count_nvml() == expected


def test_raw_nvml_without_library_is_minus_one(monkeypatch):
    monkeypatch.setenv("ACCEL_NVML", "/nonexistent/libnvidia-ml.so.1")
    from accel import _lib
    if _lib.nvml.__class__.__name__ == "_Once" and getattr(_lib.nvml, "_value", None) is not None:
        pytest.skip("NVML already opened in this process")
    try:
        _lib.nvml()
    except Exception:
        assert cuda._raw_device_count_nvml() == -1
        assert cuda._raw_device_uuid_nvml() is None
    else:
        pytest.skip("an NVML library is present on this machine")


# -- properties ------------------------------------------------------------------------------------------

@pytest.mark.devices(2)
def test_get_device_properties():
    p = cuda.get_device_properties(1)
    rt = cuda.cudart()
    name, raw_uuid, total = rt.cudaGetDeviceProperties(1)
    assert (p.name, p.uuid, p.total_memory) == (name, uuid.UUID(bytes=raw_uuid), total)
    assert (p.major, p.minor) == (rt.cudaDeviceGetAttribute(75, 1), rt.cudaDeviceGetAttribute(76, 1))
    assert p.multi_processor_count == rt.cudaDeviceGetAttribute(16, 1)
    assert p.L2_cache_size == rt.cudaDeviceGetAttribute(38, 1)
    assert p.max_threads_per_multi_processor == rt.cudaDeviceGetAttribute(39, 1)
    assert p.warp_size == 32 and p.is_integrated is False and p.pci_bus_id == rt.cudaDeviceGetAttribute(33, 1)
    assert p.shared_memory_per_block_optin == rt.cudaDeviceGetAttribute(97, 1)
    assert cuda.get_device_properties("cuda:1") is p  # cached
    assert cuda.get_device_properties(0).uuid != p.uuid
    r = repr(p)
    assert r.startswith(f"_CudaDeviceProperties(name='{name}', major={p.major}, minor={p.minor}, total_memory=")
    assert f"uuid={p.uuid}" in r and "L2_cache_size=" in r
    with pytest.raises(AttributeError, match="read-only"):
        p.major = 1


@pytest.mark.devices(3)
def test_properties_default_to_current_device():
    with cuda.device(2):
        assert cuda.get_device_properties() is cuda.get_device_properties(2)
        assert cuda.get_device_name() == cuda.get_device_properties(2).name
        assert cuda.get_device_capability() == (cuda.get_device_properties(2).major,
                                                cuda.get_device_properties(2).minor)


@pytest.mark.parametrize("fn", [cuda.get_device_properties, cuda.get_device_name, cuda.get_device_capability,
                                cuda.mem_get_info])
@pytest.mark.parametrize("bad, exc, text", [(NDEV, ValueError, f"Invalid device id {NDEV}: expected 0 <= device < "
                                                               rf"device_count\(\) = {NDEV}"),
                                            (-1, ValueError, "Invalid device id -1"),
                                            (f"cuda:{NDEV + 3}", ValueError, f"Invalid device id {NDEV + 3}"),
                                            (True, TypeError, "got bool: True"),
                                            (2.0, TypeError, "got float: 2.0")])
@pytest.mark.devices(1)
def test_property_functions_reject_bad_devices(fn, bad, exc, text):
    with pytest.raises(exc, match=text):
        fn(bad)


@pytest.mark.devices(2)
def test_can_device_access_peer():
    assert cuda.can_device_access_peer(0, 1) is True
    assert cuda.can_device_access_peer("cuda:1", 1) is False
    with pytest.raises(ValueError, match=rf"Invalid peer device id {NDEV + 3}: expected 0 <= peer device < "
                                         rf"device_count\(\) = {NDEV}"):
        cuda.can_device_access_peer(0, NDEV + 3)
    with pytest.raises(ValueError, match="but got:None"):  # the peer is not optional
        cuda.can_device_access_peer(0, None)


@pytest.mark.devices(4)
def test_mem_get_info_and_synchronize_restore_device():
    free, total = cuda.mem_get_info(3)
    assert 0 < free <= total == cuda.get_device_properties(3).total_memory
    assert cuda.current_device() == 0
    cuda.synchronize()
    cuda.synchronize("cuda:2")
    assert cuda.current_device() == 0


def test_check_error():
    assert cuda.check_error(0) is None
    with pytest.raises(CudaError) as info:
        cuda.check_error(101)
    assert info.value.code == 101 and info.value.name == "cudaErrorInvalidDevice"
    assert str(info.value).startswith("CUDA error: invalid device ordinal")


@pytest.mark.devices(1)
def test_public_sync_debug_mode():
    before = cuda.get_sync_debug_mode()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the prototype warning (tested in a fresh process below)
            cuda.set_sync_debug_mode("warn")
        assert cuda.get_sync_debug_mode() == 1
        cuda.set_sync_debug_mode("error")
        assert cuda.get_sync_debug_mode() == 2
        cuda.set_sync_debug_mode(0)
        assert cuda.get_sync_debug_mode() == 0
        with pytest.raises(RuntimeError, match="invalid value of debug_mode, expected one of `default`, `warn`, "
                                               "`error`"):
            cuda.set_sync_debug_mode("loud")
    finally:
        cuda.set_sync_debug_mode(before)


@pytest.mark.devices(1)
def test_sync_debug_mode_prototype_warning_once(subprocess_python, twin):
    proc = subprocess_python(textwrap.dedent("""
        import warnings, accel.cuda as cuda
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            cuda.set_sync_debug_mode(1); cuda.set_sync_debug_mode("default"); cuda.set_sync_debug_mode(2)
        print([str(x.message) for x in w], cuda.get_sync_debug_mode())
    """), env={"ACCEL_BACKEND": twin.name})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("['Synchronization debug mode is a prototype feature and does not yet detect "
                                   "all synchronizing operations'] 2")


# -- NVML monitoring ------------------------------------------------------------------------------------

def test_nvml_functions_without_nvidia_ml_py(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    for fn in (cuda.utilization, cuda.memory_usage, cuda.temperature, cuda.power_draw, cuda.clock_rate):
        with pytest.raises(ModuleNotFoundError, match="needs nvidia-ml-py"):
            fn()


@pytest.fixture
def fake_pynvml(monkeypatch):
    mod = types.ModuleType("pynvml")
    calls = []

    class NVMLError_DriverNotLoaded(Exception):
        pass
    mod.NVMLError_DriverNotLoaded = NVMLError_DriverNotLoaded
    mod.nvmlInit = lambda: calls.append("init")
    mod.nvmlDeviceGetHandleByIndex = lambda i: ("handle", i)
    mod.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=10 + h[1], memory=20 + h[1])
    mod.nvmlDeviceGetTemperature = lambda h, sensor: (30 + h[1], sensor)
    mod.nvmlDeviceGetPowerUsage = lambda h: 40 + h[1]
    mod.nvmlDeviceGetClockInfo = lambda h, kind: (50 + h[1], kind)
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    mod.calls = calls
    return mod


@pytest.mark.devices(1)
def test_nvml_functions_map_visible_devices(fake_pynvml, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert cuda.utilization(0) == 13 and cuda.utilization("cuda:1") == 11
    assert cuda.memory_usage(1) == 21
    assert cuda.temperature(0) == (33, 0)      # NVML_TEMPERATURE_GPU
    assert cuda.power_draw(1) == 41
    assert cuda.clock_rate(0) == (53, 1)       # NVML_CLOCK_SM
    assert cuda.utilization() == 13            # current device 0 -> NVML 3
    with pytest.raises(RuntimeError, match=r"device 2 is not visible \(CUDA_VISIBLE_DEVICES=\[3, 1\]\)"):
        cuda.utilization(2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbb,GPU-aaa1")
    monkeypatch.setattr(_visible, "_raw_device_uuid_nvml", lambda: UUIDS)
    assert cuda.power_draw(0) == 42 and cuda.power_draw(1) == 40


def test_nvml_driver_not_loaded(fake_pynvml):
    def fail():
        raise fake_pynvml.NVMLError_DriverNotLoaded()
    fake_pynvml.nvmlInit = fail
    with pytest.raises(RuntimeError, match="cuda driver can't be loaded, is cuda enabled"):
        cuda.temperature(0)


# -- the python backend's public layer agrees with the native one ----------------------------------------

DIFF = """
import json, os, accel, accel.cuda as cuda
out = []
def rec(fn, *a):
    try:
        r = fn(*a)
        out.append(repr(r))
    except Exception as e:
        out.append([type(e).__name__, str(e)])
rec(cuda.is_available); rec(cuda.device_count); rec(cuda.current_device)
rec(cuda.set_device, "cuda:2"); rec(cuda.current_device)
def guard(arg):
    with cuda.device(arg):
        return cuda.current_device()
for arg in (1, "cuda:3", None, "cuda", -1, "x", 2.5, 9):
    rec(guard, arg)
rec(cuda.exchange_device, 1); rec(cuda.maybe_exchange_device, 3); rec(cuda.current_device)
rec(cuda.set_device, -4); rec(cuda.set_device, 200); rec(cuda.set_device, "cpu"); rec(cuda.set_device, 4)
for arg in (-10**30, 10**30, -129, 128, True, None, "cuda:-1", 1.0):
    rec(cuda.set_device, arg)
rec(cuda.current_device)
rec(cuda.has_primary_context, 7); rec(cuda.get_device_properties, 3); rec(cuda.get_device_capability)
# a real device's free memory moves between the two runs (other processes, this one's context): its total only
rec(cuda.mem_get_info if os.environ["ACCEL_CUDART"] == "emu" else lambda d: cuda.mem_get_info(d)[1], 0); rec(cuda.can_device_access_peer, 2, 2); rec(cuda.check_error, 2)
rec(cuda._get_device_index, "cuda:5"); rec(cuda.local_device)
print(json.dumps([accel.backend, out]))
"""


@pytest.mark.devices(1)
def test_backends_agree_on_public_layer(subprocess_python, both_twins):
    runs = []
    for name in ("native", "python"):
        proc = subprocess_python(DIFF, env={"ACCEL_BACKEND": name})
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert [r[0] for r in runs] == ["native", "python"]
    assert runs[0][1] == runs[1][1]
    assert runs[0][1][:3] == ["True", str(NDEV), "0"]
    if NDEV > 2:
        assert runs[0][1][3:5] == ["None", "2"]
