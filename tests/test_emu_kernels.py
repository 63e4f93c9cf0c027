"""Device code on the emulator's stand-ins (issue 32): the images the driver is handed (PTX text, accel's linked
image, fatbins and their wrapper, LZ4 / zstd entries, SASS refused), the module / library / linker entry points'
checks and errors.  The fatbins under tests/data/fatbin/ were made by nvcc 13.0 (make_fatbins.sh there).

Each check runs in a fresh interpreter (a library with the soname libcudart.so.13 loaded into the test process
would be found by every later dlopen of that soname)."""
import importlib.util
import json
import pathlib
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
