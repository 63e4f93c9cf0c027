"""SPEC §5 reliability on both twins: many threads of mixed operations, and create/drop cycles that must
leave the emulator's handle counts and the process memory flat.

Sizes scale with ACCEL_STRESS (default 1; the SPEC's full 16 threads x 1e5 operations and 1e6 cycles is
ACCEL_STRESS=50 for the threads and ACCEL_STRESS=10 for the cycles).
"""
import ctypes
import gc
import os
import random
import resource
import threading

import pytest

from accel import _lib

SCALE = max(1, int(os.environ.get("ACCEL_STRESS", "1")))
NDEV = int(os.environ["ACCEL_TEST_DEVICE_COUNT"])   # the runtime's devices (conftest: 4 on the emulator)


@pytest.fixture
def emu():
    if os.environ.get("ACCEL_CUDART") != "emu":
        pytest.skip("needs the emulated runtime")
    cdll = _lib.cudart().cdll
    cdll.accelEmuLiveAllocations.restype = ctypes.c_size_t
    return cdll


@pytest.fixture
def twin_mods(twin, a_device):
    from accel.cuda import _stream_api
    sm, dev, ir = twin.mod("_stream"), twin.mod("_device"), twin.mod("_ir")
    sm.set_index_parser(_stream_api._parse_device)
    yield sm, dev, ir
    for d in range(NDEV):
        sm.set_stream(sm.default_stream(d))
    dev.set_device(0)


def _rss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_threads_mixed_operations(twin_mods, emu):
    """16 threads of random device guards, stream contexts, pool streams, events and host functions:
    every thread's view of its current device and stream stays its own; nothing deadlocks or leaks."""
    sm, dev, _ = twin_mods
    ops = 2000 * SCALE if twin_mods[0].__name__.startswith("accel._native") else 400 * SCALE
    live = (emu.accelEmuLiveStreams(), emu.accelEmuLiveEvents())
    pool = [sm.Stream(device=d) for d in range(NDEV) for _ in range(2)]
    errors = []
    hits = []

    def work(seed):
        rng = random.Random(seed)
        try:
            for _ in range(ops):
                op = rng.randrange(6)
                d = rng.randrange(NDEV)
                if op == 0:
                    with dev.device(d):
                        assert dev.current_device() == d
                elif op == 1:
                    s = rng.choice(pool)
                    before = dev.current_device()
                    with sm.stream(s):
                        assert sm.current_stream() == s and dev.current_device() == s.device.index
                    assert dev.current_device() == before
                elif op == 2:
                    e = sm.Event()
                    e.record(rng.choice(pool))
                    e.query()
                elif op == 3:
                    s = rng.choice(pool)
                    s.launch_host_func(lambda: hits.append(1))
                elif op == 4:
                    a, b = rng.choice(pool), rng.choice(pool)
                    a.wait_stream(b)
                else:
                    assert sm.current_stream(d) == sm.default_stream(d)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "deadlock"
    for s in pool:
        s.synchronize()
    assert errors == []
    assert len(hits) > ops // 10, "host functions did not run"
    del pool
    gc.collect()
    # pool streams live for the process (like torch); events must all be gone
    assert emu.accelEmuLiveEvents() == live[1]


@pytest.mark.devices(2)
def test_event_create_drop_cycles_are_flat(twin_mods, emu):
    sm, _, _ = twin_mods
    n = 100_000 * SCALE
    s = sm.Stream(device=1)

    def cycle(k):
        for _ in range(k):
            e = sm.Event()
            e.record(s)
            e.query()

    cycle(2000)  # warm up caches and allocators
    gc.collect()
    events, rss = emu.accelEmuLiveEvents(), _rss_kib()
    cycle(n)
    gc.collect()
    s.synchronize()
    assert emu.accelEmuLiveEvents() == events
    assert _rss_kib() - rss < 32 * 1024, "memory grew by more than 32 MiB"


def test_external_stream_create_drop_cycles_are_flat(twin_mods, emu):
    sm, _, _ = twin_mods
    rt = _lib.cudart()
    n = 20_000 * SCALE
    streams = emu.accelEmuLiveStreams()
    create = rt.cdll.cudaStreamCreateWithFlags
    create.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_uint]
    destroy = rt.cdll.cudaStreamDestroy
    destroy.argtypes = [ctypes.c_size_t]
    h = ctypes.c_size_t()
    rss = _rss_kib()
    for _ in range(n):
        assert create(h, 1) == 0
        x = sm.ExternalStream(h.value, device=0)
        x.query()
        del x
        assert destroy(h.value) == 0
    gc.collect()
    assert emu.accelEmuLiveStreams() == streams
    assert _rss_kib() - rss < 32 * 1024


def test_node_create_drop_cycles_are_flat(twin_mods):
    _, _, ir = twin_mods
    n = 100_000 * SCALE
    shape = ir.Shape(6, [2, 3])
    leaf = ir.Output(ir.device_data(shape, 0))

    def cycle(k):
        for _ in range(k):
            node = ir.Node("aten::mul", [leaf, leaf], [shape])
            ir.Output(node).hash

    cycle(2000)
    gc.collect()
    rss = _rss_kib()
    cycle(n)
    gc.collect()
    assert _rss_kib() - rss < 32 * 1024
