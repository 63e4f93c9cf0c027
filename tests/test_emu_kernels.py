"""Device code on the emulator's stand-ins (issue 32): the images the driver is handed (PTX text, accel's linked
image, fatbins and their wrapper, LZ4 / zstd entries, SASS refused), the module / library / linker entry points'
checks and errors.  The fatbins under tests/data/fatbin/ were made by nvcc 13.0 (make_fatbins.sh there).

Each check runs in a fresh interpreter (a library with the soname libcudart.so.13 loaded into the test process
would be found by every later dlopen of that soname)."""
import importlib.util
import json
import pathlib
import re
import struct

import pytest

from accel import emu

REPO = pathlib.Path(__file__).resolve().parent.parent
FATBIN = REPO / "tests" / "data" / "fatbin"

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

pytestmark = _fx.needs_standins

PRELUDE = f"""
import ctypes as c, json, os, struct, sys
rt = c.CDLL({emu.cudart_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = c.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
VP, SZ, I, U = c.c_void_p, c.c_size_t, c.c_int, c.c_uint
FATBIN = {str(FATBIN)!r}
def blob(name):
    return open(os.path.join(FATBIN, name), "rb").read()
img = rt.accelEmuPtxImage
img.argtypes = [c.c_char_p, SZ, I, c.c_char_p, SZ, c.c_char_p, SZ]
def decode(data, cc=90, size=None):
    text, err = c.create_string_buffer(1 << 16), c.create_string_buffer(512)
    n = img(data, len(data) if size is None else size, cc, text, len(text), err, len(err))
    texts = text.raw.split(b"\\0")[:n] if n > 0 else []
    return [n, [t.decode() for t in texts], err.value.decode()]
def ctx(dev=0):
    h = VP()
    assert cu.cuInit(0) == 0 and cu.cuDevicePrimaryCtxRetain(c.byref(h), dev) == 0 and cu.cuCtxSetCurrent(h) == 0
    return h
"""

_run, _json = _fx.runners(PRELUDE)

ADD = "_Z3addPKfS0_Pfi"


def _entries(data):
    """The fatbin's entries as (kind, arch, flags, header offset, header size, payload size): the layout
    ptx_image.h documents, read independently here."""
    magic, version, hsize, total = struct.unpack_from("<IHHQ", data, 0)
    assert (magic, version, hsize) == (0xBA55ED50, 1, 16)
    out, off = [], hsize
    while off < hsize + total:
        kind, _, ehs, psize = struct.unpack_from("<HHIQ", data, off)
        arch, = struct.unpack_from("<I", data, off + 28)
        flags, = struct.unpack_from("<Q", data, off + 40)
        out.append((kind, arch, flags, off, ehs, psize))
        off += ehs + psize
    return out


def test_the_committed_fatbins_have_the_layout_the_decoder_reads():
    # nvcc 13.0's default compresses the PTX with zstd (flag 0x8000), -compress-mode=speed with LZ4 (0x2000)
    kinds = {name: [(k, a, f & 0xa000) for k, a, f, *_ in _entries((FATBIN / name).read_bytes())]
             for name in ("add_zstd.fatbin", "add_lz4.fatbin", "add_plain.fatbin", "add_multi.fatbin", "add_sass.fatbin")}
    assert kinds == {"add_zstd.fatbin": [(2, 90, 0), (1, 90, 0x8000)],
                     "add_lz4.fatbin": [(2, 90, 0x2000), (1, 90, 0x2000)],
                     "add_plain.fatbin": [(2, 90, 0), (1, 90, 0)],
                     "add_multi.fatbin": [(1, 80, 0x2000), (1, 90, 0x2000)],
                     "add_sass.fatbin": [(2, 90, 0x2000)]}


def test_fatbin_ptx_entries_decode_the_same_whatever_their_compression(subprocess_python):
    got = _json(subprocess_python, """
out = {n: decode(blob(n)) for n in ("add_zstd.fatbin", "add_lz4.fatbin", "add_plain.fatbin")}
print(json.dumps(out))
""")
    plain = got["add_plain.fatbin"]
    assert plain[0] == 1 and plain[2] == ""
    text = plain[1][0]
    assert ".version 9.0" in text and ".target sm_90" in text and f".entry {ADD}(" in text and "gscale" in text
    assert got["add_zstd.fatbin"] == got["add_lz4.fatbin"] == plain


def test_the_ptx_entry_is_the_newest_not_above_the_device(subprocess_python):
    got = _json(subprocess_python, """
m = blob("add_multi.fatbin")
print(json.dumps([decode(m, 90), decode(m, 86), decode(m, 80), decode(m, 75), decode(blob("add_lz4.fatbin"), 80)]))
""")
    targets = [[line for line in g[1][0].splitlines() if line.startswith(".target")] if g[0] == 1 else g for g in got]
    assert targets[:3] == [[".target sm_90"], [".target sm_80"], [".target sm_80"]]
    assert got[3] == [-209, [], "the fatbin's PTX is for compute_80 and later; the device is compute_75"]
    assert got[4] == [-209, [], "the fatbin's PTX is for compute_90 and later; the device is compute_80"]


