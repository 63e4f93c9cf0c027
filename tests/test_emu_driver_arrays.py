"""CUDA arrays, mipmapped arrays, copies with arrays, texture and surface objects on the stand-ins (issue 33, item
1): the driver's entry points (reached through cuGetProcAddress too) and the runtime's, with the driver's
documented checks (formats, channel counts, shapes, flags, the device's size limits, NULL arguments, destroyed
handles, no context), array memory counted against the device, and that a refused call changes nothing.
cuda.bindings, where installed, is the oracle of the argument structs' layout.

The stand-ins run in fresh interpreters (see test_standin.py for why).
"""
import ctypes
import importlib.util
import pathlib

import pytest

from accel import emu

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

pytestmark = _fx.needs_standins

# The driver's and the runtime's structs as ctypes declares them (checked against cuda.bindings below).
STRUCTS = """
import ctypes as c
VP, SZ, U, I, D, ULL, F = c.c_void_p, c.c_size_t, c.c_uint, c.c_int, c.c_uint64, c.c_ulonglong, c.c_float
P = c.POINTER
class Desc(c.Structure):
    _fields_ = [("Width", SZ), ("Height", SZ), ("Format", I), ("NumChannels", U)]
class Desc3(c.Structure):
    _fields_ = [("Width", SZ), ("Height", SZ), ("Depth", SZ), ("Format", I), ("NumChannels", U), ("Flags", U)]
class Copy2D(c.Structure):
    _fields_ = [("srcX", SZ), ("srcY", SZ), ("srcType", I), ("srcHost", VP), ("srcDevice", D), ("srcArray", VP),
                ("srcPitch", SZ), ("dstX", SZ), ("dstY", SZ), ("dstType", I), ("dstHost", VP), ("dstDevice", D),
                ("dstArray", VP), ("dstPitch", SZ), ("width", SZ), ("height", SZ)]
class Copy3D(c.Structure):
    _fields_ = [("srcX", SZ), ("srcY", SZ), ("srcZ", SZ), ("srcLOD", SZ), ("srcType", I), ("srcHost", VP),
                ("srcDevice", D), ("srcArray", VP), ("reserved0", VP), ("srcPitch", SZ), ("srcHeight", SZ),
                ("dstX", SZ), ("dstY", SZ), ("dstZ", SZ), ("dstLOD", SZ), ("dstType", I), ("dstHost", VP),
                ("dstDevice", D), ("dstArray", VP), ("reserved1", VP), ("dstPitch", SZ), ("dstHeight", SZ),
                ("width", SZ), ("height", SZ), ("depth", SZ)]
class Linear(c.Structure):
    _fields_ = [("devPtr", D), ("format", I), ("numChannels", U), ("sizeInBytes", SZ)]
class Pitch2D(c.Structure):
    _fields_ = [("devPtr", D), ("format", I), ("numChannels", U), ("width", SZ), ("height", SZ), ("pitchInBytes", SZ)]
class ResU(c.Union):
    _fields_ = [("hArray", VP), ("linear", Linear), ("pitch2D", Pitch2D), ("reserved", I * 32)]
class Res(c.Structure):
    _fields_ = [("resType", I), ("res", ResU), ("flags", U)]
class Tex(c.Structure):
    _fields_ = [("addressMode", I * 3), ("filterMode", I), ("flags", U), ("maxAnisotropy", U),
                ("mipmapFilterMode", I), ("mipmapLevelBias", F), ("minMipmapLevelClamp", F),
                ("maxMipmapLevelClamp", F), ("borderColor", F * 4), ("reserved", I * 12)]
class View(c.Structure):
    _fields_ = [("format", I), ("width", SZ), ("height", SZ), ("depth", SZ), ("firstMipmapLevel", U),
                ("lastMipmapLevel", U), ("firstLayer", U), ("lastLayer", U), ("reserved", U * 16)]
class Chan(c.Structure):
    _fields_ = [("x", I), ("y", I), ("z", I), ("w", I), ("f", I)]
class Extent(c.Structure):
    _fields_ = [("width", SZ), ("height", SZ), ("depth", SZ)]
class Pos(c.Structure):
    _fields_ = [("x", SZ), ("y", SZ), ("z", SZ)]
class PPtr(c.Structure):
    _fields_ = [("ptr", VP), ("pitch", SZ), ("xsize", SZ), ("ysize", SZ)]
class Parms3D(c.Structure):
    _fields_ = [("srcArray", VP), ("srcPos", Pos), ("srcPtr", PPtr), ("dstArray", VP), ("dstPos", Pos),
                ("dstPtr", PPtr), ("extent", Extent), ("kind", I)]
class RtChanRes(c.Structure):
    _fields_ = [("devPtr", VP), ("desc", Chan), ("a", SZ), ("b", SZ), ("c", SZ)]
class RtResU(c.Union):
    _fields_ = [("array", VP), ("linear", RtChanRes), ("reserved", I * 32)]
class RtRes(c.Structure):
    _fields_ = [("resType", I), ("res", RtResU), ("flags", U)]
class RtTex(c.Structure):
    _fields_ = [("addressMode", I * 3), ("filterMode", I), ("readMode", I), ("sRGB", I), ("borderColor", F * 4),
                ("normalizedCoords", I), ("maxAnisotropy", U), ("mipmapFilterMode", I), ("mipmapLevelBias", F),
                ("minMipmapLevelClamp", F), ("maxMipmapLevelClamp", F), ("disableTrilinearOptimization", I),
                ("seamlessCubemap", I)]
"""

PRELUDE = STRUCTS + f"""
import json, os
rt = c.CDLL({emu.cudart_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = c.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
SIGS = dict(
    cuArrayCreate_v2=[P(VP), P(Desc)], cuArray3DCreate_v2=[P(VP), P(Desc3)], cuArrayGetDescriptor_v2=[P(Desc), VP],
    cuArray3DGetDescriptor_v2=[P(Desc3), VP], cuArrayDestroy=[VP], cuMipmappedArrayCreate=[P(VP), P(Desc3), U],
    cuMipmappedArrayGetLevel=[P(VP), VP, U], cuMipmappedArrayDestroy=[VP], cuMemcpy2D_v2=[P(Copy2D)],
    cuMemcpy2DAsync_v2=[P(Copy2D), VP], cuMemcpy3D_v2=[P(Copy3D)], cuMemcpy3DAsync_v2=[P(Copy3D), VP],
    cuMemcpyAtoH_v2=[VP, VP, SZ, SZ], cuMemcpyHtoA_v2=[VP, SZ, VP, SZ], cuMemcpyAtoHAsync_v2=[VP, VP, SZ, SZ, VP],
    cuMemcpyHtoAAsync_v2=[VP, SZ, VP, SZ, VP], cuMemcpyAtoD_v2=[D, VP, SZ, SZ], cuMemcpyDtoA_v2=[VP, SZ, D, SZ],
    cuMemcpyAtoA_v2=[VP, SZ, VP, SZ, SZ], cuTexObjectCreate=[P(ULL), P(Res), P(Tex), P(View)],
    cuTexObjectDestroy=[ULL], cuTexObjectGetResourceDesc=[P(Res), ULL], cuTexObjectGetTextureDesc=[P(Tex), ULL],
    cuTexObjectGetResourceViewDesc=[P(View), ULL], cuSurfObjectCreate=[P(ULL), P(Res)], cuSurfObjectDestroy=[ULL],
    cuSurfObjectGetResourceDesc=[P(Res), ULL], cuMemAlloc_v2=[P(D), SZ], cuMemFree_v2=[D],
    cuMemcpyDtoH_v2=[VP, D, SZ], cuMemcpyHtoD_v2=[D, VP, SZ], cuMemGetInfo_v2=[P(SZ), P(SZ)],
    cuCtxSetCurrent=[VP], cuCtxGetCurrent=[P(VP)], cuDevicePrimaryCtxRetain=[P(VP), I],
)
for name, args in SIGS.items():
    getattr(cu, name).argtypes = args
rt.cudaMalloc3DArray.argtypes = [P(VP), P(Chan), Extent, U]
rt.cudaMallocArray.argtypes = [P(VP), P(Chan), SZ, SZ, U]
rt.cudaMallocMipmappedArray.argtypes = [P(VP), P(Chan), Extent, U, U]
rt.cudaMemcpy2DToArray.argtypes = [VP, SZ, SZ, VP, SZ, SZ, SZ, I]
rt.cudaMemcpy2DFromArray.argtypes = [VP, SZ, VP, SZ, SZ, SZ, SZ, I]
rt.cudaMemcpy2DToArrayAsync.argtypes = [VP, SZ, SZ, VP, SZ, SZ, SZ, I, VP]
rt.cudaMemcpy2DFromArrayAsync.argtypes = [VP, SZ, VP, SZ, SZ, SZ, SZ, I, VP]
rt.cudaMemcpy2DArrayToArray.argtypes = [VP, SZ, SZ, VP, SZ, SZ, SZ, SZ, I]
rt.cudaMemcpyToArray.argtypes = [VP, SZ, SZ, VP, SZ, I]
rt.cudaMemcpyFromArray.argtypes = [VP, VP, SZ, SZ, SZ, I]
rt.cudaCreateTextureObject.argtypes = [P(ULL), P(RtRes), P(RtTex), VP]
rt.cudaCreateSurfaceObject.argtypes = [P(ULL), P(RtRes)]
rt.cudaDestroyTextureObject.argtypes = rt.cudaDestroySurfaceObject.argtypes = [ULL]
R = c.byref
ctx0 = VP()
assert cu.cuInit(0) == 0 and cu.cuDevicePrimaryCtxRetain(R(ctx0), 0) == 0 and cu.cuCtxSetCurrent(ctx0) == 0
FLOAT, U8, U16, HALF, BC1 = 0x20, 0x01, 0x02, 0x10, 0x91
LAYERED, LDST, CUBEMAP, GATHER, SPARSE = 1, 2, 4, 8, 0x40
def free_bytes():
    f, t = SZ(), SZ(); assert cu.cuMemGetInfo_v2(R(f), R(t)) == 0; return f.value
def arr3(w, h=0, d=0, fmt=FLOAT, ch=1, flags=0):
    a = VP(); r = cu.cuArray3DCreate_v2(R(a), R(Desc3(w, h, d, fmt, ch, flags))); return r, a
def mk(*args, **kw):
    r, a = arr3(*args, **kw); assert r == 0, r; return a
def out(x):
    print(json.dumps(x))
"""

