"""The driver API's memory and contexts in the libcuda.so.1 stand-in (issue 18): allocations, pools, copies,
sets, pinned and managed memory, IPC handles, pointer attributes, created contexts, limits, reset, and the
module / launch entry points that say the emulator runs no kernels.  Each entry point: what it does, its
argument checks (NULL, bad handles, out-of-range sizes give the real driver's error, never a crash) and
that a refused call changes nothing.  Fault injection by name is in test_emu_driver_faults.py.

The stand-ins run in fresh interpreters (see test_standin.py for why).
"""
import importlib.util
import json
import pathlib

import pytest

from accel import emu

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

pytestmark = _fx.needs_standins

OK, INVALID_VALUE, OOM, INVALID_DEVICE, INVALID_CONTEXT = 0, 1, 2, 101, 201
UNSUPPORTED_LIMIT, NOT_FOUND, ALREADY_REGISTERED, NOT_REGISTERED, NOT_SUPPORTED = 215, 500, 712, 713, 801

# Both stand-ins loaded as accel.emu.activate does; typed driver functions (a CUdeviceptr is 64 bits wide);
# device 0's primary context current; helpers for the tests below.
PRELUDE = f"""
import ctypes as c, json, os, sys
rt = c.CDLL({emu.cudart_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = c.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
rt.accelEmuSetFail.argtypes = [c.c_char_p]
VP, SZ, U, I, D = c.c_void_p, c.c_size_t, c.c_uint, c.c_int, c.c_uint64
P = c.POINTER
class Handle(c.Structure):
    _fields_ = [("reserved", c.c_char * 64)]
class Props(c.Structure):
    _fields_ = [("allocType", I), ("handleTypes", I), ("locType", I), ("locId", I), ("win32", VP),
                ("maxSize", SZ), ("usage", c.c_ushort), ("reserved", c.c_char * 54)]
class Access(c.Structure):
    _fields_ = [("type", I), ("id", I), ("flags", I)]
class Location(c.Structure):
    _fields_ = [("type", I), ("id", I)]
class Copy2D(c.Structure):
    _fields_ = [("srcX", SZ), ("srcY", SZ), ("srcType", I), ("srcHost", VP), ("srcDevice", D), ("srcArray", VP),
                ("srcPitch", SZ), ("dstX", SZ), ("dstY", SZ), ("dstType", I), ("dstHost", VP), ("dstDevice", D),
                ("dstArray", VP), ("dstPitch", SZ), ("width", SZ), ("height", SZ)]
SIGS = dict(
    cuMemAlloc_v2=[P(D), SZ], cuMemFree_v2=[D], cuMemAllocPitch_v2=[P(D), P(SZ), SZ, SZ, U],
    cuMemAllocManaged=[P(D), SZ, U], cuMemAllocAsync=[P(D), SZ, VP], cuMemFreeAsync=[D, VP],
    cuMemAllocFromPoolAsync=[P(D), SZ, VP, VP], cuMemGetAddressRange_v2=[P(D), P(SZ), D],
    cuMemPoolCreate=[P(VP), P(Props)], cuMemPoolDestroy=[VP], cuMemPoolGetAttribute=[VP, I, VP],
    cuMemPoolSetAttribute=[VP, I, VP], cuMemPoolTrimTo=[VP, SZ], cuMemPoolSetAccess=[VP, P(Access), SZ],
    cuMemPoolGetAccess=[P(I), VP, P(Location)], cuDeviceGetMemPool=[P(VP), I], cuDeviceGetDefaultMemPool=[P(VP), I],
    cuDeviceSetMemPool=[I, VP], cuMemGetMemPool=[P(VP), P(Location), I], cuMemSetMemPool=[P(Location), I, VP],
    cuMemGetDefaultMemPool=[P(VP), P(Location), I],
    cuMemcpy=[D, D, SZ], cuMemcpyAsync=[D, D, SZ, VP], cuMemcpyHtoD_v2=[D, VP, SZ],
    cuMemcpyDtoH_v2=[VP, D, SZ], cuMemcpyDtoD_v2=[D, D, SZ], cuMemcpyHtoDAsync_v2=[D, VP, SZ, VP],
    cuMemcpyDtoHAsync_v2=[VP, D, SZ, VP], cuMemcpyDtoDAsync_v2=[D, D, SZ, VP], cuMemcpyPeer=[D, VP, D, VP, SZ],
    cuMemcpyPeerAsync=[D, VP, D, VP, SZ, VP], cuMemcpy2D_v2=[P(Copy2D)], cuMemcpy2DAsync_v2=[P(Copy2D), VP],
    cuMemcpy2DUnaligned_v2=[P(Copy2D)], cuMemsetD8_v2=[D, c.c_ubyte, SZ], cuMemsetD16_v2=[D, c.c_ushort, SZ],
    cuMemsetD32_v2=[D, U, SZ], cuMemsetD8Async=[D, c.c_ubyte, SZ, VP], cuMemsetD16Async=[D, c.c_ushort, SZ, VP],
    cuMemsetD32Async=[D, U, SZ, VP], cuMemHostAlloc=[P(VP), SZ, U], cuMemAllocHost_v2=[P(VP), SZ],
    cuMemFreeHost=[VP], cuMemHostRegister_v2=[VP, SZ, U], cuMemHostUnregister=[VP],
    cuMemHostGetDevicePointer_v2=[P(D), VP, U], cuIpcGetMemHandle=[P(Handle), D],
    cuIpcOpenMemHandle_v2=[P(D), Handle, U], cuIpcCloseMemHandle=[D], cuPointerGetAttribute=[VP, I, D],
    cuPointerGetAttributes=[U, P(I), P(VP), D], cuMemGetInfo_v2=[P(SZ), P(SZ)],
    cuCtxCreate_v2=[P(VP), U, I], cuCtxCreate_v3=[P(VP), VP, I, U, I], cuCtxCreate_v4=[P(VP), VP, U, I],
    cuCtxDestroy_v2=[VP], cuCtxPushCurrent_v2=[VP], cuCtxPopCurrent_v2=[P(VP)], cuCtxSetCurrent=[VP],
    cuCtxGetCurrent=[P(VP)], cuCtxGetDevice=[P(I)], cuCtxGetApiVersion=[VP, P(U)], cuCtxGetId=[VP, P(c.c_ulonglong)],
    cuCtxSetLimit=[I, SZ], cuCtxGetLimit=[P(SZ), I], cuDevicePrimaryCtxRetain=[P(VP), I],
    cuDevicePrimaryCtxReset_v2=[I], cuCtxGetFlags=[P(U)],
    cuMemAdvise_v2=[D, SZ, I, Location], cuMemAdvise=[D, SZ, I, I], cuMemRangeGetAttribute=[VP, SZ, I, D, SZ],
    cuMemRangeGetAttributes=[P(VP), P(SZ), P(I), SZ, D, SZ], cuMemPrefetchAsync=[D, SZ, I, VP],
    cuMemPrefetchAsync_v2=[D, SZ, Location, U, VP], cuMemPrefetchBatchAsync=[P(D), P(SZ), SZ, P(Location), P(SZ), SZ,
                                                                              c.c_ulonglong, VP],
    cuMemDiscardBatchAsync=[P(D), P(SZ), SZ, c.c_ulonglong, VP],
    cuMemDiscardAndPrefetchBatchAsync=[P(D), P(SZ), SZ, P(Location), P(SZ), SZ, c.c_ulonglong, VP],
)
for name, args in SIGS.items():
    getattr(cu, name).argtypes = args
R = c.byref
ctx0 = VP()
assert cu.cuInit(0) == 0 and cu.cuDevicePrimaryCtxRetain(R(ctx0), 0) == 0 and cu.cuCtxSetCurrent(ctx0) == 0
def alloc(n=4096):
    d = D(); assert cu.cuMemAlloc_v2(R(d), n) == 0; return d.value
def free_bytes():
    f, t = SZ(), SZ(); assert cu.cuMemGetInfo_v2(R(f), R(t)) == 0; return f.value
def read(d, n):
    b = c.create_string_buffer(n); assert cu.cuMemcpyDtoH_v2(b, d, n) == 0; return b.raw
def attr(p, a, kind=D):
    v = kind(); r = cu.cuPointerGetAttribute(R(v), a, p); return [r, v.value]
def props(dev=0):
    return Props(1, 0, 1, dev)
def out(x):
    print(json.dumps(x))
"""

