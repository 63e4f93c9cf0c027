"""accel.mtia over an in-test backend runtime (FakeRuntime below): lazy init, queued calls, deferred errors
with call sites, fork poisoning, streams, stream contexts, events, and the no-backend behaviour.

accel.mtia's state is per process (a backend cannot be swapped once initialised), so each scenario runs in
a fresh interpreter that loads this file for FakeRuntime.
"""
import json
import pathlib
import textwrap
import threading

import pytest

THIS = str(pathlib.Path(__file__).resolve())


class FakeRuntime:
    """A host-only backend: ``n`` devices; streams are FIFOs of host callables that run when the test
    calls ``step``; an event is reached once its stream ran every op queued before the record."""

    def __init__(self, n=3, fail_init=None):
        self.n = n
        self.fail_init = fail_init
        self.log = []
        self._tls = threading.local()
        self.streams = {}   # handle -> {"device", "priority", "ops", "done"}
        self.events = {}    # handle -> {"device", "stream", "mark", "timing"}

    # -- the protocol ---------------------------------------------------------------------------------
    def init(self):
        self.log.append("init")
        if self.fail_init:
            raise RuntimeError(self.fail_init)

    def device_count(self):
        return self.n

    def current_device(self):
        return getattr(self._tls, "device", 0)

    def set_device(self, index):
        self.log.append(("set_device", index))
        self._tls.device = index

    def synchronize(self, index):
        for h, s in self.streams.items():
            if s["device"] == index:
                self.synchronize_stream(h)

    def default_stream(self, index):
        return self._new_stream(("default", index), index, 0)

    def create_stream(self, index, priority):
        return self._new_stream(("stream", len(self.streams)), index, priority)

    def _new_stream(self, handle, index, priority):
        self.streams.setdefault(handle, {"device": index, "priority": priority, "ops": [], "done": 0})
        return handle

    def query_stream(self, stream):
        s = self.streams[stream]
        return s["done"] == len(s["ops"])

    def synchronize_stream(self, stream):
        while not self.query_stream(stream):
            if not self.step(stream):
                raise RuntimeError(f"stream {stream} is blocked")

    def create_event(self, index, enable_timing):
        handle = ("event", len(self.events))
        self.events[handle] = {"device": index, "stream": None, "mark": 0, "timing": enable_timing}
        return handle

    def record_event(self, event, stream):
        self.events[event].update(stream=stream, mark=len(self.streams[stream]["ops"]))

    def query_event(self, event):
        e = self.events[event]
        return e["stream"] is None or self.streams[e["stream"]]["done"] >= e["mark"]

    def synchronize_event(self, event):
        e = self.events[event]
        while not self.query_event(event):
            self.step(e["stream"])

    def wait_event(self, stream, event):
        e = dict(self.events[event])
        self.enqueue(stream, ("wait", e["stream"], e["mark"]))

    def elapsed_time(self, start, end):
        return float(self.events[end]["mark"] - self.events[start]["mark"])

    # -- test controls --------------------------------------------------------------------------------
    def enqueue(self, stream, op):
        self.streams[stream]["ops"].append(op)

    def step(self, stream):
        """Run the next op of ``stream``; False if it waits for an event not reached yet."""
        s = self.streams[stream]
        op = s["ops"][s["done"]]
        if isinstance(op, tuple) and op[0] == "wait":
            if op[1] is not None and self.streams[op[1]]["done"] < op[2]:
                return False
        elif callable(op):
            op()
        s["done"] += 1
        return True


PRELUDE = f"""
import importlib.util, json, os, sys, threading
import accel.mtia as mtia
_spec = importlib.util.spec_from_file_location("mtia_fake", {THIS!r})
_m = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(_m)
FakeRuntime = _m.FakeRuntime
"""


