"""Pools of pinned host memory in the stand-ins (issue 18, what cuda.core's PinnedMemoryResource needs):
cuMemPoolCreate / cudaMemPoolCreate with a HOST or HOST_NUMA location, CUDA 13's pools by location for the
host (cuMemGetMemPool / cuMemSetMemPool / cuMemGetDefaultMemPool and the runtime's cudaMem*MemPool),
allocations from them (pinned host memory: pointer attributes, copies, sets), pool attributes, trim, access,
sharing by descriptor, the device attributes that report host memory pools; argument errors, fault injection
by name with nothing changed by a failed call, and create / destroy loops that leave nothing behind.

The stand-ins run in fresh interpreters (see test_standin.py for why); the driver calls' prelude is
test_emu_driver_memory.py's.
"""
import importlib.util
import pathlib

import pytest

_here = pathlib.Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("standin_fixtures", _here / "standin_fixtures.py")
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
_spec = importlib.util.spec_from_file_location("emu_driver_memory", _here / "test_emu_driver_memory.py")
_dm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_dm)

pytestmark = _fx.needs_standins

OK, INVALID_VALUE, OOM, INVALID_DEVICE, NOT_SUPPORTED, UNKNOWN = 0, 1, 2, 101, 801, 999
RW = 3          # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
HOST, NUMA = 2, 3

PRELUDE = _dm.PRELUDE + """
cu.cuMemPoolExportToShareableHandle.argtypes = [VP, VP, I, c.c_ulonglong]
cu.cuMemPoolImportFromShareableHandle.argtypes = [P(VP), VP, I, c.c_ulonglong]
cu.cuMemPoolExportPointer.argtypes = [VP, D]
cu.cuMemPoolImportPointer.argtypes = [P(D), VP, VP]
cu.cuDeviceGetAttribute.argtypes = [P(I), I, I]
for f in ("cudaMemGetMemPool", "cudaMemGetDefaultMemPool"):
    getattr(rt, f).argtypes = [P(VP), P(Location), I]
rt.cudaMemSetMemPool.argtypes = [P(Location), I, VP]
rt.cudaMemPoolCreate.argtypes = [P(VP), P(Props)]
rt.accelEmuLivePools.argtypes = [P(SZ)]
rt.accelEmuLivePools.restype = SZ
HOST, NUMA, RW = 2, 3, 3     # CU_MEM_LOCATION_TYPE_HOST / HOST_NUMA, CU_MEM_ACCESS_FLAGS_PROT_READWRITE
class PtrAttrs(c.Structure):
    _fields_ = [("type", I), ("device", I), ("devicePointer", VP), ("hostPointer", VP), ("reserved", c.c_long * 8)]
def host_props(kind=2, node=0, handles=0, max_size=0):
    return Props(1, handles, kind, node, None, max_size)
def new_pool(p):
    h = VP(); assert cu.cuMemPoolCreate(R(h), R(p)) == 0; return h
def pool_attr(pool, a, kind=D):
    v = kind(); r = cu.cuMemPoolGetAttribute(pool, a, R(v)); return [r, v.value]
def pools():
    slots = SZ(); n = rt.accelEmuLivePools(R(slots)); return [n, slots.value]
def stream_on(dev):
    assert rt.cudaSetDevice(dev) == 0
    s = VP(); assert rt.cudaStreamCreate(R(s)) == 0
    assert rt.cudaSetDevice(0) == 0
    return s
"""

_run, _json = _fx.runners(PRELUDE)