_run, _json = _fx.runners(PRELUDE)
# The stand-ins loaded and nothing called: the emulator is not initialised yet.
_run_bare, _json_bare = _fx.runners(f"""
import ctypes as c, json, os
rt = c.CDLL({emu.cudart_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = c.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
""")


def test_device_memory_copies_and_sets(subprocess_python):
    got = _json(subprocess_python, """
free0 = free_bytes()
a, b = alloc(), alloc()
r = {"accounted": free0 - free_bytes(), "distinct": a != b}
src = c.create_string_buffer(bytes(range(256)) * 16, 4096)
assert cu.cuMemcpyHtoD_v2(a, src, 4096) == 0 and cu.cuMemcpyDtoD_v2(b, a, 4096) == 0
r["dtod"] = read(b, 4096) == src.raw
assert cu.cuMemsetD8_v2(b, 0x11, 8) == 0 and cu.cuMemsetD16_v2(b + 8, 0x2233, 4) == 0
assert cu.cuMemsetD32_v2(b + 16, 0x44556677, 2) == 0
r["sets"] = read(b, 24).hex()
s = VP(); assert rt.cudaStreamCreate(R(s)) == 0
dst = c.create_string_buffer(4096)
assert cu.cuMemsetD32Async(a, 0xA1B2C3D4, 1024, s) == 0 and cu.cuMemcpyDtoHAsync_v2(dst, a, 4096, s) == 0
assert cu.cuMemsetD8Async(b, 5, 4096, s) == 0 and cu.cuMemcpyDtoDAsync_v2(a, b, 16, s) == 0
assert cu.cuMemcpyHtoDAsync_v2(b, src, 8, s) == 0 and cu.cuMemsetD16Async(a + 16, 0x0102, 2, s) == 0
assert rt.cudaStreamSynchronize(s) == 0
r["async"] = [dst.raw[:8].hex(), read(a, 24).hex(), read(b, 9).hex()]
assert cu.cuMemcpy(b, c.addressof(src) + 100, 4) == 0 and cu.cuMemcpyAsync(a, b, 4, s) == 0
assert rt.cudaStreamSynchronize(s) == 0
r["unified"] = read(a, 4).hex()
base, size = D(), SZ()
assert cu.cuMemGetAddressRange_v2(R(base), R(size), a + 100) == 0
r["range"] = [base.value == a, size.value]
assert cu.cuMemFree_v2(a) == 0 and cu.cuMemFree_v2(b) == 0
r["freed"] = free_bytes() == free0
out(r)
""")
    assert got == {"accounted": 8192, "distinct": True, "dtod": True,
                   "sets": "1111111111111111" + "33223322332233227766554477665544", "async": [
                       "d4c3b2a1d4c3b2a1", "05050505050505050505050505050505" + "02010201d4c3b2a1", "000102030405060705"],
                   "unified": "64656667", "range": [True, 4096], "freed": True}


def test_async_copies_with_pageable_memory_follow_cuda(subprocess_python):
    """cuMemcpy*Async with pageable host memory as CUDA's "API synchronization behavior" says: a copy to
    pageable memory has landed when the call returns; one from pageable memory has consumed its source
    (staged) and still runs in stream order; device-to-device and pinned copies stay queued.  (Before:
    all queued, so a late copy read a reused buffer or wrote into freed memory.)"""
    got = _json(subprocess_python, """
import threading
HOSTFN = c.CFUNCTYPE(None, VP)
gate = threading.Event()
hold = HOSTFN(lambda _: gate.wait(10))
rt.cudaLaunchHostFunc.argtypes = [VP, HOSTFN, VP]
s = VP(); assert rt.cudaStreamCreate(R(s)) == 0
def held():
    gate.clear(); assert rt.cudaLaunchHostFunc(s, hold, None) == 0
def open_soon():
    threading.Timer(0.2, gate.set).start()
a, b = alloc(), alloc()
c.memset(a, 0, 4096); c.memset(b, 0, 4096)
r = {}
held(); assert cu.cuMemsetD8Async(a, 0x5A, 4096, s) == 0
dst = c.create_string_buffer(4096); open_soon()
assert cu.cuMemcpyDtoHAsync_v2(dst, a, 4096, s) == 0
r["dtoh_landed"] = dst.raw == b"\x5a" * 4096
held(); assert cu.cuMemsetD8Async(a, 0x6B, 16, s) == 0
dst = c.create_string_buffer(16); open_soon()
assert cu.cuMemcpyAsync(c.addressof(dst), a, 16, s) == 0            # unified addressing
r["unified_landed"] = dst.raw == b"\x6b" * 16
held()
src = c.create_string_buffer(bytes(range(64)), 64)
assert cu.cuMemcpyHtoDAsync_v2(b, src, 64, s) == 0
assert cu.cuMemcpyAsync(b + 64, c.addressof(src), 8, s) == 0
r["htod_queued"] = c.string_at(b, 72) == bytes(72)
c.memset(src, 0xEE, 64); del src                                  # the caller reuses its buffer
gate.set(); assert rt.cudaStreamSynchronize(s) == 0
r["htod_staged"] = c.string_at(b, 72) == bytes(range(64)) + bytes(range(8))
held(); assert cu.cuMemsetD8Async(a, 0x21, 256, s) == 0
back = c.create_string_buffer(64)
down = Copy2D(0, 0, 2, None, a, None, 32, 0, 0, 1, c.addressof(back), 0, None, 16, 8, 4)
open_soon(); assert cu.cuMemcpy2DAsync_v2(R(down), s) == 0
r["2d_landed"] = [back.raw[16 * i:16 * i + 8] == b"\x21" * 8 for i in range(4)]
h = VP(); assert cu.cuMemHostAlloc(R(h), 64, 0) == 0
c.memset(h, 0, 64)
held()
assert cu.cuMemcpyDtoDAsync_v2(b, a, 64, s) == 0 and cu.cuMemcpyDtoHAsync_v2(h, a, 64, s) == 0
r["still_queued"] = [c.string_at(b, 4) == bytes(range(4)), c.string_at(h.value, 4) == bytes(4)]
gate.set(); assert rt.cudaStreamSynchronize(s) == 0
r["ran"] = [c.string_at(b, 4).hex(), c.string_at(h.value, 4).hex()]
assert cu.cuMemFreeHost(h) == 0 and cu.cuMemFree_v2(a) == 0 and cu.cuMemFree_v2(b) == 0
out(r)
""")
    assert got == {"dtoh_landed": True, "unified_landed": True, "htod_queued": True, "htod_staged": True,
                   "2d_landed": [True] * 4, "still_queued": [True, True], "ran": ["21212121", "21212121"]}


def test_pitch_and_2d_copies(subprocess_python):
    got = _json(subprocess_python, """
d, pitch = D(), SZ()
assert cu.cuMemAllocPitch_v2(R(d), R(pitch), 100, 4, 4) == 0
host = c.create_string_buffer(bytes(range(64)) * 4, 256)
back = c.create_string_buffer(256)
up = Copy2D(0, 0, 1, c.addressof(host), 0, None, 64, 0, 0, 2, None, d.value, None, pitch.value, 16, 4)
down = Copy2D(0, 1, 2, None, d.value, None, pitch.value, 8, 0, 1, c.addressof(back), 0, None, 32, 16, 3)
assert cu.cuMemcpy2D_v2(R(up)) == 0 and cu.cuMemcpy2DUnaligned_v2(R(down)) == 0
s = VP(); assert rt.cudaStreamCreate(R(s)) == 0
assert cu.cuMemcpy2DAsync_v2(R(up), s) == 0 and rt.cudaStreamSynchronize(s) == 0
rows = [back.raw[8 + 32 * i: 24 + 32 * i] == host.raw[64 * (i + 1): 64 * (i + 1) + 16] for i in range(3)]
bad = Copy2D(0, 0, 3, None, 0, None, 64, 0, 0, 2, None, d.value, None, pitch.value, 16, 4)   # an array
past = Copy2D(0, 0, 1, c.addressof(host), 0, None, 64, 0, 0, 2, None, d.value, None, pitch.value, 16, 4096)
narrow = Copy2D(0, 0, 1, c.addressof(host), 0, None, 8, 0, 0, 2, None, d.value, None, pitch.value, 16, 4)
out([pitch.value, rows, cu.cuMemcpy2D_v2(R(bad)), cu.cuMemcpy2D_v2(R(past)), cu.cuMemcpy2D_v2(R(narrow)),
     cu.cuMemcpy2D_v2(None), cu.cuMemAllocPitch_v2(R(d), R(pitch), 100, 3, 3),
     cu.cuMemAllocPitch_v2(R(d), R(pitch), 0, 3, 4), cu.cuMemAllocPitch_v2(R(d), R(pitch), 1 << 62, 1 << 20, 4)])
""")
    assert got == [512, [True, True, True], INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE,
                   INVALID_VALUE, INVALID_VALUE, OOM]


