"""The lifetime matrix (issue 17 D1): every object that owns a resource, driven through the same operations
on both twins, checking afterwards what ELSE changed.

Objects (tests/lifetime_fixtures.py): Stream, ExternalStream, Event (never recorded / recorded),
DeviceBuffer (own; views over foreign producers through as_buffer and from_dlpack), DeviceArray (own;
typed import of a typed producer through from_dlpack), HostRegistration,
pinned arrays, DLPack capsules (never consumed, consumed, consumed twice) and, in a fresh interpreter per
twin, lazy tensors (sources, traced results unsynced and synced).
Operations: copy.copy / copy.deepcopy / pickle (work with ownership of their own, or a clear TypeError:
never a second owner), weakref, garbage-collected cycles with the object's owner / producer / stream in
both collection orders, fork (the parent keeps working, the child gets torch's "Cannot re-initialize
CUDA in forked subprocess" from every operation, never a hang), threads racing the first use and the
release, interpreter exit with the object alive, and a fault injected into each C call of its creation,
use and release (a clear CudaError and nothing changed, or success).
After every case ``Watch`` compares the emulator's live streams / events / allocations, the pools' used
bytes, memory_allocated, the DLPack export table, the current device and streams, the last
CUDA error and the bytes of canary buffers (device and pinned) with their values before the case; the
``test_control_*`` cases show that each of those checks sees a change.

A defect found here is first a strict xfail naming it, then fixed with the mark removed (none is left).
"""
import copy
import functools
import gc
import importlib.util
import json
import os
import pathlib
import pickle
import subprocess
import sys
import tempfile
import threading
import weakref

import numpy as np
import pytest

import accel.cuda as cuda
from accel import _memory_interop as _mi
from accel.errors import CudaError

pytestmark = [pytest.mark.emu_only, pytest.mark.devices(2)]   # the cases run on device 1 (F.DEV)

_HERE = pathlib.Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("lifetime_fixtures", _HERE / "lifetime_fixtures.py")
F = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(F)
DEV, N = F.DEV, F.N


def _params(names, marks=None):
    marks = marks or {}
    return [pytest.param(n, id=n, marks=marks.get(n, ())) for n in names]


ctx, watch, _check = F.ctx, F.watch, F.check      # fixtures and the end of a case, shared with test_device_array


def _frameless(test):
    """Re-raise a case's failure without its frames: pytest keeps a failed (or xfailed) case's traceback,
    whose frames would keep the case's objects alive into the next cases and change what those see."""
    @functools.wraps(test)
    def run(*args, **kwargs):
        try:
            test(*args, **kwargs)
        except Exception as e:      # noqa: BLE001 - re-raised below
            msg = f"{type(e).__name__}: {e}"
        else:
            return
        F.collect()
        raise AssertionError(msg) from None
    return run


# -- copy, deepcopy, pickle ----------------------------------------------------------------------------------

COPIERS = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": lambda o: pickle.loads(pickle.dumps(o))}


@pytest.mark.parametrize("kind, op", [pytest.param(k.name, op, id=f"{k.name}-{op}")
                                      for k in F.KINDS for op in COPIERS])
@_frameless
def test_copy_deepcopy_pickle(ctx, watch, kind, op):
    """A copy is refused with a TypeError naming the object, or is an object with its own resource: it
    works after the original is released, and releasing both releases everything exactly once."""
    k = F.BY_NAME[kind]
    o = k.make(ctx)
    try:
        c = COPIERS[op](o.obj)
    except TypeError as e:
        msg = str(e)
        assert "pickle" in msg or "cop" in msg, msg
        assert type(o.obj).__name__ in msg or repr(o.obj) in msg or "PyCapsule" in msg, msg
        k.use(ctx, o)
    else:
        if k.release:
            k.release(ctx, o)
        orig = o.obj
        o.obj = None
        del orig
        F.collect()
        k.use_copy(ctx, c, o) if k.copies else k.use(ctx, F.Obj(c, **o.keep))
        if k.release:
            k.release(ctx, F.Obj(c))
        del c
    if k.release and o.obj is not None:
        k.release(ctx, o)
    del o
    _check(watch)


# -- weakref ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", _params([k.name for k in F.KINDS]))
@_frameless
def test_weakref(ctx, watch, kind):
    """Every object of accel supports weak references (torch's Stream / Event / Tensor do); once the last
    strong reference is gone the reference is dead and the resource released.  A PyCapsule is Python's
    own type, which has none."""
    k = F.BY_NAME[kind]
    o = k.make(ctx)
    if kind.startswith("capsule"):
        with pytest.raises(TypeError, match="cannot create weak reference to 'PyCapsule' object"):
            weakref.ref(o.obj)
        del o
        _check(watch)
        return
    called = []
    ref = weakref.ref(o.obj, called.append)
    assert ref() is o.obj
    k.use(ctx, o)
    del o
    F.collect()
    assert ref() is None and len(called) == 1
    _check(watch)


