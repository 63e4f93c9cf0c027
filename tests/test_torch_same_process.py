"""accel in the same process as torch (issue 31, items 17-20), torch 2.14.1's CUDA wheel as the oracle on
the stand-ins (``python -m accel emu``, a subprocess per run, both twins).  torch's kernels cannot run on
the emulator: only allocations, copies, streams, events and DLPack are used.  Skipped unless this
interpreter has torch with CUDA (a 5.5 GB wheel)."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

from accel import emu

try:
    import torch
    TORCH_CUDA = torch.version.cuda is not None
    WHY = f"torch {torch.__version__} is a CPU build"
except ImportError:
    TORCH_CUDA, WHY = False, "torch is not installed"

pytestmark = [
    pytest.mark.skipif(not os.path.exists(emu.cudart_path()), reason="the stand-ins are not part of this install"),
    pytest.mark.skipif(not TORCH_CUDA, reason=f"needs torch's CUDA wheel ({WHY})"),
]


@pytest.fixture
def backend(twin):
    return twin.name


def on_emu(code, backend, devices=2, **env):
    """Run ``code`` under ``accel emu`` with ACCEL_BACKEND=backend; its last stdout line as JSON."""
    full = {k: v for k, v in os.environ.items() if k not in ("ACCEL_CUDART", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES")}
    full.update(env, ACCEL_BACKEND=backend)
    proc = subprocess.run([sys.executable, "-m", "accel", "emu", "--devices", str(devices), "--", sys.executable,
                           "-c", textwrap.dedent(code)], env=full, capture_output=True, text=True, timeout=600,
                          cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Each case starts in a fresh thread (runtime device 0, no pending target in either library) with no primary
# context on any device (cuDevicePrimaryCtxReset), so that a guard's exit records a target.
_PRELUDE = """
import ctypes, itertools, json, sys, threading
{imports}
from accel import _torch_link
assert _torch_link._state, _torch_link._why      # linked at accel's import, or by the hook at torch's
drv = ctypes.CDLL("libcuda.so.1")
assert drv.cuInit(0) == 0
torch.cuda.init()
ac.init()
assert _torch_link.linked() == (True, ""), _torch_link.linked()

def state(d):
    flags, active = ctypes.c_uint(), ctypes.c_int()
    assert drv.cuDevicePrimaryCtxGetState(d, ctypes.byref(flags), ctypes.byref(active)) == 0
    return active.value

def fresh(fn, *args):
    # last the current device (0): the emulator's reset of another device restores it with cudaSetDevice
    for d in reversed(range(torch.cuda.device_count())):
        assert drv.cuDevicePrimaryCtxReset_v2(d) == 0
    assert [state(d) for d in range(torch.cuda.device_count())] == [0] * torch.cuda.device_count()
    out = []
    def run():
        try:
            out.append(fn(*args))
        except BaseException as exc:
            out.append(f"{{type(exc).__name__}}: {{exc}}")
    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out[0]
"""
_TORCH_FIRST = "import torch\nimport accel.cuda as ac"
_ACCEL_FIRST = "import accel.cuda as ac\nac.init()\nimport torch"


def test_no_link_to_a_torch_on_another_runtime():
    """Item 17: this process's torch (imported above) runs on the real runtime, accel on the emulator:
    accel keeps its own target device, silently (nothing to agree on)."""
    from accel import _lib, _torch_link
    if not _lib.cudart().emulated:
        pytest.skip("accel runs on the real runtime here (ACCEL_TEST_CUDART), as torch does")
    linked, why = _torch_link.linked()
    assert not linked and why.startswith("torch and accel use different CUDA runtimes"), why


@pytest.mark.parametrize("imports", [_TORCH_FIRST, _ACCEL_FIRST], ids=["torch-first", "accel-first"])
def test_current_device_agrees_after_every_guard_set_and_exchange(backend, imports):
    """Item 17: every sequence of up to three device operations (guards, set_device, exchange,
    maybe_exchange on devices 0 and 1), each done by torch or by accel, observes what the same sequence done
    by torch alone observes: torch's current device, accel's, each exchange's result and where
    ``torch.empty(device="cuda")`` lands."""
    code = _PRELUDE.format(imports=imports) + """