def test_pools_created_current_and_destroyed(subprocess_python):
    got = _json(subprocess_python, """
pool, dflt, cur = VP(), VP(), VP()
assert cu.cuMemPoolCreate(R(pool), R(props(1))) == 0 and cu.cuDeviceGetDefaultMemPool(R(dflt), 1) == 0
s = VP(); assert rt.cudaSetDevice(1) == 0 and rt.cudaStreamCreate(R(s)) == 0 and rt.cudaSetDevice(0) == 0
d = D()
assert cu.cuMemAllocFromPoolAsync(R(d), 1000, pool, s) == 0
used = D(); assert cu.cuMemPoolGetAttribute(pool, 7, R(used)) == 0
r = {"used": used.value, "pool_attr": attr(d.value, 17)[1] == pool.value, "ordinal": attr(d.value, 9, I)}
assert cu.cuMemFreeAsync(d.value, s) == 0 and rt.cudaStreamSynchronize(s) == 0
r["set_other_device"] = cu.cuDeviceSetMemPool(0, pool)
assert cu.cuDeviceSetMemPool(1, pool) == 0 and cu.cuDeviceGetMemPool(R(cur), 1) == 0
r["current"] = cur.value == pool.value
assert cu.cuMemAllocAsync(R(d), 64, s) == 0
r["from_current"] = attr(d.value, 17)[1] == pool.value
assert cu.cuMemFreeAsync(d.value, s) == 0 and rt.cudaStreamSynchronize(s) == 0
flags = I()
r["access"] = [cu.cuMemPoolGetAccess(R(flags), pool, R(Location(1, 0))), flags.value,
               cu.cuMemPoolSetAccess(pool, R(Access(1, 0, 3)), 1),
               cu.cuMemPoolGetAccess(R(flags), pool, R(Location(1, 0))), flags.value,
               cu.cuMemPoolSetAccess(pool, R(Access(1, 1, 0)), 1),       # its own device keeps read-write
               cu.cuMemPoolSetAccess(pool, R(Access(1, 9, 3)), 1), cu.cuMemPoolSetAccess(pool, R(Access(1, 0, 1)), 1)]
thr = D(1 << 20)
r["attrs"] = [cu.cuMemPoolSetAttribute(pool, 4, R(thr)), cu.cuMemPoolSetAttribute(pool, 42, R(thr)),
              cu.cuMemPoolTrimTo(pool, 0), cu.cuMemPoolDestroy(dflt)]
assert cu.cuMemPoolDestroy(pool) == 0
assert cu.cuDeviceGetMemPool(R(cur), 1) == 0
r["after_destroy"] = [cur.value == dflt.value, cu.cuMemPoolDestroy(pool), cu.cuMemPoolGetAttribute(pool, 7, R(used)),
                      cu.cuMemAllocFromPoolAsync(R(d), 64, pool, s), cu.cuDeviceSetMemPool(1, pool)]
got_pool = VP()
r["location"] = [cu.cuMemGetMemPool(R(got_pool), R(Location(1, 1)), 1), got_pool.value == dflt.value,
                 cu.cuMemSetMemPool(R(Location(1, 1)), 1, dflt), cu.cuMemGetMemPool(R(got_pool), R(Location(2, 0)), 1),
                 cu.cuMemGetMemPool(R(got_pool), R(Location(1, 0)), 2), cu.cuMemGetMemPool(R(got_pool), None, 1),
                 cu.cuMemGetMemPool(R(got_pool), R(Location(1, 0)), 3), cu.cuMemGetDefaultMemPool(R(got_pool), R(Location(0, 0)), 2),
                 cu.cuMemGetDefaultMemPool(R(got_pool), R(Location(1, 0)), 1),
                 cu.cuMemGetMemPool(R(got_pool), R(Location(1, 9)), 1), cu.cuMemPoolCreate(R(pool), R(Props(1, 0, 2, 0))),
                 cu.cuMemPoolCreate(R(pool), R(Props(2, 0, 1, 0)))]
r["bad"] = [cu.cuMemPoolCreate(R(pool), R(props(9))), cu.cuMemPoolCreate(R(pool), R(Props(5, 0, 1, 0))),
            cu.cuMemPoolCreate(None, R(props())), cu.cuMemPoolCreate(R(pool), None),
            cu.cuMemPoolCreate(R(pool), R(Props(1, 0, 7, 0))),
            cu.cuDeviceGetMemPool(R(cur), 9), cu.cuDeviceGetMemPool(None, 0), cu.cuMemPoolTrimTo(VP(0x1234), 0),
            cu.cuMemAllocAsync(None, 64, s), cu.cuMemFreeAsync(0x1234, s), cu.cuMemFreeAsync(0, s)]
out(r)
""")
    assert got == {"used": 1024, "pool_attr": True, "ordinal": [OK, 1], "set_other_device": INVALID_VALUE,
                   "current": True, "from_current": True,
                   "access": [OK, 0, OK, OK, 3, INVALID_VALUE, INVALID_DEVICE, INVALID_VALUE],
                   "attrs": [OK, INVALID_VALUE, OK, INVALID_VALUE],
                   "after_destroy": [True, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE],
                   "location": [OK, True, OK, OK, OK, INVALID_VALUE, INVALID_VALUE, OK,
                                OK, INVALID_DEVICE, OK, OK],
                   "bad": [INVALID_DEVICE] + [INVALID_VALUE] * 4 + [INVALID_DEVICE] + [INVALID_VALUE] * 5}


def test_pools_of_managed_memory(subprocess_python):
    # cuda.core's ManagedMemoryResource: the location's managed pool (a device, the host, or none) is made on
    # first use, can be replaced, and gives managed memory; created managed pools likewise
    got = _json(subprocess_python, """
s = VP(); assert rt.cudaStreamCreate(R(s)) == 0
pools = {}
for name, loc in (("dev1", Location(1, 1)), ("host", Location(2, 0)), ("none", Location(0, 0))):
    p, q, dflt = VP(), VP(), VP()
    assert cu.cuMemGetMemPool(R(p), R(loc), 2) == 0 and cu.cuMemGetMemPool(R(q), R(loc), 2) == 0
    assert cu.cuMemGetDefaultMemPool(R(dflt), R(loc), 2) == 0
    pools[name] = [p.value == q.value == dflt.value, p.value]
r = {"distinct": len({v[1] for v in pools.values()}) == 3 and all(v[0] for v in pools.values())}
free0 = free_bytes()
d = D(); assert cu.cuMemAllocFromPoolAsync(R(d), 1000, VP(pools["none"][1]), s) == 0
r["managed"] = [attr(d.value, 8, I), attr(d.value, 9, I), free0 - free_bytes()]
assert cu.cuMemcpyHtoDAsync_v2(d, b"abcd", 4, s) == 0 and rt.cudaStreamSynchronize(s) == 0
r["host_reads"] = c.string_at(d.value, 4).decode()
advice = cu.cuMemAdvise_v2(d, 1000, 1, Location(0, 0))
assert cu.cuMemFreeAsync(d, s) == 0 and rt.cudaStreamSynchronize(s) == 0
created = VP(); assert cu.cuMemPoolCreate(R(created), R(Props(2, 0, 1, 1))) == 0
host_created = VP(); assert cu.cuMemPoolCreate(R(host_created), R(Props(2, 0, 2, 0))) == 0
r["set"] = [advice, cu.cuMemSetMemPool(R(Location(1, 1)), 2, created), cu.cuMemGetMemPool(R(created), R(Location(1, 1)), 2),
            created.value != pools["dev1"][1], cu.cuMemSetMemPool(R(Location(1, 1)), 2, VP(0x1234)),
            cu.cuMemSetMemPool(R(Location(1, 9)), 2, created), cu.cuMemGetMemPool(R(created), R(Location(6, 0)), 2)]
assert cu.cuMemAllocFromPoolAsync(R(d), 64, created, s) == 0
r["created"] = [attr(d.value, 8, I), attr(d.value, 9, I)]
out(r)
""")
    assert got == {"distinct": True, "managed": [[OK, 1], [OK, 0], 1024], "host_reads": "abcd",
                   "set": [OK, OK, OK, True, INVALID_VALUE, INVALID_DEVICE, INVALID_VALUE],
                   "created": [[OK, 1], [OK, 1]]}