_run, _json = _fx.runners(PRELUDE)


def test_arrays_describe_themselves_and_use_device_memory(subprocess_python):
    got = _json(subprocess_python, """
free0 = free_bytes()
a = VP(); assert cu.cuArrayCreate_v2(R(a), R(Desc(64, 32, FLOAT, 4))) == 0
r = {"accounted": free0 - free_bytes()}
d = Desc(); assert cu.cuArrayGetDescriptor_v2(R(d), a) == 0
r["desc"] = [d.Width, d.Height, d.Format, d.NumChannels]
d3 = Desc3(); assert cu.cuArray3DGetDescriptor_v2(R(d3), a) == 0
r["desc3"] = [d3.Width, d3.Height, d3.Depth, d3.Format, d3.NumChannels, d3.Flags]
b = mk(8, 4, 2, U16, 2, LDST)
assert cu.cuArray3DGetDescriptor_v2(R(d3), b) == 0
r["desc3b"] = [d3.Width, d3.Height, d3.Depth, d3.Format, d3.NumChannels, d3.Flags]
r["both"] = free0 - free_bytes()
r["destroy"] = [cu.cuArrayDestroy(a), cu.cuArrayDestroy(a), cu.cuArrayGetDescriptor_v2(R(d), a),
                cu.cuArray3DGetDescriptor_v2(R(d3), a), cu.cuArrayDestroy(None)]
assert cu.cuArrayDestroy(b) == 0
r["freed"] = free_bytes() == free0
# every documented shape: 1D, 2D, 3D, 1D/2D layered, cubemap, layered cubemap, gather, normalized formats
shapes = [(16,), (16, 8), (16, 8, 4), (16, 0, 3, FLOAT, 1, LAYERED), (16, 8, 3, FLOAT, 1, LAYERED),
          (16, 16, 6, FLOAT, 1, CUBEMAP), (16, 16, 12, FLOAT, 1, CUBEMAP | LAYERED), (16, 8, 0, FLOAT, 1, GATHER),
          (16, 8, 0, 0xc1, 2), (16, 8, 0, 0xcb, 4), (16, 8, 0, HALF, 2)]
r["shapes"] = []
for s in shapes:
    e, h = arr3(*s); r["shapes"].append(e)
    if not e: assert cu.cuArrayDestroy(h) == 0
out(r)
""")
    assert got == {"accounted": 64 * 32 * 16, "desc": [64, 32, 0x20, 4], "desc3": [64, 32, 0, 0x20, 4, 0],
                   "desc3b": [8, 4, 2, 2, 2, 2], "both": 64 * 32 * 16 + 8 * 4 * 2 * 4,
                   "destroy": [0, 400, 400, 400, 400], "freed": True, "shapes": [0] * 11}


def test_array_creation_refusals(subprocess_python):
    """The driver's documented checks, each refused with its code and nothing allocated."""
    got = _json(subprocess_python, """
free0 = free_bytes()
a = VP()
r = {"null": [cu.cuArray3DCreate_v2(None, R(Desc3(4, 0, 0, FLOAT, 1, 0))), cu.cuArray3DCreate_v2(R(a), None),
              cu.cuArrayCreate_v2(None, R(Desc(4, 0, FLOAT, 1))), cu.cuArrayCreate_v2(R(a), None)]}
bad = dict(width0=(0, 4), channels3=(4, 4, 0, FLOAT, 3), channels0=(4, 4, 0, FLOAT, 0), format7=(4, 4, 0, 7, 1),
           norm_channels=(4, 4, 0, 0xc2, 1), unknown_flag=(4, 4, 0, FLOAT, 1, 0x200),
           depth_without_height=(4, 0, 3), cube_not_square=(4, 8, 6, FLOAT, 1, CUBEMAP),
           cube_depth=(4, 4, 5, FLOAT, 1, CUBEMAP), cube_layers=(4, 4, 8, FLOAT, 1, CUBEMAP | LAYERED),
           layered_no_layers=(4, 4, 0, FLOAT, 1, LAYERED), gather_3d=(4, 4, 4, FLOAT, 1, GATHER),
           gather_1d=(4, 0, 0, FLOAT, 1, GATHER), too_wide_1d=(131073,), too_tall_2d=(16, 65537),
           too_deep_3d=(16, 16, 16385), too_many_layers=(16, 16, 2049, FLOAT, 1, LAYERED),
           surface_too_wide_1d=(32769, 0, 0, FLOAT, 1, LDST),
           bc1=(16, 16, 0, BC1, 1), sparse=(16, 16, 0, FLOAT, 1, SPARSE))
for k, s in bad.items():
    a = VP(); e, h = arr3(*s); r[k] = [e, h.value]
r["unchanged"] = free_bytes() == free0
r["texture_1d_fits"] = arr3(32769)[0]
assert cu.cuCtxSetCurrent(None) == 0
d = Desc(); d3 = Desc3()
r["no_context"] = [arr3(4)[0], cu.cuArrayCreate_v2(R(a), R(Desc(4, 0, FLOAT, 1))), cu.cuArrayDestroy(VP(8)),
                   cu.cuArrayGetDescriptor_v2(R(d), VP(8))]
out(r)
""")
    assert got.pop("null") == [1, 1, 1, 1]
    assert got.pop("no_context") == [201, 201, 201, 201]
    assert got.pop("texture_1d_fits") == 0 and got.pop("unchanged") is True
    assert got.pop("bc1") == [801, None] and got.pop("sparse") == [801, None]
    assert got == {k: [1, None] for k in got}, got


def test_array_memory_runs_out_like_device_memory(subprocess_python):
    got = _json(subprocess_python, """
r = [arr3(1024, 1024, 0, FLOAT, 4)[0]]          # 16 MiB on a device of 8 MiB
e, a = arr3(512, 512, 0, FLOAT, 4); r.append(e)   # 4 MiB
r.append(arr3(600, 512, 0, FLOAT, 4)[0])           # 4.7 MiB more no longer fits
r.append(cu.cuArrayDestroy(a))
out(r)
""", env={"ACCEL_EMU_MEMORY": "8M"})
    assert got == [2, 0, 2, 0]


