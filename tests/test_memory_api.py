"""accel.cuda's memory API (torch.cuda.memory's names) on each backend, in fresh processes: statistics,
OutOfMemoryError text and recovery on a small emulated device, the fraction limit, pinned memory, and
buffers still alive at interpreter exit."""
import json
import textwrap

import pytest

pytestmark = pytest.mark.emu_only

BACKENDS = ["native", "python"]
MiB = 1 << 20


def _run(subprocess_python, backend, code, **env):
    from accel import _build_config
    if backend == "native" and not _build_config.NATIVE:
        pytest.skip("installed with -Dnative=false")
    r = subprocess_python(textwrap.dedent(code), env={"ACCEL_BACKEND": backend, **env})
    assert r.returncode == 0, r.stderr
    return r


STATS = """
import json
import numpy as np
import accel.cuda as c
MiB = 1 << 20
out = {}
b = c.alloc(40 * MiB)
b.free()
out["reserved_cached"] = c.memory_reserved()
b = c.alloc(48 * MiB)                 # only fits once the cached 40 MiB are trimmed: one retry
s = c.memory_stats()
out["stats"] = s
try:
    c.alloc(100 * MiB)
except c.OutOfMemoryError as e:
    out["oom"] = str(e)
out["after_oom"] = c.memory_stats()
b.free()
out["reserved_before_empty"] = c.memory_reserved()
c.empty_cache()
out["reserved_after_empty"] = c.memory_reserved()
x = c.alloc(16 * MiB)
out["recovered"] = c.memory_allocated()
x.free()
c.set_per_process_memory_fraction(0.25)          # 16 MiB of 64
out["fraction"] = c.get_per_process_memory_fraction()
y = c.alloc(16 * MiB)
try:
    c.alloc(1)
except c.OutOfMemoryError as e:
    out["fraction_oom"] = str(e)
y.free()
c.set_per_process_memory_fraction(1.0)
z = c.alloc(20 * MiB)
z.free()
c.reset_peak_memory_stats()
out["peak_after_reset"] = c.max_memory_allocated()
out["max_reserved_after_reset"] = c.max_memory_reserved()
out["reserved_now"] = c.memory_reserved()
c.reset_accumulated_memory_stats()
out["accumulated_after_reset"] = c.memory_stats()["allocated_bytes.all.allocated"]
out["summary"] = c.memory_summary()
print(json.dumps(out))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_statistics_oom_and_recovery(subprocess_python, backend):
    out = json.loads(_run(subprocess_python, backend, STATS, ACCEL_EMU_MEMORY="64M").stdout)
    assert out["reserved_cached"] == 40 * MiB
    s = out["stats"]
    assert s["allocated_bytes.all.current"] == 48 * MiB
    assert s["allocated_bytes.all.peak"] == 48 * MiB
    assert s["allocated_bytes.all.allocated"] == 88 * MiB
    assert s["allocated_bytes.all.freed"] == 40 * MiB
    assert s["allocation.all.current"] == 1 and s["allocation.all.allocated"] == 2
    assert s["reserved_bytes.all.current"] == 48 * MiB and s["reserved_bytes.all.peak"] == 48 * MiB
    assert s["num_alloc_retries"] == 1 and s["num_ooms"] == 0
    assert out["oom"] == ("CUDA out of memory. Tried to allocate 100.00 MiB. GPU 0 has a total capacity of "
                          "64.00 MiB of which 16.00 MiB is free. Of the allocated memory 48.00 MiB is allocated "
                          "by accel, and 0 bytes is reserved by accel but unallocated.")
    a = out["after_oom"]
    assert a["num_ooms"] == 1 and a["num_alloc_retries"] == 2
    assert a["allocated_bytes.all.current"] == 48 * MiB          # nothing leaked or counted
    assert out["reserved_before_empty"] == 48 * MiB and out["reserved_after_empty"] == 0
    assert out["recovered"] == 16 * MiB
    assert out["fraction"] == 0.25
    assert out["fraction_oom"].startswith("CUDA out of memory. Tried to allocate 1 bytes. GPU 0 has a total "
                                          "capacity of 64.00 MiB")
    assert "This process's memory fraction limit allows 16.00 MiB." in out["fraction_oom"]
    assert out["peak_after_reset"] == 0
    assert out["max_reserved_after_reset"] == out["reserved_now"] == 36 * MiB   # 16 cached + 20 (no fit)
    assert out["accumulated_after_reset"] == 0
    summary = out["summary"]
    assert "device ID 0" in summary and "Allocated memory" in summary and "Reserved memory" in summary
    assert "36.00 MiB" in summary


PINNED = """
import numpy as np
import accel.cuda as c
from accel import _impl
p = c.pinned_empty((3, 5), np.float64)
assert p.shape == (3, 5) and p.dtype == np.float64 and p.flags.c_contiguous
assert _impl.cudart.cudaPointerGetAttributes(p.ctypes.data)[0] == 1
p[:] = np.arange(15).reshape(3, 5)
buf = c.to_device(p)
back = c.pinned_empty(15, np.float64)
buf.copy_to_host(back)
buf.stream.synchronize()
assert (back == np.arange(15)).all()
assert c.pinned_empty(0).size == 0
arr = np.arange(100, dtype=np.int32)
with c.host_register(arr) as reg:
    assert reg.registered and _impl.cudart.cudaPointerGetAttributes(arr.ctypes.data)[0] == 1
    d = c.to_device(arr, device=1)
    assert d.device.index == 1
    assert (d.copy_to_host().view(np.int32) == arr).all()