def test_pool_memory_is_copied_only_where_its_pool_grants_access(subprocess_python):
    # cuda.core's test_peer_access_basic: a copy run on device 0 (its stream, or the current context for
    # the NULL stream) of device 1's pool memory is CUDA_ERROR_INVALID_VALUE until the pool grants device 0
    # access; cuMemAlloc memory and the pool's own device are not affected; a refused copy writes nothing.
    got = _json(subprocess_python, """
pool = VP(); assert cu.cuMemPoolCreate(R(pool), R(props(1))) == 0
s0, s1 = VP(), VP()
assert rt.cudaStreamCreate(R(s0)) == 0
assert rt.cudaSetDevice(1) == 0 and rt.cudaStreamCreate(R(s1)) == 0 and rt.cudaSetDevice(0) == 0
p1, d1 = D(), VP()
assert cu.cuMemAllocFromPoolAsync(R(p1), 64, pool, s1) == 0
assert rt.cudaSetDevice(1) == 0 and rt.cudaMalloc(R(d1), 64) == 0 and rt.cudaMemset(d1, 1, c.c_size_t(64)) == 0
assert rt.cudaSetDevice(0) == 0
assert cu.cuCtxSetCurrent(ctx0) == 0
assert cu.cuMemsetD8Async(p1, 7, 64, s1) == 0 and rt.cudaStreamSynchronize(s1) == 0
d1 = d1.value
a = alloc(64)
assert cu.cuMemsetD8_v2(a, 1, 64) == 0
host = c.create_string_buffer(64)
def tries():
    return [cu.cuMemcpyAsync(p1, a, 64, s0), cu.cuMemcpyAsync(a, p1, 64, s0), cu.cuMemcpyDtoDAsync_v2(a, d1, 64, s0),
            cu.cuMemcpyDtoH_v2(host, p1, 64), cu.cuMemcpy(a, p1, 0), cu.cuMemcpyAsync(d1, p1, 64, s1),
            cu.cuMemcpy2D_v2(R(Copy2D(0, 0, 2, None, p1.value, None, 64, 0, 0, 1, c.addressof(host), 0, None, 64, 64, 1)))]
r = {"before": tries()}
assert rt.cudaStreamSynchronize(s0) == 0 and rt.cudaStreamSynchronize(s1) == 0
def read1(d, n):           # device 1's pool memory, read on device 1
    b = c.create_string_buffer(n)
    assert cu.cuMemcpyDtoHAsync_v2(b, d, n, s1) == 0 and rt.cudaStreamSynchronize(s1) == 0
    return b.raw
r["untouched"] = [read1(p1.value, 4).hex(), read(a, 4).hex()]
assert cu.cuMemPoolSetAccess(pool, R(Access(1, 0, 3)), 1) == 0
r["granted"] = tries()
assert cu.cuMemPoolSetAccess(pool, R(Access(1, 0, 0)), 1) == 0
r["revoked"] = tries()
out(r)
""")
    refused = [INVALID_VALUE, INVALID_VALUE, OK, INVALID_VALUE, OK, OK, INVALID_VALUE]
    assert got == {"before": refused, "untouched": ["07070707", "01010101"], "granted": [OK] * 7, "revoked": refused}


def test_pinned_and_managed_memory(subprocess_python):
    got = _json(subprocess_python, """
h, dp = VP(), D()
assert cu.cuMemHostAlloc(R(h), 4096, 2) == 0                  # DEVICEMAP
assert cu.cuMemHostGetDevicePointer_v2(R(dp), h, 0) == 0
assert cu.cuMemsetD8_v2(dp.value, 9, 16) == 0                   # through the mapped address
r = {"mapped": [dp.value == h.value, c.string_at(h.value, 2).hex(), attr(h.value, 2, U), attr(h.value, 4)[1] == h.value,
                cu.cuMemHostGetDevicePointer_v2(R(dp), h, 1)]}
buf = c.create_string_buffer(8192)
r["register"] = [cu.cuMemHostRegister_v2(buf, 8192, 0), cu.cuMemHostRegister_v2(buf, 8192, 0),
                 attr(c.addressof(buf), 2, U), cu.cuMemHostUnregister(buf), cu.cuMemHostUnregister(buf),
                 cu.cuMemHostRegister_v2(None, 16, 0), cu.cuMemHostRegister_v2(buf, 16, 0x100)]
hp = VP()
r["host_alloc"] = [cu.cuMemAllocHost_v2(R(hp), 64), cu.cuMemFreeHost(hp), cu.cuMemFreeHost(hp), cu.cuMemFreeHost(None),
                   cu.cuMemHostAlloc(R(hp), 0, 0), cu.cuMemHostAlloc(R(hp), 64, 0x80), cu.cuMemHostAlloc(None, 64, 0)]
assert cu.cuMemFreeHost(h) == 0
m = D()
assert cu.cuMemAllocManaged(R(m), 64, 1) == 0
c.memset(m.value, 0x42, 64)                                    # the host writes it directly
rat = (c.c_int * 8)()
assert rt.cudaPointerGetAttributes(rat, VP(m.value)) == 0
r["managed"] = [read(m.value, 4).hex(), attr(m.value, 8, I), attr(m.value, 2, U), rat[0],
                cu.cuMemAllocManaged(R(m), 64, 0), cu.cuMemAllocManaged(R(m), 0, 1), cu.cuMemAllocManaged(None, 64, 1)]
rm = VP()
r["runtime_managed"] = [rt.cudaMallocManaged(R(rm), 64, 2), rt.cudaMallocManaged(R(rm), 64, 4), rt.cudaFree(rm)]
out(r)
""")
    assert got == {"mapped": [True, "0909", [OK, 1], True, INVALID_VALUE],
                   "register": [OK, ALREADY_REGISTERED, [OK, 1], OK, NOT_REGISTERED, INVALID_VALUE, INVALID_VALUE],
                   "host_alloc": [OK, OK, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE],
                   "managed": ["42424242", [OK, 1], [OK, 2], 3, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE],
                   "runtime_managed": [OK, INVALID_VALUE, OK]}