def test_copies_with_arrays(subprocess_python):
    got = _json(subprocess_python, """
r = {}
a = mk(16, 8, 0, U8, 1)                      # 16 bytes x 8 rows
src = c.create_string_buffer(bytes(range(128)), 128)
assert cu.cuMemcpyHtoA_v2(a, 0, src, 128) == 0
back = c.create_string_buffer(128)
assert cu.cuMemcpyAtoH_v2(back, a, 0, 128) == 0
r["htoa_atoh"] = back.raw == src.raw
# a 4 x 3 window at (2, 1) of the array to a host buffer with pitch 10
win = c.create_string_buffer(30)
cp = Copy2D(srcX=2, srcY=1, srcType=3, srcArray=a, dstType=1, dstHost=c.addressof(win), dstPitch=10, width=4, height=3)
assert cu.cuMemcpy2D_v2(R(cp)) == 0
r["window"] = [list(win.raw[i * 10:i * 10 + 4]) for i in range(3)]
# device -> array (2D) and array -> device (1D)
dev = D(); assert cu.cuMemAlloc_v2(R(dev), 128) == 0
assert cu.cuMemcpyAtoD_v2(dev, a, 16, 32) == 0
chk = c.create_string_buffer(32); assert cu.cuMemcpyDtoH_v2(chk, dev, 32) == 0
r["atod"] = list(chk.raw[:4])
b = mk(16, 8, 0, U8, 1)
assert cu.cuMemcpyAtoA_v2(b, 0, a, 64, 64) == 0 and cu.cuMemcpyAtoH_v2(back, b, 0, 64) == 0
r["atoa"] = list(back.raw[:2])
assert cu.cuMemcpyDtoA_v2(b, 100, dev, 4) == 0 and cu.cuMemcpyAtoH_v2(back, b, 100, 4) == 0
r["dtoa"] = list(back.raw[:4])
# 3D: a 4 x 3 x 2 float array <- host, then a sub-box back
v = mk(4, 3, 2, FLOAT, 1)
host = (c.c_float * 24)(*range(24))
c3 = Copy3D(srcType=1, srcHost=c.addressof(host), srcPitch=16, srcHeight=3, dstType=3, dstArray=v, width=16, height=3, depth=2)
assert cu.cuMemcpy3D_v2(R(c3)) == 0
got3 = (c.c_float * 4)()
c3 = Copy3D(srcX=4, srcY=1, srcZ=1, srcType=3, srcArray=v, dstType=1, dstHost=c.addressof(got3), dstPitch=8,
            dstHeight=2, width=8, height=2, depth=1)
assert cu.cuMemcpy3D_v2(R(c3)) == 0
r["box"] = list(got3)
s = VP(); assert rt.cudaStreamCreate(R(s)) == 0
hb = c.create_string_buffer(16)
assert cu.cuMemcpyHtoAAsync_v2(a, 0, c.create_string_buffer(b"z" * 16, 16), 16, s) == 0
assert cu.cuMemcpyAtoHAsync_v2(hb, a, 0, 16, s) == 0
c3 = Copy3D(srcType=3, srcArray=v, dstType=1, dstHost=c.addressof(got3), dstPitch=16, dstHeight=1, width=16, height=1, depth=1)
assert cu.cuMemcpy3DAsync_v2(R(c3), s) == 0
cp2 = Copy2D(srcType=3, srcArray=a, dstType=1, dstHost=c.addressof(win), dstPitch=10, width=2, height=2)
assert cu.cuMemcpy2DAsync_v2(R(cp2), s) == 0
assert rt.cudaStreamSynchronize(s) == 0
r["async"] = [hb.raw.decode(), list(got3), win.raw[:2].decode()]
# refusals: out of the array's bounds, destroyed handles, reserved fields, no array, no context
oob = Copy2D(srcX=14, srcType=3, srcArray=a, dstType=1, dstHost=c.addressof(win), dstPitch=10, width=4, height=1)
tall = Copy2D(srcY=6, srcType=3, srcArray=a, dstType=1, dstHost=c.addressof(win), dstPitch=10, width=4, height=3)
noarr = Copy2D(srcType=3, dstType=1, dstHost=c.addressof(win), dstPitch=10, width=4, height=1)
lod = Copy3D(srcLOD=1, srcType=3, srcArray=v, dstType=1, dstHost=c.addressof(got3), dstPitch=16, width=4, height=1, depth=1)
res = Copy3D(srcType=3, srcArray=v, reserved0=8, dstType=1, dstHost=c.addressof(got3), dstPitch=16, width=4, height=1, depth=1)
deep = Copy3D(srcZ=2, srcType=3, srcArray=v, dstType=1, dstHost=c.addressof(got3), dstPitch=16, width=4, height=1, depth=1)
r["bad"] = [cu.cuMemcpy2D_v2(R(oob)), cu.cuMemcpy2D_v2(R(tall)), cu.cuMemcpy2D_v2(R(noarr)), cu.cuMemcpy3D_v2(R(lod)),
            cu.cuMemcpy3D_v2(R(res)), cu.cuMemcpy3D_v2(R(deep)), cu.cuMemcpy3D_v2(None),
            cu.cuMemcpyAtoH_v2(back, a, 120, 16), cu.cuMemcpyHtoA_v2(a, 129, src, 0)]
assert cu.cuArrayDestroy(b) == 0
r["destroyed"] = [cu.cuMemcpyAtoH_v2(back, b, 0, 4), cu.cuMemcpyAtoA_v2(a, 0, b, 0, 4),
                  cu.cuMemcpy2D_v2(R(Copy2D(srcType=3, srcArray=b, dstType=1, dstHost=c.addressof(win), dstPitch=10,
                                              width=1, height=1)))]
r["unchanged"] = list(win.raw[:2])
assert cu.cuCtxSetCurrent(None) == 0
r["no_context"] = [cu.cuMemcpyAtoH_v2(back, a, 0, 4), cu.cuMemcpy3D_v2(R(c3))]
out(r)
""")
    assert got == {"htoa_atoh": True, "window": [[18, 19, 20, 21], [34, 35, 36, 37], [50, 51, 52, 53]],
                   "atod": [16, 17, 18, 19], "atoa": [64, 65], "dtoa": [16, 17, 18, 19],
                   "box": [17.0, 18.0, 21.0, 22.0], "async": ["z" * 16, [0.0, 1.0, 2.0, 3.0], "zz"],
                   "bad": [1, 1, 1, 1, 1, 1, 1, 1, 1], "destroyed": [400, 400, 400], "unchanged": [122, 122],
                   "no_context": [201, 201]}


def test_mipmapped_arrays(subprocess_python):
    got = _json(subprocess_python, """
free0 = free_bytes()
m = VP(); assert cu.cuMipmappedArrayCreate(R(m), R(Desc3(16, 8, 0, FLOAT, 1, 0)), 5) == 0
r = {"bytes": free0 - free_bytes(), "levels": []}
for l in range(5):
    a = VP(); d3 = Desc3()
    assert cu.cuMipmappedArrayGetLevel(R(a), m, l) == 0 and cu.cuArray3DGetDescriptor_v2(R(d3), a) == 0
    r["levels"].append([d3.Width, d3.Height, d3.Depth])
lv = VP(); assert cu.cuMipmappedArrayGetLevel(R(lv), m, 1) == 0
src = c.create_string_buffer(b"abcd", 4); got = c.create_string_buffer(4)
r["level_copy"] = [cu.cuMemcpyHtoA_v2(lv, 0, src, 4), cu.cuMemcpyAtoH_v2(got, lv, 0, 4), got.raw.decode()]
n = VP()
r["bad"] = [cu.cuMipmappedArrayGetLevel(R(n), m, 5), cu.cuMipmappedArrayGetLevel(None, m, 0),
            cu.cuArrayDestroy(lv), cu.cuMipmappedArrayCreate(R(n), R(Desc3(16, 8, 0, FLOAT, 1, 0)), 6),
            cu.cuMipmappedArrayCreate(R(n), R(Desc3(16, 8, 0, FLOAT, 1, 0)), 0),
            cu.cuMipmappedArrayCreate(R(n), R(Desc3(16, 8, 0, FLOAT, 3, 0)), 1),
            cu.cuMipmappedArrayCreate(None, R(Desc3(16, 8, 0, FLOAT, 1, 0)), 1), n.value]
lay = VP(); assert cu.cuMipmappedArrayCreate(R(lay), R(Desc3(8, 8, 3, FLOAT, 1, LAYERED)), 4) == 0
assert cu.cuMipmappedArrayGetLevel(R(n), lay, 3) == 0 and cu.cuArray3DGetDescriptor_v2(R(d3), n) == 0
r["layered_last"] = [d3.Width, d3.Height, d3.Depth]
r["destroy"] = [cu.cuMipmappedArrayDestroy(lay), cu.cuMipmappedArrayDestroy(m), cu.cuMipmappedArrayDestroy(m),
                cu.cuMipmappedArrayGetLevel(R(n), m, 0), cu.cuArray3DGetDescriptor_v2(R(d3), lv)]
r["freed"] = free_bytes() == free0
out(r)
""")
    assert got == {"bytes": 4 * (16 * 8 + 8 * 4 + 4 * 2 + 2 * 1 + 1 * 1),
                   "levels": [[16, 8, 0], [8, 4, 0], [4, 2, 0], [2, 1, 0], [1, 1, 0]],
                   "level_copy": [0, 0, "abcd"], "bad": [1, 1, 400, 1, 1, 1, 1, None], "layered_last": [1, 1, 3],
                   "destroy": [0, 0, 400, 400, 400], "freed": True}