def test_sass_is_refused_naming_its_kernels(subprocess_python):
    # a fatbin without PTX, and the ELF (cubin) itself taken out of a fatbin: CUDA_ERROR_NO_BINARY_FOR_GPU (209)
    # and the kernels the cubin defines
    plain = (FATBIN / "add_plain.fatbin").read_bytes()
    kind, _, _, off, ehs, psize = _entries(plain)[0]
    assert kind == 2
    elf = plain[off + ehs:off + ehs + psize]
    assert elf[:4] == b"\x7fELF"
    got = _json(subprocess_python, f"""
print(json.dumps([decode(blob("add_sass.fatbin")), decode({elf!r}), decode({elf[:64]!r})]))
""")
    assert got == [[-209, [], ADD], [-209, [], ADD], [-209, [], ""]]


def test_accels_linked_image_and_ptx_text(subprocess_python):
    # PTX_CONTRACT.md's container: "AEMUPTX1", count, reserved, total size, then (len, text, padding) each
    def image(texts):
        body = b"".join(struct.pack("<Q", len(t)) + t + b"\0" * (-len(t) % 8) for t in texts)
        return b"AEMUPTX1" + struct.pack("<IIQ", len(texts), 0, 24 + len(body)) + body
    one, two = b".version 9.0\n.target sm_90\n// one", b".version 9.0\n.target sm_90\n// second text"
    good = image([one, two])
    got = _json(subprocess_python, f"""
good = {good!r}
print(json.dumps([decode(good), decode(good[:-8], size=len(good) - 8), decode(good[:40], size=40),
                  decode(b"AEMUPTX1" + struct.pack("<IIQ", 1 << 30, 0, 32) + bytes(8)),
                  decode({one!r} + b"\\0trailing", size={len(one)} + 9), decode(b"")]))
""")
    assert got[0] == [2, [one.decode(), two.decode()], ""]
    assert got[1][0] == got[2][0] == got[3][0] == -200             # CUDA_ERROR_INVALID_IMAGE
    assert "malformed linked image" in got[1][2]
    assert got[4] == [1, [one.decode()], ""]                       # PTX: up to its NUL
    assert got[5] == [1, [""], ""]


def test_malformed_fatbins_are_invalid_images_not_crashes(subprocess_python):
    lz4 = bytearray((FATBIN / "add_lz4.fatbin").read_bytes())
    kind, _, _, off, ehs, psize = _entries(bytes(lz4))[1]
    assert kind == 1
    bad_lz4 = bytearray(lz4)
    bad_lz4[off + ehs] = 0x0f              # the first sequence: no literals, then a match before the output's start
    zstd = bytearray((FATBIN / "add_zstd.fatbin").read_bytes())
    _, _, _, zoff, zehs, zpsize = _entries(bytes(zstd))[1]
    bad_zstd = bytearray(zstd)
    bad_zstd[zoff + zehs + 8:zoff + zehs + 40] = b"\0" * 32
    huge_entry = bytearray(lz4)
    struct.pack_into("<Q", huge_entry, off + 8, 1 << 40)
    got = _json(subprocess_python, f"""
lz4 = {bytes(lz4)!r}
print(json.dumps([decode({bytes(bad_lz4)!r}), decode({bytes(bad_zstd)!r}), decode({bytes(huge_entry)!r}),
                  decode(lz4[:100], size=100), decode(lz4[:8], size=8),
                  decode(struct.pack("<IIQQ", 0x466243b1, 1, 0, 0))]))
""")
    codes = [g[0] for g in got]
    assert codes == [-200, -200, -200, -200, -200, -200]
    assert "LZ4" in got[0][2] and "zstd" in got[1][2] and "overruns" in got[2][2] and "wrapper" in got[5][2]


def test_a_sass_module_is_refused_and_named_once_per_process(subprocess_python):
    proc = _run(subprocess_python, """
m = VP()
ctx()
sass = blob("add_sass.fatbin")
out = [cu.cuModuleLoadData(c.byref(m), sass), cu.cuModuleLoadData(c.byref(m), sass), m.value]
lib = VP()
out.append(cu.cuLibraryLoadData(c.byref(lib), sass, None, None, 0, None, None, 0))
class Wrapper(c.Structure): _fields_ = [("magic", U), ("version", U), ("data", VP), ("file", VP)]
buf = c.create_string_buffer(sass, len(sass))
w = Wrapper(0x466243b1, 1, c.cast(buf, VP), None)
out.append(cu.cuModuleLoadFatBinary(c.byref(m), c.byref(w)))
print(json.dumps(out))
""")
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [209, 209, None, 209, 209]
    assert proc.stderr.splitlines() == [
        f"accel emu: kernel {ADD} is SASS only (a cubin for a real GPU, no PTX): accel's emulator executes PTX only "
        "(CUDA_ERROR_NO_BINARY_FOR_GPU)"]