def test_host_pool_allocations_are_pinned_host_memory(subprocess_python):
    # Every device reports host memory pools (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID 0: the host's one NUMA node,
    # HOST_NUMA_MEMORY_POOLS_SUPPORTED, HOST_NUMA_MULTINODE_IPC_SUPPORTED 0, HOST_MEMORY_POOLS_SUPPORTED).  A
    # host pool's allocation is host memory (on the device of the stream it was made on), counted against no
    # device; copies on any device's stream and sets reach it; used / reserved, release threshold, trim and a
    # maximum size as for a device's pool.
    got = _json(subprocess_python, """
r = {"attrs": [[cu.cuDeviceGetAttribute(R(v), a, d) or v.value for a in (134, 142, 143, 144) for v in [I(-7)]]
               for d in range(2)]}
free0 = free_bytes()
pool, numa = new_pool(host_props(HOST, node=12345)), new_pool(host_props(NUMA, 0))
s0, s1 = stream_on(0), stream_on(1)
a, b = D(), D()
assert cu.cuMemAllocFromPoolAsync(R(a), 1000, pool, s1) == 0 and cu.cuMemAllocFromPoolAsync(R(b), 4096, numa, s0) == 0
assert rt.cudaStreamSynchronize(s1) == 0
r["no_device_memory"] = free0 - free_bytes()
r["pool_attrs"] = [pool_attr(pool, 7), pool_attr(pool, 5), pool_attr(pool, 9, I), pool_attr(pool, 12, I),
                   pool_attr(pool, 11, I), pool_attr(pool, 10, I), pool_attr(pool, 13), pool_attr(numa, 12, I),
                   pool_attr(numa, 11, I)]
r["ptr"] = [attr(a.value + 8, 2, U), attr(a.value + 8, 4)[1] == a.value + 8, attr(a.value + 8, 3)[1] == a.value + 8,
            attr(a.value, 17)[1] == pool.value, attr(a.value, 8, I), attr(a.value, 9, I), attr(b.value, 9, I),
            attr(a.value, 10, I), attr(a.value, 12)]
pa = PtrAttrs(); assert rt.cudaPointerGetAttributes(R(pa), VP(a.value + 8)) == 0
r["rt_ptr"] = [pa.type, pa.device, pa.devicePointer == a.value + 8, pa.hostPointer == a.value + 8]
base, size = D(), SZ(); assert cu.cuMemGetAddressRange_v2(R(base), R(size), a.value + 100) == 0
r["range"] = [base.value == a.value, size.value]
# the host writes it; copies (any kind, any device's stream) and sets reach it
c.memmove(a.value, bytes(range(200)), 200)
dev = alloc(256)
assert cu.cuMemcpyHtoD_v2(b, c.c_char_p(b"xyz"), 3) == 0 and cu.cuMemcpyDtoD_v2(dev, a, 200) == 0
assert cu.cuMemcpyDtoD_v2(b.value + 8, dev, 200) == 0 and cu.cuMemsetD8_v2(b.value + 208, 0x5a, 4) == 0
assert cu.cuMemcpyAsync(a.value + 500, b, 3, s1) == 0 and rt.cudaStreamSynchronize(s1) == 0
r["bytes"] = [c.string_at(b.value, 3).decode(), c.string_at(b.value + 8, 200) == bytes(range(200)),
              c.string_at(b.value + 208, 4).hex(), c.string_at(a.value + 500, 3).decode(), read(dev, 3).hex()]
# freed: the block goes back (release threshold 0: released at once); with a threshold it stays until trimmed
assert cu.cuMemFreeAsync(a, s1) == 0 and rt.cudaStreamSynchronize(s1) == 0
r["freed"] = [pool_attr(pool, 7), pool_attr(pool, 5), pool_attr(pool, 8), pool_attr(pool, 6)]
assert cu.cuMemPoolSetAttribute(pool, 4, R(D(1 << 30))) == 0
assert cu.cuMemAllocFromPoolAsync(R(a), 5000, pool, s0) == 0 and cu.cuMemFreeAsync(a, s0) == 0
assert rt.cudaStreamSynchronize(s0) == 0
r["kept"] = pool_attr(pool, 5)
r["trim"] = [cu.cuMemPoolTrimTo(pool, 0), pool_attr(pool, 5), free0 - free_bytes() == 256]
# a maximum size is the most the pool reserves
small, d = new_pool(host_props(HOST, max_size=4096)), D(0xAB)
r["max_size"] = [cu.cuMemAllocFromPoolAsync(R(d), 4096, small, s0), cu.cuMemAllocFromPoolAsync(R(d), 1, small, s0),
                 pool_attr(small, 13)]
out(r)
""")
    assert got == {
        "attrs": [[0, 1, 0, 1], [0, 1, 0, 1]], "no_device_memory": 0,
        "pool_attrs": [[OK, 1024], [OK, 1024], [OK, 1], [OK, HOST], [OK, 0], [OK, 0], [OK, 0], [OK, NUMA], [OK, 0]],
        "ptr": [[OK, 1], True, True, True, [OK, 0], [OK, 1], [OK, 0], [OK, 0], [OK, 1000]],
        "rt_ptr": [1, 1, True, True], "range": [True, 1000],
        "bytes": ["xyz", True, "5a5a5a5a", "xyz", "000102"],
        "freed": [[OK, 0], [OK, 0], [OK, 1024], [OK, 1024]], "kept": [OK, 5120], "trim": [OK, [OK, 0], True],
        "max_size": [OK, OOM, [OK, 4096]]}