def test_texture_and_surface_objects(subprocess_python):
    got = _json(subprocess_python, """
a = mk(16, 16, 0, FLOAT, 4)
s = mk(16, 16, 0, FLOAT, 4, LDST)
res = Res(resType=0); res.res.hArray = a
tex = Tex(filterMode=1, flags=2, maxAnisotropy=4, borderColor=(F * 4)(1, 2, 3, 4))
tex.addressMode[:] = [1, 3, 2]
t = ULL()
r = {"create": cu.cuTexObjectCreate(R(t), R(res), R(tex), None), "nonzero": t.value != 0}
rr, tt, vv = Res(), Tex(), View()
r["get"] = [cu.cuTexObjectGetResourceDesc(R(rr), t), rr.resType, rr.res.hArray == a.value, cu.cuTexObjectGetTextureDesc(R(tt), t),
            list(tt.addressMode), tt.filterMode, tt.flags, tt.maxAnisotropy, list(tt.borderColor),
            cu.cuTexObjectGetResourceViewDesc(R(vv), t)]
view = View(format=0x1, width=16, height=16, lastMipmapLevel=0)
t2 = ULL(); assert cu.cuTexObjectCreate(R(t2), R(res), R(tex), R(view)) == 0
r["view"] = [cu.cuTexObjectGetResourceViewDesc(R(vv), t2), vv.width, vv.format]
dev = D(); assert cu.cuMemAlloc_v2(R(dev), 1 << 16) == 0
lin = Res(resType=2); lin.res.linear = Linear(dev.value, FLOAT, 1, 4096)
tl = ULL(); r["linear"] = cu.cuTexObjectCreate(R(tl), R(lin), R(Tex()), None)
pit = Res(resType=3); pit.res.pitch2D = Pitch2D(dev.value, U8, 4, 16, 16, 64)
tp = ULL(); r["pitch2d"] = cu.cuTexObjectCreate(R(tp), R(pit), R(Tex()), None)
def bad_res(kind, **kw):
    x = Res(resType=kind)
    if kind == 2: x.res.linear = Linear(**{**dict(devPtr=dev.value, format=FLOAT, numChannels=1, sizeInBytes=4096), **kw})
    if kind == 3: x.res.pitch2D = Pitch2D(**{**dict(devPtr=dev.value, format=U8, numChannels=4, width=16, height=16, pitchInBytes=64), **kw})
    return x
n = ULL()
hostbuf = c.create_string_buffer(16384)
host512 = (c.c_char * 8192).from_address((c.addressof(hostbuf) + 511) // 512 * 512)
badtex = Tex(); badtex.addressMode[0] = 4
r["bad"] = [cu.cuTexObjectCreate(None, R(res), R(tex), None), cu.cuTexObjectCreate(R(n), None, R(tex), None),
            cu.cuTexObjectCreate(R(n), R(res), None, None), cu.cuTexObjectCreate(R(n), R(res), R(badtex), None),
            cu.cuTexObjectCreate(R(n), R(res), R(Tex(filterMode=2)), None),
            cu.cuTexObjectCreate(R(n), R(res), R(Tex(flags=0x100)), None),
            cu.cuTexObjectCreate(R(n), R(Res(resType=0, flags=1)), R(tex), None),
            cu.cuTexObjectCreate(R(n), R(Res(resType=7)), R(tex), None),
            cu.cuTexObjectCreate(R(n), R(bad_res(2, devPtr=dev.value + 4)), R(Tex()), None),
            cu.cuTexObjectCreate(R(n), R(bad_res(2, sizeInBytes=0)), R(Tex()), None),
            cu.cuTexObjectCreate(R(n), R(bad_res(2, numChannels=3)), R(Tex()), None),
            cu.cuTexObjectCreate(R(n), R(bad_res(3, pitchInBytes=65)), R(Tex()), None),
            cu.cuTexObjectCreate(R(n), R(bad_res(3, pitchInBytes=32)), R(Tex()), None),
            cu.cuTexObjectCreate(R(n), R(bad_res(3, height=0)), R(Tex()), None),
            cu.cuTexObjectCreate(R(n), R(lin), R(Tex()), R(view)),
            cu.cuTexObjectCreate(R(n), R(bad_res(2, sizeInBytes=(1 << 16) + 4)), R(Tex()), None),
            cu.cuTexObjectCreate(R(n), R(bad_res(2, devPtr=c.addressof(host512))), R(Tex()), None),
            cu.cuTexObjectCreate(R(n), R(bad_res(3, height=1025)), R(Tex()), None), n.value]
sres = Res(resType=0); sres.res.hArray = s
so = ULL()
r["surface"] = [cu.cuSurfObjectCreate(R(so), R(sres)), cu.cuSurfObjectGetResourceDesc(R(rr), so), rr.res.hArray == s.value,
                cu.cuSurfObjectCreate(R(n), R(res)), cu.cuSurfObjectCreate(R(n), R(lin)), cu.cuSurfObjectCreate(None, R(sres)),
                cu.cuSurfObjectCreate(R(n), None)]
r["destroy"] = [cu.cuSurfObjectDestroy(t.value), cu.cuTexObjectDestroy(so.value), cu.cuTexObjectDestroy(t),
                cu.cuTexObjectDestroy(t), cu.cuTexObjectGetResourceDesc(R(rr), t), cu.cuTexObjectGetTextureDesc(R(tt), t),
                cu.cuSurfObjectDestroy(so), cu.cuSurfObjectDestroy(so), cu.cuTexObjectDestroy(0)]
assert cu.cuArrayDestroy(a) == 0
r["dead_array"] = cu.cuTexObjectCreate(R(n), R(res), R(tex), None)
assert cu.cuCtxSetCurrent(None) == 0
r["no_context"] = [cu.cuTexObjectCreate(R(n), R(sres), R(tex), None), cu.cuSurfObjectCreate(R(n), R(sres)),
                   cu.cuTexObjectDestroy(t2)]
out(r)
""")
    assert got == {"create": 0, "nonzero": True,
                   "get": [0, 0, True, 0, [1, 3, 2], 1, 2, 4, [1.0, 2.0, 3.0, 4.0], 1], "view": [0, 16, 1],
                   "linear": 0, "pitch2d": 0, "bad": [1] * 18 + [0], "surface": [0, 0, True, 1, 1, 1, 1],
                   "destroy": [1, 1, 0, 1, 1, 1, 0, 1, 1], "dead_array": 1, "no_context": [201, 201, 201]}


def test_runtime_arrays_copies_and_objects(subprocess_python):
    got = _json(subprocess_python, """
r = {}
a = VP()
float4 = Chan(32, 32, 32, 32, 2)
r["malloc"] = rt.cudaMallocArray(R(a), R(float4), 8, 4, 0)
ch, ext, fl = Chan(), Extent(), U()
r["info"] = [rt.cudaArrayGetInfo(R(ch), R(ext), R(fl), a), [ch.x, ch.y, ch.z, ch.w, ch.f], [ext.width, ext.height, ext.depth], fl.value]
host = (c.c_float * 128)(*range(128))
r["to"] = rt.cudaMemcpy2DToArray(a, 16, 1, host, 128, 32, 2, 1)      # 2 texels x 2 rows at texel (1, 1)
back = (c.c_float * 16)()
r["from"] = [rt.cudaMemcpy2DFromArray(back, 32, a, 16, 1, 32, 2, 2), list(back[:4]), list(back[8:12])]
b = VP()
r["3d"] = rt.cudaMalloc3DArray(R(b), R(Chan(8, 0, 0, 0, 1)), Extent(4, 2, 2), 2)
src = (c.c_ubyte * 16)(*range(16))
p = Parms3D(srcPtr=PPtr(c.addressof(src), 4, 4, 2), dstArray=b, extent=Extent(4, 2, 2), kind=1)
got = (c.c_ubyte * 16)()
q = Parms3D(srcArray=b, srcPos=Pos(1, 1, 1), dstPtr=PPtr(c.addressof(got), 4, 4, 1), extent=Extent(2, 1, 1), kind=2)
r["copy3d"] = [rt.cudaMemcpy3D(R(p)), rt.cudaMemcpy3D(R(q)), list(got[:2])]
both = Parms3D(srcArray=b, srcPtr=PPtr(c.addressof(src), 4, 4, 2), dstPtr=PPtr(c.addressof(got), 4, 4, 1), extent=Extent(1, 1, 1))
r["bad"] = [rt.cudaMallocArray(None, R(float4), 8, 4, 0), rt.cudaMallocArray(R(a), None, 8, 4, 0),
            rt.cudaMallocArray(R(VP()), R(Chan(32, 32, 32, 0, 2)), 8, 4, 0),
            rt.cudaMallocArray(R(VP()), R(Chan(8, 0, 0, 0, 2)), 8, 4, 0),
            rt.cudaMallocArray(R(VP()), R(Chan(8, 16, 0, 0, 1)), 8, 4, 0),
            rt.cudaMallocArray(R(VP()), R(float4), 8, 4, 1), rt.cudaMallocArray(R(VP()), R(float4), 0, 4, 0),
            rt.cudaMemcpy2DToArray(a, 0, 0, host, 128, 32, 2, 7), rt.cudaMemcpy2DToArray(a, 112, 0, host, 128, 32, 1, 1),
            rt.cudaMemcpy3D(R(both)), rt.cudaMemcpy3D(None), rt.cudaArrayGetInfo(None, None, None, VP(8)),
            rt.cudaFreeArray(VP(8)), rt.cudaGetLastError(), rt.cudaFreeArray(None)]
res = RtRes(resType=0); res.res.array = b
t, s = ULL(), ULL()
r["objects"] = [rt.cudaCreateTextureObject(R(t), R(res), R(RtTex(readMode=1, normalizedCoords=1)), None),
                rt.cudaCreateSurfaceObject(R(s), R(res)), rt.cudaCreateTextureObject(R(t), R(res), None, None),
                rt.cudaCreateTextureObject(R(ULL()), R(res), R(RtTex(readMode=2)), None),
                rt.cudaDestroyTextureObject(t), rt.cudaDestroyTextureObject(t), rt.cudaDestroySurfaceObject(s)]
t2, s2, gr, gt, gc = ULL(), ULL(), RtRes(), RtTex(), Chan()
tex2 = RtTex(readMode=1, normalizedCoords=1, filterMode=1, maxAnisotropy=2, seamlessCubemap=1)
tex2.addressMode[:] = [3, 2, 1]
assert rt.cudaCreateTextureObject(R(t2), R(res), R(tex2), None) == 0 and rt.cudaCreateSurfaceObject(R(s2), R(res)) == 0
for n, at in (("cudaGetTextureObjectResourceDesc", P(RtRes)), ("cudaGetTextureObjectTextureDesc", P(RtTex)),
              ("cudaGetSurfaceObjectResourceDesc", P(RtRes))):
    getattr(rt, n).argtypes = [at, ULL]
rt.cudaGetChannelDesc.argtypes = [P(Chan), VP]
r["getters"] = [rt.cudaGetTextureObjectResourceDesc(R(gr), t2), gr.resType, gr.res.array == b.value,
                rt.cudaGetTextureObjectTextureDesc(R(gt), t2), list(gt.addressMode), gt.filterMode, gt.readMode,
                gt.normalizedCoords, gt.maxAnisotropy, gt.seamlessCubemap, gt.sRGB,
                rt.cudaGetSurfaceObjectResourceDesc(R(gr), s2), gr.res.array == b.value,
                rt.cudaGetChannelDesc(R(gc), a), [gc.x, gc.y, gc.z, gc.w, gc.f],
                rt.cudaGetTextureObjectResourceDesc(R(gr), s2.value), rt.cudaGetSurfaceObjectResourceDesc(R(gr), t2.value),
                rt.cudaGetTextureObjectTextureDesc(None, t2), rt.cudaGetChannelDesc(R(gc), VP(8)),
                rt.cudaGetChannelDesc(None, a), rt.cudaDestroyTextureObject(t2), rt.cudaDestroySurfaceObject(s2),
                rt.cudaGetTextureObjectTextureDesc(R(gt), t2)]
lr = RtRes(resType=0); lr.res.array = a
r["surface_needs_ldst"] = rt.cudaCreateSurfaceObject(R(s), R(lr))
r["free"] = [rt.cudaFreeArray(a), rt.cudaFreeArray(b), rt.cudaFreeArray(a)]
m = VP(); lv = VP()
r["mipmap"] = [rt.cudaMallocMipmappedArray(R(m), R(float4), Extent(8, 8, 0), 4, 0),
               rt.cudaGetMipmappedArrayLevel(R(lv), m, 3), rt.cudaArrayGetInfo(None, R(ext), None, lv), ext.width,
               rt.cudaGetMipmappedArrayLevel(R(lv), m, 4), rt.cudaFreeMipmappedArray(m), rt.cudaFreeMipmappedArray(m)]
out(r)
""")
    assert got == {"malloc": 0, "info": [0, [32, 32, 32, 32, 2], [8, 4, 0], 0], "to": 0,
                   "from": [0, [0.0, 1.0, 2.0, 3.0], [32.0, 33.0, 34.0, 35.0]], "3d": 0,
                   "copy3d": [0, 0, [13, 14]],
                   "bad": [1, 1, 1, 1, 1, 1, 1, 21, 1, 1, 1, 1, 1, 1, 0],
                   "objects": [0, 0, 1, 1, 0, 1, 0], "surface_needs_ldst": 1,
                   "getters": [0, 0, True, 0, [3, 2, 1], 1, 1, 1, 2, 1, 0, 0, True, 0, [32, 32, 32, 32, 2],
                               1, 1, 1, 1, 1, 0, 0, 1], "free": [0, 0, 1],
                   "mipmap": [0, 0, 0, 1, 1, 0, 1]}