def test_module_entry_points_check_their_arguments_and_handles(subprocess_python):
    got = _json(subprocess_python, """
m, f, k, lib, p = VP(), VP(), VP(), VP(), VP()
n, size, off = U(), SZ(), SZ()
bogus = VP(0x5000)
assert cu.cuInit(0) == 0                                             # (before it: CUDA_ERROR_NOT_INITIALIZED)
early = [cu.cuModuleLoadData(c.byref(m), b"// no context yet")]     # the driver needs a current context
ctx()
out = [cu.cuModuleLoadData(None, b"x"), cu.cuModuleLoadData(c.byref(m), None),
       cu.cuModuleLoad(c.byref(m), b"/nonexistent/accel.ptx"),
       cu.cuLibraryLoadFromFile(c.byref(lib), b"/nonexistent/accel.ptx", None, None, 0, None, None, 0),
       cu.cuModuleGetFunction(c.byref(f), bogus, b"k"), cu.cuModuleGetGlobal_v2(c.byref(p), c.byref(size), bogus, b"g"),
       cu.cuModuleUnload(bogus), cu.cuModuleGetFunctionCount(c.byref(n), bogus),
       cu.cuLibraryGetKernel(c.byref(k), bogus, b"k"), cu.cuLibraryUnload(bogus), cu.cuLibraryGetModule(c.byref(m), bogus),
       cu.cuKernelGetFunction(c.byref(f), bogus), cu.cuKernelGetName(c.byref(p), bogus),
       cu.cuFuncGetName(c.byref(p), bogus), cu.cuFuncGetAttribute(c.byref(c.c_int()), 0, bogus),
       cu.cuFuncSetAttribute(bogus, 8, 0), cu.cuFuncGetParamInfo(bogus, 0, c.byref(off), c.byref(size)),
       cu.cuKernelGetParamInfo(bogus, 0, c.byref(off), c.byref(size)), cu.cuFuncGetModule(c.byref(m), bogus),
       cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(c.byref(c.c_int()), bogus, 128, SZ(0))]
cu.cuLaunchKernel.argtypes = [VP] + [U] * 7 + [VP] * 3
out.append(cu.cuLaunchKernel(bogus, 1, 1, 1, 1, 1, 1, 0, None, None, None))
print(json.dumps(early + out))
""")
    assert got == [201, 1, 1, 301, 301] + [400] * 17


def test_the_linker_takes_ptx_and_refuses_what_it_cannot_link(subprocess_python):
    got = _json(subprocess_python, """
st, img, size = VP(), VP(), SZ()
assert cu.cuInit(0) == 0
early = [cu.cuLinkCreate_v2(0, None, None, c.byref(st))]
ctx()
log = c.create_string_buffer(256)
opts = (I * 2)(5, 6)                                        # CU_JIT_ERROR_LOG_BUFFER(_SIZE_BYTES)
vals = (VP * 2)(c.cast(log, VP), VP(len(log)))
out = [cu.cuLinkCreate_v2(2, opts, vals, c.byref(st))]
cu.cuLinkAddData_v2.argtypes = [VP, I, VP, SZ, c.c_char_p, U, VP, VP]
out.append(cu.cuLinkComplete(st, c.byref(img), c.byref(size)))         # nothing added
out.append(log.value.decode())
sass = blob("add_sass.fatbin")
out.append(cu.cuLinkAddData_v2(st, 2, sass, len(sass), b"add_sass.fatbin", 0, None, None))
out.append(cu.cuLinkAddData_v2(st, 4, b"!<arch>", 7, b"libx.a", 0, None, None))
out.append(log.value.decode())
out.append(cu.cuLinkAddData_v2(st, 9, b"x", 1, b"x", 0, None, None))
out += [cu.cuLinkDestroy(st), cu.cuLinkDestroy(st), cu.cuLinkComplete(st, c.byref(img), c.byref(size))]
print(json.dumps(early + out))
""")
    assert got[:4] == [201, 0, 1, "nothing to link"]
    assert got[4] == 209
    assert got[5] == 801 and "libx.a" in got[6] and "not supported" in got[6]
    assert got[7:] == [1, 0, 400, 400]


def test_module_entry_points_have_fault_hooks(subprocess_python):
    got = _json(subprocess_python, """
rt.accelEmuSetFail.argtypes = [c.c_char_p]
names = [b"cuModuleLoadData", b"cuLibraryLoadData", b"cuLaunchKernel", b"cuLinkCreate_v2", b"cuKernelGetAttribute",
         b"cuGraphAddKernelNode_v2", b"cuOccupancyMaxActiveClusters"]
armed = [rt.accelEmuSetFail(n + b":1") for n in names]
rt.accelEmuSetFail(b"cuModuleLoadData:1")
m = VP()
ctx()
sass = blob("add_sass.fatbin")
print(json.dumps(armed + [cu.cuModuleLoadData(c.byref(m), sass), cu.cuModuleLoadData(c.byref(m), sass)]))
""")
    assert got == [0] * 7 + [2, 209]           # the armed call fails as creating calls do (out of memory)


# ------------------------------------------------------------------------------------------- kernels running
# (the PTX engine executes them: NVRTC's add kernel from tests/data/ptx/, nvcc's from the fatbins)

PTX = REPO / "tests" / "data" / "ptx"

KERNELS = PRELUDE + f"""
import numpy as np
add_ptx = open({str(PTX / "add.ptx")!r}, "rb").read()
cu.cuLaunchKernel.argtypes = [VP] + [U] * 7 + [VP] * 3
cu.cuMemAlloc_v2.argtypes = [c.POINTER(c.c_uint64), SZ]
cu.cuMemcpyHtoD_v2.argtypes = [c.c_uint64, VP, SZ]
cu.cuMemcpyDtoH_v2.argtypes = [VP, c.c_uint64, SZ]
cu.cuMemsetD8_v2.argtypes = [c.c_uint64, c.c_ubyte, SZ]
def dev_array(x):
    d = c.c_uint64()
    assert cu.cuMemAlloc_v2(c.byref(d), max(x.nbytes, 1)) == 0
    assert cu.cuMemcpyHtoD_v2(d.value, x.ctypes.data, x.nbytes) == 0
    return d
def host(d, n, dtype=np.float32):
    out = np.zeros(n, dtype)
    assert cu.cuMemcpyDtoH_v2(out.ctypes.data, d.value, out.nbytes) == 0
    return out
def params(*values):
    return (VP * len(values))(*[c.cast(c.byref(v), VP) for v in values])
def load(image, name):
    m, f = VP(), VP()
    assert cu.cuModuleLoadData(c.byref(m), image) == 0
    assert cu.cuModuleGetFunction(c.byref(f), m, name) == 0
    return m, f
"""