def test_location_defaults_stay_and_a_maximum_size_holds_for_every_pool(subprocess_python):
    # a location's default pool (managed memory's too) cannot be destroyed; maxSize bounds a device's pool and
    # a managed one as a host one (CUDA_ERROR_OUT_OF_MEMORY past it), and is reported
    got = _json(subprocess_python, """
m = VP(); assert cu.cuMemGetDefaultMemPool(R(m), R(Location(0, 0)), 2) == 0
s = stream_on(0)
r = [cu.cuMemPoolDestroy(m)]
for p in (Props(1, 0, 1, 0, None, 8192), Props(2, 0, 1, 1, None, 8192)):
    pool, a, b = new_pool(p), D(), D()
    r.append([cu.cuMemAllocFromPoolAsync(R(a), 8000, pool, s), cu.cuMemAllocFromPoolAsync(R(b), 600, pool, s),
              pool_attr(pool, 13), cu.cuMemFreeAsync(a, s), rt.cudaStreamSynchronize(s),
              cu.cuMemAllocFromPoolAsync(R(b), 600, pool, s)])
out(r)
""")
    assert got == [INVALID_VALUE] + [[OK, OOM, [OK, 8192], OK, OK, OK]] * 2


def test_host_pool_access(subprocess_python):
    # The host always has read-write access to a pool of its memory; devices what was set (none at first);
    # a device's pool answers for devices only
    got = _json(subprocess_python, """
pool, numa = new_pool(host_props(HOST)), new_pool(host_props(NUMA))
dflt = VP(); assert cu.cuDeviceGetDefaultMemPool(R(dflt), 0) == 0
flags = I(-1)
def get(p, loc):
    flags.value = -1; r = cu.cuMemPoolGetAccess(R(flags), p, R(loc)); return [r, flags.value]
r = {"get": [get(pool, Location(HOST, 0)), get(pool, Location(NUMA, 0)), get(numa, Location(HOST, 0)),
             get(pool, Location(1, 0)), get(pool, Location(1, 1))]}
r["set"] = [cu.cuMemPoolSetAccess(pool, R(Access(1, 1, RW)), 1), get(pool, Location(1, 1)), get(pool, Location(1, 0)),
            cu.cuMemPoolSetAccess(pool, R(Access(HOST, 0, RW)), 1), cu.cuMemPoolSetAccess(numa, R(Access(NUMA, 0, RW)), 1),
            cu.cuMemPoolSetAccess(pool, R(Access(1, 1, 0)), 1), get(pool, Location(1, 1))]
two = (Access * 2)(Access(1, 0, RW), Access(HOST, 0, 0))
r["refused"] = [cu.cuMemPoolSetAccess(pool, R(Access(HOST, 0, 0)), 1), cu.cuMemPoolSetAccess(pool, R(Access(NUMA, 3, RW)), 1),
                cu.cuMemPoolSetAccess(pool, R(Access(4, 0, RW)), 1), cu.cuMemPoolSetAccess(pool, two, 2),
                get(pool, Location(1, 0)), cu.cuMemPoolSetAccess(pool, R(Access(1, 9, RW)), 1),
                cu.cuMemPoolSetAccess(dflt, R(Access(HOST, 0, RW)), 1), get(dflt, Location(HOST, 0)),
                get(pool, Location(NUMA, 1)), get(pool, Location(1, 9)), cu.cuMemPoolGetAccess(None, pool, R(Location(HOST, 0))),
                cu.cuMemPoolGetAccess(R(flags), pool, None)]
out(r)
""")
    assert got == {"get": [[OK, RW], [OK, RW], [OK, RW], [OK, 0], [OK, 0]],
                   "set": [OK, [OK, RW], [OK, 0], OK, OK, OK, [OK, 0]],
                   "refused": [INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, [OK, 0], INVALID_DEVICE,
                               INVALID_VALUE, [INVALID_VALUE, -1], [INVALID_VALUE, -1], [INVALID_DEVICE, -1],
                               INVALID_VALUE, INVALID_VALUE]}