# -- garbage-collected cycles ---------------------------------------------------------------------------------

def _split(order):
    """Between making an owner and what depends on it: for "reversed", move what exists so far to an older
    generation than what comes next, so that a full collection visits (and clears) the later objects first
    (gc.collect() merges generation 0 into 2 before generation 1)."""
    if order == "reversed":
        gc.collect(0)


class _Sub:
    """Subclasses of the twin's Stream / Event (which may hold attributes: the only way to put the
    object itself in a cycle)."""

    def __init__(self, sm):
        self.Stream = type("UserStream", (sm.Stream,), {})
        self.Event = type("UserEvent", (sm.Event,), {})


class _Arr(np.ndarray):
    pass


def _cycle_stream(ctx, order, keep):
    s = _Sub(ctx.sm).Stream(device=DEV)
    _split(order)
    b = ctx.mem.alloc(N, stream=s)
    b.memset(1)
    s.buf = b                    # s -> b -> s (b._stream)
    return s.cuda_stream


def _cycle_external_stream(ctx, order, keep):
    raw = F.RawStream(ctx.rt)
    _split(order)
    raw.ext = ctx.sm.ExternalStream(raw)   # raw -> ext -> raw (ext's owner)


def _cycle_event(ctx, order, keep):
    s = ctx.sm.Stream(device=DEV)
    e = _Sub(ctx.sm).Event()
    _split(order)
    e.record(s)
    e.me = e


def _cycle_buffer(ctx, order, keep):
    """An own buffer in a cycle through the stream it was recorded on: b -> ExternalStream -> holder -> b.
    That stream is held by a gate, so the free must wait for it (record_stream's promise).  "reversed"
    makes the stream's side first, so that the buffer is cleared first."""
    gate = F.Gate()
    side = ctx.sm.Stream(device=DEV, priority=-1)
    holder = F.StreamRef(side)
    if order == "reversed":
        ext = ctx.sm.ExternalStream(holder)
        _split(order)
        b = ctx.mem.alloc(N, device=DEV)
    else:
        b = ctx.mem.alloc(N, device=DEV)
        ext = ctx.sm.ExternalStream(holder)
    side.launch_host_func(gate)
    b.record_stream(ext)
    holder.buf = b
    keep.update(gate=gate, side=side, stream=b.stream)


def _cycle_view(make_prod):
    def build(ctx, order, keep):
        inner = ctx.mem.alloc(N, device=DEV)
        inner.memset(0x33)
        prod = make_prod(inner)
        _split(order)
        view = ctx.as_buffer(prod) if isinstance(prod, F.CAIProducer) else ctx.from_dlpack(prod)
        prod.view = view           # view -> producer (its owner) -> view
        keep["inner"] = inner      # the producer's memory must survive the view's collection
    return build


def _cycle_host_registration(ctx, order, keep):
    base = np.zeros(N, np.uint8)
    a = base.view(_Arr)
    _split(order)
    a.reg = cuda.host_register(a)   # a -> registration -> a (its array)
    keep["ptr"], keep["base"] = base.ctypes.data, base


def _cycle_pinned(ctx, order, keep):
    p = cuda.pinned_empty(N)
    _split(order)
    v = p.view(_Arr)
    v.me = v
    keep["ptr"] = p.ctypes.data


def _cycle_capsule(ctx, order, keep):
    inner = ctx.mem.alloc(N, device=DEV)
    h = F.Host()
    _split(order)
    h.cap, h.me = inner.__dlpack__(), h


def _cycle_capsule_consumed(ctx, order, keep):
    inner = ctx.mem.alloc(N, device=DEV)
    inner.memset(0x33)
    prod = F.CapsuleProducer(inner.__dlpack__(), DEV)
    _split(order)
    prod.view = ctx.from_dlpack(prod)
    keep["inner"] = inner


CYCLES = {"stream": _cycle_stream, "external_stream": _cycle_external_stream, "event": _cycle_event,
          "buffer": _cycle_buffer, "view_cai": _cycle_view(F.CAIProducer), "view_dlpack": _cycle_view(F.DLPackProducer),
          "host_registration": _cycle_host_registration, "pinned": _cycle_pinned, "capsule": _cycle_capsule,
          "capsule_consumed": _cycle_capsule_consumed}


def _cycle_params():
    out = []
    for name in CYCLES:
        for order in ("creation", "reversed"):
            out.append(pytest.param(name, order, id=f"{name}-{order}"))
    return out