_krun, _kjson = _fx.runners(KERNELS)


def test_a_ptx_kernel_loads_and_runs_through_both_parameter_forms(subprocess_python):
    # n = 1000: the last block is partial (a partial warp, the bounds check diverges); kernelParams and the
    # extra buffer (the caller's own layout, padding included) give the same result
    got = _kjson(subprocess_python, """
ctx()
m, f = load(add_ptx, b"add")
n = 1000
a, b = np.arange(n, dtype=np.float32), np.full(n, 2.5, np.float32)
da, db, dc = dev_array(a), dev_array(b), dev_array(np.zeros(n, np.float32))
nn = c.c_uint(n)
out = [cu.cuLaunchKernel(f, 8, 1, 1, 128, 1, 1, 0, None, params(da, db, dc, nn), None), cu.cuCtxSynchronize()]
out.append(bool(np.array_equal(host(dc, n), a + b)))
assert cu.cuMemsetD8_v2(dc.value, 0, 4 * n) == 0
buf = struct.pack("<QQQI", da.value, db.value, dc.value, n) + bytes(4)
size = SZ(len(buf))
raw = c.create_string_buffer(buf, len(buf))
extra = (VP * 5)(VP(1), c.cast(raw, VP), VP(2), c.cast(c.byref(size), VP), VP(0))
out += [cu.cuLaunchKernel(f, 8, 1, 1, 128, 1, 1, 0, None, None, extra), cu.cuCtxSynchronize(),
        bool(np.array_equal(host(dc, n), a + b))]
out.append(cu.cuModuleGetFunction(c.byref(VP()), m, b"no_such_kernel"))
out.append(cu.cuModuleUnload(m))
print(json.dumps(out))
""")
    assert got == [0, 0, True, 0, 0, True, 500, 0]


def test_launch_configurations_get_the_drivers_errors_at_the_call(subprocess_python):
    got = _kjson(subprocess_python, """
ctx()
m, f = load(add_ptx, b"add")
d = dev_array(np.zeros(4, np.float32))
nn = c.c_uint(4)
p = params(d, d, d, nn)
L = lambda *cfg, smem=0, p=p, extra=None: cu.cuLaunchKernel(f, *cfg, smem, None, p, extra)
size = SZ(28)
raw = c.create_string_buffer(32)
extra = (VP * 5)(VP(1), c.cast(raw, VP), VP(2), c.cast(c.byref(size), VP), VP(0))
out = [L(1, 1, 1, 1025, 1, 1), L(1, 1, 1, 1, 1, 65), L(1, 1, 1, 32, 32, 2), L(0, 1, 1, 32, 1, 1),
       L(1, 65536, 1, 32, 1, 1), L(1, 1, 1, 32, 1, 1, smem=48 * 1024 + 1), L(1, 1, 1, 32, 1, 1, p=None),
       L(1, 1, 1, 32, 1, 1, extra=extra), L(1, 1, 1, 32, 1, 1, p=None, extra=(VP * 3)(VP(1), c.cast(raw, VP), VP(0)))]
# dynamic shared memory over 48 KB needs the opt-in attribute, up to the profile's per-block opt-in figure
out += [cu.cuFuncSetAttribute(f, 8, 64 * 1024), L(1, 1, 1, 32, 1, 1, smem=64 * 1024),
        cu.cuFuncSetAttribute(f, 8, 232448 + 1), cu.cuFuncSetAttribute(f, 0, 256)]
out.append(cu.cuCtxSynchronize())
print(json.dumps(out))
""")
    assert got == [1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0]


def test_function_attributes_parameters_and_occupancy(subprocess_python):
    got = _kjson(subprocess_python, """
ctx()
m, f = load(add_ptx, b"add")
attrs = []
for a in range(16):
    v = c.c_int(-7); attrs.append([cu.cuFuncGetAttribute(c.byref(v), a, f), v.value])
off, size = SZ(), SZ()
info = [[cu.cuFuncGetParamInfo(f, i, c.byref(off), c.byref(size)), off.value, size.value] for i in range(5)]
name = c.c_char_p()
cu.cuFuncGetName(c.byref(name), f)
nb, mg, bs = c.c_int(), c.c_int(), c.c_int()
occ = [cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(c.byref(nb), f, 128, SZ(0)), nb.value,
       cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(c.byref(nb), f, 2048, SZ(0)), nb.value,
       cu.cuOccupancyMaxPotentialBlockSize(c.byref(mg), c.byref(bs), f, None, SZ(0), 0), mg.value, bs.value]
dyn = SZ()
occ += [cu.cuOccupancyAvailableDynamicSMemPerBlock(c.byref(dyn), f, 1, 128), dyn.value]
mm = VP()
cu.cuFuncGetModule(c.byref(mm), f)
print(json.dumps([attrs, info, name.value.decode(), occ, mm.value == m.value]))
""")
    attrs, info, name, occ, same = got
    assert all(r == 0 for r, _ in attrs)
    v = [x for _, x in attrs]
    major, minor = re.search(r"^\.version (\d+)\.(\d+)", (PTX / "add.ptx").read_text(), re.M).groups()
    assert v[5] == int(major) * 10 + int(minor)                     # CU_FUNC_ATTRIBUTE_PTX_VERSION: .version
    assert v[0] == 1024 and v[1] == 0 and v[4] > 0 and v[6] == 90 and v[8] == 48 * 1024 and v[9] == -1
    assert info == [[0, 0, 8], [0, 8, 8], [0, 16, 8], [0, 24, 4], [1, 24, 4]]
    assert name == "add" and same
    # h100: 2048 threads and 32 blocks per SM, 132 SMs; 128-thread blocks -> 16 resident
    assert occ[:4] == [0, 16, 0, 0] and occ[4:] == [0, 132 * 2, 1024, 0, 233472 - 1024]