def run(subprocess_python, code):
    proc = subprocess_python(PRELUDE + textwrap.dedent(code))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_no_backend(subprocess_python):
    out = run(subprocess_python, """
        from accel.mtia import NoBackendError
        res = [mtia.is_available(), mtia._is_compiled(), mtia.device_count(), mtia.is_initialized()]
        for call in (mtia.init, mtia.current_device, lambda: mtia.Stream(), lambda: mtia.set_device(0),
                     mtia.synchronize, mtia.current_stream):
            try:
                call()
                res.append("no error")
            except NoBackendError as e:
                res.append([isinstance(e, AssertionError), isinstance(e, RuntimeError), str(e)])
        res.append(mtia.set_device(-1))  # a negative index is a no-op, as in torch
        print(json.dumps(res))
    """)
    assert out[:4] == [False, False, 0, False]
    for entry in out[4:10]:
        assert entry[:2] == [True, True] and entry[2].startswith("accel.mtia has no backend runtime"), entry
    assert out[10] is None


def test_register_backend_validates_and_freezes(subprocess_python):
    out = run(subprocess_python, """
        res = []
        try:
            mtia.register_backend(object())
        except TypeError as e:
            res.append(str(e))
        rt = FakeRuntime()
        mtia.register_backend(rt)
        res.append([mtia._is_compiled(), mtia.is_available(), mtia.device_count(), mtia.is_initialized()])
        mtia.init()
        try:
            mtia.register_backend(FakeRuntime())
        except RuntimeError as e:
            res.append(str(e))
        res.append(mtia.get_backend() is rt)
        print(json.dumps(res))
    """)
    assert "is not an accel.mtia backend runtime: missing device_count, current_device" in out[0]
    assert out[1] == [True, True, 3, False]
    assert "already initialised" in out[2] and out[3] is True


def test_queued_calls_run_at_init_in_order(subprocess_python):
    out = run(subprocess_python, """
        seen = []
        mtia._lazy_call(lambda: seen.append(["a", mtia.is_initialized()]))
        mtia._lazy_call(lambda: seen.append(["b", mtia.current_device()]), seed=True)  # re-entrant use
        mtia._lazy_call(lambda: mtia._lazy_call(lambda: seen.append("nested")), seed_all=True)
        rt = FakeRuntime()
        mtia.register_backend(rt)
        before = list(seen)
        mtia.set_device(1)                      # first use: init, then the queue
        mtia._lazy_call(lambda: seen.append("now"))
        mtia.init()
        print(json.dumps([before, seen, rt.log, mtia.is_initialized()]))
    """)
    assert out == [[], [["a", False], ["b", 0], "nested", "now"], ["init", ["set_device", 1]], True]


def test_failed_queued_call_raises_deferred_error_with_call_site(subprocess_python):
    out = run(subprocess_python, """
        from accel.mtia import DeferredMtiaCallError
        def queue_the_bad_call():
            mtia._lazy_call(lambda: 1 / 0)
        queue_the_bad_call()
        mtia.register_backend(FakeRuntime())
        res = []
        for _ in range(2):  # not initialised after a failure: the queue is retried
            try:
                mtia.current_device()
            except DeferredMtiaCallError as e:
                res.append([str(e), type(e.__cause__).__name__, mtia.is_initialized()])
        print(json.dumps(res))
    """)
    assert len(out) == 2
    for msg, cause, initialized in out:
        assert msg.startswith("MTIA call failed lazily at initialization with error: division by zero")
        assert "MTIA call was originally invoked at:" in msg and "queue_the_bad_call" in msg
        assert cause == "ZeroDivisionError" and initialized is False


def test_backend_init_failure_and_no_device(subprocess_python):
    out = run(subprocess_python, """
        mtia.register_backend(FakeRuntime(fail_init="firmware missing"))
        res = []
        try:
            mtia.init()
        except RuntimeError as e:
            res.append(str(e))
        mtia.register_backend(FakeRuntime(n=0))
        try:
            mtia.init()
        except RuntimeError as e:
            res.append(str(e))
        res.append(mtia.is_available())
        print(json.dumps(res))
    """)
    assert out == ["firmware missing", "No MTIA devices are available", False]


FORK = """
rt = FakeRuntime()
mtia.register_backend(rt)
{parent}
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        msg = str(mtia.current_device())
    except RuntimeError as e:
        msg = str(e)
    os.write(w, json.dumps([msg, mtia.is_initialized(), mtia._is_in_bad_fork()]).encode()); os._exit(0)
os.close(w)
child = json.loads(os.read(r, 65536).decode())
os.waitpid(pid, 0)
print(json.dumps([child, mtia.is_initialized(), mtia._is_in_bad_fork()]))
"""
FORK_MSG = ("Cannot re-initialize MTIA in forked subprocess. To use MTIA with multiprocessing, you must use the "
            "'spawn' start method")


