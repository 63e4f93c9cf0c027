"""fork() while another thread is inside accel.lazy: the child can trace, run graphs and draw random numbers
(no lock inherited held by a thread that does not exist there), and the parent's threads carry on; a fork
waits for a graph run in progress, so the child never sees one half done.  Both twins."""
import re

import pytest

CHECKS = r'''
import os, threading, time

import numpy as np
import accel.lazy as L
from accel.lazy import tensors as _t
from accel.lazy import metrics as _metrics
from accel.lazy import executor as _executor


def child_ok(body, timeout=20):
    """Fork; the child runs body() and exits 0 on success, 3 on an exception; the parent waits up to timeout s
    (a hung child is killed: a failure)."""
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            body()
            code = 0
        finally:
            os._exit(code)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "hung"


def work():
    x = L.tensor(np.arange(6, dtype=np.float32))
    y = (x * 2 + 1).sum()
    L.mark_step()
    assert float(y.numpy()) == 36.0
    g = L.Generator().manual_seed(3)
    r = L.rand(4, generator=g)
    L.mark_step()
    assert r.numpy().shape == (4,)


def holding(lock, seconds):
    """A thread that takes ``lock`` and keeps it ``seconds``; returns (thread, an event set once it holds it)."""
    held = threading.Event()

    def run():
        with lock:
            held.set()
            time.sleep(seconds)
    t = threading.Thread(target=run)
    t.start()
    held.wait()
    return t


def check_fork_while_a_thread_holds_the_device_lock():
    t = holding(_t.device_lock, 0.3)          # as a mark_step in progress
    start = time.monotonic()
    assert child_ok(work) == 0
    assert time.monotonic() - start >= 0.2    # the fork waited for the graph run to finish
    t.join()
    work()


def check_fork_while_a_thread_holds_the_leaf_locks():
    import accel
    leaves = [_t._data_lock, _metrics._lock, _executor.computation_cache()._lock, L.default_generator.lock]
    if accel.backend == "python":          # the python twin's IR and hash modules' own locks
        from accel._python import _hash, _ir
        leaves += [_ir._lock, _ir._link_lock, _hash._idx_lock]
    for lock in leaves:
        t = holding(lock, 0.3)
        assert child_ok(work) == 0, lock
        t.join()
    work()


def check_fork_while_a_thread_draws_from_a_generator():
    g = L.Generator().manual_seed(1)
    t = holding(g.lock, 0.3)
    def body():
        r = L.rand(3, generator=g)
        L.mark_step()
        assert r.numpy().shape == (3,)
        assert g.get_state().size == 5056
    assert child_ok(body) == 0
    t.join()


def check_fork_while_threads_run_graphs():
    stop = threading.Event()
    errors = []

    def loop(k):
        try:
            x = L.tensor(np.full(8, k, np.float32))
            while not stop.is_set():
                x = x + 1
                L.mark_step()
                _ = L.rand(2)
        except Exception as e:
            errors.append(e)
    threads = [threading.Thread(target=loop, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(15):
            assert child_ok(work) == 0
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
'''

NAMES = re.findall(r"^def (check_\w+)\(", CHECKS, re.M)


@pytest.fixture(scope="module", params=["native", "python"])
def results(request, lazy_checks):
    return lazy_checks(CHECKS, request.param)


@pytest.mark.parametrize("name", NAMES)
def test_lazy_fork(results, name):
    assert results[name] == "ok", results[name]