def test_launches_keep_stream_order_events_and_their_parameters(subprocess_python):
    # stream s1: a host function that sleeps, then c = a + b (its n copied at the call, then changed); s2 waits
    # for an event recorded after it, then d = c + b: the second kernel sees the first one's result
    got = _kjson(subprocess_python, """
import time
ctx()
m, f = load(add_ptx, b"add")
n = 300
a, b = np.arange(n, dtype=np.float32), np.full(n, 1.5, np.float32)
da, db, dc, dd = (dev_array(x) for x in (a, b, np.zeros(n, np.float32), np.zeros(n, np.float32)))
s1, s2, e = VP(), VP(), VP()
assert cu.cuStreamCreate(c.byref(s1), 1) == 0 and cu.cuStreamCreate(c.byref(s2), 1) == 0
assert cu.cuEventCreate(c.byref(e), 0) == 0
HOSTFN = c.CFUNCTYPE(None, VP)
slow = HOSTFN(lambda _: time.sleep(0.2))
cu.cuLaunchHostFunc.argtypes = [VP, HOSTFN, VP]
assert cu.cuLaunchHostFunc(s1, slow, None) == 0
nn = c.c_uint(n)
out = [cu.cuLaunchKernel(f, 3, 1, 1, 128, 1, 1, 0, s1, params(da, db, dc, nn), None)]
nn.value = 7                                                  # copied at the call: the launch keeps 300
out += [cu.cuEventRecord(e, s1), cu.cuStreamWaitEvent(s2, e, 0)]
n2 = c.c_uint(n)
out += [cu.cuLaunchKernel(f, 3, 1, 1, 128, 1, 1, 0, s2, params(dc, db, dd, n2), None), cu.cuStreamQuery(s1)]
out += [cu.cuStreamSynchronize(s2), cu.cuEventQuery(e)]
out += [bool(np.array_equal(host(dc, n), a + b)), bool(np.array_equal(host(dd, n), a + b + b))]
print(json.dumps(out))
""")
    assert got == [0, 0, 0, 0, 600, 0, 0, True, True]


def test_a_captured_launch_replays_as_a_direct_launch_does(subprocess_python):
    got = _kjson(subprocess_python, """
ctx()
m, f = load(add_ptx, b"add")
n = 257
a, b = np.arange(n, dtype=np.float32), np.full(n, 3.0, np.float32)
da, db, dc = dev_array(a), dev_array(b), dev_array(np.zeros(n, np.float32))
s, g, x = VP(), VP(), VP()
assert cu.cuStreamCreate(c.byref(s), 1) == 0
nn = c.c_uint(n)
out = [cu.cuStreamBeginCapture_v2(s, 0), cu.cuLaunchKernel(f, 3, 1, 1, 128, 1, 1, 0, s, params(da, db, dc, nn), None),
       cu.cuStreamEndCapture(s, c.byref(g))]
nodes, count = (VP * 4)(), SZ(4)
out.append(cu.cuGraphGetNodes(g, nodes, c.byref(count)))
t = c.c_int(-1)
out += [count.value, cu.cuGraphNodeGetType(VP(nodes[0]), c.byref(t)), t.value]
out.append(bool(np.array_equal(host(dc, n), np.zeros(n))))          # captured, not run
out.append(cu.cuGraphInstantiateWithFlags(c.byref(x), g, 0))
results = []
for k in range(3):
    a2 = a * (k + 2)
    assert cu.cuMemcpyHtoD_v2(da.value, a2.ctypes.data, a2.nbytes) == 0
    out.append(cu.cuGraphLaunch(x, s))
    out.append(cu.cuStreamSynchronize(s))
    replay = host(dc, n)
    assert cu.cuLaunchKernel(f, 3, 1, 1, 128, 1, 1, 0, s, params(da, db, dc, nn), None) == 0
    assert cu.cuStreamSynchronize(s) == 0
    results.append(bool(np.array_equal(replay, host(dc, n))) and bool(np.array_equal(replay, a2 + b)))
out += [results, cu.cuGraphExecDestroy(x), cu.cuGraphDestroy(g), cu.cuModuleUnload(m)]
print(json.dumps(out))
""")
    assert got == [0, 0, 0, 0, 1, 0, 0, True, 0, 0, 0, 0, 0, 0, 0, [True, True, True], 0, 0, 0]