assert not reg.registered and _impl.cudart.cudaPointerGetAttributes(arr.ctypes.data)[0] == 0
for bad in ((-1,), ("3",), (True,)):
    try:
        c.pinned_empty(bad)
    except (TypeError, ValueError) as e:
        print(type(e).__name__, e)
try:
    c.host_register(np.zeros(0))
except ValueError as e:
    print("ValueError", e)
src = c.to_device(np.arange(8, dtype=np.int16))
for alias in (c.from_dlpack(src), c.as_buffer(src)):
    assert alias.ptr == src.ptr and (alias.copy_to_host().view(np.int16) == np.arange(8)).all()
    alias.free()
del p
import gc; gc.collect()
print("ok")
"""


@pytest.mark.devices(2)
@pytest.mark.parametrize("backend", BACKENDS)
def test_pinned_memory_and_registration(subprocess_python, backend):
    out = _run(subprocess_python, backend, PINNED).stdout.splitlines()
    assert out == ["ValueError negative dimensions are not allowed, got shape (-1,)",
                   "TypeError shape entries must be ints, got str: '3'",
                   "TypeError shape entries must be ints, got bool: True",
                   "ValueError host_register needs a non-empty array",
                   "ok"]


EXIT = """
import threading
import numpy as np
import accel.cuda as c
keep = [c.alloc(n, device=n % 4) for n in range(1, 200)]
pinned = c.pinned_empty(1 << 20)
reg = c.host_register(np.zeros(4096))
s = c.Stream()
live = c.alloc(1 << 20, stream=s)
live.memset(3)
print("done")
"""


@pytest.mark.devices(4)
@pytest.mark.parametrize("backend", BACKENDS)
def test_buffers_alive_at_exit(subprocess_python, backend):
    r = _run(subprocess_python, backend, EXIT)
    assert r.stdout == "done\n" and r.stderr == ""


DEVICES = """
import accel.cuda as c
b = c.alloc(1000, device="cuda:2")
assert b.device.index == 2 and b.device == "cuda:2"
assert c.memory_allocated("cuda:2") == 1000 == c.memory_allocated(2) == c.memory_allocated(b.device)
assert c.memory_stats("cuda:2")["allocated_bytes.all.current"] == 1000
assert c.memory_allocated("cuda:1") == 0
with c.device(2):
    assert c.memory_allocated() == 1000
    d = c.alloc(24)
    assert d.device.index == 2
for bad in ("cpu", "cuda:9", 1.5):
    try:
        c.alloc(8, device=bad)
    except (TypeError, ValueError, RuntimeError) as e:
        print(type(e).__name__)
print("ok")
"""


@pytest.mark.devices(3)
@pytest.mark.parametrize("backend", BACKENDS)
def test_device_arguments_as_torch_spells_them(subprocess_python, backend):
    out = _run(subprocess_python, backend, DEVICES).stdout.split()
    assert out == ["ValueError", "ValueError", "TypeError", "ok"]


POOL_FAULTS = """
import accel.cuda as c
from accel import _lib
for _ in range(2):              # cudaDeviceGetMemPool fails once, then cudaMemPoolSetAttribute once
    try:
        c.alloc(64)
    except c.CudaError as e:
        print(type(e).__name__, e.code)
b = c.alloc(64)
print(c.memory_allocated(), _lib.cudart().cdll.accelEmuLiveAllocations())
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_faults_while_warming_the_pool(subprocess_python, backend):
    out = _run(subprocess_python, backend, POOL_FAULTS,
               ACCEL_EMU_FAIL="cudaDeviceGetMemPool:1,cudaMemPoolSetAttribute:1").stdout.splitlines()
    assert out == ["CudaError 999", "CudaError 999", "64 1"]


BAD_DEVICE_READS = """
import accel.cuda as c
c.init()          # before initialisation the counter reads answer 0 for any device, as torch's (issue 17 A5)
for f in (c.get_per_process_memory_fraction, c.memory_summary, c.memory_allocated):
    for bad in (99, "cuda:99", -1):
        try:
            f(bad)
            print("no error")
        except ValueError as e:
            print(type(e).__name__, e)
print(c.get_per_process_memory_fraction(), c.get_per_process_memory_fraction("cuda:1"))
"""


@pytest.mark.devices(4)
@pytest.mark.parametrize("backend", BACKENDS)
def test_out_of_range_device_refused_by_every_memory_read(subprocess_python, backend):
    """The fraction getter and memory_summary validate the device as the counter reads do (they answered
    1.0 / a summary of the current device for an index that does not exist)."""
    out = _run(subprocess_python, backend, BAD_DEVICE_READS).stdout.splitlines()
    msgs = [f"ValueError device index {d} is out of range: expected 0 <= device < 4" for d in (99, 99, -1)]
    assert out == msgs * 3 + ["1.0 1.0"]


UNREGISTER_FAULT = """
import numpy as np
import accel.cuda as c
reg = c.host_register(np.zeros(4096))
try:
    reg.unregister()                     # the emulator fails the first cudaHostUnregister
except c.CudaError as e:
    print(type(e).__name__, reg.registered)
reg.unregister()
print(reg.registered)
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_failed_unregister_keeps_the_registration(subprocess_python, backend):
    """A cudaHostUnregister that fails leaves the registration registered (and retryable); it was marked
    unregistered before the call, so the memory stayed page-locked with no way to release it."""
    out = _run(subprocess_python, backend, UNREGISTER_FAULT, ACCEL_EMU_FAIL="cudaHostUnregister:1").stdout
    assert out.splitlines() == ["CudaError True", "False"]