@pytest.mark.parametrize("kind, order", _cycle_params())
@_frameless
def test_gc_cycle(ctx, watch, twin, kind, order):
    """The object in a reference cycle with its owner / producer / stream, collected by gc.collect() with
    either end cleared first: everything it owns is released exactly once, what it does not own (the
    producer's memory) is untouched, and record_stream's waits hold."""
    _gc_cycle(ctx, watch, kind, order)


def _gc_cycle(ctx, watch, kind, order):
    keep = {}
    was = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        CYCLES[kind](ctx, order, keep)
        gc.collect()
    finally:
        if was:
            gc.enable()
    if kind == "buffer":
        # the free is queued behind the gated stream's work: the buffer's stream cannot finish before it
        try:
            assert not F.wait_until(keep["stream"].query, 0.2), "record_stream's wait was lost at collection"
        finally:
            keep["gate"].open()
        keep["stream"].synchronize()
    if "inner" in keep:
        inner = keep.pop("inner")
        assert not inner.closed and inner.copy_to_host().tobytes() == b"\x33" * N, "the producer's memory changed"
        assert ctx.mem.memory_allocated(DEV) == watch.before["memory_allocated"][DEV] + N
        inner.free()
    if kind in ("host_registration", "pinned"):
        assert ctx.rt.cudaPointerGetAttributes(keep["ptr"])[0] != 1, "still page-locked after collection"
    keep.clear()
    _check(watch)


# -- threads ---------------------------------------------------------------------------------------------------

def _race(n, fn):
    """Run ``fn(i)`` in ``n`` threads released together; returns what each raised (None: nothing)."""
    barrier = threading.Barrier(n)
    out = [None] * n

    def run(i):
        barrier.wait(5)
        try:
            fn(i)
        except BaseException as e:   # noqa: BLE001 - reported
            out[i] = e

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(10)
        assert not any(t.is_alive() for t in ts), "a thread hung"
    finally:
        sys.setswitchinterval(old)
    return out


def _race_event(ctx, kind, o):
    ev, s = o.obj, ctx.sm.Stream(device=DEV)
    live = ctx.emu.accelEmuLiveEvents()
    errs = _race(4, lambda i: ev.record(s))
    assert errs == [None] * 4, errs
    assert ctx.emu.accelEmuLiveEvents() == live + (0 if kind == "event_recorded" else 1)


@pytest.mark.parametrize("kind", _params([k.name for k in F.KINDS]))
@_frameless
def test_threads_race_first_use_and_release(ctx, watch, kind):
    """Four threads race the object's first use, then its release: it is created once, released once,
    with no error in any thread."""
    k = F.BY_NAME[kind]
    for _ in range(10):
        o = k.make(ctx)
        if kind.startswith("event"):
            _race_event(ctx, kind, o)
        elif kind == "capsule":
            pass      # test_race_at_the_window: a deterministic race (a defect)
        else:
            errs = _race(4, lambda i: k.use(ctx, o))
            assert errs == [None] * 4, errs
        if k.release and kind != "host_registration":   # test_race_at_the_window (a defect)
            errs = _race(4, lambda i: k.release(ctx, o))
            assert errs == [None] * 4, errs
        elif k.release:
            k.release(ctx, o)
        del o
    _check(watch)


def _race_at(code, text, first, second):
    """Run ``first()`` in a thread held at the line of ``code`` containing ``text`` while ``second()`` runs
    in another (released after it, or after 0.5 s when it blocks there: a lock); what each returned or
    raised.  Deterministic where a free-running race is not."""
    import inspect
    lines, start = inspect.getsourcelines(code)
    hits = [start + i for i, line in enumerate(lines) if text in line]
    assert hits, f"{text!r} is not in {code.co_name}: the race would not be held at its window"
    reached, go = threading.Event(), threading.Event()

    def local(frame, event, arg):
        if event == "line" and frame.f_lineno in hits and not reached.is_set():
            reached.set()
            go.wait(5)
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code is code else None

    out = {}

    def run(name, fn, trace):
        if trace:
            sys.settrace(tracer)
        try:
            out[name] = fn()
        except Exception as e:   # noqa: BLE001 - reported
            out[name] = e
        finally:
            sys.settrace(None)

    t1 = threading.Thread(target=run, args=("first", first, True))
    t1.start()
    reached.wait(2 if hits else 0)
    t2 = threading.Thread(target=run, args=("second", second, False))
    t2.start()
    t2.join(0.5)
    go.set()
    t1.join(5)
    t2.join(5)
    return out["first"], out["second"]