def test_explicit_kernel_nodes_their_parameters_and_exec_update(subprocess_python):
    got = _kjson(subprocess_python, """
ctx()
m, f = load(add_ptx, b"add")
n = 100
a, b = np.arange(n, dtype=np.float32), np.full(n, 1.0, np.float32)
da, db, dc, dd = (dev_array(x) for x in (a, b, np.zeros(n, np.float32), np.zeros(n, np.float32)))
class KP(c.Structure):
    _fields_ = [("func", VP), ("grid", U * 3), ("block", U * 3), ("smem", U), ("params", VP), ("extra", VP),
                ("kern", VP), ("ctx", VP)]
nn = c.c_uint(n)
p1 = params(da, db, dc, nn)
kp = KP(f, (U * 3)(1, 1, 1), (U * 3)(128, 1, 1), 0, c.cast(p1, VP), None, None, None)
g, node, x, s = VP(), VP(), VP(), VP()
assert cu.cuStreamCreate(c.byref(s), 1) == 0
out = [cu.cuGraphCreate(c.byref(g), 0), cu.cuGraphAddKernelNode_v2(c.byref(node), g, None, 0, c.byref(kp))]
got = KP()
out.append(cu.cuGraphKernelNodeGetParams_v2(node, c.byref(got)))
argv = c.cast(got.params, c.POINTER(VP))
out += [got.func == f.value, list(got.grid), list(got.block), c.cast(argv[3], c.POINTER(c.c_uint))[0]]
out += [cu.cuGraphInstantiateWithFlags(c.byref(x), g, 0), cu.cuGraphLaunch(x, s), cu.cuStreamSynchronize(s)]
out.append(bool(np.array_equal(host(dc, n), a + b)))
# the executable graph's node now writes dd (the graph's node keeps dc)
p2 = params(da, da, dd, nn)
kp2 = KP(f, (U * 3)(1, 1, 1), (U * 3)(128, 1, 1), 0, c.cast(p2, VP), None, None, None)
out += [cu.cuGraphExecKernelNodeSetParams_v2(x, node, c.byref(kp2)), cu.cuGraphLaunch(x, s), cu.cuStreamSynchronize(s)]
out.append(bool(np.array_equal(host(dd, n), a + a)))
bad = KP(f, (U * 3)(1, 1, 1), (U * 3)(2048, 1, 1), 0, c.cast(p2, VP), None, None, None)
out += [cu.cuGraphKernelNodeSetParams_v2(node, c.byref(bad)), cu.cuGraphAddKernelNode_v2(c.byref(node), g, None, 0, None)]
out += [cu.cuGraphExecDestroy(x), cu.cuGraphDestroy(g)]
print(json.dumps(out))
""")
    assert got == [0, 0, 0, True, [1, 1, 1], [128, 1, 1], 100, 0, 0, 0, True, 0, 0, 0, True, 1, 1, 0, 0]


def test_an_out_of_bounds_access_is_a_sticky_illegal_address(subprocess_python):
    proc = _krun(subprocess_python, """
ctx()
m, f = load(add_ptx, b"add")
d = dev_array(np.zeros(16, np.float32))
nn = c.c_uint(4096)                                   # reads and writes past the 64-byte allocation
out = [cu.cuLaunchKernel(f, 32, 1, 1, 128, 1, 1, 0, None, params(d, d, d, nn), None), cu.cuCtxSynchronize()]
p = c.c_uint64()
out += [cu.cuMemAlloc_v2(c.byref(p), 64), rt.cudaDeviceSynchronize(), rt.cudaGetLastError()]
n1 = VP()
out += [rt.cudaSetDevice(1), rt.cudaDeviceSynchronize(), rt.cudaSetDevice(0)]    # another device is unharmed
out += [cu.cuDevicePrimaryCtxReset_v2(0), cu.cuCtxSetCurrent(ctx()), cu.cuCtxSynchronize(), cu.cuMemAlloc_v2(c.byref(p), 64)]
print(json.dumps(out))
""")
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [0, 700, 700, 700, 700, 0, 0, 0, 0, 0, 0, 0]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("accel emu: kernel add faulted on device 0 (error 700, sticky): ")
    assert "illegal global memory access" in lines[0] and "thread (" in lines[0]