LIBS = {"torch": (torch.cuda.device, torch.cuda.set_device, torch.cuda._exchange_device,
                  torch.cuda._maybe_exchange_device),
        "accel": (ac.device, ac.set_device, ac.exchange_device, ac.maybe_exchange_device)}
OPS = [(kind, d) for kind in ("guard", "set", "exchange", "maybe") for d in (0, 1)]

def observe():
    return [torch.cuda.current_device(), ac.current_device()]

def run(seq, libs, log):
    if not seq:
        return
    (kind, d), lib = seq[0], LIBS[libs[0]]
    if kind == "guard":
        with lib[0](d):
            log.append(observe())
            run(seq[1:], libs[1:], log)
        log.append(observe())
        return
    r = lib[1](d) if kind == "set" else lib[2](d) if kind == "exchange" else lib[3](d)
    log.append([r] + observe())
    run(seq[1:], libs[1:], log)

def case(seq, libs):
    log = []
    run(seq, libs, log)
    log.append(torch.empty(1, device="cuda").device.index)
    return log

bad = []
n = 0
for k in (1, 2, 3):
    for seq in itertools.product(OPS, repeat=k):
        want = fresh(case, seq, ("torch",) * k)
        for libs in itertools.product(("torch", "accel"), repeat=k):
            if "accel" not in libs:
                continue
            n += 1
            # torch's own observation of itself at every step is the oracle for both libraries
            got = fresh(case, seq, libs)
            expect = [x if not isinstance(x, list) else [x[0], x[1], x[1]] if len(x) == 3 else [x[0], x[0]]
                      for x in want]
            if got != expect:
                bad.append([seq, libs, got, expect])
print(json.dumps([n, bad[:5], len(bad)]))
"""
    n, bad, nbad = on_emu(code, backend)
    assert n == 8 * 1 + 64 * 3 + 512 * 7 and (bad, nbad) == ([], 0)


def test_torch_device_functions_see_accel_streams_and_guards(backend):
    """Item 17, with streams: accel's stream contexts and internal guards leave torch's current device where
    they leave accel's; ``torch.empty(device="cuda")`` lands there."""
    code = _PRELUDE.format(imports=_TORCH_FIRST) + """
def case(which):
    out = []
    if which == "stream":
        with ac.stream(ac.Stream(device=1)):
            out.append([torch.cuda.current_device(), ac.current_device()])
    elif which == "query":
        ac.Stream(device=1).query()              # an internal guard around the query
    elif which == "torch-stream":
        with torch.cuda.stream(torch.cuda.Stream(device=1)):
            out.append([torch.cuda.current_device(), ac.current_device()])
    out.append([torch.cuda.current_device(), ac.current_device(), torch.empty(1, device="cuda").device.index])
    return out
print(json.dumps([fresh(case, w) for w in ("stream", "query", "torch-stream")]))
"""
    assert on_emu(code, backend) == [[[1, 1], [0, 0, 0]], [[0, 0, 0]], [[1, 1], [0, 0, 0]]]


def test_torch_runs_on_the_accel_stream_it_is_handed(backend):
    """Item 18: ``torch.cuda.stream(s)`` / ``set_stream(s)`` / ``ExternalStream(s.cuda_stream)`` with an accel
    stream make that very stream torch's current one (a pool stream's torch-style id named torch's own pool
    stream of that number)."""
    code = _PRELUDE.format(imports=_TORCH_FIRST) + """
out = []
for d in (0, 1):
    s = ac.Stream(device=d)
    with torch.cuda.stream(s):
        out.append([torch.cuda.current_stream().cuda_stream == s.cuda_stream, torch.cuda.current_device()])
    prev = torch.cuda.current_stream(d)
    torch.cuda.set_stream(s)
    out.append(torch.cuda.current_stream(d).cuda_stream == s.cuda_stream)
    torch.cuda.set_stream(prev)
    ext = torch.cuda.ExternalStream(s.cuda_stream, device=torch.device("cuda", d))
    with torch.cuda.stream(ext):
        out.append(torch.cuda.current_stream().cuda_stream == s.cuda_stream)
    back = ac.Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)
    out.append(back == s)
with torch.cuda.stream(ac.default_stream(1)):
    out.append([torch.cuda.current_stream().cuda_stream, torch.cuda.current_device()])
print(json.dumps(out))
"""
    assert on_emu(code, backend) == [[True, 0], True, True, True, [True, 1], True, True, True, [0, 1]]


