"""CUDA arrays in the libcuda.so.1 stand-in (issue 33), as descriptors over device memory: cuArrayCreate /
cuArray3DCreate / cuArrayGetDescriptor / cuArray3DGetDescriptor / cuArrayDestroy, the offset copies (HtoA, AtoH,
DtoA, AtoD, AtoA, async forms) and cuMemcpy2D with array sides: what each does, the layout the copies see (rows of
width x element bytes), the driver's documented error returns, and that the memory is counted and given back.

The stand-ins run in fresh interpreters (see test_standin.py for why).
"""
import importlib.util
import pathlib

from accel import emu

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

pytestmark = _fx.needs_standins

OK, INVALID_VALUE, INVALID_CONTEXT, INVALID_HANDLE, NOT_SUPPORTED = 0, 1, 201, 400, 801

PRELUDE = f"""
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
_run, _json = _fx.runners(PRELUDE)


def test_arrays_as_descriptors(subprocess_python):
    got = _json(subprocess_python, """
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
    got = _json(subprocess_python, """
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
    assert got["refused"] == [20, 20, 20, 20, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, 12, 12,
                              INVALID_HANDLE, INVALID_HANDLE, 21, 21, 21, 21, INVALID_HANDLE, INVALID_HANDLE, OK]
    assert got["free"] == [OK, OK, INVALID_HANDLE]


def test_memcpy3d(subprocess_python):
    """cuMemcpy3D / cuMemcpy3DAsync: a box between host, device and array sides, slice by slice (a pitched side's
    slices srcPitch x srcHeight apart, an array's its rows x height); the refusals."""
    got = _json(subprocess_python, """
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
    assert got["refused"] == [INVALID_VALUE] * 8