@pytest.mark.parametrize("kind", ["host_registration", "capsule"])
@_frameless
def test_race_at_the_window(ctx, watch, kind):
    """Two threads release (unregister) / consume (from_dlpack) the same object, one held inside the
    operation's check-then-act window: it is done exactly once, without an error in the other thread
    (unregister) or with the clear BufferError (a second consumer)."""
    k = F.BY_NAME[kind]
    o = k.make(ctx)
    if kind == "host_registration":
        code = cuda.HostRegistration.unregister.__code__
        a, b = _race_at(code, "cudaHostUnregister(", o.obj.unregister, o.obj.unregister)
        assert a is None and b is None, (a, b)
        assert not o.obj.registered
    else:
        take = lambda: ctx.from_dlpack(F.CapsuleProducer(o.obj, DEV))   # noqa: E731
        a, b = _race_at(_mi._consume.__code__, "PyCapsule_SetName(", take, take)
        views = [v for v in (a, b) if not isinstance(v, BaseException)]
        errs = [v for v in (a, b) if isinstance(v, BaseException)]
        assert len(views) == 1 and len(errs) == 1 and isinstance(errs[0], BufferError), (a, b)
        views[0].free()
        del views, errs
    del o, a, b
    _check(watch)


# -- fault injection --------------------------------------------------------------------------------------

def _symbols(ctx):
    names = sorted(n for n in dir(ctx.rt) if n.startswith("cuda") and callable(getattr(ctx.rt, n)))
    out = [n for n in names + ["cuDevicePrimaryCtxGetState"] if ctx.emu.accelEmuSetFail(f"{n}:1".encode()) == 0]
    ctx.emu.accelEmuSetFail(None)
    return out


def _phases(k):
    return ["make", "use"] + (["release"] if k.release else [])


def _fault_params():
    return [pytest.param(k.name, ph, id=f"{k.name}-{ph}") for k in F.KINDS for ph in _phases(k)]


# A fault in a destroying call loses that one handle (the runtime refused to destroy it; nothing can retry):
# exactly one more live handle of its kind is allowed after it, nothing else.
_DESTROYS = {"cudaEventDestroy": "live_events", "cudaStreamDestroy": "live_streams", "cudaGraphDestroy": "live_graphs",
             "cudaGraphExecDestroy": "live_graph_execs"}


def _changes(before, now, sym, allow):
    """What changed from ``before`` to ``now``, less the one handle a destroy fault may lose (``allow``)."""
    changed = {x for x in now if now[x] != before[x]}
    key = _DESTROYS.get(sym)
    if allow and key in changed and now[key] == before[key] + 1:
        changed.discard(key)
    return sorted(changed)


def _settled(watch, ref):
    """The state, after collecting the cycles an exception's frames make with the locals they hold (the
    python twin's raise sites) when it differs from ``ref``."""
    now = watch.state(canaries=False)
    for gen in (0, 2):
        if now == ref:
            break
        gc.collect(gen)
        now = watch.state(canaries=False)
    return now


def _sweep(ctx, watch, kind, phase, only=None):
    """Inject a fault into every C call of ``phase`` of ``kind`` (1st, 2nd, 3rd call of each runtime entry
    point; ``only``: just these symbols, else all but the known defects'); returns the symbols that hit."""
    k = F.BY_NAME[kind]
    emu = ctx.emu
    hit = set()
    for sym in _symbols(ctx):
        if only is not None and sym not in only:
            continue
        for nth in (1, 2, 3):
            start = watch.state(canaries=False)
            keep = k.prepare(ctx)
            o = F.Obj(None if phase == "make" else k.create(ctx, keep), **keep)
            before = watch.state(canaries=False)
            handle = getattr(o.obj, "cuda_event", None)
            assert emu.accelEmuSetFail(f"{sym}:{nth}".encode()) == 0
            err = None
            try:
                if phase == "make":
                    o.obj = k.create(ctx, keep)
                elif phase == "use":
                    k.ops(ctx, o.obj, keep)
                else:
                    k.release(ctx, o)
            except CudaError as e:
                err = e.name
                assert err and str(e), e
            finally:
                emu.accelEmuSetFail(None)
            if err:          # (after the except clause: its traceback no longer holds the phase's locals)
                hit.add(sym)
                now = _settled(watch, before)
                if handle == 0 and o.obj.cuda_event and now["live_events"] == before["live_events"] + 1:
                    before["live_events"] += 1    # made by the failed first record; the event owns it (as torch's)
                changed = _changes(before, now, sym, True)
                assert not changed, f"{sym}:{nth} failed the {phase} of {kind} and changed {changed}"
            if o.obj is not None and (phase != "release" or err):
                k.ops(ctx, o.obj, keep)      # it still works
                k.check(ctx, o.obj, keep)
                if k.release:
                    k.release(ctx, o)
            del o, keep
            end = _settled(watch, start)
            changed = _changes(start, end, sym, True)
            assert not changed, f"a fault in {sym}:{nth} during the {phase} of {kind} leaked {changed}"
            if end != start:
                watch.before[_DESTROYS[sym]] += 1
            if not err:
                break
    return hit