def test_managed_memory_advice(subprocess_python):
    # cuda.core's ManagedBuffer.read_mostly / preferred_location / accessed_by: advice is recorded per
    # managed allocation and read back as the driver reports it; a freed allocation's advice goes with it
    got = _json(subprocess_python, """
def ra(m, a, n=4, size=4):
    v = (I * (size // 4))(*([77] * (size // 4))); r = cu.cuMemRangeGetAttribute(v, size, a, m, n); return [r] + list(v)
m = D(); assert cu.cuMemAllocManaged(R(m), 4096, 1) == 0
m = m.value
r = {"fresh": [ra(m, a)[1] for a in range(1, 9)] + [ra(m, 3, size=12)[1:]]}
assert cu.cuMemAdvise_v2(m, 4096, 1, Location(0, 0)) == 0 and cu.cuMemAdvise_v2(m, 4096, 3, Location(1, 1)) == 0
assert cu.cuMemAdvise_v2(m, 4096, 5, Location(1, 1)) == 0 and cu.cuMemAdvise_v2(m, 4096, 5, Location(2, 0)) == 0
r["set"] = [ra(m + 100, a, 8)[1] for a in (1, 2, 5, 6)] + [ra(m, 3, size=12)[1:], ra(m, 3, size=4)[1:]]
assert cu.cuMemAdvise_v2(m, 4096, 3, Location(3, 0)) == 0
r["host_numa"] = [ra(m, a)[1] for a in (2, 5, 6)]
assert cu.cuMemAdvise_v2(m, 4096, 3, Location(4, 0)) == 0
r["numa_current"] = [ra(m, a)[1] for a in (5, 6)]
assert cu.cuMemAdvise(m, 4096, 3, -1) == 0 and cu.cuMemAdvise(m, 4096, 6, -1) == 0
r["v1_host"] = [ra(m, a)[1] for a in (2, 5)] + [ra(m, 3, size=8)[1:]]
assert cu.cuMemAdvise_v2(m, 4096, 2, Location(0, 0)) == 0 and cu.cuMemAdvise_v2(m, 4096, 4, Location(0, 0)) == 0
assert cu.cuMemAdvise_v2(m, 4096, 6, Location(1, 1)) == 0
r["unset"] = [ra(m, a)[1] for a in (1, 2, 5, 6)] + [ra(m, 3, size=8)[1:]]
vals = [(I * 1)(), (I * 2)()]
data = (VP * 2)(*[c.addressof(v) for v in vals]); sizes = (SZ * 2)(4, 8); attrs = (I * 2)(1, 3)
assert cu.cuMemAdvise_v2(m, 4096, 1, Location(0, 0)) == 0
r["several"] = [cu.cuMemRangeGetAttributes(data, sizes, attrs, 2, m, 4096), list(vals[0]), list(vals[1])]
a = alloc()
pinned = VP(); assert cu.cuMemAllocHost_v2(R(pinned), 64) == 0
r["bad_advise"] = [cu.cuMemAdvise_v2(a, 64, 1, Location(0, 0)), cu.cuMemAdvise_v2(pinned.value, 64, 1, Location(0, 0)),
                   cu.cuMemAdvise_v2(m, 0, 1, Location(0, 0)), cu.cuMemAdvise_v2(m, 4097, 1, Location(0, 0)),
                   cu.cuMemAdvise_v2(m, 4096, 7, Location(0, 0)), cu.cuMemAdvise_v2(m, 4096, 0, Location(0, 0)),
                   cu.cuMemAdvise_v2(m, 4096, 3, Location(1, 9)), cu.cuMemAdvise_v2(m, 4096, 3, Location(0, 0)),
                   cu.cuMemAdvise_v2(m, 4096, 3, Location(3, 1)), cu.cuMemAdvise_v2(m, 4096, 5, Location(3, 0)),
                   cu.cuMemAdvise_v2(m, 4096, 5, Location(4, 0)), cu.cuMemAdvise_v2(m, 64, 2, Location(0, 0)),
                   cu.cuMemAdvise_v2(m + 64, 4032, 2, Location(0, 0)), cu.cuMemAdvise(m, 4096, 5, 9)]
r["bad_query"] = [ra(a, 1, 64)[0], ra(m, 1, 0)[0], ra(m, 1, 4097)[0], ra(m, 9)[0], ra(m, 0)[0], ra(m, 1, size=8)[0],
                  ra(m, 3, size=6)[0], cu.cuMemRangeGetAttribute(None, 4, 1, m, 4),
                  cu.cuMemRangeGetAttributes(data, sizes, attrs, 0, m, 4096),
                  cu.cuMemRangeGetAttributes(None, sizes, attrs, 2, m, 4096)]
r["unchanged"] = [ra(m, a)[1] for a in (1, 2, 5, 6)] + [ra(m, 3, size=8)[1:]]
r["after_bad"] = [list(vals[0]), list(vals[1])]
assert cu.cuMemFree_v2(m) == 0
m2 = D(); assert cu.cuMemAllocManaged(R(m2), 4096, 1) == 0
r["freed"] = [ra(m, 1)[0], m2.value == m or None, ra(m2.value, 1)[1], ra(m2.value, 2)[1]]
out(r)
""")
    NONE, CPU = -2, -1
    assert got == {"fresh": [0, NONE, NONE, NONE, 0, NONE, 0, NONE, [NONE] * 3],
                   "set": [1, 1, 1, 1, [1, CPU, NONE], [1]], "host_numa": [CPU, 3, 0], "numa_current": [3, 0],
                   "v1_host": [CPU, 2, [1, NONE]], "unset": [0, NONE, 0, NONE, [NONE, NONE]],
                   "several": [OK, [1], [NONE, NONE]],
                   "bad_advise": [INVALID_VALUE] * 6 + [INVALID_DEVICE] + [INVALID_VALUE] * 4 + [NOT_SUPPORTED] * 2
                   + [INVALID_DEVICE],
                   "bad_query": [INVALID_VALUE] * 10, "unchanged": [1, NONE, 0, NONE, [NONE, NONE]],
                   "after_bad": [[1], [NONE, NONE]], "freed": [INVALID_VALUE, got["freed"][1], 0, NONE]}


def test_managed_memory_prefetch_and_discard(subprocess_python):
    # cuda.core's ManagedBuffer.prefetch / discard and utils.prefetch_batch / discard_batch /
    # discard_prefetch_batch: the last prefetch location is recorded per allocation and read back
    got = _json(subprocess_python, """
def last(m):
    v = (I * 3)()
    for k, a in enumerate((4, 7, 8)):
        assert cu.cuMemRangeGetAttribute(c.byref(v, 4 * k), 4, a, m, 64) == 0
    return list(v)
s = VP(); assert rt.cudaStreamCreate(R(s)) == 0
ms = []
for _ in range(3):
    m = D(); assert cu.cuMemAllocManaged(R(m), 4096, 1) == 0; ms.append(m.value)
r = {"fresh": last(ms[0])}
r["single"] = [cu.cuMemPrefetchAsync_v2(ms[0], 4096, Location(1, 1), 0, s), last(ms[0]),
               cu.cuMemPrefetchAsync_v2(ms[0], 4096, Location(2, 0), 0, None), last(ms[0]),
               cu.cuMemPrefetchAsync_v2(ms[0], 4096, Location(4, 0), 0, s), last(ms[0]),
               cu.cuMemPrefetchAsync(ms[0], 4096, 0, s), last(ms[0]), cu.cuMemPrefetchAsync(ms[0], 4096, -1, s), last(ms[0])]
ptrs, sizes = (D * 3)(*ms), (SZ * 3)(4096, 4096, 4096)
locs, idx = (Location * 2)(Location(1, 1), Location(2, 0)), (SZ * 2)(0, 2)
r["batch"] = [cu.cuMemPrefetchBatchAsync(ptrs, sizes, 3, locs, idx, 2, 0, s), [last(m) for m in ms],
              cu.cuMemDiscardBatchAsync(ptrs, sizes, 2, 0, s), [last(m) for m in ms],
              cu.cuMemDiscardAndPrefetchBatchAsync(ptrs, sizes, 1, locs, idx, 1, 0, s), last(ms[0])]
a = alloc()
bad_idx = (SZ * 2)(1, 2)
before = [last(m) for m in ms]
r["bad"] = [cu.cuMemPrefetchAsync_v2(a, 4096, Location(1, 0), 0, s), cu.cuMemPrefetchAsync_v2(ms[1], 4096, Location(1, 9), 0, s),
            cu.cuMemPrefetchAsync_v2(ms[1], 4096, Location(3, 1), 0, s), cu.cuMemPrefetchAsync_v2(ms[1], 4096, Location(0, 0), 0, s),
            cu.cuMemPrefetchAsync_v2(ms[1], 4096, Location(1, 0), 1, s), cu.cuMemPrefetchAsync_v2(ms[1], 0, Location(1, 0), 0, s),
            cu.cuMemPrefetchAsync_v2(ms[1], 64, Location(1, 0), 0, s),
            cu.cuMemPrefetchAsync_v2(ms[1], 4096, Location(1, 0), 0, VP(0x1234)),
            cu.cuMemPrefetchBatchAsync(ptrs, sizes, 3, locs, bad_idx, 2, 0, s),
            cu.cuMemPrefetchBatchAsync(ptrs, sizes, 0, locs, idx, 2, 0, s),
            cu.cuMemPrefetchBatchAsync(ptrs, sizes, 3, locs, idx, 2, 1, s),
            cu.cuMemPrefetchBatchAsync(None, sizes, 3, locs, idx, 2, 0, s),
            cu.cuMemPrefetchBatchAsync((D * 3)(ms[0], ms[1], a), sizes, 3, locs, idx, 2, 0, s),
            cu.cuMemDiscardBatchAsync((D * 2)(ms[0], a), sizes, 2, 0, s)]
r["unchanged"] = [last(m) for m in ms] == before
assert cu.cuMemFree_v2(ms[0]) == 0
r["freed"] = cu.cuMemRangeGetAttribute(c.byref(I()), 4, 4, ms[0], 64)
out(r)
""")
    NONE, CPU = -2, -1
    DEV1, HOST, NUMA0 = [1, 1, 1], [CPU, 2, 0], [CPU, 3, 0]
    assert got == {"fresh": [NONE, 0, NONE],
                   "single": [OK, DEV1, OK, HOST, OK, NUMA0, OK, [0, 1, 0], OK, HOST],
                   "batch": [OK, [DEV1, DEV1, HOST], OK, [[NONE, 0, NONE]] * 2 + [HOST], OK, DEV1],
                   "bad": [INVALID_VALUE, INVALID_DEVICE, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE,
                           NOT_SUPPORTED, 400] + [INVALID_VALUE] * 5 + [INVALID_VALUE],
                   "unchanged": True, "freed": INVALID_VALUE}