NAMES = ["cuArrayCreate", "cuArray3DCreate", "cuArrayGetDescriptor", "cuArray3DGetDescriptor", "cuArrayDestroy",
         "cuMipmappedArrayCreate", "cuMipmappedArrayGetLevel", "cuMipmappedArrayDestroy", "cuMemcpy3D",
         "cuMemcpy3DAsync", "cuMemcpyAtoH", "cuMemcpyHtoA", "cuMemcpyAtoHAsync", "cuMemcpyHtoAAsync", "cuMemcpyAtoD",
         "cuMemcpyDtoA", "cuMemcpyAtoA", "cuTexObjectCreate", "cuTexObjectDestroy", "cuTexObjectGetResourceDesc",
         "cuTexObjectGetTextureDesc", "cuTexObjectGetResourceViewDesc", "cuSurfObjectCreate", "cuSurfObjectDestroy",
         "cuSurfObjectGetResourceDesc"]


def test_reachable_through_cuGetProcAddress(subprocess_python):
    got = _json(subprocess_python, f"""
cu.cuGetProcAddress_v2.argtypes = [c.c_char_p, P(VP), I, c.c_ulonglong, P(I)]
res = {{}}
for name in {NAMES!r}:
    for flags in (0, 2):
        fn, st = VP(), I(-1)
        assert cu.cuGetProcAddress_v2(name.encode(), R(fn), 13000, flags, R(st)) == 0 and st.value == 0, name
        res.setdefault(name, []).append(fn.value)
direct = {{n: c.cast(getattr(cu, n + ("_v2" if n.startswith(("cuArrayCreate", "cuArray3D", "cuArrayGet", "cuMemcpy")) else "")), VP).value
          for n in {NAMES!r}}}
out({{n: [v[0] == direct[n], v[1] is not None] for n, v in res.items()}})
""")
    assert got == {n: [True, True] for n in NAMES}


def test_struct_layouts_match_cuda_bindings():
    """Our ctypes declarations (the C structs' layout) against cuda.bindings' own structs, byte for byte."""
    pytest.importorskip("cuda.bindings")
    from cuda.bindings import driver as d, runtime as r
    ns = {}
    exec(STRUCTS, ns)

    def same(theirs, ours):
        raw = ctypes.string_at(theirs.getPtr(), ctypes.sizeof(ours))
        assert raw == bytes(ours), (type(theirs).__name__, raw.hex(), bytes(ours).hex())

    x = d.CUDA_ARRAY3D_DESCRIPTOR()
    x.Width, x.Height, x.Depth, x.NumChannels, x.Flags = 1, 2, 3, 4, 5
    x.Format = d.CUarray_format.CU_AD_FORMAT_FLOAT
    same(x, ns["Desc3"](1, 2, 3, 0x20, 4, 5))
    y = d.CUDA_MEMCPY3D()
    y.srcXInBytes, y.srcZ, y.srcPitch, y.dstY, y.dstHeight, y.WidthInBytes, y.Depth = 1, 2, 3, 4, 5, 6, 7
    y.srcMemoryType = d.CUmemorytype.CU_MEMORYTYPE_ARRAY
    same(y, ns["Copy3D"](srcX=1, srcZ=2, srcPitch=3, dstY=4, dstHeight=5, width=6, depth=7, srcType=3))
    t = d.CUDA_TEXTURE_DESC()
    t.maxAnisotropy, t.flags, t.maxMipmapLevelClamp = 3, 2, 1.5
    same(t, ns["Tex"](maxAnisotropy=3, flags=2, maxMipmapLevelClamp=1.5))
    res = d.CUDA_RESOURCE_DESC()
    res.resType = d.CUresourcetype.CU_RESOURCE_TYPE_PITCH2D
    res.res.pitch2D.width, res.res.pitch2D.pitchInBytes, res.flags = 7, 9, 0
    ours = ns["Res"](resType=3)
    ours.res.pitch2D = ns["Pitch2D"](width=7, pitchInBytes=9)
    same(res, ours)
    v = d.CUDA_RESOURCE_VIEW_DESC()
    v.width, v.lastLayer = 5, 6
    same(v, ns["View"](width=5, lastLayer=6))
    rt_tex = r.cudaTextureDesc()
    rt_tex.maxAnisotropy, rt_tex.seamlessCubemap, rt_tex.disableTrilinearOptimization = 3, 1, 1
    same(rt_tex, ns["RtTex"](maxAnisotropy=3, seamlessCubemap=1, disableTrilinearOptimization=1))
    p = r.cudaMemcpy3DParms()
    p.extent.depth, p.srcPos.y, p.dstPtr.pitch = 9, 2, 64
    p.kind = r.cudaMemcpyKind.cudaMemcpyDeviceToDevice
    same(p, ns["Parms3D"](extent=ns["Extent"](0, 0, 9), srcPos=ns["Pos"](0, 2, 0), dstPtr=ns["PPtr"](None, 64, 0, 0), kind=3))