# a fault in a guard's device restore is a RuntimeWarning by design (the device is recorded as the target)
_RESTORE_WARNING = pytest.mark.filterwarnings("ignore:could not restore CUDA device:RuntimeWarning")


@pytest.mark.parametrize("kind, phase", _fault_params())
@_RESTORE_WARNING
@_frameless
def test_fault_injection(ctx, watch, kind, phase):
    """A fault in each C call (every runtime entry point, its 1st / 2nd / 3rd call) of the object's
    creation, its own operations and its release: a CudaError and nothing changed (the object, when there
    is one, still works), or the call was not needed and the phase succeeds; either way nothing leaks."""
    k = F.BY_NAME[kind]
    hit = _sweep(ctx, watch, kind, phase)
    assert bool(hit) == (phase in k.calls), f"C calls hit by faults in the {phase} of {kind}: {sorted(hit)}"
    _check(watch)


# -- fork, interpreter exit, lazy tensors (a fresh interpreter per twin) -------------------------------------

_SUBPROC = r'''
import gc, json, os, signal, sys, time, importlib.util, threading
sys.path.insert(0, "")
spec = importlib.util.spec_from_file_location("lifetime_fixtures", sys.argv[1] + "/lifetime_fixtures.py")
F = importlib.util.module_from_spec(spec); spec.loader.exec_module(F)
import importlib
import numpy as np
import accel.cuda as cuda

class Twin:
    name = sys.argv[2]
    def mod(self, m):
        return importlib.import_module(f"accel._{self.name}.{m}")

ctx = F.Ctx(Twin())
FORK = "Cannot re-initialize CUDA in forked subprocess"
out = {"fork": {}, "lazy": {}}

def child_ops(kind, o):
    mem, sm = ctx.mem, ctx.sm
    b = o.obj if kind in ("buffer", "view_cai", "view_dlpack", "array", "array_dlpack") else None
    ops = {}
    if kind in ("stream", "external_stream"):
        s = o.obj
        ops = {"synchronize": s.synchronize, "query": s.query, "alloc_on": lambda: mem.alloc(8, stream=s),
               "wait_stream": lambda: s.wait_stream(s), "new_stream": lambda: sm.Stream(device=F.DEV)}
    elif kind.startswith("event"):
        e = o.obj
        ops = {"record": lambda: e.record(sm.default_stream(F.DEV)), "query": e.query,
               "synchronize": e.synchronize}
        if kind == "event":   # never recorded: query / synchronize are no-ops without CUDA (torch's too)
            ops = {"record": ops["record"]}
    elif b is not None:
        ops = {"memset": lambda: b.memset(1), "copy_to_host": b.copy_to_host,
               "copy_from_host": lambda: b.copy_from_host(np.zeros(F.N, np.uint8)), "free": b.free,
               "dlpack": b.__dlpack__}
    elif kind == "host_registration":
        ops = {"unregister": o.obj.unregister, "new": lambda: cuda.host_register(np.zeros(8))}
    elif kind == "pinned":
        ops = {"new": lambda: cuda.pinned_empty(8)}
    elif kind.startswith("capsule"):
        ops = {"from_dlpack": lambda: ctx.from_dlpack(F.CapsuleProducer(o.obj, F.DEV))}
    elif kind == "cuda_graph":
        ops = {"replay": o.obj.replay, "capture_begin": sm.CUDAGraph().capture_begin}
    res = {}
    for name, fn in ops.items():
        try:
            fn()
            res[name] = "ok"
        except Exception as e:
            res[name] = f"{type(e).__name__}: {e}"
    return res

def fork_case(kind):
    o = F.BY_NAME[kind].make(ctx)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        signal.setitimer(signal.ITIMER_REAL, 1.5)     # a hang ends the child (SIGALRM)
        try:
            res = child_ops(kind, o)
            del o
            gc.collect()
            res["drop"] = "ok"
        except BaseException as e:
            res = {"child": repr(e)}
        os.write(w, json.dumps(res).encode())
        os._exit(0)
    os.close(w)
    end = time.monotonic() + 3
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        status = "hang"
    data = os.read(r, 65536)
    os.close(r)
    res = json.loads(data) if data else {}
    res["status"] = status
    try:
        F.BY_NAME[kind].use(ctx, o)
        res["parent"] = "ok"
    except Exception as e:
        res["parent"] = f"{type(e).__name__}: {e}"
    alive.append(o)      # left alive at exit
    return res

alive = []
for kind in F.BY_NAME:
    out["fork"][kind] = fork_case(kind)

# lazy tensors: on the twin this interpreter selected (ACCEL_BACKEND)
import copy, pickle, weakref
import accel.lazy as L
from accel.lazy import metrics as M

def live():
    gc.collect()
    return (M.counter_value("CreateLtcTensor") or 0) - (M.counter_value("DestroyLtcTensor") or 0)

def lazy_case(name, fn):
    try:
        out["lazy"][name] = fn() or "ok"
    except BaseException as e:
        out["lazy"][name] = f"{type(e).__name__}: {e}"

def tensors():
    x = L.tensor(np.arange(6, dtype=np.float32))
    y = x * 2 + 1
    z = (x - 1) * 3
    L.mark_step(); z = z    # z synced
    w = y * y                # traced, unsynced
    return {"source": x, "unsynced": w, "synced": z}

EXPECT = {"source": np.arange(6, dtype=np.float32)}
EXPECT["synced"] = (EXPECT["source"] - 1) * 3
EXPECT["unsynced"] = (EXPECT["source"] * 2 + 1) ** 2

def copies():
    base = live()
    res = {}
    for kind, t in tensors().items():
        for op, fn in (("copy", copy.copy), ("deepcopy", copy.deepcopy),
                       ("pickle", lambda v: pickle.loads(pickle.dumps(v)))):
            try:
                c = fn(t)
            except TypeError as e:
                res[f"{kind}-{op}"] = "refused" if "cannot be copied or pickled" in str(e) else str(e)
            else:
                res[f"{kind}-{op}"] = "copied" if np.array_equal(c.numpy(), EXPECT[kind]) else "wrong"
                del c
    del t
    assert live() == base, ("live tensors", live(), base)
    return res

def weakrefs():
    base = live()
    ts = tensors()
    refs = [weakref.ref(t) for t in ts.values()]
    for k, t in ts.items():
        assert np.array_equal(t.numpy(), EXPECT[k]), k
    del ts, t
    assert [r() for r in refs] == [None] * 3 and live() == base
    return "ok"

def cycles():
    base = live()
    gc.disable()
    try:
        for order in ("creation", "reversed"):
            h = F.Host()
            x = L.tensor(np.arange(6, dtype=np.float32))
            if order == "reversed":
                gc.collect(0)
            y = x * 2 + 1
            h.t, h.me, h.fn = y, h, (lambda: y)
            L.mark_step() if order == "creation" else None
            del x, y, h
            gc.collect()
    finally:
        gc.enable()
    assert live() == base, ("live tensors", live(), base)
    return "ok"

def threads():
    # up to 20 rounds of 4 threads tracing and syncing (a race shows within a few; stop at the first)
    x = L.tensor(np.ones(4, np.float32))
    want = np.full(4, 4, np.float32)
    errs = []
    def work():
        try:
            for _ in range(400):
                t = x * 3 + 1
                L.mark_step()
                assert np.array_equal(t.numpy(), want)
        except BaseException as e:
            errs.append(repr(e))
    sys.setswitchinterval(1e-5)
    for _ in range(20):
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts: t.start()
        for t in ts: t.join(20)
        assert not any(t.is_alive() for t in ts), "hang"
        if errs:
            break
    sys.setswitchinterval(0.005)
    return "ok" if not errs else errs[0]

def fork():
    ts = tensors()
    pid = os.fork()
    if pid == 0:
        signal.alarm(4)
        ok = all(np.array_equal(t.numpy(), EXPECT[k]) for k, t in ts.items())
        t2 = ts["source"] * 2; L.mark_step()
        os._exit(0 if ok and np.array_equal(t2.numpy(), EXPECT["source"] * 2) else 1)
    _, status = os.waitpid(pid, 0)
    assert all(np.array_equal(t.numpy(), EXPECT[k]) for k, t in ts.items())
    alive.append(ts)
    return "ok" if status == 0 else f"child status {status}"

lazy_case("copies", copies)
lazy_case("weakref", weakrefs)
lazy_case("cycles", cycles)
lazy_case("threads", threads)
lazy_case("fork", fork)
alive.append(tensors())
print("RESULT " + json.dumps(out), flush=True)
'''


