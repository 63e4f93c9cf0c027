"""Device selection on both twins (emulated runtime): per-thread target device, exchange semantics,
guards (nested, interleaved, other threads), no context created on a guard's exit, argument errors."""
import importlib.util
import pathlib
import random
import threading
import warnings

import pytest

from accel.errors import CudaError

_spec = importlib.util.spec_from_file_location("stream_fixtures", pathlib.Path(__file__).with_name("stream_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
NDEV, emu = _fx.NDEV, _fx.emu


def in_thread(fn, *args):
    """Run ``fn(*args)`` on a fresh thread (runtime device 0, no target) and return its result."""
    out = {}

    def run():
        try:
            out["value"] = fn(*args)
        except BaseException as exc:  # re-raised on the caller's thread
            out["error"] = exc
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


@pytest.fixture
def dev(twin, emu):
    """The twin's _device module, on a fresh thread-free state: no primary context anywhere."""
    mod = twin.mod("_device")
    mod.set_device(0)  # clears this thread's target
    emu.accelEmuResetContexts()
    yield mod
    emu.accelEmuResetContexts()
    mod.set_device(0)


def runtime_device(twin):
    return twin.mod("_cudart").cudaGetDevice()


def test_new_thread_starts_on_device_0_without_context(dev):
    assert in_thread(lambda: (dev.current_device(), dev.has_primary_context(0))) == (0, False)


@pytest.mark.devices(3)
def test_set_device_always_switches_and_creates_context(dev, twin):
    def body():
        dev.set_device(0)  # force: creates the context even though 0 is already current
        ctx0 = dev.has_primary_context(0)
        dev.set_device(2)
        return ctx0, dev.current_device(), runtime_device(twin), dev.has_primary_context(2)
    assert in_thread(body) == (True, 2, 2, True)


@pytest.mark.devices(4)
def test_current_device_is_per_thread(dev):
    dev.set_device(3)
    assert in_thread(dev.current_device) == 0
    assert dev.current_device() == 3


@pytest.mark.devices(3)
def test_exchange_device_returns_previous_and_switches(dev, twin):
    def body():
        prev = dev.exchange_device(2)
        return prev, dev.current_device(), runtime_device(twin), dev.has_primary_context(2)
    assert in_thread(body) == (0, 2, 2, True)


def test_exchange_to_current_device_creates_no_context(dev):
    assert in_thread(lambda: (dev.exchange_device(0), dev.has_primary_context(0))) == (0, False)


@pytest.mark.devices(2)
@pytest.mark.parametrize("fn", ["exchange_device", "maybe_exchange_device"])
@pytest.mark.parametrize("d", [-1, -5, -128])
def test_negative_exchange_is_a_noop(dev, twin, fn, d):
    def body():
        dev.set_device(1)
        return getattr(dev, fn)(d), dev.current_device(), runtime_device(twin)
    assert in_thread(body) == (-1, 1, 1)


@pytest.mark.devices(3)
def test_guard_exit_records_target_instead_of_creating_context(dev, twin):
    def body():
        with dev.device(2) as g:
            inside = dev.current_device(), runtime_device(twin)
        after = dev.current_device(), runtime_device(twin), dev.has_primary_context(0), g.idx
        return inside, after
    inside, after = in_thread(body)
    assert inside == (2, 2)
    # device 0 had no context: the exit only recorded it; cudart still says 2; idx = runtime device at exit
    assert after == (0, 2, False, 2)


@pytest.mark.devices(4)
def test_guard_exit_switches_back_when_context_exists(dev, twin):
    def body():
        dev.set_device(1)
        with dev.device(3):
            pass
        return dev.current_device(), runtime_device(twin)
    assert in_thread(body) == (1, 1)


@pytest.mark.devices(3)
def test_pending_target_is_honoured_and_materialised_by_exchange(dev, twin):
    def body():
        with dev.device(2):
            pass  # target 0 pending, runtime 2
        steps = [dev.current_device()]
        # maybe_exchange_device reports the *runtime* device and leaves the target alone when to == runtime
        steps.append(dev.maybe_exchange_device(2))
        steps.append(dev.current_device())
        # exchange_device returns the logical (target) device and calls cudaSetDevice even when to == target
        steps.append(dev.exchange_device(0))
        steps.append((runtime_device(twin), dev.has_primary_context(0)))
        return steps
    assert in_thread(body) == [0, 2, 0, 0, (0, True)]


@pytest.mark.devices(4)
def test_set_device_clears_pending_target(dev, twin):
    def body():
        with dev.device(1):
            pass
        dev.set_device(3)
        return dev.current_device(), runtime_device(twin)
    assert in_thread(body) == (3, 3)


@pytest.mark.devices(4)
def test_nested_guards_restore_in_order(dev):
    def body():
        dev.set_device(0)
        seen = []
        with dev.device(1):
            seen.append(dev.current_device())
            with dev.device(2):
                seen.append(dev.current_device())
                with dev.device(2):
                    seen.append(dev.current_device())
                seen.append(dev.current_device())
                with dev.device(3):
                    seen.append(dev.current_device())
                seen.append(dev.current_device())
            seen.append(dev.current_device())
        seen.append(dev.current_device())
        return seen
    assert in_thread(body) == [1, 2, 2, 2, 3, 2, 1, 0]


@pytest.mark.devices(4)
def test_guard_restores_on_exception(dev):
    def body():
        dev.set_device(1)
        with pytest.raises(KeyError):
            with dev.device(3):
                raise KeyError("boom")
        return dev.current_device()
    assert in_thread(body) == 1


@pytest.mark.devices(4)
def test_interleaved_guards_and_exchanges(dev, twin):
    def body():
        dev.set_device(0)
        g1, g2 = dev.device(1), dev.device(2)
        g1.__enter__()
        prev = dev.exchange_device(3)      # manual switch inside g1
        g2.__enter__()
        a = dev.current_device()
        g1.__exit__(None, None, None)      # out of order: back to 0 (context exists)
        b = dev.current_device()
        g2.__exit__(None, None, None)      # restores 3 (context exists)
        c = dev.current_device()
        dev.maybe_exchange_device(prev)
        return prev, a, b, c, dev.current_device(), runtime_device(twin)
    assert in_thread(body) == (1, 2, 0, 3, 1, 1)


def test_guards_on_many_threads_are_independent(dev):
    errors = []

    def worker(seed):
        rng = random.Random(seed)
        home = seed % NDEV
        dev.set_device(home)
        for _ in range(300):
            stack = [rng.randrange(NDEV) for _ in range(rng.randrange(1, 5))]

            def nest(level):
                if level == len(stack):
                    return
                with dev.device(stack[level]):
                    if dev.current_device() != stack[level]:
                        errors.append((seed, "inside", stack, level))
                    nest(level + 1)
                    if dev.current_device() != stack[level]:
                        errors.append((seed, "after", stack, level))
            nest(0)
            if dev.current_device() != home:
                errors.append((seed, "home", stack))
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.devices(4)
def test_guard_on_thread_without_contexts_never_creates_one_on_exit(dev, twin):
    def body():
        # a fresh thread, no contexts anywhere: nested guards only create the contexts they enter
        with dev.device(1):
            with dev.device(2):
                pass
        return [dev.has_primary_context(i) for i in range(NDEV)], dev.current_device()
    assert in_thread(body) == ([False, True, True, False], 0)


@pytest.mark.devices(3)
def test_device_guard_negative_and_none_are_noops(dev, twin):
    def body():
        dev.set_device(2)
        with dev.device(-1) as g:
            a = dev.current_device()
        return a, g.idx, dev.current_device()
    assert in_thread(body) == (2, -1, 2)


# -- errors -----------------------------------------------------------------------------------------

def test_set_device_negative_message(dev):
    with pytest.raises(RuntimeError, match=r"^device id must be non-negative!-1$"):
        dev.set_device(-1)


@pytest.mark.parametrize("fn", ["set_device", "exchange_device"])
@pytest.mark.devices(1)
def test_out_of_range_names_index_and_count(dev, fn):
    with pytest.raises(CudaError) as info:
        getattr(dev, fn)(7)
    assert info.value.code == 101
    msg = str(info.value)
    assert msg.startswith("CUDA error: invalid device ordinal\nGPU device may be out of range")
    assert f"Device index 7 is out of range: {NDEV} CUDA device(s)" in msg
    assert dev.current_device() == 0


def test_maybe_exchange_out_of_range_names_index_and_count(dev):
    with pytest.raises(RuntimeError, match=r"hasPrimaryContext expects a valid device index, but got "
                                           rf"device_index=9 \(device count is {NDEV}\)"):
        dev.maybe_exchange_device(9)


@pytest.mark.parametrize("d", [-1, NDEV, 100])
def test_has_primary_context_out_of_range(dev, d):
    with pytest.raises(RuntimeError, match=rf"device_index={d} \(device count is {NDEV}\)"):
        dev.has_primary_context(d)


@pytest.mark.parametrize("fn, what", [("set_device", "setDevice"), ("exchange_device", "exchangeDevice"),
                                      ("maybe_exchange_device", "exchangeDevice"),
                                      ("has_primary_context", "has_primary_context")])
@pytest.mark.parametrize("bad", ["1", 1.0, None, True, [1], object()])
def test_wrong_type_is_a_type_error_naming_the_value(dev, fn, what, bad):
    with pytest.raises(TypeError) as info:
        getattr(dev, fn)(bad)
    assert f"invalid argument to {what}" in str(info.value)
    assert repr(bad) in str(info.value)


@pytest.mark.parametrize("fn", ["set_device", "exchange_device", "maybe_exchange_device"])
@pytest.mark.parametrize("bad", [128, -129, 2 ** 63, -(2 ** 80)])
def test_overflow_is_a_value_error_naming_the_value(dev, fn, bad):
    with pytest.raises(ValueError, match=rf"Overflow when unpacking DeviceIndex: {bad}"):
        getattr(dev, fn)(bad)


@pytest.mark.devices(3)
def test_index_like_objects_are_accepted(dev):
    class Idx:
        def __index__(self):
            return 2
    assert in_thread(lambda: (dev.exchange_device(Idx()), dev.current_device())) == (0, 2)


@pytest.mark.devices(2)
def test_device_guard_attributes(dev):
    def body():
        g = dev.device(1)
        fresh = (g.idx, g.prev_idx, repr(g))
        with g:
            inside = (g.idx, g.prev_idx)
        return fresh, inside, (g.idx, g.prev_idx)
    # torch: prev_idx is the device before entering; idx becomes the runtime device at exit
    assert in_thread(body) == ((1, -1, "device(1)"), (1, 0), (1, 0))


def test_guard_with_overflowing_index_fails_on_enter(dev):
    g = dev.device(500)
    with pytest.raises(ValueError, match="Overflow when unpacking DeviceIndex: 500"):
        g.__enter__()
    assert dev.current_device() == 0


# -- sync debug mode ----------------------------------------------------------------------------------

@pytest.fixture
def sync_mode(twin):
    mod = twin.mod("_device")
    before = mod.get_sync_debug_mode()
    yield mod
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod.set_sync_debug_mode(before)


def test_sync_debug_mode_modes(sync_mode):
    mod = sync_mode
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod.set_sync_debug_mode(1)
    assert mod.get_sync_debug_mode() == 1
    with pytest.warns(UserWarning, match="called a synchronizing CUDA operation"):
        mod._warn_or_error_on_sync()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod.set_sync_debug_mode(2)
    with pytest.raises(RuntimeError, match="^called a synchronizing CUDA operation$"):
        mod._warn_or_error_on_sync()
    mod.set_sync_debug_mode(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod._warn_or_error_on_sync()


@pytest.mark.parametrize("bad, exc, text", [
    (3, RuntimeError, "invalid value of debug_mode, expected one of 0,1,2"),
    (-1, RuntimeError, "invalid value of debug_mode, expected one of 0,1,2"),
    ("warn", TypeError, "invalid argument to set_sync_debug_mode"),
    (True, TypeError, "invalid argument to set_sync_debug_mode"),
    (1.0, TypeError, "invalid argument to set_sync_debug_mode"),
])
def test_sync_debug_mode_errors(sync_mode, bad, exc, text):
    with pytest.raises(exc, match=text):
        sync_mode.set_sync_debug_mode(bad)


# -- the twins agree ------------------------------------------------------------------------------------

def _script(mod, cudart):
    out = []

    def rec(label, fn, *args):
        try:
            out.append((label, fn(*args)))
        except Exception as exc:
            out.append((label, type(exc).__name__, str(exc)))
    rec("cur", mod.current_device)
    with mod.device(2):
        rec("in", mod.current_device)
    rec("after", mod.current_device)
    rec("rt", cudart.cudaGetDevice)
    rec("mx", mod.maybe_exchange_device, 3)
    rec("ctx3", mod.has_primary_context, 3)
    rec("x", mod.exchange_device, 1)
    rec("neg", mod.set_device, -3)
    rec("oor", mod.exchange_device, 11)
    rec("type", mod.exchange_device, "1")
    rec("ovf", mod.set_device, 300)
    rec("hpc", mod.has_primary_context, 4)
    rec("cur2", mod.current_device)
    return out


@pytest.mark.devices(3)
def test_twins_agree_on_a_script(both_twins, emu):
    results = []
    for t in both_twins:
        emu.accelEmuResetContexts()
        results.append(in_thread(_script, t.mod("_device"), t.mod("_cudart")))
    emu.accelEmuResetContexts()
    assert results[0] == results[1]
    assert results[0][:3] == [("cur", 0), ("in", 2), ("after", 0)]