def test_ipc_memory_handles_and_pointer_attributes(subprocess_python):
    got = _json(subprocess_python, """
a = alloc()
h, p = Handle(), D()
assert cu.cuIpcGetMemHandle(R(h), a) == 0
r = {"open": [cu.cuIpcOpenMemHandle_v2(R(p), h, 1), p.value == a, cu.cuIpcOpenMemHandle_v2(R(p), h, 0),
              cu.cuIpcCloseMemHandle(a), cu.cuIpcCloseMemHandle(a), cu.cuIpcCloseMemHandle(a)]}
other = Handle.from_buffer_copy(h); other.reserved = h.reserved[:8] + b"\\x01\\x00\\x00\\x00" + h.reserved[12:]
s = VP(); assert rt.cudaStreamCreate(R(s)) == 0
pa = D(); assert cu.cuMemAllocAsync(R(pa), 64, s) == 0
r["refused"] = [cu.cuIpcOpenMemHandle_v2(R(p), other, 0), cu.cuIpcOpenMemHandle_v2(R(p), Handle(), 0),
                cu.cuIpcOpenMemHandle_v2(R(p), h, 2), cu.cuIpcGetMemHandle(R(h), pa.value),
                cu.cuIpcGetMemHandle(R(h), a + 8), cu.cuIpcGetMemHandle(None, a)]
ctx = attr(a + 5, 1)[1]
r["attrs"] = [attr(a + 5, 2, U), attr(a + 5, 9, I), attr(a + 5, 11)[1] == a, attr(a + 5, 12), attr(a + 5, 8, I),
              ctx == ctx0.value, attr(a + 5, 3)[1] == a + 5, attr(a + 5, 4)[0], attr(a + 5, 10, I), attr(a + 5, 17)[0],
              attr(a + 5, 5)[0], attr(a + 5, 99)[0], cu.cuPointerGetAttribute(None, 2, a)]
stack = c.create_string_buffer(16)
r["unknown"] = [attr(c.addressof(stack), 2, U)[0], attr(0, 9, I)[0]]
vals = [U(7), I(7), VP(7)]
attrs = (c.c_int * 3)(2, 9, 1)
ptrs = (VP * 3)(*[c.addressof(v) for v in vals])
r["several"] = [cu.cuPointerGetAttributes(3, attrs, ptrs, c.addressof(stack)), [v.value for v in vals]]
assert cu.cuPointerGetAttributes(3, attrs, ptrs, a) == 0
r["several_known"] = [vals[0].value, vals[1].value, vals[2].value == ctx0.value]
bad = (c.c_int * 2)(2, 99)
vals[0].value = 7
r["several_bad"] = [cu.cuPointerGetAttributes(2, bad, ptrs, a), vals[0].value, cu.cuPointerGetAttributes(1, None, ptrs, a)]
r["range"] = [cu.cuMemGetAddressRange_v2(None, None, a), cu.cuMemGetAddressRange_v2(None, None, c.addressof(stack))]
out(r)
""")
    assert got == {"open": [OK, True, OK, OK, OK, INVALID_VALUE],
                   "refused": [NOT_SUPPORTED, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE],
                   "attrs": [[OK, 2], [OK, 0], True, [OK, 4096], [OK, 0], True, True, INVALID_VALUE, [OK, 1],
                             INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE],
                   "unknown": [INVALID_VALUE, INVALID_VALUE],
                   "several": [OK, [0, -2, None]], "several_known": [2, 0, True],
                   "several_bad": [INVALID_VALUE, 7, INVALID_VALUE], "range": [OK, NOT_FOUND]}


def test_refused_calls_change_nothing(subprocess_python):
    # every refused call: the real driver's error, out-parameters untouched, memory accounting and data as they were
    got = _json(subprocess_python, """
a = alloc(256)
assert cu.cuMemsetD8_v2(a, 0x33, 256) == 0
sentinel = D(0xABAB)
def state():
    return [free_bytes(), read(a, 256).hex(), sentinel.value, rt.cudaPeekAtLastError()]
before = state()
s = VP(); assert rt.cudaStreamCreate(R(s)) == 0
bad_stream = VP(0x5e0000001230)
host = c.create_string_buffer(512)
calls = {
    "alloc NULL": cu.cuMemAlloc_v2(None, 16), "alloc 0": cu.cuMemAlloc_v2(R(sentinel), 0),
    "alloc huge": cu.cuMemAlloc_v2(R(sentinel), 1 << 62), "managed huge": cu.cuMemAllocManaged(R(sentinel), 1 << 62, 1),
    "async bad stream": cu.cuMemAllocAsync(R(sentinel), 64, bad_stream),
    "async huge": cu.cuMemAllocAsync(R(sentinel), 1 << 62, s),
    "free unknown": cu.cuMemFree_v2(a + 8), "free 0": cu.cuMemFree_v2(0),
    "htod past end": cu.cuMemcpyHtoD_v2(a + 200, host, 100), "dtoh past end": cu.cuMemcpyDtoH_v2(host, a, 257),
    "htod to host": cu.cuMemcpyHtoD_v2(c.addressof(host), host, 4), "dtod from host": cu.cuMemcpyDtoD_v2(a, c.addressof(host), 4),
    "htod NULL": cu.cuMemcpyHtoD_v2(a, None, 4), "copy huge": cu.cuMemcpy(a, a, 1 << 63),
    "async bad stream copy": cu.cuMemcpyHtoDAsync_v2(a, host, 4, bad_stream),
    "set past end": cu.cuMemsetD32_v2(a, 1, 65), "set misaligned": cu.cuMemsetD32_v2(a + 2, 1, 2),
    "set D16 misaligned": cu.cuMemsetD16_v2(a + 1, 1, 2), "set host": cu.cuMemsetD8_v2(c.addressof(host), 1, 4),
    "set huge": cu.cuMemsetD32_v2(a, 1, 1 << 62), "set bad stream": cu.cuMemsetD8Async(a, 1, 4, bad_stream),
    "peer bad ctx": cu.cuMemcpyPeer(a, VP(0x1234), a, ctx0, 4), "peer NULL ctx": cu.cuMemcpyPeer(a, None, a, ctx0, 4),
    "range NULL": cu.cuMemGetAddressRange_v2(R(sentinel), None, 0),
    "pool bad handle": cu.cuMemPoolGetAttribute(VP(0x5f0000100017), 7, R(sentinel)),
    "alloc from bad pool": cu.cuMemAllocFromPoolAsync(R(sentinel), 64, VP(0x1234), s),
    "alloc from NULL pool": cu.cuMemAllocFromPoolAsync(R(sentinel), 64, None, s),
    "device pointer of unregistered": cu.cuMemHostGetDevicePointer_v2(R(sentinel), host, 0),
    "meminfo NULL": cu.cuMemGetInfo_v2(None, None),
}
after = state()
assert rt.cudaStreamSynchronize(s) == 0
out([calls, before == after, after])
""")
    calls, unchanged, state = got
    assert unchanged, state
    assert calls == {
        "alloc NULL": INVALID_VALUE, "alloc 0": INVALID_VALUE, "alloc huge": OOM, "managed huge": OOM,
        "async bad stream": 400, "async huge": OOM, "free unknown": INVALID_VALUE, "free 0": INVALID_VALUE,
        "htod past end": INVALID_VALUE, "dtoh past end": INVALID_VALUE, "htod to host": INVALID_VALUE,
        "dtod from host": INVALID_VALUE, "htod NULL": INVALID_VALUE, "copy huge": INVALID_VALUE,
        "async bad stream copy": 400, "set past end": INVALID_VALUE, "set misaligned": INVALID_VALUE,
        "set D16 misaligned": INVALID_VALUE, "set host": INVALID_VALUE, "set huge": INVALID_VALUE,
        "set bad stream": 400, "peer bad ctx": INVALID_CONTEXT, "peer NULL ctx": INVALID_CONTEXT,
        "range NULL": NOT_FOUND, "pool bad handle": INVALID_VALUE, "alloc from bad pool": INVALID_VALUE,
        "alloc from NULL pool": INVALID_VALUE, "device pointer of unregistered": INVALID_VALUE,
        "meminfo NULL": INVALID_VALUE}