@pytest.mark.parametrize("parent, poisoned, parent_init", [
    ("mtia.set_device(2)", True, True),
    ("mtia.is_available()", True, False),     # counting devices is using the backend, as in accel.cuda
    ("pass", False, False),
])
def test_fork(subprocess_python, parent, poisoned, parent_init):
    child, initialized, bad = run(subprocess_python, FORK.format(parent=parent))
    if poisoned:
        assert child == [FORK_MSG, False, True]
    else:
        assert child == ["0", True, False]
    assert [initialized, bad] == [parent_init, False]


def test_streams_contexts_and_threads(subprocess_python):
    out = run(subprocess_python, """
        rt = FakeRuntime()
        mtia.register_backend(rt)
        res = []
        d0 = mtia.current_stream()
        res.append([d0 == mtia.default_stream(0), d0.device_index, d0.device_type, str(d0.device)])
        s1 = mtia.Stream(device="mtia:1", priority=-1)
        res.append([s1.device_index, rt.streams[s1.handle]["priority"], mtia.current_device()])
        with mtia.stream(s1) as entered:   # switches to device 1; restores device 0 and both streams
            res.append([entered is s1, mtia.current_device(), mtia.current_stream() is s1,
                        mtia.current_stream(0) == d0])
            seen = []
            t = threading.Thread(target=lambda: seen.append(mtia.current_stream(1) == mtia.default_stream(1)))
            t.start(); t.join()
            res.append(seen)
        res.append([mtia.current_device(), mtia.current_stream(1) == mtia.default_stream(1)])
        with s1:                            # torch.Stream as a context manager
            res.append([mtia.current_device(), mtia.current_stream() is s1])
            try:
                with s1:
                    pass
            except RuntimeError as e:
                res.append(str(e))
        res.append(mtia.current_device())
        mtia.set_stream(s1)                 # switches the device, like accel.cuda.set_stream
        res.append([mtia.current_device(), mtia.current_stream(1) is s1])
        mtia.set_stream(mtia.default_stream(0))
        with mtia.stream(None) as nothing:
            res.append(nothing)
        with mtia.device(2) as ctx:
            res.append([ctx.idx, mtia.current_device()])
        res.append(mtia.current_device())
        for bad in (lambda: mtia.Stream(device=3), lambda: mtia.set_device("cuda:1"), lambda: mtia.set_stream(3),
                    lambda: mtia.set_device(True)):
            try:
                bad()
            except (ValueError, TypeError) as e:
                res.append([type(e).__name__, str(e)])
        print(json.dumps(res))
    """)
    assert out[0] == [True, 0, 19, "mtia:0"]
    assert out[1] == [1, -1, 0]
    assert out[2] == [True, 1, True, True]
    assert out[3] == [True]
    assert out[4] == [0, True]
    assert out[5] == [1, True]
    assert out[6] == "Stream's context should not be initialized."
    assert out[7] == 0
    assert out[8] == [1, True]
    assert out[9] is None
    assert out[10] == [2, 2] and out[11] == 0
    assert out[12] == ["ValueError", "Device index value 3 is out of index range [0, 3)"]
    assert out[13] == ["ValueError", "Expected a mtia device, but got: cuda:1"]
    assert out[14][0] == "TypeError" and "accel.mtia.Stream" in out[14][1]
    assert out[15][0] == "TypeError"


def test_events_order_work_across_streams(subprocess_python):
    out = run(subprocess_python, """
        rt = FakeRuntime()
        mtia.register_backend(rt)
        a, b = mtia.Stream(), mtia.Stream()
        done = []
        rt.enqueue(a.handle, lambda: done.append("a1"))
        start = mtia.Event(enable_timing=True)
        res = [[start.query(), start.device]]      # never recorded
        start.record(a)
        rt.enqueue(a.handle, lambda: done.append("a2"))
        end = a.record_event(mtia.Event(enable_timing=True))
        b.wait_stream(a)                           # b waits for a2
        rt.enqueue(b.handle, lambda: done.append("b1"))
        res.append([a.query(), b.query(), end.query(), str(end.device)])
        res.append(rt.step(b.handle))              # blocked on a's work
        a.synchronize()
        b.synchronize()
        res.append([done, end.query(), start.elapsed_time(end)])
        try:
            start.elapsed_time(mtia.Event())
        except ValueError as e:
            res.append(str(e))
        class Duck:
            def wait(self, stream):
                res.append(["duck", stream is b])
        b.wait_event(Duck())
        print(json.dumps(res))
    """)
    assert out[0] == [True, None]
    assert out[1] == [False, False, False, "mtia:0"]
    assert out[2] is False
    assert out[3] == [["a1", "a2", "b1"], True, 1.0]
    assert out[4] == "Both events must be created with argument 'enable_timing=True'."
    assert out[5] == ["duck", True]