def test_faults_by_name_and_other_contexts(subprocess_python):
    """Each entry point is armed by its name (a creation fails with out of memory, nothing made); an array made in
    a created context on device 1 is device 1's memory."""
    got = _json(subprocess_python, """
rt.accelEmuSetFail.argtypes = [c.c_char_p]
free0 = free_bytes()
assert rt.accelEmuSetFail(b"cuArray3DCreate_v2:1,cuTexObjectCreate:1,cuArrayDestroy:1,cudaMallocArray:1") == 0
a, t = VP(), ULL()
r = [cu.cuArray3DCreate_v2(R(a), R(Desc3(4, 4, 0, FLOAT, 1, 0))), a.value, free_bytes() == free0]
b = mk(4, 4)
res = Res(resType=0); res.res.hArray = b
r += [cu.cuTexObjectCreate(R(t), R(res), R(Tex()), None), t.value, cu.cuArrayDestroy(b), cu.cuArrayDestroy(b),
      rt.cudaMallocArray(R(a), R(Chan(8, 0, 0, 0, 1)), 4, 0, 0), rt.cudaGetLastError()]
cu.cuCtxCreate_v2.argtypes = [P(VP), U, I]
ctx1 = VP(); assert cu.cuCtxCreate_v2(R(ctx1), 0, 1) == 0
f1 = free_bytes()
e = mk(256, 256, 0, FLOAT, 4)
r += [f1 - free_bytes(), cu.cuArrayDestroy(e), free_bytes() == f1]
out(r)
""")
    assert got == [2, None, True, 2, 0, 999, 0, 2, 2, 1 << 20, 0, True]


CUDA_CORE_TEXTURES = """
import numpy as np
from cuda.core import Device
from cuda.core.texture import MipmappedArrayOptions, OpaqueArrayOptions, ResourceDescriptor, TextureObjectOptions
d = Device(); d.set_current(); s = d.create_stream()
a = d.create_opaque_array(OpaqueArrayOptions(shape=(8, 4), format="float32", num_channels=1, is_surface_load_store=True))
h = np.arange(32, dtype=np.float32); out = np.zeros(32, np.float32)
a.copy_from(h, stream=s); a.copy_to(out, stream=s); s.sync()
assert (out == h).all()
v = d.create_opaque_array(OpaqueArrayOptions(shape=(4, 3, 2), format="uint8", num_channels=4))
b = np.arange(96, dtype=np.uint8); o = np.zeros(96, np.uint8)
buf = d.memory_resource.allocate(4096, stream=s)
v.copy_from(b, stream=s); v.copy_to(buf, stream=s); v.copy_from(buf, stream=s); v.copy_to(o, stream=s); s.sync()
assert (o == b).all()
t = d.create_texture_object(resource=ResourceDescriptor.from_opaque_array(a), options=TextureObjectOptions())
sf = d.create_surface_object(resource=ResourceDescriptor.from_opaque_array(a))
lin = d.create_texture_object(resource=ResourceDescriptor.from_linear(buf, format="float32", num_channels=1))
m = d.create_mipmapped_array(MipmappedArrayOptions(shape=(16, 16), format="float32", num_channels=1, num_levels=3))
tm = d.create_texture_object(resource=ResourceDescriptor.from_mipmapped_array(m), options=TextureObjectOptions())
print("ok", m.get_level(2).shape, len({int(t.handle), int(sf.handle), int(lin.handle), int(tm.handle)}))
"""