@pytest.mark.parametrize("api", ["driver", "runtime"])
def test_the_host_locations_pools(subprocess_python, api):
    # CUDA 13's pools by location: the host and its NUMA node each have a default pool of pinned memory, made
    # on first use, which cannot be destroyed; the current one is a pool of that kind and location
    got = _json(subprocess_python, """
get_cur, get_dflt, set_cur = ((cu.cuMemGetMemPool, cu.cuMemGetDefaultMemPool, cu.cuMemSetMemPool) if API == "driver"
                              else (rt.cudaMemGetMemPool, rt.cudaMemGetDefaultMemPool, rt.cudaMemSetMemPool))
def get(fn, loc, kind=1):
    p = VP(0xAB); r = fn(R(p), R(loc) if loc else None, kind); return [r, p.value]
base = pools()
h, n = get(get_dflt, Location(HOST, 0)), get(get_dflt, Location(NUMA, 0))
r = {"defaults": [h[0], n[0], h[1] != n[1], get(get_dflt, Location(HOST, 7)) == h, get(get_cur, Location(HOST, 0)) == h,
                  get(get_cur, Location(NUMA, 0)) == n, pools()[0] - base[0], pool_attr(VP(h[1]), 12, I),
                  pool_attr(VP(n[1]), 12, I), cu.cuMemPoolDestroy(VP(h[1])), cu.cuMemPoolDestroy(VP(n[1]))]}
mine, other = new_pool(host_props(HOST)), new_pool(host_props(NUMA))
managed = new_pool(Props(2, 0, HOST, 0))
dev0 = VP(); assert cu.cuDeviceGetDefaultMemPool(R(dev0), 0) == 0
r["set"] = [set_cur(R(Location(HOST, 0)), 1, mine), get(get_cur, Location(HOST, 0))[1] == mine.value,
            get(get_dflt, Location(HOST, 0)) == h, get(get_cur, Location(NUMA, 0)) == n,
            set_cur(R(Location(NUMA, 0)), 1, other), get(get_cur, Location(NUMA, 0))[1] == other.value]
r["set_refused"] = [set_cur(R(Location(NUMA, 0)), 1, mine), set_cur(R(Location(HOST, 0)), 1, dev0),
                    set_cur(R(Location(HOST, 0)), 1, managed), set_cur(R(Location(1, 0)), 1, mine),
                    set_cur(R(Location(HOST, 0)), 1, VP(0x1234)), set_cur(R(Location(HOST, 0)), 1, None),
                    set_cur(R(Location(NUMA, 1)), 1, other), set_cur(None, 1, mine), set_cur(R(Location(HOST, 0)), 3, mine),
                    get(get_cur, Location(HOST, 0))[1] == mine.value]
assert cu.cuMemPoolDestroy(mine) == 0
r["destroyed_current"] = [get(get_cur, Location(HOST, 0)) == h, set_cur(R(Location(HOST, 0)), 1, mine)]
r["bad"] = [get(get_cur, Location(NUMA, 1)), get(get_cur, Location(NUMA, -1)), get(get_cur, Location(4, 0)),
            get(get_cur, Location(0, 0)), get(get_cur, Location(5, 0)), get(get_dflt, Location(6, 0)),
            get(get_cur, Location(HOST, 0), 0), get(get_cur, Location(HOST, 0), 3), get(get_cur, None),
            get_cur(None, R(Location(HOST, 0)), 1), get_dflt(None, R(Location(NUMA, 0)), 1)]
out(r)
""".replace("API", repr(api)), env={"ACCEL_EMU_TRACE": "1"})
    assert got == {"defaults": [OK, OK, True, True, True, True, 2, [OK, HOST], [OK, NUMA], INVALID_VALUE, INVALID_VALUE],
                   "set": [OK, True, True, True, OK, True],
                   "set_refused": [INVALID_VALUE] * 9 + [True], "destroyed_current": [True, INVALID_VALUE],
                   "bad": [[INVALID_VALUE, 0xAB]] * 5 + [[NOT_SUPPORTED, 0xAB]] + [[INVALID_VALUE, 0xAB]] * 3
                          + [INVALID_VALUE] * 2}