def test_libraries_kernels_globals_and_launch_ex(subprocess_python):
    # nvcc's kernel (c = (a + b) * gscale) from its fatbin's LZ4 PTX entry, through the library API as numba and
    # cuda.core use it; the module variable written with a copy
    got = _kjson(subprocess_python, """
ctx()
lib, k, f = VP(), VP(), VP()
out = [cu.cuLibraryLoadData(c.byref(lib), blob("add_lz4.fatbin"), None, None, 0, None, None, 0)]
out.append(cu.cuLibraryGetKernel(c.byref(k), lib, b"_Z3addPKfS0_Pfi"))
count, name = U(), c.c_char_p()
out += [cu.cuLibraryGetKernelCount(c.byref(count), lib), count.value, cu.cuKernelGetName(c.byref(name), k),
        name.value.decode()]
regs = c.c_int()
out += [cu.cuKernelGetAttribute(c.byref(regs), 4, k, 0), regs.value > 0, cu.cuKernelSetAttribute(9, 50, k, 0),
        cu.cuKernelSetCacheConfig(k, 1, 0), cu.cuKernelGetAttribute(c.byref(regs), 4, k, 99)]
gp, gs = c.c_uint64(), SZ()
out += [cu.cuLibraryGetGlobal(c.byref(gp), c.byref(gs), lib, b"gscale"), gs.value,
        cu.cuLibraryGetGlobal(c.byref(gp), c.byref(gs), lib, b"nope")]
scale = c.c_int(0)
assert cu.cuMemcpyDtoH_v2(c.byref(scale), gp.value, 4) == 0
out.append(scale.value)                                            # its initialiser
scale.value = 5
assert cu.cuMemcpyHtoD_v2(gp.value, c.byref(scale), 4) == 0
out.append(cu.cuKernelGetFunction(c.byref(f), k))
n = 77
a, b = np.arange(n, dtype=np.float32), np.full(n, 1.0, np.float32)
da, db, dc = dev_array(a), dev_array(b), dev_array(np.zeros(n, np.float32))
class Attr(c.Structure): _fields_ = [("id", I), ("pad", I), ("value", c.c_char * 64)]
class Config(c.Structure):
    _fields_ = [("grid", U * 3), ("block", U * 3), ("smem", U), ("stream", VP), ("attrs", c.POINTER(Attr)), ("n", U)]
attrs = (Attr * 2)()
attrs[0].id = 8                                                    # priority: accepted
attrs[1].id = 2; attrs[1].value = struct.pack("<i", 1)             # cooperative
cfg = Config((U * 3)(1, 1, 1), (U * 3)(96, 1, 1), 0, None, attrs, 2)
nn = c.c_int(n)
out += [cu.cuLaunchKernelEx(c.byref(cfg), f, params(da, db, dc, nn), None), cu.cuCtxSynchronize()]
out.append(bool(np.array_equal(host(dc, n), (a + b) * 5)))
attrs[1].id = 4; attrs[1].value = struct.pack("<III", 3, 1, 1)     # a cluster that does not divide the grid
out.append(cu.cuLaunchKernelEx(c.byref(cfg), f, params(da, db, dc, nn), None))
attrs[1].id = 99
out.append(cu.cuLaunchKernelEx(c.byref(cfg), f, params(da, db, dc, nn), None))
big = Config((U * 3)(100000, 1, 1), (U * 3)(1024, 1, 1), 0, None, None, 0)
cu.cuLaunchCooperativeKernel.argtypes = [VP] + [U] * 7 + [VP] * 2
out.append(cu.cuLaunchCooperativeKernel(f, 100000, 1, 1, 1024, 1, 1, 0, None, params(da, db, dc, nn)))
mod = VP()
out += [cu.cuLibraryGetModule(c.byref(mod), lib), cu.cuModuleUnload(mod), cu.cuLibraryUnload(lib),
        cu.cuLibraryUnload(lib), cu.cuKernelGetName(c.byref(name), k)]
print(json.dumps(out))
""")
    assert got == [0, 0, 0, 1, 0, "_Z3addPKfS0_Pfi", 0, True, 0, 0, 101, 0, 4, 500, 3, 0, 0, 0, True, 912, 1, 720,
                   0, 400, 0, 400, 400]


def test_the_linker_returns_accels_image_which_loads(subprocess_python):
    got = _kjson(subprocess_python, """
ctx()
st, img, size = VP(), VP(), SZ()
cu.cuLinkAddData_v2.argtypes = [VP, I, VP, SZ, c.c_char_p, U, VP, VP]
out = [cu.cuLinkCreate_v2(0, None, None, c.byref(st)),
       cu.cuLinkAddData_v2(st, 1, add_ptx, len(add_ptx), b"add.ptx", 0, None, None),
       cu.cuLinkComplete(st, c.byref(img), c.byref(size))]
image = c.string_at(img, size.value)
out += [image[:8].decode(), struct.unpack_from("<IIQ", image, 8)[0], struct.unpack_from("<IIQ", image, 8)[2] == len(image)]
m, f = load(image, b"add")
n = 50
a = np.arange(n, dtype=np.float32)
da, dc = dev_array(a), dev_array(np.zeros(n, np.float32))
nn = c.c_uint(n)
out += [cu.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, None, params(da, da, dc, nn), None), cu.cuCtxSynchronize(),
        bool(np.array_equal(host(dc, n), a + a)), cu.cuLinkDestroy(st)]
# a link error is the build's: an undefined name, reported in the error log
st2 = VP()
log = c.create_string_buffer(512)
opts, vals = (I * 2)(5, 6), (VP * 2)(c.cast(log, VP), VP(len(log)))
bad = add_ptx.replace(b"add_param_3", b"missing_param", 1)
out += [cu.cuLinkCreate_v2(2, opts, vals, c.byref(st2)), cu.cuLinkAddData_v2(st2, 1, bad, len(bad), b"bad", 0, None, None),
        cu.cuLinkComplete(st2, c.byref(img), c.byref(size)), len(log.value) > 0, cu.cuLinkDestroy(st2)]
print(json.dumps(out))
""")
    assert got[:6] == [0, 0, 0, "AEMUPTX1", 1, True]
    assert got[6:10] == [0, 0, True, 0]
    assert got[10:12] == [0, 0] and got[12] == 218 and got[13] and got[14] == 0