_runs = {}


def _subprocess(twin_name):
    """The fork / lazy / exit script on one twin, run once per session (every fork case leaves its object
    alive, so the interpreter exits with all of them alive)."""
    if twin_name not in _runs:
        env = dict(os.environ, ACCEL_BACKEND=twin_name, ACCEL_CUDART="emu")
        try:
            r = subprocess.run([sys.executable, "-c", _SUBPROC, str(_HERE), twin_name], env=env, timeout=120,
                               capture_output=True, text=True, cwd=tempfile.gettempdir())
            out = next((json.loads(line[7:]) for line in r.stdout.splitlines() if line.startswith("RESULT ")), None)
            _runs[twin_name] = (r.returncode, r.stderr, out)
        except subprocess.TimeoutExpired as e:
            _runs[twin_name] = ("timeout", str(e.stderr), None)
    return _runs[twin_name]


@pytest.mark.parametrize("kind", [k.name for k in F.KINDS])
def test_fork(twin, kind):
    """After a fork the parent's object keeps working; in the child every operation on it that needs CUDA
    raises torch's "Cannot re-initialize CUDA in forked subprocess" (none hangs), and dropping it is silent."""
    rc, err, out = _subprocess(twin.name)
    assert out is not None, f"the fork script died (rc {rc}): {err[-3000:]}"
    res = out["fork"][kind]
    assert res["status"] == 0, f"child status {res['status']}: {res}"
    assert res.pop("parent") == "ok", res
    res.pop("status")
    assert res.pop("drop") == "ok", res
    assert res, "no child operation ran"
    bad = {op: r for op, r in res.items() if not r.startswith("RuntimeError: Cannot re-initialize CUDA in forked")}
    assert not bad, bad