def test_cuda_core_texture_api_on_the_stand_ins():
    """cuda.core's texture package (opaque arrays and their copies from host and device memory, texture objects on
    arrays, linear memory and mipmapped arrays, surface objects) under `accel emu`; skipped without it."""
    import os
    import subprocess
    import sys
    pytest.importorskip("cuda.core.texture")
    env = {k: v for k, v in os.environ.items()
           if k not in ("ACCEL_CUDART", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES", "ACCEL_EMU_FAIL", "ACCEL_EMU_TRACE")}
    proc = subprocess.run([sys.executable, "-m", "accel", "emu", "--devices", "1", "--", sys.executable, "-c",
                           CUDA_CORE_TEXTURES], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "ok (4, 4) 4"


def test_array_copies_are_captured_into_graphs(subprocess_python):
    """A copy into an array on a capturing stream becomes a graph node: nothing moves until the graph runs."""
    got = _json(subprocess_python, """
for n, a in dict(cuStreamBeginCapture_v2=[VP, I], cuStreamEndCapture=[VP, P(VP)], cuGraphInstantiateWithFlags=[P(VP), VP, ULL],
                 cuGraphLaunch=[VP, VP], cuStreamSynchronize=[VP], cuGraphGetNodes=[VP, VP, P(SZ)]).items():
    getattr(cu, n).argtypes = a
v = mk(4, 2)
assert cu.cuMemcpyHtoA_v2(v, 0, (c.c_float * 8)(), 32) == 0
host = (c.c_float * 8)(*range(1, 9))
s = VP(); assert rt.cudaStreamCreate(R(s)) == 0
c3 = Copy3D(srcType=1, srcHost=c.addressof(host), srcPitch=16, srcHeight=2, dstType=3, dstArray=v, width=16, height=2, depth=1)
g, ge, n = VP(), VP(), SZ()
r = [cu.cuStreamBeginCapture_v2(s, 0), cu.cuMemcpy3DAsync_v2(R(c3), s), cu.cuStreamEndCapture(s, R(g)),
     cu.cuGraphGetNodes(g, None, R(n)), n.value]
back = (c.c_float * 8)()
assert cu.cuMemcpyAtoH_v2(back, v, 0, 32) == 0
r.append(list(back))
r += [cu.cuGraphInstantiateWithFlags(R(ge), g, 0), cu.cuGraphLaunch(ge, s), cu.cuStreamSynchronize(s)]
assert cu.cuMemcpyAtoH_v2(back, v, 0, 32) == 0
r.append(list(back))
out(r)
""")
    assert got == [0, 0, 0, 0, 1, [0.0] * 8, 0, 0, 0, [float(i) for i in range(1, 9)]]


# The checks below came from a second implementation of the same entry points (branch h-driver2), merged onto this
# one: a prelude of their own (no context made current up front, so the first check is that there is none).
OK, INVALID_VALUE, INVALID_CONTEXT, INVALID_HANDLE, NOT_SUPPORTED = 0, 1, 201, 400, 801

DRV2_PRELUDE = f"""
import ctypes as c, json, os
rt = c.CDLL({emu.cudart_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = c.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
P, S, R, U64 = c.c_void_p, c.c_size_t, c.byref, c.c_uint64
class D2(c.Structure):
    _fields_ = [("Width", S), ("Height", S), ("Format", c.c_int), ("NumChannels", c.c_uint)]
class D3(c.Structure):
    _fields_ = [("Width", S), ("Height", S), ("Depth", S), ("Format", c.c_int), ("NumChannels", c.c_uint), ("Flags", c.c_uint)]
class M2(c.Structure):
    _fields_ = [("srcX", S), ("srcY", S), ("srcType", c.c_int), ("srcHost", P), ("srcDevice", U64), ("srcArray", P),
                ("srcPitch", S), ("dstX", S), ("dstY", S), ("dstType", c.c_int), ("dstHost", P), ("dstDevice", U64),
                ("dstArray", P), ("dstPitch", S), ("width", S), ("height", S)]
for name, args in dict(cuArrayCreate_v2=[c.POINTER(P), c.POINTER(D2)], cuArray3DCreate_v2=[c.POINTER(P), c.POINTER(D3)],
                       cuArrayGetDescriptor_v2=[c.POINTER(D2), P], cuArray3DGetDescriptor_v2=[c.POINTER(D3), P],
                       cuArrayDestroy=[P], cuMemcpyHtoA_v2=[P, S, P, S], cuMemcpyAtoH_v2=[P, P, S, S],
                       cuMemcpyDtoA_v2=[P, S, U64, S], cuMemcpyAtoD_v2=[U64, P, S, S], cuMemcpyAtoA_v2=[P, S, P, S, S],
                       cuMemcpyHtoAAsync_v2=[P, S, P, S, P], cuMemcpyAtoHAsync_v2=[P, P, S, S, P],
                       cuMemcpy2D_v2=[c.POINTER(M2)], cuMemGetInfo_v2=[c.POINTER(S), c.POINTER(S)]).items():
    getattr(cu, name).argtypes = args
assert cu.cuInit(0) == 0
def out(v):
    print(json.dumps(v))
"""
_run2, _json2 = _fx.runners(DRV2_PRELUDE)


def test_arrays_as_descriptors(subprocess_python):
    got = _json2(subprocess_python, """
r = {}
a = P()
r["no_ctx"] = cu.cuArrayCreate_v2(R(a), R(D2(16, 4, 0x20, 1)))
ctx = P(); assert cu.cuDevicePrimaryCtxRetain(R(ctx), 0) == 0 and cu.cuCtxSetCurrent(ctx) == 0
free0, total = S(), S(); cu.cuMemGetInfo_v2(R(free0), R(total))
r["create"] = cu.cuArrayCreate_v2(R(a), R(D2(16, 4, 0x20, 1)))       # 16 x 4 floats: rows of 64 bytes
free1 = S(); cu.cuMemGetInfo_v2(R(free1), R(total)); r["counted"] = free0.value - free1.value >= 256
d = D2(); r["desc"] = [cu.cuArrayGetDescriptor_v2(R(d), a), d.Width, d.Height, d.Format, d.NumChannels]
d3 = D3(); r["desc3"] = [cu.cuArray3DGetDescriptor_v2(R(d3), a), d3.Width, d3.Height, d3.Depth, d3.Format, d3.Flags]
src = (c.c_ubyte * 256)(*range(256))
back = (c.c_ubyte * 256)()
r["htoa"] = [cu.cuMemcpyHtoA_v2(a, 0, src, 256), cu.cuMemcpyAtoH_v2(back, a, 0, 256), bytes(back) == bytes(src)]
# 2D: the middle 8 bytes of rows 1..2 out to a host buffer of pitch 8
m = M2(); m.srcType, m.srcArray, m.srcX, m.srcY = 3, a, 4, 1
host2 = (c.c_ubyte * 16)(); m.dstType, m.dstHost, m.dstPitch, m.width, m.height = 1, c.cast(host2, P), 8, 8, 2
r["2d_out"] = [cu.cuMemcpy2D_v2(R(m)), list(host2) == list(range(68, 76)) + list(range(132, 140))]
m2 = M2(); m2.srcType, m2.srcHost, m2.srcPitch = 1, c.cast((c.c_ubyte * 8)(*[255] * 8), P), 8
m2.dstType, m2.dstArray, m2.dstX, m2.dstY, m2.width, m2.height = 3, a, 60, 3, 4, 1
r["2d_in"] = [cu.cuMemcpy2D_v2(R(m2)), cu.cuMemcpyAtoH_v2(back, a, 0, 256), list(back[252:256]), back[251]]
m2.dstX = 61; r["2d_past_row"] = cu.cuMemcpy2D_v2(R(m2))
m2.dstX, m2.dstY = 0, 4; r["2d_past_end"] = cu.cuMemcpy2D_v2(R(m2))
# device <-> array, array <-> array, async on a stream
dev = U64(); assert cu.cuMemAlloc_v2(R(dev), S(256)) == 0
b = P(); assert cu.cuArray3DCreate_v2(R(b), R(D3(4, 4, 2, 0x01, 4, 0))) == 0       # 4 x 4 x 2 of uchar4: 128 bytes
s = P(); assert cu.cuStreamCreate(R(s), 0) == 0
got = (c.c_ubyte * 128)()
r["copies"] = [cu.cuMemcpyAtoD_v2(dev, a, 0, 256), cu.cuMemcpyDtoA_v2(b, 0, dev, 128), cu.cuMemcpyAtoA_v2(b, 64, a, 0, 64),
               cu.cuMemcpyAtoHAsync_v2(got, b, 0, 128, s), cu.cuStreamSynchronize(s),
               list(got[:4]) == [0, 1, 2, 3] and list(got[64:68]) == [0, 1, 2, 3] and got[127] == 63]
r["htoa_async"] = [cu.cuMemcpyHtoAAsync_v2(b, 0, src, 128, s), cu.cuStreamSynchronize(s)]
# refusals
bad = P(0x4242)
r["refused"] = [cu.cuMemcpyHtoA_v2(a, 200, src, 57), cu.cuMemcpyAtoH_v2(back, a, 257, 0), cu.cuMemcpyHtoA_v2(bad, 0, src, 1),
                cu.cuMemcpyAtoA_v2(b, 0, a, 0, 129), cu.cuArrayGetDescriptor_v2(R(d), bad), cu.cuArrayGetDescriptor_v2(None, a),
                cu.cuArrayDestroy(bad)]
x = P()
r["create_refused"] = [cu.cuArrayCreate_v2(None, R(D2(4, 4, 0x20, 1))), cu.cuArrayCreate_v2(R(x), None),
                       cu.cuArrayCreate_v2(R(x), R(D2(0, 4, 0x20, 1))), cu.cuArrayCreate_v2(R(x), R(D2(4, 4, 0x20, 3))),
                       cu.cuArrayCreate_v2(R(x), R(D2(4, 4, 0, 1))), cu.cuArrayCreate_v2(R(x), R(D2(4, 4, 0xb0, 1))),
                       cu.cuArray3DCreate_v2(R(x), R(D3(4, 0, 2, 0x20, 1, 0))),
                       cu.cuArray3DCreate_v2(R(x), R(D3(4, 4, 0, 0x20, 1, 1))),
                       cu.cuArray3DCreate_v2(R(x), R(D3(4, 8, 6, 0x20, 1, 4))),
                       cu.cuArray3DCreate_v2(R(x), R(D3(4, 4, 6, 0x20, 1, 0x40))),
                       cu.cuArray3DCreate_v2(R(x), R(D3(4, 4, 6, 0x20, 1, 0x1000))),
                       cu.cuArray3DCreate_v2(R(x), R(D3(1 << 62, 1 << 62, 0, 0x20, 1, 0))), rt.cudaGetLastError()]
# flags kept: a layered cubemap, a 1D array (height 0)
cube, one = P(), P()
r["kept"] = [cu.cuArray3DCreate_v2(R(cube), R(D3(8, 8, 12, 0x10, 2, 1 | 4))), cu.cuArray3DGetDescriptor_v2(R(d3), cube),
             d3.Depth, d3.Flags, cu.cuArrayCreate_v2(R(one), R(D2(100, 0, 0x03, 1))),
             cu.cuMemcpyHtoA_v2(one, 396, src, 4), cu.cuMemcpyHtoA_v2(one, 397, src, 4)]
# proc addresses, the per-thread variant of an async copy
cu.cuGetProcAddress_v2.argtypes = [c.c_char_p, c.POINTER(P), c.c_int, c.c_ulonglong, c.POINTER(c.c_int)]
def proc(name, flags=0):
    fn, st = P(), c.c_int(); assert cu.cuGetProcAddress_v2(name.encode(), R(fn), 13000, flags, R(st)) == 0; return fn.value
r["procs"] = [proc("cuArrayCreate") == c.cast(cu.cuArrayCreate_v2, P).value,
              proc("cuMemcpyHtoAAsync", 2) == c.cast(cu.cuMemcpyHtoAAsync_v2_ptsz, P).value,
              proc("cuMemcpyAtoA") == c.cast(cu.cuMemcpyAtoA_v2, P).value]
for h in (a, b, cube, one):
    assert cu.cuArrayDestroy(h) == 0
assert cu.cuMemFree_v2(dev) == 0
free2 = S(); cu.cuMemGetInfo_v2(R(free2), R(total)); r["given_back"] = free2.value == free0.value
r["destroyed"] = [cu.cuArrayDestroy(a), cu.cuArrayGetDescriptor_v2(R(d), a)]
out(r)
""")
    assert got["no_ctx"] == INVALID_CONTEXT
    assert got["create"] == OK and got["counted"]
    assert got["desc"] == [OK, 16, 4, 0x20, 1] and got["desc3"] == [OK, 16, 4, 0, 0x20, 0]
    assert got["htoa"] == [OK, OK, True]
    assert got["2d_out"] == [OK, True]
    assert got["2d_in"] == [OK, OK, [255] * 4, 251]
    assert got["2d_past_row"] == INVALID_VALUE and got["2d_past_end"] == INVALID_VALUE
    assert got["copies"] == [OK] * 5 + [True] and got["htoa_async"] == [OK, OK]
    assert got["refused"] == [INVALID_VALUE, INVALID_VALUE, INVALID_HANDLE, INVALID_VALUE, INVALID_HANDLE, INVALID_VALUE,
                              INVALID_HANDLE]
    assert got["create_refused"] == [INVALID_VALUE] * 5 + [NOT_SUPPORTED] + [INVALID_VALUE] * 3 + [NOT_SUPPORTED] + \
        [INVALID_VALUE] * 2 + [OK]
    assert got["kept"] == [OK, OK, 12, 5, OK, OK, INVALID_VALUE]
    assert got["procs"] == [True, True, True]
    assert got["given_back"] and got["destroyed"] == [INVALID_HANDLE, INVALID_HANDLE]


def test_runtime_arrays(subprocess_python):
    """cudaMallocArray / cudaMalloc3DArray / cudaArrayGetInfo / cudaFreeArray and the 2D copies to, from and between
    arrays: a cudaArray_t is the driver's CUarray; channel descriptors as the driver's formats; the refusals, and
    the last error they leave."""
    got = _json2(subprocess_python, """
class CD(c.Structure):
    _fields_ = [("x", c.c_int), ("y", c.c_int), ("z", c.c_int), ("w", c.c_int), ("f", c.c_int)]
class EX(c.Structure):
    _fields_ = [("width", S), ("height", S), ("depth", S)]
for name, args in dict(cudaMallocArray=[c.POINTER(P), c.POINTER(CD), S, S, c.c_uint],
                       cudaMalloc3DArray=[c.POINTER(P), c.POINTER(CD), EX, c.c_uint], cudaFreeArray=[P],
                       cudaArrayGetInfo=[c.POINTER(CD), c.POINTER(EX), c.POINTER(c.c_uint), P],
                       cudaMemcpy2DToArray=[P, S, S, P, S, S, S, c.c_int], cudaMemcpy2DFromArray=[P, S, P, S, S, S, S, c.c_int],
                       cudaMemcpy2DArrayToArray=[P, S, S, P, S, S, S, S, c.c_int],
                       cudaMemcpy2DToArrayAsync=[P, S, S, P, S, S, S, c.c_int, P],
                       cudaMemcpy2DFromArrayAsync=[P, S, P, S, S, S, S, c.c_int, P], cudaStreamSynchronize=[P]).items():
    getattr(rt, name).argtypes = args
r = {}
a, b = P(), P()
r["malloc"] = [rt.cudaMallocArray(R(a), R(CD(32, 32, 0, 0, 2)), 8, 4, 0), rt.cudaMalloc3DArray(R(b), R(CD(8, 8, 8, 8, 1)), EX(4, 4, 2), 2)]
cd, ex, fl = CD(), EX(), c.c_uint()
r["info"] = [rt.cudaArrayGetInfo(R(cd), R(ex), R(fl), a), [cd.x, cd.y, cd.z, cd.w, cd.f], [ex.width, ex.height, ex.depth], fl.value]
rt.cudaArrayGetInfo(R(cd), R(ex), R(fl), b); r["info3"] = [[cd.x, cd.y, cd.z, cd.w, cd.f], [ex.width, ex.height, ex.depth], fl.value]
d = D3(); r["driver_view"] = [cu.cuArray3DGetDescriptor_v2(R(d), a), d.Width, d.Height, d.Format, d.NumChannels]
src = (c.c_ubyte * 256)(*range(256))
r["to"] = rt.cudaMemcpy2DToArray(a, 16, 1, src, 32, 32, 2, 1)          # 32 bytes of 2 rows at (16 bytes, row 1)
out2 = (c.c_ubyte * 64)()
r["from"] = [rt.cudaMemcpy2DFromArray(out2, 32, a, 16, 1, 32, 2, 2), list(out2[:2]) == [0, 1] and list(out2[32:34]) == [32, 33]]
r["a2a"] = [rt.cudaMemcpy2DArrayToArray(b, 0, 0, a, 16, 1, 16, 2, 3), rt.cudaMemcpy2DFromArray(out2, 16, b, 0, 0, 16, 2, 4),
            list(out2[:2]) == [0, 1] and list(out2[16:18]) == [32, 33]]
s = P(); assert rt.cudaStreamCreate(R(s)) == 0
r["async"] = [rt.cudaMemcpy2DToArrayAsync(a, 0, 0, src, 64, 64, 4, 1, s), rt.cudaMemcpy2DFromArrayAsync(out2, 64, a, 0, 3, 64, 1, 2, s),
              rt.cudaStreamSynchronize(s), out2[0] == 192]
x = P()
r["refused"] = [rt.cudaMallocArray(R(x), R(CD(32, 16, 0, 0, 2)), 8, 4, 0), rt.cudaGetLastError(),
                rt.cudaMallocArray(R(x), R(CD(8, 8, 8, 0, 1)), 8, 4, 0), rt.cudaGetLastError(),
                rt.cudaMallocArray(R(x), R(CD(32, 0, 0, 0, 2)), 8, 4, 1), rt.cudaGetLastError(),
                rt.cudaMemcpy2DToArray(a, 40, 0, src, 32, 32, 1, 1), rt.cudaGetLastError(),
                rt.cudaMemcpy2DToArray(a, 0, 0, src, 16, 32, 2, 1), rt.cudaGetLastError(),
                rt.cudaMemcpy2DToArray(P(0x4242), 0, 0, src, 32, 32, 1, 1), rt.cudaGetLastError(),
                rt.cudaMemcpy2DToArray(a, 0, 0, src, 32, 32, 1, 7), rt.cudaGetLastError(),
                rt.cudaMemcpy2DArrayToArray(b, 0, 0, a, 0, 0, 16, 1, 1), rt.cudaGetLastError(),
                rt.cudaFreeArray(P(0x4242)), rt.cudaGetLastError(), rt.cudaFreeArray(None)]
r["free"] = [rt.cudaFreeArray(a), rt.cudaFreeArray(b), cu.cuArrayDestroy(a)]
out(r)
""")
    assert got["malloc"] == [OK, OK]
    assert got["info"] == [OK, [32, 32, 0, 0, 2], [8, 4, 0], 0]
    assert got["info3"] == [[8, 8, 8, 8, 1], [4, 4, 2], 2]
    assert got["driver_view"] == [OK, 8, 4, 0x20, 2]
    assert got["to"] == OK and got["from"] == [OK, True] and got["a2a"] == [OK, OK, True]
    assert got["async"] == [OK, OK, OK, True]
    # the runtime documents cudaErrorInvalidValue (not InvalidChannelDescriptor / ResourceHandle) for a channel
    # descriptor or a handle it cannot use, cudaErrorInvalidPitchValue for rows wider than the pitch; any of the
    # five copy kinds between two arrays is accepted (both are device memory)
    assert got["refused"] == [INVALID_VALUE] * 8 + [12, 12, INVALID_VALUE, INVALID_VALUE, 21, 21, OK, OK,
                              INVALID_VALUE, INVALID_VALUE, OK]
    assert got["free"] == [OK, OK, INVALID_HANDLE]


def test_memcpy3d(subprocess_python):
    """cuMemcpy3D / cuMemcpy3DAsync: a box between host, device and array sides, slice by slice (a pitched side's
    slices srcPitch x srcHeight apart, an array's its rows x height); the refusals."""
    got = _json2(subprocess_python, """
class M3(c.Structure):
    _fields_ = [("srcX", S), ("srcY", S), ("srcZ", S), ("srcLOD", S), ("srcType", c.c_int), ("srcHost", P), ("srcDevice", U64),
                ("srcArray", P), ("r0", P), ("srcPitch", S), ("srcHeight", S),
                ("dstX", S), ("dstY", S), ("dstZ", S), ("dstLOD", S), ("dstType", c.c_int), ("dstHost", P), ("dstDevice", U64),
                ("dstArray", P), ("r1", P), ("dstPitch", S), ("dstHeight", S), ("width", S), ("height", S), ("depth", S)]
cu.cuMemcpy3D_v2.argtypes = [c.POINTER(M3)]
cu.cuMemcpy3DAsync_v2.argtypes = [c.POINTER(M3), P]
ctx = P(); assert cu.cuDevicePrimaryCtxRetain(R(ctx), 0) == 0 and cu.cuCtxSetCurrent(ctx) == 0
a = P(); assert cu.cuArray3DCreate_v2(R(a), R(D3(4, 3, 2, 0x01, 1, 0))) == 0      # 4 x 3 x 2 bytes
host = (c.c_ubyte * 24)(*range(24))
m = M3(srcType=1, srcHost=c.cast(host, P), srcPitch=4, srcHeight=3, dstType=3, dstArray=a, width=4, height=3, depth=2)
r = {"in": cu.cuMemcpy3D_v2(R(m))}
back = (c.c_ubyte * 24)(); assert cu.cuMemcpyAtoH_v2(back, a, 0, 24) == 0
r["whole"] = list(back) == list(range(24))
# the inner box (x 1..2, y 1..2, z 0..1) out to a pitched device buffer, then to the host
dev = U64(); assert cu.cuMemAlloc_v2(R(dev), S(64)) == 0
m = M3(srcType=3, srcArray=a, srcX=1, srcY=1, dstType=2, dstDevice=dev.value, dstPitch=8, dstHeight=2, width=2, height=2, depth=2)
s = P(); assert cu.cuStreamCreate(R(s), 0) == 0
r["box"] = [cu.cuMemcpy3DAsync_v2(R(m), s), cu.cuStreamSynchronize(s)]
out8 = (c.c_ubyte * 32)(); assert cu.cuMemcpyDtoH_v2(out8, dev, 32) == 0
r["box_data"] = [list(out8[0:2]), list(out8[8:10]), list(out8[16:18]), list(out8[24:26])]
bad = [M3(srcType=3, srcArray=a, srcX=1, dstType=1, dstHost=c.cast(back, P), dstPitch=4, dstHeight=3, width=4, height=1, depth=1),
       M3(srcType=3, srcArray=a, srcZ=1, dstType=1, dstHost=c.cast(back, P), dstPitch=4, dstHeight=3, width=4, height=3, depth=2),
       M3(srcType=1, srcHost=c.cast(host, P), srcPitch=2, srcHeight=3, dstType=3, dstArray=a, width=4, height=3, depth=1),
       M3(srcType=1, srcHost=c.cast(host, P), srcPitch=4, srcHeight=1, dstType=3, dstArray=a, width=4, height=3, depth=2),
       M3(srcType=1, srcHost=c.cast(host, P), srcPitch=4, srcHeight=3, srcLOD=1, dstType=3, dstArray=a, width=4, height=3, depth=1),
       M3(srcType=9, srcHost=c.cast(host, P), srcPitch=4, srcHeight=3, dstType=3, dstArray=a, width=4, height=3, depth=1),
       M3(srcType=3, srcArray=P(0x4242), dstType=1, dstHost=c.cast(back, P), dstPitch=4, dstHeight=3, width=4, height=1, depth=1)]
r["refused"] = [cu.cuMemcpy3D_v2(R(b)) for b in bad] + [cu.cuMemcpy3D_v2(None)]
assert cu.cuArrayDestroy(a) == 0 and cu.cuMemFree_v2(dev) == 0
out(r)
""")
    assert got["in"] == OK and got["whole"]
    assert got["box"] == [OK, OK] and got["box_data"] == [[5, 6], [9, 10], [17, 18], [21, 22]]
    assert got["refused"] == [INVALID_VALUE] * 6 + [INVALID_HANDLE, INVALID_VALUE]      # a handle that is no array