def test_memory_calls_need_a_current_context(subprocess_python):
    got = _json(subprocess_python, """
assert cu.cuCtxPopCurrent_v2(None) == 0          # the stack is empty: no context is current
cur, d, h = VP(1), D(7), VP()
r = [cu.cuCtxGetCurrent(R(cur)), cur.value, cu.cuMemAlloc_v2(R(d), 64), d.value, cu.cuMemAllocManaged(R(d), 64, 1),
     cu.cuMemHostAlloc(R(h), 64, 0), cu.cuMemsetD8_v2(0, 0, 0), cu.cuMemGetInfo_v2(None, None),
     cu.cuProfilerStart(), cu.cuCtxSetLimit(0, 4096)]
assert rt.cudaSetDevice(1) == 0                  # the runtime makes device 1's primary context current again
r += [cu.cuCtxGetCurrent(R(cur)), cu.cuMemAlloc_v2(R(d), 64), attr(d.value, 9, I)]
out(r)
""")
    assert got == [OK, None, INVALID_CONTEXT, 7, INVALID_CONTEXT, INVALID_CONTEXT, INVALID_CONTEXT, INVALID_CONTEXT,
                   INVALID_CONTEXT, INVALID_CONTEXT, OK, OK, [OK, 1]]


def test_created_contexts(subprocess_python):
    got = _json(subprocess_python, """
def current():
    x = VP(); assert cu.cuCtxGetCurrent(R(x)) == 0; return x.value
def device():
    d = I(); r = cu.cuCtxGetDevice(R(d)); return d.value if r == 0 else r
x, y, z = VP(), VP(), VP()
r = {"v2": [cu.cuCtxCreate_v2(R(x), 4, 2), current() == x.value, device(), x.value != ctx0.value]}
flags, ver, ids = U(), U(), [c.c_ulonglong(), c.c_ulonglong()]
r["queries"] = [cu.cuCtxGetFlags(R(flags)), flags.value, cu.cuCtxGetApiVersion(x, R(ver)), ver.value,
                cu.cuCtxGetId(x, R(ids[0])), cu.cuCtxGetId(ctx0, R(ids[1])), ids[0].value != ids[1].value]
assert cu.cuCtxCreate_v3(R(y), None, 0, 0, 1) == 0 and cu.cuCtxCreate_v4(R(z), None, 0, 3) == 0
d = D()
assert cu.cuMemAlloc_v2(R(d), 64) == 0
r["alloc_in_created"] = [attr(d.value, 9, I), device()]
r["destroy_top"] = [cu.cuCtxDestroy_v2(z), current() == y.value, device()]
r["destroy_below"] = [cu.cuCtxDestroy_v2(x), current() == y.value, cu.cuCtxPopCurrent_v2(None),
                      current() == ctx0.value, device()]
r["destroyed"] = [cu.cuCtxDestroy_v2(x), cu.cuCtxPushCurrent_v2(x), cu.cuCtxSetCurrent(x), cu.cuCtxGetApiVersion(x, R(ver)),
                  cu.cuCtxDestroy_v2(ctx0), cu.cuCtxDestroy_v2(None)]
r["bad_create"] = [cu.cuCtxCreate_v2(None, 0, 0), cu.cuCtxCreate_v2(R(x), 0, 9), cu.cuCtxCreate_v2(R(x), 3, 0),
                   cu.cuCtxCreate_v2(R(x), 0x100, 0), cu.cuCtxCreate_v3(R(x), None, 1, 0, 0),
                   cu.cuCtxCreate_v3(R(x), None, -1, 0, 0), current() == ctx0.value]
assert cu.cuCtxDestroy_v2(y) == 0
out(r)
""")
    assert got == {"v2": [OK, True, 2, True], "queries": [OK, 4, OK, 3020, OK, OK, True],
                   "alloc_in_created": [[OK, 3], 3], "destroy_top": [OK, True, 1],
                   "destroy_below": [OK, True, OK, True, 0],
                   "destroyed": [INVALID_CONTEXT] * 6,
                   "bad_create": [INVALID_VALUE, INVALID_DEVICE, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE,
                                  INVALID_VALUE, True]}


def test_primary_context_reset_limits_and_profiler(subprocess_python):
    got = _json(subprocess_python, """
state, active = U(), I()
lim = SZ()
r = {"limits": [cu.cuCtxGetLimit(R(lim), 0), lim.value, cu.cuCtxSetLimit(2, 1 << 24), cu.cuCtxGetLimit(R(lim), 2),
                lim.value, cu.cuCtxSetLimit(7, 1), cu.cuCtxGetLimit(R(lim), 42), cu.cuCtxGetLimit(None, 0),
                cu.cuCtxSetLimit(5, 4096)]}
r["profiler"] = [cu.cuProfilerStart(), cu.cuProfilerStop()]
ctx1 = VP()
assert cu.cuDevicePrimaryCtxRetain(R(ctx1), 1) == 0
r["reset"] = [cu.cuDevicePrimaryCtxReset_v2(1), cu.cuDevicePrimaryCtxGetState(1, R(state), R(active)), active.value,
              cu.cuDevicePrimaryCtxReset_v2(9)]
# later calls work as on a real driver: retain and push again, allocate
d = D()
assert cu.cuDevicePrimaryCtxRetain(R(ctx1), 1) == 0 and cu.cuCtxPushCurrent_v2(ctx1) == 0
r["after"] = [cu.cuMemAlloc_v2(R(d), 64), attr(d.value, 9, I), cu.cuDevicePrimaryCtxGetState(1, R(state), R(active)),
              active.value, cu.cuCtxPopCurrent_v2(None), cu.cuCtxPopCurrent_v2(None)]
cur = VP(1)
r["emptied"] = [cu.cuCtxGetCurrent(R(cur)), cur.value, cu.cuCtxPopCurrent_v2(None)]
out(r)
""")
    assert got == {"limits": [OK, 1024, OK, OK, 1 << 24, UNSUPPORTED_LIMIT, UNSUPPORTED_LIMIT, INVALID_VALUE,
                              INVALID_VALUE],
                   "profiler": [OK, OK], "reset": [OK, OK, 0, INVALID_DEVICE],
                   "after": [OK, [OK, 1], OK, 1, OK, OK], "emptied": [OK, None, INVALID_CONTEXT]}


def test_version_queries_do_not_freeze_visible_devices(subprocess_python):
    # numba-cuda and cuda.bindings ask for versions and resolve driver functions at import; a
    # CUDA_VISIBLE_DEVICES set after that still applies, as on a real driver
    got = _json_bare(subprocess_python, """
v, fn, st = c.c_int(), c.c_void_p(), c.c_int()
cu.cuGetProcAddress_v2.argtypes = [c.c_char_p, c.POINTER(c.c_void_p), c.c_int, c.c_ulonglong, c.c_void_p]
r = [rt.cudaRuntimeGetVersion(c.byref(v)), rt.cudaDriverGetVersion(c.byref(v)), cu.cuDriverGetVersion(c.byref(v)),
     v.value, cu.cuGetProcAddress_v2(b"cuMemAlloc", c.byref(fn), 13000, 0, c.byref(st)), bool(fn.value)]
os.environ["CUDA_VISIBLE_DEVICES"] = "2"
n = c.c_int()
print(json.dumps(r + [rt.cudaGetDeviceCount(c.byref(n)), n.value]))
""", env={"CUDA_VISIBLE_DEVICES": None})
    assert got == [OK, OK, OK, 13000, OK, True, OK, 1]