def test_host_pool_creation_errors_change_nothing(subprocess_python):
    # A HOST location's id is ignored and such a pool cannot be exported; a HOST_NUMA location names the host's
    # one node (0); the current NUMA node, no location and unknown ones are refused.  Nothing is made.
    got = _json(subprocess_python, """
base, sentinel = pools(), VP(0xAB)
def create(fn, p):
    return fn(R(sentinel), R(p))
calls = [[create(fn, p) for p in (host_props(HOST, handles=1), host_props(NUMA, 1), host_props(NUMA, -1),
                                  host_props(4), host_props(0), host_props(5), host_props(6), Props(3, 0, HOST, 0),
                                  host_props(HOST, handles=8))]
         for fn in (cu.cuMemPoolCreate, rt.cudaMemPoolCreate)]
out([calls, pools() == base, sentinel.value])
""")
    calls, unchanged, sentinel = got
    # a device locality domain is not modelled (CUDA_ERROR_NOT_SUPPORTED)
    assert calls == [[INVALID_VALUE] * 6 + [NOT_SUPPORTED] + [INVALID_VALUE] * 2] * 2
    assert unchanged and sentinel == 0xAB


def test_host_pools_shared_by_descriptor(subprocess_python):
    # cuda.core's PinnedMemoryResource(ipc_enabled=True): a HOST_NUMA pool made with POSIX file descriptors
    # exports one, which imports back to it within the process; its allocations' data import back too
    got = _json(subprocess_python, """
shared, plain = new_pool(host_props(NUMA, 0, handles=1)), new_pool(host_props(HOST))
s = stream_on(1)
fd, back, d, got_d = I(-1), VP(), D(), D()
data = (c.c_char * 64)()
r = [cu.cuMemPoolExportToShareableHandle(R(fd), shared, 1, 0), cu.cuMemPoolImportFromShareableHandle(R(back), fd.value, 1, 0),
     back.value == shared.value, cu.cuMemAllocFromPoolAsync(R(d), 256, shared, s), cu.cuMemPoolExportPointer(data, d),
     cu.cuMemPoolImportPointer(R(got_d), shared, data), got_d.value == d.value, pool_attr(shared, 10, I),
     cu.cuMemPoolExportToShareableHandle(R(fd), plain, 1, 0)]
pd = D(); assert cu.cuMemAllocFromPoolAsync(R(pd), 256, plain, s) == 0
r += [cu.cuMemPoolExportPointer(data, pd), cu.cuMemFreeAsync(d, s), rt.cudaStreamSynchronize(s)]
os.close(fd.value)
out(r)
""")
    assert got == [OK, OK, True, OK, OK, OK, True, [OK, 1], INVALID_VALUE, INVALID_VALUE, OK, OK]