def test_device_guard_reentered_restores_each_entry(subprocess_python):
    # The same mtia.device re-entered while entered: each exit restores the device of its own entry (as
    # accel.cuda.device and device_interface.DeviceGuard do); a failed entry changes nothing.
    out = run(subprocess_python, """
        mtia.register_backend(FakeRuntime(n=3))
        res = []
        mtia.set_device(2)
        g = mtia.device(1)
        with g:
            mtia.set_device(0)
            with g:
                res.append([mtia.current_device(), g.prev_idx])
            res.append([mtia.current_device(), g.prev_idx])
        res.append([mtia.current_device(), g.prev_idx])
        bad = mtia.device(5)
        try:
            bad.__enter__()
        except ValueError as e:
            res.append(["ValueError", bad.prev_idx, mtia.current_device()])
        print(json.dumps(res))
    """)
    assert out == [[1, 0], [0, 2], [2, 2], ["ValueError", -1, 2]]


def test_event_recorded_on_another_device_raises_runtime_error(subprocess_python):
    # torch's TORCH_CHECK (a RuntimeError), the same type and text as accel.cuda.Event.record
    out = run(subprocess_python, """
        mtia.register_backend(FakeRuntime(n=3))
        e = mtia.Event()
        e.record(mtia.Stream(1))
        try:
            e.record(mtia.Stream(2))
        except Exception as exc:
            print(json.dumps([type(exc).__name__, str(exc), e.device.index]))
    """)
    assert out == ["RuntimeError", "Event device 1 does not match recording stream's device 2.", 1]


def test_bad_stream_and_event_arguments_raise_type_error(subprocess_python):
    # like accel.cuda: a TypeError naming the value, not an AttributeError from inside
    out = run(subprocess_python, """
        mtia.register_backend(FakeRuntime(n=3))
        e, s = mtia.Event(), mtia.Stream()
        res = []
        for f in (lambda: e.record("x"), lambda: e.wait(3), lambda: s.wait_stream(3), lambda: e.elapsed_time(3)):
            try:
                f()
                res.append(None)
            except Exception as exc:
                res.append([type(exc).__name__, str(exc)])
        res.append(e.device)
        print(json.dumps(res))
    """)
    assert out == [["TypeError", "expected an accel.mtia.Stream, got str: 'x'"],
                   ["TypeError", "expected an accel.mtia.Stream, got int: 3"],
                   ["TypeError", "expected an accel.mtia.Stream, got int: 3"],
                   ["TypeError", "expected an accel.mtia.Event, got int: 3"], None]


def test_device_objects_compare_hash_and_print_like_torch_device():
    """accel.mtia's and accel.cuda's device objects: equal to their own type's object and string of the
    same index, never to the other type's, hashed like that string."""
    from accel._stream_common import CudaDevice
    from accel.mtia import MtiaDevice

    m, c = MtiaDevice(1), CudaDevice(1)
    assert (str(m), repr(m), m.type, m.__index__()) == ("mtia:1", "device(type='mtia', index=1)", "mtia", 1)
    assert (str(c), repr(c), c.type, c.__index__()) == ("cuda:1", "device(type='cuda', index=1)", "cuda", 1)
    assert m == MtiaDevice(1) and m == "mtia:1" and hash(m) == hash("mtia:1")
    assert m != c and c != m and m != "cuda:1" and m != MtiaDevice(0)
    assert m != 1 and c != 1 and m != 1.0 and c != True  # noqa: E712 - ints are not devices
    assert {m, c, MtiaDevice(1), CudaDevice(1)} == {m, c}