def test_exit_with_every_object_alive(twin):
    """The interpreter exits with every kind of object (and lazy tensors) alive, after forks: status 0 and
    nothing on stderr."""
    rc, err, out = _subprocess(twin.name)
    assert out is not None and rc == 0, f"rc {rc}: {err[-3000:]}"
    assert err == "", err[-3000:]


@pytest.mark.parametrize("case", ["copies", "weakref", "cycles", "threads", "fork"])
def test_lazy_tensors(twin, case):
    """Lazy tensors (a source, a synced and an unsynced traced result) through the matrix: copies refused
    (a copy would share the tensor id), weak references, cycles (no live tensor leaks), threads, fork."""
    rc, err, out = _subprocess(twin.name)
    assert out is not None, f"the script died (rc {rc}): {err[-3000:]}"
    res = out["lazy"][case]

    def check():
        if case == "copies":
            assert isinstance(res, dict) and set(res.values()) == {"refused"}, res
        else:
            assert res == "ok", res
    check()



# -- graphs and buffer lifetimes (issue 31) ---------------------------------------------------------------------

def _capture_on(ctx, s, body):
    """A CUDAGraph of the work ``body`` queues on ``s`` made current (the stream and device restored after)."""
    g = ctx.sm.CUDAGraph()
    with ctx.sm.stream(s):
        g.capture_begin()
        body()
        g.capture_end()
    return g


def _graph_buffer_freed(ctx):
    s = ctx.sm.Stream(device=DEV)
    a = ctx.mem.alloc(N, stream=s)
    hout = np.zeros(N, np.uint8)
    g = _capture_on(ctx, s, lambda: (a.memset(7), a.copy_to_host(hout)))
    a.free()
    s.synchronize()
    b = ctx.mem.alloc(N, stream=s)          # the freed block's successor
    b.memset(1, stream=s)
    with ctx.sm.stream(s):
        with pytest.raises(CudaError) as exc:
            g.replay()
    assert exc.value.code == 1
    assert (b.copy_to_host(stream=s) == 1).all() and (hout == 0).all()
    g.reset()
    b.free()


def _graph_buffer_collected(ctx):
    s = ctx.sm.Stream(device=DEV)
    a = ctx.mem.alloc(N, stream=s)
    g = _capture_on(ctx, s, lambda: a.memset(7))
    del a
    F.collect()
    with ctx.sm.stream(s):
        with pytest.raises(CudaError):
            g.replay()
    del g


def _graph_host_arrays(ctx):
    s = ctx.sm.Stream(device=DEV)
    a = ctx.mem.alloc(N, stream=s)
    outs = []
    g = _capture_on(ctx, s, lambda: (a.copy_from_host(np.full(N, 3, np.uint8)), outs.append(a.copy_to_host())))
    with ctx.sm.stream(s):
        g.replay()
    s.synchronize()
    assert (outs.pop() == 3).all()
    a.free()                                # then the graph: its host arrays go with it
    del g


def _graph_out_of_memory(ctx):
    s = ctx.sm.Stream(device=DEV)
    a = ctx.mem.alloc(N, stream=s)

    def body():
        with pytest.raises(cuda.OutOfMemoryError):
            ctx.mem.alloc(1 << 50, stream=s)
        a.memset(2)
    g = _capture_on(ctx, s, body)
    with ctx.sm.stream(s):
        g.replay()
    g.reset()
    a.free()