def test_create_destroy_loops_leave_nothing_behind(subprocess_python):
    # A destroyed pool's records go once its last allocation is freed, its slot is reused under a new generation
    # (its handle stays invalid), and a shared pool's exported descriptor goes with it: loops are flat, by the
    # emulator's count and by the C heap's.
    got = _json(subprocess_python, """
libc = c.CDLL(None)
class MallInfo2(c.Structure):
    _fields_ = [(n, SZ) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                                  "fordblks", "keepcost")]
libc.mallinfo2.restype = MallInfo2
s = stream_on(1)
kinds = [props(0), host_props(HOST), host_props(NUMA, 0, handles=1), Props(2, 0, HOST, 0)]
p, d, fd = VP(), D(), I()
def cycle(k):
    assert cu.cuMemPoolCreate(R(p), R(kinds[k % 4])) == 0
    if k % 4 == 2:
        assert cu.cuMemPoolExportToShareableHandle(R(fd), p, 1, 0) == 0
        os.close(fd.value)
    assert cu.cuMemAllocFromPoolAsync(R(d), 1000, p, s) == 0
    if k % 3 == 0:          # destroyed with an allocation outstanding, freed after
        assert cu.cuMemPoolDestroy(p) == 0 and cu.cuMemFreeAsync(d, s) == 0
    else:
        assert cu.cuMemFreeAsync(d, s) == 0 and cu.cuMemPoolDestroy(p) == 0
    assert rt.cudaStreamSynchronize(s) == 0
for k in range(400): cycle(k)
base = pools()
heap = libc.mallinfo2().uordblks
for k in range(8000): cycle(k)
grown = libc.mallinfo2().uordblks - heap
after = pools()
first = VP(); assert cu.cuMemPoolCreate(R(first), R(props(0))) == 0 and cu.cuMemPoolDestroy(first) == 0
second = VP(); assert cu.cuMemPoolCreate(R(second), R(props(0))) == 0
out([base, after, grown < 65536, grown, second.value != first.value, pool_attr(first, 7)[0],
     cu.cuMemPoolDestroy(first), pool_attr(second, 7)[0]])
""")
    base, after, flat_heap, grown, fresh, stale_attr, stale_destroy, live_attr = got
    assert base == [0, 1] and after == base, (base, after)      # no record left, one slot reused
    assert flat_heap, f"the C heap grew by {grown} bytes over 8000 pool create/destroy cycles"
    assert fresh and stale_attr == INVALID_VALUE and stale_destroy == INVALID_VALUE and live_attr == OK