def test_from_dlpack_of_a_torch_tensor_on_another_device(backend):
    """Item 19: ``from_dlpack`` of a torch tensor on a device that is not the current one (torch's
    ``__dlpack__`` orders its work on its current device's streams): the bytes, and the current device
    unchanged, also with a pending target device."""
    code = _PRELUDE.format(imports=_TORCH_FIRST) + """
def case(pending):
    x = torch.arange(8, dtype=torch.float32).to("cuda:1")
    if pending:
        with ac.device(1):
            pass              # device 0 has no context here: it is left as the pending target
    a = ac.from_dlpack(x)
    return [a.device.index, a.copy_to_host().tolist(), torch.cuda.current_device(), ac.current_device()]
print(json.dumps([fresh(case, p) for p in (False, True)]))
"""
    r = list(range(8))
    assert on_emu(code, backend) == [[1, r, 0, 0], [1, r, 0, 0]]


def test_wait_event_takes_torch_and_cuda_core_events(backend):
    """Item 20: ``Stream.wait_event`` of a torch event (``cuda_event``) or a cuda.core event (``handle``)
    orders the stream after the event's record: a host function queued after the wait runs after one
    queued before the record on the other library's stream.  ``Event.wait`` takes their streams."""
    pytest.importorskip("cuda.core")
    code = _PRELUDE.format(imports=_TORCH_FIRST) + """
import time
try:
    from cuda.core import Device
except ImportError:
    from cuda.core.experimental import Device

def order(other_stream, make_event):
    log = []
    ext = ac.ExternalStream(other_stream)
    ext.launch_host_func(lambda: (time.sleep(0.2), log.append("before record")))
    ev = make_event()
    s = ac.Stream(device=0)
    s.wait_event(ev)
    s.launch_host_func(lambda: log.append("after wait"))
    s.synchronize()
    ext.synchronize()
    return log

out = []
ts = torch.cuda.Stream(device=0)
def torch_event():
    e = torch.cuda.Event()
    e.record(ts)
    return e
out.append(order(ts, torch_event))
dev = Device(0)
dev.set_current()
cs = dev.create_stream()
out.append(order(cs, lambda: cs.record()))
never = torch.cuda.Event()               # never recorded: waiting on it is a no-op, as torch's
ac.Stream(device=0).wait_event(never)
ae = ac.Event()
ae.record(ac.Stream(device=0))
ae.wait(ts)                              # accel's Event.wait takes torch's and cuda.core's streams
ae.wait(cs)
ts.synchronize()
try:
    ac.Stream(device=0).wait_event(cs)   # a stream is not an event
except TypeError as exc:
    out.append(str(exc).split(",")[0])
print(json.dumps(out))
"""
    assert on_emu(code, backend) == [["before record", "after wait"]] * 2 + [
        "expected an accel.cuda.Event"]


def test_readme_same_process_example(backend):
    """docs/memory.md's "In the same process as torch" example runs on the stand-ins, both twins."""
    import pathlib
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "memory.md").read_text()
    section = text[text.index("## In the same process as torch"):]
    code = section[section.index("```py\n") + 6:section.index("```", section.index("```py\n") + 6)]
    code += "\nimport json\nprint(json.dumps([b.device.index, h.tolist(), t.device.index]))\n"
    assert on_emu(code, backend) == [1, [0.0, 1.0, 2.0, 3.0], 1]