def _dlpack_free_while_consumed(ctx):
    x = ctx.mem.alloc(N, device=DEV)
    y = ctx.from_dlpack(x)
    x.free()
    z = ctx.mem.alloc(N, device=DEV)
    assert z.ptr != y.ptr
    y.free()
    z.free()


def _dlpack_free_while_exported(ctx):
    x = ctx.mem.alloc(N, device=DEV)
    cap = x.__dlpack__()
    x.free()
    z = ctx.mem.alloc(N, device=DEV)
    assert z.ptr != x.ptr
    del cap
    z.free()


def _stream_default_in_with_stream(ctx):
    s = ctx.sm.Stream(device=DEV)
    a = ctx.mem.alloc(N, device=DEV)
    with ctx.sm.stream(s):
        a.memset(4)
        out = a.copy_to_host()
    assert (out == 4).all()
    a.free()


LIFETIME_CASES = {"graph-buffer-freed": _graph_buffer_freed, "graph-buffer-collected": _graph_buffer_collected,
                  "graph-host-arrays": _graph_host_arrays, "graph-out-of-memory": _graph_out_of_memory,
                  "dlpack-free-while-consumed": _dlpack_free_while_consumed,
                  "dlpack-free-while-exported": _dlpack_free_while_exported,
                  "copies-on-the-current-stream": _stream_default_in_with_stream}


@pytest.mark.parametrize("case", list(LIFETIME_CASES))
@_frameless
def test_graph_and_export_lifetimes(ctx, watch, case):
    """Issue 31: a graph whose buffer was freed or collected, the host arrays of captured copies, an allocation
    that does not fit in a capture, frees while a DLPack export is held, copies on the current stream: once
    everything is released, nothing else changed (canaries, pools, counters, exports, device and streams)."""
    LIFETIME_CASES[case](ctx)
    _check(watch)


# -- controls: each check of Watch sees a change -------------------------------------------------------------

def _ctl_live_streams(ctx, undo):
    with cuda.device(DEV):
        h = ctx.rt.cudaStreamCreateWithFlags(1)
    undo.append(lambda: ctx.rt.cudaStreamDestroy(h))


def _ctl_live_events(ctx, undo):
    with cuda.device(DEV):
        h = ctx.rt.cudaEventCreateWithFlags(2)
    undo.append(lambda: ctx.rt.cudaEventDestroy(h))


def _ctl_alloc(ctx, undo):
    b = ctx.mem.alloc(N, device=DEV)
    undo.append(b.free)


def _ctl_exports(ctx, undo):
    b = ctx.mem.alloc(N, device=DEV)
    cap = b.__dlpack__()
    undo.append(lambda: (cap, b.free()))


def _ctl_device(ctx, undo):
    ctx.dev.set_device(2)
    undo.append(lambda: ctx.dev.set_device(0))


def _ctl_stream(ctx, undo):
    ctx.sm.set_stream(ctx.sm.Stream(device=3))
    undo.append(ctx.reset)


def _ctl_last_error(ctx, undo):
    assert ctx.emu.cudaSetDevice(99) == 101     # the raw call: an error the bindings would have cleared
    undo.append(ctx.rt.cudaGetLastError)


def _ctl_canary(i):
    def ctl(ctx, undo, watch):
        if i < 2:
            b = watch.canaries[i]
            b.memset(0)
        else:
            watch.host_canary[5] ^= 1
    return ctl


CONTROLS = {"live_streams": _ctl_live_streams, "live_events": _ctl_live_events, "live_allocations": _ctl_alloc,
            "pool_used": _ctl_alloc, "memory_allocated": _ctl_alloc,
            "dlpack_exports": _ctl_exports, "current_device": _ctl_device, "current_streams": _ctl_stream,
            "last_error": _ctl_last_error, "canary-device0": _ctl_canary(0), "canary-device1": _ctl_canary(1),
            "canary-pinned": _ctl_canary(2)}


_CONTROL_DEVICES = {"current_device": 3, "current_streams": 4}   # their controls switch to device 2 / 3


@pytest.mark.parametrize("check", [pytest.param(c, marks=pytest.mark.devices(_CONTROL_DEVICES.get(c, 2)))
                                   for c in CONTROLS])
@_frameless
def test_control_each_check_sees_a_change(ctx, watch, check):
    undo = []
    fn = CONTROLS[check]
    if check.startswith("canary"):
        fn(ctx, undo, watch)
        assert watch.diff() == ["canaries"]
        return
    fn(ctx, undo)
    try:
        assert check in watch.diff()
    finally:
        for u in undo:
            u()
