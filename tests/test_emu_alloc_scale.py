"""The emulator's allocation table and pool at scale (issue 22), through both twins' raw bindings.

Many live buffers (pool and cudaMalloc ones side by side), lookups of bases, interior and end pointers,
frees in random order and across streams, double and interior frees refused, and the pool's documented
choices kept: the smallest free block that fits and is at most twice the rounded size (the one returned
last among equal sizes), trim releasing the block returned last first, the release threshold applied
when a block comes back.
"""
import importlib.util
import pathlib
import random

import numpy as np
import pytest

from accel.errors import CudaError

pytestmark = pytest.mark.emu_only

_spec = importlib.util.spec_from_file_location("memory_fixtures", pathlib.Path(__file__).with_name("memory_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
rt, emu = _fx.rt, _fx.emu
RESERVED, USED = _fx.RESERVED, _fx.USED
THRESHOLD = 4           # cudaMemPoolAttrReleaseThreshold
DEVICE, HOST = 2, 1     # cudaPointerAttributes.type


@pytest.fixture
def pool(rt):
    """Device 0's pool with an empty free list, its threshold set to keep everything; restored after."""
    rt.cudaSetDevice(0)
    rt.cudaDeviceSynchronize()
    p = rt.cudaDeviceGetDefaultMemPool(0)
    saved = rt.cudaMemPoolGetAttribute(p, THRESHOLD)
    rt.cudaMemPoolSetAttribute(p, THRESHOLD, 2**64 - 1)
    rt.cudaMemPoolTrimTo(p, 0)
    yield p
    rt.cudaDeviceSynchronize()
    rt.cudaMemPoolSetAttribute(p, THRESHOLD, saved)
    rt.cudaMemPoolTrimTo(p, 0)


def _code(fn, *args):
    with pytest.raises(CudaError) as info:
        fn(*args)
    return info.value.code


def _kind(rt, p):
    return rt.cudaPointerGetAttributes(p)[0]


def test_many_live_buffers_lookups_and_random_frees(rt, emu, pool):
    used0 = rt.cudaMemPoolGetAttribute(pool, USED)
    rnd = random.Random(22)
    live0 = emu.accelEmuLiveAllocations()
    bufs = []               # (ptr, size, via cudaMalloc)
    for i in range(6000):
        n = rnd.choice([1, 100, 512, 513, 4096, 10000, 70000])
        if i % 7 == 0:
            bufs.append((rt.cudaMalloc(n), n, True))
        else:
            bufs.append((rt.cudaMallocAsync(n, 0), n, False))
    assert emu.accelEmuLiveAllocations() == live0 + len(bufs)
    starts = {p for p, _, _ in bufs}
    assert len(starts) == len(bufs)
    ends = sorted((p, p + n) for p, n, _ in bufs)
    assert all(a[1] <= b[0] for a, b in zip(ends, ends[1:])), "two live allocations overlap"
    for p, n, _ in rnd.sample(bufs, 1500):
        assert _kind(rt, p) == DEVICE
        assert _kind(rt, p + n - 1) == DEVICE                       # the last byte: inside
        assert rt.cudaPointerGetAttributes(p + n // 2)[1] == 0      # an interior pointer: device 0
        if p + n not in starts:                                     # one past the end: not this buffer's
            assert _kind(rt, p + n) != DEVICE or any(s <= p + n < e for s, e in ends)
    # an interior pointer is not an allocation: freeing it fails and changes nothing
    p, n, malloc = next(b for b in bufs if b[1] > 1)
    assert _code(rt.cudaFree if malloc else (lambda q: rt.cudaFreeAsync(q, 0)), p + 1) == 1
    assert emu.accelEmuLiveAllocations() == live0 + len(bufs)
    # bytes stay each buffer's own: a pattern per buffer, read back after every buffer got its own
    sample = rnd.sample(bufs, 200)
    for k, (p, n, _) in enumerate(sample):
        rt.cudaMemsetAsync(p, k % 251, n, 0)
    rt.cudaStreamSynchronize(0)
    for k, (p, n, _) in enumerate(sample):
        out = np.empty(n, np.uint8)
        rt.cudaMemcpyAsync(out.ctypes.data, p, n, 2, 0)
        rt.cudaStreamSynchronize(0)
        assert (out == k % 251).all()
    rnd.shuffle(bufs)
    for i, (p, n, malloc) in enumerate(bufs):
        if malloc:
            rt.cudaFree(p)
        else:
            rt.cudaFreeAsync(p, 0)
        if i % 997 == 0:                    # a freed pointer is no allocation any more
            assert _kind(rt, p) != DEVICE
            assert _code(rt.cudaFree if malloc else (lambda q: rt.cudaFreeAsync(q, 0)), p) == 1
    rt.cudaStreamSynchronize(0)
    assert emu.accelEmuLiveAllocations() == live0
    assert rt.cudaMemPoolGetAttribute(pool, USED) == used0


def test_interleaved_alloc_free_across_streams(rt, emu, pool):
    used0 = rt.cudaMemPoolGetAttribute(pool, USED)
    rnd = random.Random(7)
    live0 = emu.accelEmuLiveAllocations()
    streams = [0] + [rt.cudaStreamCreateWithPriority(1, 0) for _ in range(3)]
    try:
        held = []
        for step in range(8000):
            if held and (rnd.random() < 0.45 or len(held) > 3000):
                p, n, s = held.pop(rnd.randrange(len(held)))
                rt.cudaFreeAsync(p, rnd.choice(streams))         # freed on any stream
            else:
                n = rnd.choice([8, 512, 1024, 1500, 4096, 9000])
                s = rnd.choice(streams)
                p = rt.cudaMallocAsync(n, s)
                rt.cudaMemsetAsync(p, step % 256, n, s)
                held.append((p, n, s))
        assert emu.accelEmuLiveAllocations() == live0 + len(held)
        for p, n, s in held:
            rt.cudaStreamSynchronize(s)
            assert _kind(rt, p + n - 1) == DEVICE
        for p, n, s in held:
            rt.cudaFreeAsync(p, s)
        rt.cudaDeviceSynchronize()
        assert emu.accelEmuLiveAllocations() == live0
        assert rt.cudaMemPoolGetAttribute(pool, USED) == used0
    finally:
        for s in streams[1:]:
            rt.cudaStreamDestroy(s)


def _free_now(rt, *ptrs):
    for p in ptrs:
        rt.cudaFreeAsync(p, 0)
    rt.cudaStreamSynchronize(0)


def test_pool_best_fit_smallest_within_twice(rt, pool):
    a, b, c = rt.cudaMallocAsync(1024, 0), rt.cudaMallocAsync(4096, 0), rt.cudaMallocAsync(16384, 0)
    _free_now(rt, c, a, b)
    reserved = rt.cudaMemPoolGetAttribute(pool, RESERVED)
    assert rt.cudaMallocAsync(3000, 0) == b          # 3072 rounded: the 4096 block, not the 16384 one
    assert rt.cudaMallocAsync(600, 0) == a           # 1024 rounded: the 1024 block
    d = rt.cudaMallocAsync(5000, 0)                  # 5120: 16384 is more than twice that: new memory
    assert d not in (a, b, c)
    assert rt.cudaMemPoolGetAttribute(pool, RESERVED) == reserved + 5120
    assert rt.cudaMallocAsync(8192, 0) == c          # 16384 is exactly twice: it fits
    _free_now(rt, a, b, c, d)


def test_pool_equal_sizes_last_returned_first(rt, pool):
    """Among free blocks of the best size, the one returned last (its memory is the most likely cached)."""
    ps = [rt.cudaMallocAsync(2048, 0) for _ in range(5)]
    order = [ps[3], ps[0], ps[4], ps[1], ps[2]]
    _free_now(rt, *order)
    again = [rt.cudaMallocAsync(2000, 0) for _ in range(5)]
    assert again == order[::-1]
    _free_now(rt, *again)


def test_pool_trim_releases_last_returned_first(rt, pool):
    used0 = rt.cudaMemPoolGetAttribute(pool, USED)
    sizes = [512, 8192, 1024, 65536, 2048]
    ps = [rt.cudaMallocAsync(n, 0) for n in sizes]
    base = rt.cudaMemPoolGetAttribute(pool, RESERVED) - sum(sizes)
    _free_now(rt, *ps)                               # returned in this order: 2048 is the last
    rt.cudaMemPoolTrimTo(pool, base + sum(sizes) - 1)
    assert rt.cudaMemPoolGetAttribute(pool, RESERVED) == base + sum(sizes) - 2048
    rt.cudaMemPoolTrimTo(pool, base + 512 + 8192 + 1024)   # 65536 goes, then the rest is within
    assert rt.cudaMemPoolGetAttribute(pool, RESERVED) == base + 512 + 8192 + 1024
    assert rt.cudaMallocAsync(1024, 0) == ps[2]       # what is left is still handed out
    assert rt.cudaMallocAsync(8000, 0) == ps[1]
    assert _kind(rt, ps[3]) != DEVICE                 # trimmed memory is no device memory
    _free_now(rt, ps[2], ps[1])
    rt.cudaMemPoolTrimTo(pool, 0)
    assert rt.cudaMemPoolGetAttribute(pool, RESERVED) == base
    assert rt.cudaMemPoolGetAttribute(pool, USED) == used0


def test_pool_release_threshold_on_return(rt, pool):
    a, b, c = (rt.cudaMallocAsync(n, 0) for n in (4096, 8192, 16384))
    base = rt.cudaMemPoolGetAttribute(pool, RESERVED) - 28672
    rt.cudaMemPoolSetAttribute(pool, THRESHOLD, base + 24576)
    _free_now(rt, a)                                  # 28672 reserved > threshold: a goes at once
    assert rt.cudaMemPoolGetAttribute(pool, RESERVED) == base + 24576
    _free_now(rt, b)                                  # 24576 <= threshold: b stays
    assert rt.cudaMemPoolGetAttribute(pool, RESERVED) == base + 24576
    assert rt.cudaMallocAsync(8192, 0) == b
    _free_now(rt, b)
    rt.cudaMemPoolSetAttribute(pool, THRESHOLD, 0)
    _free_now(rt, c)                                  # the block returned last goes first: c, then b
    assert rt.cudaMemPoolGetAttribute(pool, RESERVED) == base
    assert _kind(rt, c) != DEVICE


def test_reuse_after_trim_lookups_stay_exact(rt, pool):
    """Blocks leave and re-enter the pool many times; a pointer is device memory exactly while it is
    handed out."""
    rnd = random.Random(3)
    held = {}
    for step in range(3000):
        if held and rnd.random() < 0.5:
            p = rnd.choice(list(held))
            n = held.pop(p)
            _free_now(rt, p)
            assert _kind(rt, p) != DEVICE and _kind(rt, p + n - 1) != DEVICE
        else:
            n = rnd.choice([512, 1024, 3000, 4096])
            p = rt.cudaMallocAsync(n, 0)
            assert p not in held
            held[p] = n
            assert _kind(rt, p) == DEVICE and _kind(rt, p + n - 1) == DEVICE
        if step % 500 == 0:
            rt.cudaMemPoolTrimTo(pool, 0)
    for p, n in held.items():
        assert _kind(rt, p + n // 2) == DEVICE
    _free_now(rt, *held)


def test_host_and_device_lookups_side_by_side(rt, pool):
    h = rt.cudaHostAlloc(8192, 0)
    d = rt.cudaMallocAsync(8192, 0)
    try:
        assert _kind(rt, h + 100) == HOST
        assert _kind(rt, d + 100) == DEVICE
    finally:
        rt.cudaFreeHost(h)
        _free_now(rt, d)