def test_module_library_and_launch_entry_points_are_found_and_the_rest_say_not_supported(subprocess_python):
    # modules, libraries, kernels, the linker, occupancy and launches are real entry points (tests/test_emu_kernels.py);
    # what the emulator still lacks says so by name
    # (cuGetExportTable refuses by table: tests/test_emu_driver_surface.py::test_export_tables_refused_by_name)
    names = ["cuTensorMapEncodeTiled", "cuModuleGetTexRef", "cuLaunch", "cuLaunchGrid", "cuLaunchGridAsync"]
    proc = _run(subprocess_python, f"""
fn = VP()
cu.cuGetProcAddress_v2.argtypes = [c.c_char_p, P(VP), I, c.c_ulonglong, VP]
def found(n, v=13000):
    fn.value = None
    return cu.cuGetProcAddress_v2(n.encode(), R(fn), v, 0, None) == 0 and fn.value
real = [found(n) == c.cast(getattr(cu, s), VP).value
        for n, s in [("cuModuleLoadData", "cuModuleLoadData"), ("cuLibraryLoadData", "cuLibraryLoadData"),
                     ("cuLaunchKernel", "cuLaunchKernel"), ("cuLinkCreate", "cuLinkCreate_v2"),
                     ("cuModuleGetGlobal", "cuModuleGetGlobal_v2"), ("cuKernelGetName", "cuKernelGetName"),
                     ("cuKernelGetParamInfo", "cuKernelGetParamInfo"), ("cuLaunchKernelEx", "cuLaunchKernelEx"),
                     ("cuGraphAddKernelNode", "cuGraphAddKernelNode_v2"),
                     ("cuOccupancyMaxActiveClusters", "cuOccupancyMaxActiveClusters")]]
ptsz = [found(n + "_ptsz") == c.cast(getattr(cu, n + "_ptsz"), VP).value
        for n in ("cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel")]
out([[getattr(cu, n)() for n in {names!r}], real, ptsz])
""", env={"ACCEL_EMU_TRACE": "1"})
    codes, real, ptsz = json.loads(proc.stdout.strip().splitlines()[-1])
    assert codes == [NOT_SUPPORTED] * len(names) and all(real) and all(ptsz)
    for n in names:
        assert f"accel emu: {n} is not supported by the emulated runtime (returns CUDA_ERROR_NOT_SUPPORTED)" \
            in proc.stderr


def test_pools_shared_by_descriptor_within_the_process(subprocess_python):
    # cuda.core's DeviceMemoryResource(ipc_enabled=True): a pool made with POSIX file descriptors exports one,
    # which imports back to the same pool; its allocations export data that import back to the address.
    # Another process's descriptor or data is CUDA_ERROR_NOT_SUPPORTED (each has its own emulated machine).
    got = _json(subprocess_python, """
cu.cuMemPoolExportToShareableHandle.argtypes = [VP, VP, I, c.c_ulonglong]
cu.cuMemPoolImportFromShareableHandle.argtypes = [P(VP), VP, I, c.c_ulonglong]
cu.cuMemPoolExportPointer.argtypes = [VP, D]
cu.cuMemPoolImportPointer.argtypes = [P(D), VP, VP]
s = VP(); assert rt.cudaStreamCreate(R(s)) == 0
shared, plain, back = VP(), VP(), VP()
assert cu.cuMemPoolCreate(R(shared), R(Props(1, 1, 1, 0))) == 0 and cu.cuMemPoolCreate(R(plain), R(props())) == 0
fd = I(-1)
r = {"export": [cu.cuMemPoolExportToShareableHandle(R(fd), shared, 1, 0), fd.value >= 0]}
r["import"] = [cu.cuMemPoolImportFromShareableHandle(R(back), fd.value, 1, 0), back.value == shared.value]
d, got_d = D(), D()
assert cu.cuMemAllocFromPoolAsync(R(d), 256, shared, s) == 0
data, forged = (c.c_char * 64)(), (c.c_char * 64)()
r["pointer"] = [cu.cuMemPoolExportPointer(data, d), cu.cuMemPoolImportPointer(R(got_d), shared, data), got_d.value == d.value]
c.memmove(forged, data, 64); c.memmove(c.addressof(forged) + 8, c.byref(c.c_uint64(os.getpid() + 1)), 8)
other = os.memfd_create("x")
pd = D(); assert cu.cuMemAllocFromPoolAsync(R(pd), 256, plain, s) == 0
r["elsewhere"] = [cu.cuMemPoolImportFromShareableHandle(R(back), other, 1, 0), cu.cuMemPoolImportPointer(R(got_d), shared, forged)]
r["bad"] = [cu.cuMemPoolExportToShareableHandle(R(fd), plain, 1, 0), cu.cuMemPoolExportToShareableHandle(None, shared, 1, 0),
            cu.cuMemPoolExportToShareableHandle(R(fd), shared, 1, 1), cu.cuMemPoolExportToShareableHandle(R(fd), shared, 8, 0),
            cu.cuMemPoolExportToShareableHandle(R(fd), VP(0x1234), 1, 0),
            cu.cuMemPoolImportFromShareableHandle(R(back), 987654, 1, 0), cu.cuMemPoolImportFromShareableHandle(None, fd.value, 1, 0),
            cu.cuMemPoolImportFromShareableHandle(R(back), fd.value, 8, 0),
            cu.cuMemPoolExportPointer(data, pd), cu.cuMemPoolExportPointer(data, d.value + 16), cu.cuMemPoolExportPointer(None, d),
            cu.cuMemPoolImportPointer(R(got_d), plain, data), cu.cuMemPoolImportPointer(None, shared, data),
            cu.cuMemPoolImportPointer(R(got_d), shared, (c.c_char * 64)())]
assert cu.cuMemFreeAsync(d, s) == 0 and rt.cudaStreamSynchronize(s) == 0
r["freed"] = cu.cuMemPoolImportPointer(R(got_d), shared, data)
os.close(fd.value); os.close(other)
out(r)
""", env={"ACCEL_EMU_TRACE": "1"})
    assert got == {"export": [OK, True], "import": [OK, True], "pointer": [OK, OK, True],
                   "elsewhere": [NOT_SUPPORTED, NOT_SUPPORTED],
                   "bad": [INVALID_VALUE] * 7 + [NOT_SUPPORTED] + [INVALID_VALUE] * 6, "freed": INVALID_VALUE}


@_fx.needs_cuda_core
def test_cuda_core_allocates_on_the_emulator(subprocess_python):
    # Device.allocate goes through cuMemAllocFromPoolAsync on the device's memory pool (issue 18)
    got = _json_bare(subprocess_python, """
import accel.emu; accel.emu.activate(devices=2)
from cuda.core import Device
d = Device(0); d.set_current()
s = d.create_stream()
buf = d.allocate(1024, stream=s)
other = d.allocate(1024, stream=s)
other.copy_from(buf, stream=s)
s.sync()
print(json.dumps([buf.size, int(buf.handle) != 0, buf.device_id]))
buf.close(); other.close()
""")
    assert got == [1024, True, 0]


def test_per_thread_default_stream_variants(subprocess_python):
    # cuGetProcAddress with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (or a `_ptsz` name) gives the
    # stream-ordered memory calls whose NULL stream is the calling thread's per-thread stream; a variant
    # counts as the entry point it is a variant of for fault injection
    got = _json(subprocess_python, """
cu.cuGetProcAddress_v2.argtypes = [c.c_char_p, P(VP), I, c.c_ulonglong, VP]
legacy, perthread, byname = VP(), VP(), VP()
assert cu.cuGetProcAddress_v2(b"cuMemsetD8Async", R(legacy), 13000, 0, None) == 0
assert cu.cuGetProcAddress_v2(b"cuMemsetD8Async", R(perthread), 13000, 2, None) == 0
assert cu.cuGetProcAddress_v2(b"cuMemsetD8Async_ptsz", R(byname), 13000, 0, None) == 0
memset = c.CFUNCTYPE(I, D, c.c_ubyte, SZ, VP)(perthread.value)
a = alloc(64)
r = [legacy.value != perthread.value, perthread.value == byname.value, memset(a, 3, 64, None),
     rt.cudaStreamSynchronize(VP(2)), read(a, 4).hex()]
assert rt.accelEmuSetFail(b"cuMemsetD8Async:1") == 0
r += [memset(a, 4, 64, None), memset(a, 5, 64, None), rt.cudaStreamSynchronize(VP(2)), read(a, 2).hex()]
rt.accelEmuSetFail(None)
names = ["cuMemAllocAsync", "cuMemAllocFromPoolAsync", "cuMemFreeAsync", "cuMemcpyAsync", "cuMemcpyHtoDAsync_v2",
         "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoDAsync_v2", "cuMemcpy2DAsync_v2", "cuMemcpyPeerAsync", "cuMemsetD16Async",
         "cuMemsetD32Async"]
r.append([n for n in names if not hasattr(cu, n + "_ptsz")])
out(r)
""")
    assert got == [True, True, OK, OK, "03030303", 999, OK, OK, "0505", []]