def test_a_failed_restore_keeps_accels_own_target_in_a_torch_process(backend):
    """Item 17: a guard's exit whose primary-context probe fails records the previous device as accel's own
    target (c10's MaybeSetDevice would probe again, and throw across C: a crash) and raises the real error;
    a later set_device clears it for both libraries."""
    code = _PRELUDE.format(imports=_TORCH_FIRST) + """
from accel import _lib
emu_api = _lib.cudart().cdll
emu_api.accelEmuSetFail.argtypes = [ctypes.c_char_p]

def case():
    out = []
    g = ac.device(1)
    g.__enter__()
    # the probe fails, and would again if c10 probed (it throws then, across C)
    assert emu_api.accelEmuSetFail(b"cuDevicePrimaryCtxGetState:1,cuDevicePrimaryCtxGetState:2") == 0
    try:
        g.__exit__(None, None, None)
    except Exception as exc:
        out.append(type(exc).__name__)
    finally:
        emu_api.accelEmuSetFail(None)
    out.append(ac.current_device())
    ac.set_device(0)
    out.append([torch.cuda.current_device(), ac.current_device()])
    return out
print(json.dumps(fresh(case)))
"""
    assert on_emu(code, backend) == ["CudaDriverError", 0, [0, 0]]


def test_torch_reads_the_device_of_accel_objects(backend):
    """Item 18, red team: torch maps a device object it does not know to its *current* device (torch's
    _get_device_index), so ``with torch.cuda.stream(accel_stream_of_device_1)`` from device 0 left device 1's
    current stream set to the accel stream after the block (torch's StreamContext saves and restores device 1's
    stream through ``stream.device``), and ``torch.cuda.current_stream(buf.device)`` named device 0.  Once
    accel shares torch's process, the ``.device`` of accel's streams, events, buffers and arrays is a
    torch.device."""
    code = _PRELUDE.format(imports=_TORCH_FIRST) + """
import numpy as np
out = []
for mk in (torch.cuda.Stream, ac.Stream):
    s = mk(device=1)
    before = torch.cuda.current_stream(1).cuda_stream
    with torch.cuda.stream(s):
        inside = torch.cuda.current_stream(1).cuda_stream == s.cuda_stream
    out.append([inside, torch.cuda.current_stream(1).cuda_stream == before, torch.cuda.current_device()])
b = ac.alloc(16, device=1)
a = ac.zeros((2,), np.float32, device=1)
e = ac.Event()
e.record(ac.Stream(device=1))
for obj in (ac.Stream(device=1), e, b, a):
    out.append([torch.cuda.current_stream(obj.device).device.index, type(obj.device).__name__,
                obj.device == torch.device("cuda", 1), obj.device.index])
print(json.dumps(out))
"""
    assert on_emu(code, backend) == [[True, True, 0]] * 2 + [[1, "device", True, 1]] * 4