def test_every_module_and_launch_entry_point_is_armable(subprocess_python):
    # EMU_MODULE_SYMBOLS (emu_internal.h) lists the fault hooks of emu_module.c and emu_drvlaunch.c; an armed
    # launch fails before anything is queued
    text = (REPO / "accel" / "_emu" / "emu_internal.h").read_text()
    block = text[text.index("#define EMU_MODULE_SYMBOLS(X)"):]
    names = re.findall(r"X\((\w+)\)", block[:block.index("\n\n")])
    assert len(names) == 54 and "cuLaunchKernel" in names
    got = _kjson(subprocess_python, f"""
rt.accelEmuSetFail.argtypes = [c.c_char_p]
armed = [rt.accelEmuSetFail((n + ":1").encode()) for n in {names!r}]
rt.accelEmuSetFail(None)
ctx()
m, f = load(add_ptx, b"add")
d = dev_array(np.zeros(4, np.float32))
nn = c.c_uint(4)
s = VP()
assert cu.cuStreamCreate(c.byref(s), 1) == 0
rt.accelEmuSetFail(b"cuLaunchKernel:1")
out = [cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params(d, d, d, nn), None), cu.cuStreamQuery(s),
       cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params(d, d, d, nn), None), cu.cuStreamSynchronize(s)]
print(json.dumps([armed, out]))
""")
    assert got == [[0] * len(names), [999, 0, 0, 0]]


def test_the_runtimes_library_api_launches_through_cudaLaunchKernel(subprocess_python):
    # cudaLibraryLoadData / cudaLibraryGetKernel hand out the driver's objects; cudaLaunchKernel takes the kernel
    got = _kjson(subprocess_python, """
class dim3(c.Structure): _fields_ = [("x", U), ("y", U), ("z", U)]
rt.cudaLaunchKernel.argtypes = [VP, dim3, dim3, VP, SZ, VP]
assert rt.cudaSetDevice(0) == 0
lib, k = VP(), VP()
out = [rt.cudaLibraryLoadData(c.byref(lib), add_ptx, None, None, 0, None, None, 0),
       rt.cudaLibraryGetKernel(c.byref(k), lib, b"add"), rt.cudaLibraryGetKernel(c.byref(VP()), lib, b"nope"),
       rt.cudaGetLastError()]
count = U()
out += [rt.cudaLibraryGetKernelCount(c.byref(count), lib), count.value, rt.cudaKernelSetAttributeForDevice(k, 8, 1024, 0),
        rt.cudaKernelSetAttributeForDevice(k, 8, 1024, 99)]
n = 64
a = np.arange(n, dtype=np.float32)
da, dc = dev_array(a), dev_array(np.zeros(n, np.float32))
nn = c.c_uint(n)
out += [rt.cudaLaunchKernel(k, dim3(1, 1, 1), dim3(64, 1, 1), params(da, da, dc, nn), 0, None),
        rt.cudaLaunchKernel(k, dim3(1, 1, 1), dim3(64, 1, 1), params(da, da, dc, nn), 2048, None),
        rt.cudaGetLastError(), rt.cudaDeviceSynchronize(), bool(np.array_equal(host(dc, n), a + a)),
        rt.cudaLibraryUnload(lib), rt.cudaLibraryUnload(lib)]
print(json.dumps(out))
""")
    assert got == [0, 0, 500, 500, 0, 1, 0, 101, 0, 9, 9, 0, True, 0, 400]   # 2048 bytes > the 1024 allowed


def test_ptx_only_for_a_newer_device_is_no_binary_and_says_why(subprocess_python):
    # an A100 (compute capability 8.0) and a fatbin whose PTX is compute_90: refused, the reason on stderr (no
    # log buffer given) or in the caller's error log
    proc = _run(subprocess_python, """
ctx()
m = VP()
image = blob("add_lz4.fatbin")
log = c.create_string_buffer(256)
opts, vals = (I * 2)(5, 6), (VP * 2)(c.cast(log, VP), VP(len(log)))
out = [cu.cuModuleLoadData(c.byref(m), image), cu.cuModuleLoadDataEx(c.byref(m), image, 2, opts, vals),
       log.value.decode(), vals[1]]
print(json.dumps(out))
""", env={"ACCEL_EMU_PROFILE": "a100"})
    why = "the fatbin's PTX is for compute_90 and later; the device is compute_80"
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [209, 209, why, len(why) + 1]
    assert proc.stderr.splitlines() == [f"accel emu: cuModuleLoadData: {why}"]


def test_the_codes_of_device_code_have_their_driver_names(subprocess_python):
    # cuda.core and cuda.bindings report a code through cuGetErrorName (an unknown one as "UNEXPECTED ERROR CODE")
    codes = {200: "CUDA_ERROR_INVALID_IMAGE", 209: "CUDA_ERROR_NO_BINARY_FOR_GPU", 218: "CUDA_ERROR_INVALID_PTX",
             222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", 301: "CUDA_ERROR_FILE_NOT_FOUND", 500: "CUDA_ERROR_NOT_FOUND",
             700: "CUDA_ERROR_ILLEGAL_ADDRESS", 701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
             702: "CUDA_ERROR_LAUNCH_TIMEOUT", 715: "CUDA_ERROR_ILLEGAL_INSTRUCTION", 716: "CUDA_ERROR_MISALIGNED_ADDRESS",
             719: "CUDA_ERROR_LAUNCH_FAILED", 720: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
             912: "CUDA_ERROR_INVALID_CLUSTER_SIZE"}
    got = _json(subprocess_python, f"""
out = {{}}
for code in {list(codes)!r}:
    name, text = c.c_char_p(), c.c_char_p()
    out[code] = [cu.cuGetErrorName(code, c.byref(name)), name.value and name.value.decode(),
                 cu.cuGetErrorString(code, c.byref(text)), bool(text.value)]
print(json.dumps(out))
""")
    assert got == {str(k): [0, v, 0, True] for k, v in codes.items()}