# name: (call, expected fault code); every call succeeds when not armed.  ob: an out-buffer; hp: a host pool
# with a free block kept (threshold set) and the allocation ha; np: a shared HOST_NUMA pool exported as fd
# with the allocation na exported as nd; s1: a device-1 stream.
FAULTS = {
    "cuMemPoolCreate": ("cu.cuMemPoolCreate(ob_vp, R(host_props(HOST)))", OOM),
    "cudaMemPoolCreate": ("rt.cudaMemPoolCreate(ob_vp, R(host_props(NUMA)))", OOM),
    "cuMemGetDefaultMemPool": ("cu.cuMemGetDefaultMemPool(ob_vp, R(Location(HOST, 0)), 1)", UNKNOWN),
    "cudaMemGetDefaultMemPool": ("rt.cudaMemGetDefaultMemPool(ob_vp, R(Location(NUMA, 0)), 1)", OOM),
    "cuMemGetMemPool": ("cu.cuMemGetMemPool(ob_vp, R(Location(NUMA, 0)), 1)", UNKNOWN),
    "cudaMemGetMemPool": ("rt.cudaMemGetMemPool(ob_vp, R(Location(HOST, 0)), 1)", OOM),
    "cuMemSetMemPool": ("cu.cuMemSetMemPool(R(Location(HOST, 0)), 1, hp)", UNKNOWN),
    "cudaMemSetMemPool": ("rt.cudaMemSetMemPool(R(Location(NUMA, 0)), 1, np)", UNKNOWN),
    "cuMemAllocFromPoolAsync": ("cu.cuMemAllocFromPoolAsync(ob_d, 512, hp, s1)", OOM),
    "cudaMallocFromPoolAsync": ("rt.cudaMallocFromPoolAsync(ob, SZ(512), hp, s1)", OOM),
    "cuMemFreeAsync": ("cu.cuMemFreeAsync(ha, s1)", UNKNOWN),
    "cuMemPoolDestroy": ("cu.cuMemPoolDestroy(gone)", UNKNOWN),
    "cuMemPoolGetAttribute": ("cu.cuMemPoolGetAttribute(hp, 12, obv)", UNKNOWN),
    "cuMemPoolSetAttribute": ("cu.cuMemPoolSetAttribute(hp, 4, R(D(1 << 20)))", UNKNOWN),
    "cuMemPoolTrimTo": ("cu.cuMemPoolTrimTo(hp, 0)", UNKNOWN),
    "cuMemPoolSetAccess": ("cu.cuMemPoolSetAccess(hp, R(Access(1, 1, RW)), 1)", UNKNOWN),
    "cuMemPoolGetAccess": ("cu.cuMemPoolGetAccess(ob_i, hp, R(Location(HOST, 0)))", UNKNOWN),
    "cuMemPoolExportToShareableHandle": ("cu.cuMemPoolExportToShareableHandle(obv, np, 1, 0)", OOM),
    "cuMemPoolImportFromShareableHandle": ("cu.cuMemPoolImportFromShareableHandle(ob_vp, fd.value, 1, 0)", OOM),
    "cuMemPoolExportPointer": ("cu.cuMemPoolExportPointer(obv, na)", UNKNOWN),
    "cuMemPoolImportPointer": ("cu.cuMemPoolImportPointer(ob_d, np, c.cast(nd, VP))", UNKNOWN),
    "cuPointerGetAttribute": ("cu.cuPointerGetAttribute(obv, 2, ha)", UNKNOWN),
    "cuMemcpyHtoD_v2": ("cu.cuMemcpyHtoD_v2(ha, c.c_char_p(b'fault'), 5)", UNKNOWN),
    "cuMemsetD8_v2": ("cu.cuMemsetD8_v2(ha, 0x77, 8)", UNKNOWN),
    "cuDeviceGetAttribute": ("cu.cuDeviceGetAttribute(ob_i, 144, 0)", UNKNOWN),
}