def test_accel_calls_on_another_device_leave_torchs_current_device(backend):
    """Item 17, red team: accel's calls that work on another device (allocation, copies, events, streams,
    graphs, DLPack both ways, foreign streams and events, statistics) each leave torch's current device, and
    accel's, where they were, also after a guard left a pending target and inside the other library's guard;
    ``torch.empty(device="cuda")`` lands there (as torch's own calls on another device leave it)."""
    code = _PRELUDE.format(imports=_TORCH_FIRST) + """
import numpy as np

def ops(o):
    def copies():
        b = ac.alloc(64, device=o)
        b.copy_from_host(np.zeros(64, np.uint8))
        b.copy_to_host()
        b.free()
    def event():
        s = ac.Stream(device=o)
        e1, e2 = ac.Event(enable_timing=True), ac.Event(enable_timing=True)
        e1.record(s)
        e2.record(s)
        e2.synchronize()
        e1.elapsed_time(e2)
    def dlpack():
        a = ac.from_dlpack(torch.tensor([0.0, 1, 2, 3]).to(f"cuda:{o}"))
        assert a.copy_to_host().view(np.float32).tolist() == [0, 1, 2, 3]
        torch.from_dlpack(ac.zeros((4,), np.float32, device=o)).cpu()
    def foreign():
        ts = torch.cuda.Stream(device=o)
        ac.ExternalStream(ts.cuda_stream, device=o).synchronize()
        e = torch.cuda.Event()
        e.record(ts)
        ac.Stream(device=o).wait_event(e)
    def graph():
        s = ac.Stream(device=o)
        g, b = ac.CUDAGraph(), ac.alloc(16, device=o, stream=s)
        with ac.graph(g, stream=s):
            b.memset(1)
        g.replay()
        s.synchronize()
        g.reset()
        b.free()
    def contexts():
        with ac.stream(ac.Stream(device=o)):
            pass
        with torch.cuda.stream(ac.Stream(device=o)):
            pass
    return [copies, event, dlpack, foreign, graph, contexts, lambda: ac.synchronize(o),
            lambda: ac.mem_get_info(o), lambda: ac.memory_stats(o), lambda: ac.get_device_properties(o),
            lambda: ac.default_stream(o).query(), lambda: ac.to_device(np.zeros(3), device=o)]

def pending(lib):
    g = lib(1)
    g.__enter__()
    g.__exit__(None, None, None)

PREFIX = [lambda: None, lambda: pending(ac.device), lambda: pending(torch.cuda.device)]

def case(p, wrap, i):
    PREFIX[p]()
    before = [torch.cuda.current_device(), ac.current_device()]
    inner = None
    if wrap:
        with (torch.cuda.device if wrap == 1 else ac.device)(1):
            ops(0)[i]()
            inner = [torch.cuda.current_device(), ac.current_device()]
    else:
        ops(1 - before[0])[i]()
    after = [torch.cuda.current_device(), ac.current_device()]
    return [before, inner, after, torch.empty(1, device="cuda").device.index]

bad, n = [], 0
for p in range(len(PREFIX)):
    for wrap in (0, 1, 2):
        for i in range(len(ops(0))):
            n += 1
            r = fresh(case, p, wrap, i)
            if isinstance(r, str) or not (r[0][0] == r[0][1] and r[2] == r[0] and r[3] == r[0][0]
                                          and r[1] in (None, [1, 1])):
                bad.append([p, wrap, i, r])
print(json.dumps([n, bad[:5]]))
"""
    assert on_emu(code, backend) == [3 * 3 * 12, []]


def test_an_accel_stream_rebuilt_from_a_torch_streams_fields_is_that_stream(backend):
    """Item 18, red team (the other direction): accel.cuda.Stream(stream_id=, device_index=, device_type=) of a
    torch pool stream's fields named one of accel's own pool streams, silently another stream; in a torch
    process a pool id is torch's (accel's own pool streams carry their handle as id there)."""
    code = _PRELUDE.format(imports=_TORCH_FIRST) + """
out = []
for d in (0, 1):
    for prio in (0, -1):
        t = torch.cuda.Stream(device=d, priority=prio)
        a = ac.Stream(stream_id=t.stream_id, device_index=t.device_index, device_type=t.device_type)
        out.append(a.cuda_stream == t.cuda_stream)
print(json.dumps(out))
"""
    assert on_emu(code, backend) == [True] * 4


@pytest.mark.xfail(strict=True, reason="red team of issue 31: the .device an accel object gave before torch was "
                                       "imported (accel's CudaDevice) is read by torch as its current device")
def test_a_device_taken_before_torch_was_imported_names_its_device_to_torch(backend):
    """Red team of issue 31 item 18: ``.device`` is a torch.device only once accel shares torch's process; one
    read before torch was imported (accel's CudaDevice, kept in a variable or a config) and handed to torch
    later is a device object torch does not know, so torch.cuda.current_stream(d) silently names torch's
    current device (0) instead of d's (1)."""
    code = """
import json
import accel.cuda as ac
s = ac.Stream(device=1)
d = s.device                  # before torch is imported
import torch
torch.cuda.init()
torch.cuda.set_device(0)
try:
    got = torch.cuda.current_stream(d).device.index
except (TypeError, ValueError) as e:      # refused: loud, acceptable
    got = "refused"
print(json.dumps([got, d == torch.device("cuda", 1)]))
"""
    assert on_emu(code, backend) in ([1, True], ["refused", True])