def test_faults_on_the_host_pool_paths_change_nothing(subprocess_python):
    # each entry point armed by name on its host-pool path: the fault's code, nothing changed (pools made or
    # gone, defaults made on first use, current pools, attributes, access, bytes, out-parameters, the runtime's
    # last error), and the next call succeeds
    got = _json(subprocess_python, """
ob = c.create_string_buffer(64)
ob_vp, ob_d, ob_i, obv = c.cast(ob, P(VP)), c.cast(ob, P(D)), c.cast(ob, P(I)), c.cast(ob, VP)
s1 = stream_on(1)
hp, np = new_pool(host_props(HOST)), new_pool(host_props(NUMA, 0, handles=1))
assert cu.cuMemPoolSetAttribute(hp, 4, R(D(1 << 30))) == 0
fill = D(); assert cu.cuMemAllocFromPoolAsync(R(fill), 3000, hp, s1) == 0 and cu.cuMemFreeAsync(fill, s1) == 0
ha, na, fd, nd = D(), D(), I(), (c.c_char * 64)()
assert cu.cuMemAllocFromPoolAsync(R(ha), 1000, hp, s1) == 0 and cu.cuMemAllocFromPoolAsync(R(na), 100, np, s1) == 0
assert cu.cuMemPoolExportToShareableHandle(R(fd), np, 1, 0) == 0 and cu.cuMemPoolExportPointer(nd, na) == 0
assert rt.cudaStreamSynchronize(s1) == 0
def location_pool(fn, loc):
    p = VP(); assert fn(R(p), R(loc), 1) == 0; return p
def state():
    # a runtime entry point's fault is its last error, as any of its errors; the location's current pools are
    # read (defaults made on first use) only for the cases that set them
    assert rt.cudaStreamSynchronize(s1) == 0
    acc = I(); assert rt.cudaMemPoolGetAccess(R(acc), hp, R(Location(1, 1))) == 0
    current = [location_pool(rt.cudaMemGetMemPool, Location(k, 0)).value for k in (HOST, NUMA)] if "SetMemPool" in name else []
    return [pools(), [pool_attr(hp, a) for a in (4, 5, 7)], pool_attr(np, 7), acc.value, c.string_at(ha.value, 8).hex(),
            ob.raw.hex(), None if name.startswith("cuda") else rt.cudaPeekAtLastError(), free_bytes(),
            attr(ha.value, 2, U), current]
got = {}
for name, call in CASES.items():
    gone = new_pool(host_props(HOST)) if name == "cuMemPoolDestroy" else None
    c.memset(ob, 0xAB, 64); c.memset(ha.value, 0x11, 8)
    before = state()
    armed = rt.accelEmuSetFail(f"{name}:1".encode())
    fault = eval(call)
    after = state()
    again = eval(call)
    rt.accelEmuSetFail(None)
    got[name] = [armed, fault, before == after, again, before, after]
    if "SetMemPool" in name:
        for k in (HOST, NUMA):
            assert cu.cuMemSetMemPool(R(Location(k, 0)), 1, location_pool(rt.cudaMemGetDefaultMemPool, Location(k, 0))) == 0
    if name in ("cuMemAllocFromPoolAsync", "cudaMallocFromPoolAsync"):
        assert cu.cuMemFreeAsync(c.c_uint64.from_buffer(ob).value, s1) == 0
    if name == "cuMemFreeAsync": assert cu.cuMemAllocFromPoolAsync(R(ha), 1000, hp, s1) == 0
    if name in ("cuMemPoolCreate", "cudaMemPoolCreate"): assert cu.cuMemPoolDestroy(VP(c.c_void_p.from_buffer(ob).value)) == 0
    if name == "cuMemPoolExportToShareableHandle": os.close(c.c_int.from_buffer(ob).value)
out(got)
""".replace("CASES", repr({k: v[0] for k, v in FAULTS.items()})))
    for name, (_, code) in FAULTS.items():
        armed, fault, unchanged, again, before, after = got[name]
        assert armed == 0, f"{name} cannot be armed"
        assert fault == code, f"{name} returned {fault} with its fault armed"
        assert unchanged, f"{name}'s fault changed the state: {before} -> {after}"
        assert again == 0, f"{name} failed after its one fault: {again}"


@_fx.needs_cuda_core
def test_cuda_core_pinned_memory_resource_on_the_emulator(subprocess_python):
    # PinnedMemoryResource: a created pool (and an IPC-enabled one on the host's NUMA node), the host's current
    # pool, host-accessible buffers, copies between them on a device's stream, attributes, close
    got = _dm._json_bare(subprocess_python, """
import accel.emu; accel.emu.activate(devices=2)
import ctypes as c
from cuda.core import Device, PinnedMemoryResource, PinnedMemoryResourceOptions
d = Device(1); d.set_current()
s = d.create_stream()
r = [d.properties.host_memory_pools_supported, d.properties.host_numa_id]
mr = PinnedMemoryResource(PinnedMemoryResourceOptions())
a, b = mr.allocate(1000, stream=s), mr.allocate(1000, stream=s)
c.memmove(int(a.handle), bytes(range(250)) * 4, 1000)
b.copy_from(a, stream=s)
s.sync()
r += [a.size, a.is_host_accessible, a.is_device_accessible, a.device_id, c.string_at(int(b.handle), 1000) == bytes(range(250)) * 4,
      mr.attributes.used_mem_current, mr.is_handle_owned]
a.close(s); b.close(s); s.sync()
r += [mr.attributes.used_mem_current]
mr.close()
current = PinnedMemoryResource()
ipc = PinnedMemoryResource(PinnedMemoryResourceOptions(ipc_enabled=True, max_size=1 << 21))
buf = ipc.allocate(64, stream=s)
r += [current.is_handle_owned, ipc.is_ipc_enabled, ipc.numa_id, buf.ipc_descriptor.size]
buf.close(s); s.sync(); ipc.close()
print(json.dumps(r))
""")
    assert got == [True, 0, 1000, True, True, -1, True, 2048, True, 0, False, True, 0, 64]
