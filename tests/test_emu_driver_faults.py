"""Fault injection in the driver layer of the libcuda.so.1 stand-in: every driver entry point that can
fail has a hook armed by its name (ACCEL_EMU_FAIL / accelEmuSetFail, as the runtime's), and a fault
returns an error without changing anything (no stream or event made or destroyed, no record, no
context change, out-parameters untouched, the runtime's last error kept); the next call succeeds.

The stand-ins run in fresh interpreters (a library with the soname libcudart.so.13 loaded into the
test process would be found by every later dlopen of that soname).
"""
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import textwrap

import pytest

from accel import emu

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

pytestmark = _fx.needs_standins

REPO = pathlib.Path(__file__).resolve().parent.parent
OOM, UNKNOWN = 2, 999   # CUDA_ERROR_OUT_OF_MEMORY (what creating calls fail with), CUDA_ERROR_UNKNOWN

# name: (call, setup before it, undo after the successful second call, the fault's code, the next call's code)
# `ob`/`ob2`: out-parameter buffers (their bytes are part of the state); ctx0/ctx1: primary contexts of
# devices 0/1 (ctx0 is current); s0: an idle stream and ev_done/t0/t1 events recorded on it; busy: a
# device-3 stream held by a host function, evb an event recorded behind it; sw: a device-3 stream.
CASES = {
    "cuDeviceGetCount": ("cu.cuDeviceGetCount(ob)",),
    "cuDeviceGet": ("cu.cuDeviceGet(ob, 1)",),
    "cuDeviceGetAttribute": ("cu.cuDeviceGetAttribute(ob, 75, 0)",),
    "cuDeviceGetName": ("cu.cuDeviceGetName(ob, 64, 0)",),
    "cuDeviceGetUuid": ("cu.cuDeviceGetUuid(ob, 0)",),
    "cuDeviceGetUuid_v2": ("cu.cuDeviceGetUuid_v2(ob, 0)",),
    "cuDeviceTotalMem_v2": ("cu.cuDeviceTotalMem_v2(ob, 0)",),
    "cuDeviceGetPCIBusId": ("cu.cuDeviceGetPCIBusId(ob, 64, 0)",),
    "cuDeviceComputeCapability": ("cu.cuDeviceComputeCapability(ob, ob2, 0)",),
    "cuDevicePrimaryCtxRetain": ("cu.cuDevicePrimaryCtxRetain(ob, 2)",),   # device 2's context becomes active
    "cuDevicePrimaryCtxRelease_v2": ("cu.cuDevicePrimaryCtxRelease_v2(0)",),
    "cuDevicePrimaryCtxSetFlags_v2": ("cu.cuDevicePrimaryCtxSetFlags_v2(0, 0)",),
    "cuCtxGetCurrent": ("cu.cuCtxGetCurrent(ob)",),
    "cuCtxSetCurrent": ("cu.cuCtxSetCurrent(ctx1)", "", "cu.cuCtxSetCurrent(ctx0)"),
    "cuCtxPushCurrent_v2": ("cu.cuCtxPushCurrent_v2(ctx1)", "", "cu.cuCtxPopCurrent_v2(None)"),
    "cuCtxPopCurrent_v2": ("cu.cuCtxPopCurrent_v2(ob)", "cu.cuCtxPushCurrent_v2(ctx1)"),    # ctx0 becomes current
    "cuCtxGetDevice": ("cu.cuCtxGetDevice(ob)",),
    "cuCtxSynchronize": ("cu.cuCtxSynchronize()",),
    "cuCtxGetApiVersion": ("cu.cuCtxGetApiVersion(None, ob)",),
    "cuCtxGetFlags": ("cu.cuCtxGetFlags(ob)",),
    "cuCtxGetId": ("cu.cuCtxGetId(None, ob)",),
    "cuCtxGetStreamPriorityRange": ("cu.cuCtxGetStreamPriorityRange(ob, ob2)",),
    "cuMemGetInfo_v2": ("cu.cuMemGetInfo_v2(ob, ob2)",),
    "cuStreamCreate": ("cu.cuStreamCreate(ob, 0)", "", "rt.cudaStreamDestroy(out_ptr())", OOM),
    "cuStreamCreateWithPriority": ("cu.cuStreamCreateWithPriority(ob, 1, -1)", "", "rt.cudaStreamDestroy(out_ptr())",
                                   OOM),
    "cuStreamDestroy_v2": ("cu.cuStreamDestroy_v2(sd)", "sd = new_stream()"),
    "cuStreamQuery": ("cu.cuStreamQuery(s0)",),
    "cuStreamSynchronize": ("cu.cuStreamSynchronize(s0)",),
    "cuStreamWaitEvent": ("cu.cuStreamWaitEvent(sw, evb, 0)",),      # sw then waits for busy
    "cuStreamGetPriority": ("cu.cuStreamGetPriority(s0, ob)",),
    "cuStreamGetFlags": ("cu.cuStreamGetFlags(s0, ob)",),
    "cuStreamGetId": ("cu.cuStreamGetId(s0, ob)",),
    "cuStreamGetDevice": ("cu.cuStreamGetDevice(s0, ob)",),
    "cuStreamGetCtx": ("cu.cuStreamGetCtx(s0, ob)",),
    "cuStreamGetCtx_v2": ("cu.cuStreamGetCtx_v2(s0, ob, ob2)",),
    "cuStreamIsCapturing": ("cu.cuStreamIsCapturing(s0, ob)",),
    "cuLaunchHostFunc": ("cu.cuLaunchHostFunc(s0, count, None)",),
    "cuLaunchHostFunc_v2": ("cu.cuLaunchHostFunc_v2(s0, count, None, 0)",),
    "cuEventCreate": ("cu.cuEventCreate(ob, 2)", "", "rt.cudaEventDestroy(out_ptr())", OOM),
    "cuEventDestroy_v2": ("cu.cuEventDestroy_v2(ed)", "ed = new_event()"),
    "cuEventRecord": ("cu.cuEventRecord(er, busy)", "er = new_event_on(3)"),     # er then waits for busy
    "cuEventRecordWithFlags": ("cu.cuEventRecordWithFlags(er, busy, 0)", "er = new_event_on(3)"),
    "cuEventQuery": ("cu.cuEventQuery(ev_done)",),
    "cuEventSynchronize": ("cu.cuEventSynchronize(ev_done)",),
    "cuEventElapsedTime_v2": ("cu.cuEventElapsedTime_v2(ob, t0, t1)",),
    "cuGetProcAddress": ("cu.cuGetProcAddress(b'cuInit', ob, 13000, c.c_ulonglong(0))",),
    "cuGetProcAddress_v2": ("cu.cuGetProcAddress_v2(b'cuInit', ob, 13000, c.c_ulonglong(0), ob2)",),
    # contexts (issue 18): probes are extra state a case's setup adds
    "cuDevicePrimaryCtxReset_v2": ("cu.cuDevicePrimaryCtxReset_v2(2)", "cu.cuDevicePrimaryCtxRetain(ob, 2)"),
    "cuCtxCreate_v2": ("cu.cuCtxCreate_v2(ob, 0, 1)", "", "cu.cuCtxDestroy_v2(out_ptr())", OOM),
    "cuCtxCreate_v3": ("cu.cuCtxCreate_v3(ob, None, 0, 0, 1)", "", "cu.cuCtxDestroy_v2(out_ptr())", OOM),
    "cuCtxCreate_v4": ("cu.cuCtxCreate_v4(ob, None, 0, 1)", "", "cu.cuCtxDestroy_v2(out_ptr())", OOM),
    "cuCtxDestroy_v2": ("cu.cuCtxDestroy_v2(cx)", "cx = new_ctx(); probes = [lambda: api_version(cx)]"),
    "cuCtxSetLimit": ("cu.cuCtxSetLimit(1, c.c_size_t(4096))", "probes = [lambda: limit(1)]",
                      "cu.cuCtxSetLimit(1, c.c_size_t(1 << 20))"),
    "cuCtxGetLimit": ("cu.cuCtxGetLimit(ob, 0)",),
    "cuCtxSetCacheConfig": ("cu.cuCtxSetCacheConfig(2)", "probes = [cache_config]", "cu.cuCtxSetCacheConfig(0)"),
    "cuCtxGetCacheConfig": ("cu.cuCtxGetCacheConfig(ob)",),
    "cuCtxEnablePeerAccess": ("cu.cuCtxEnablePeerAccess(ctx1, 0)",),
    "cuDeviceCanAccessPeer": ("cu.cuDeviceCanAccessPeer(ob, 0, 1)",),
    "cuProfilerStart": ("cu.cuProfilerStart()",),
    "cuProfilerStop": ("cu.cuProfilerStop()",),
    "cuStreamAddCallback": ("cu.cuStreamAddCallback(s0, callback, None, 0)",),
    # memory (issue 18): ddst/hdst are cleared before each case and part of the state; dsrc/hsrc hold data
    "cuMemAlloc_v2": ("cu.cuMemAlloc_v2(ob, 4096)", "", "rt.cudaFree(out_ptr())", OOM),
    "cuMemAllocPitch_v2": ("cu.cuMemAllocPitch_v2(ob, ob2, 100, 3, 4)", "", "rt.cudaFree(out_ptr())", OOM),
    "cuMemFree_v2": ("cu.cuMemFree_v2(dm)", "dm = new_dev()"),
    "cuMemAllocManaged": ("cu.cuMemAllocManaged(ob, 4096, 1)", "", "rt.cudaFree(out_ptr())", OOM),
    "cuMemAllocAsync": ("cu.cuMemAllocAsync(ob, 4096, s0)", "", "rt.cudaFreeAsync(out_ptr(), s0)", OOM),
    "cuMemAllocFromPoolAsync": ("cu.cuMemAllocFromPoolAsync(ob, 4096, upool, s0)", "",
                                "rt.cudaFreeAsync(out_ptr(), s0)", OOM),
    "cuMemFreeAsync": ("cu.cuMemFreeAsync(da, s0)", "da = new_async()"),
    "cuMemGetAddressRange_v2": ("cu.cuMemGetAddressRange_v2(ob, ob2, dsrc)",),
    "cuMemPoolCreate": ("cu.cuMemPoolCreate(ob, pool_props)", "", "rt.cudaMemPoolDestroy(out_ptr())", OOM),
    "cuMemPoolDestroy": ("cu.cuMemPoolDestroy(pd)", "pd = new_pool(); probes = [lambda: pool_attr(pd, 5)]"),
    "cuMemPoolGetAttribute": ("cu.cuMemPoolGetAttribute(upool, 7, ob)",),
    "cuMemPoolSetAttribute": ("cu.cuMemPoolSetAttribute(upool, 4, c.byref(c.c_uint64(1 << 20)))", "",
                              "rt.cudaMemPoolSetAttribute(upool, 4, c.byref(c.c_uint64(0)))"),
    "cuMemPoolTrimTo": ("cu.cuMemPoolTrimTo(upool, c.c_size_t(0))", "fill_pool()",
                        "rt.cudaMemPoolSetAttribute(upool, 4, c.byref(c.c_uint64(0)))"),
    "cuMemPoolSetAccess": ("cu.cuMemPoolSetAccess(upool, c.byref(access(1, 3)), 1)", "",
                           "cu.cuMemPoolSetAccess(upool, c.byref(access(1, 0)), 1)"),
    "cuMemPoolGetAccess": ("cu.cuMemPoolGetAccess(ob, upool, c.byref(location(1)))",),
    "cuDeviceGetMemPool": ("cu.cuDeviceGetMemPool(ob, 0)",),
    "cuDeviceGetDefaultMemPool": ("cu.cuDeviceGetDefaultMemPool(ob, 0)",),
    "cuDeviceSetMemPool": ("cu.cuDeviceSetMemPool(0, upool)", "", "cu.cuDeviceSetMemPool(0, dpool0)"),
    "cuMemGetMemPool": ("cu.cuMemGetMemPool(ob, c.byref(location(0)), 1)",),
    "cuMemGetDefaultMemPool": ("cu.cuMemGetDefaultMemPool(ob, c.byref(location(0)), 1)",),
    "cuMemSetMemPool": ("cu.cuMemSetMemPool(c.byref(location(0)), 1, upool)", "", "cu.cuDeviceSetMemPool(0, dpool0)"),
    "cuMemcpy": ("cu.cuMemcpy(ddst, hsrc_p, 256)",),
    "cuMemcpyAsync": ("cu.cuMemcpyAsync(ddst, hsrc_p, 256, s0)",),
    "cuMemcpyHtoD_v2": ("cu.cuMemcpyHtoD_v2(ddst, hsrc, 256)",),
    "cuMemcpyDtoH_v2": ("cu.cuMemcpyDtoH_v2(hdst, dsrc, 256)",),
    "cuMemcpyDtoD_v2": ("cu.cuMemcpyDtoD_v2(ddst, dsrc, 256)",),
    "cuMemcpyHtoDAsync_v2": ("cu.cuMemcpyHtoDAsync_v2(ddst, hsrc, 256, s0)",),
    "cuMemcpyDtoHAsync_v2": ("cu.cuMemcpyDtoHAsync_v2(hdst, dsrc, 256, s0)",),
    "cuMemcpyDtoDAsync_v2": ("cu.cuMemcpyDtoDAsync_v2(ddst, dsrc, 256, s0)",),
    "cuMemcpyPeer": ("cu.cuMemcpyPeer(ddst, ctx0, dsrc1, ctx1, 256)",),
    "cuMemcpyPeerAsync": ("cu.cuMemcpyPeerAsync(ddst, ctx0, dsrc1, ctx1, 256, s0)",),
    "cuMemcpy2D_v2": ("cu.cuMemcpy2D_v2(c.byref(copy2d))",),
    "cuMemcpy2DUnaligned_v2": ("cu.cuMemcpy2DUnaligned_v2(c.byref(copy2d))",),
    "cuMemcpy2DAsync_v2": ("cu.cuMemcpy2DAsync_v2(c.byref(copy2d), s0)",),
    "cuMemsetD8_v2": ("cu.cuMemsetD8_v2(ddst, 7, 256)",),
    "cuMemsetD8Async": ("cu.cuMemsetD8Async(ddst, 7, 256, s0)",),
    "cuMemsetD16_v2": ("cu.cuMemsetD16_v2(ddst, 0x1234, 128)",),
    "cuMemsetD16Async": ("cu.cuMemsetD16Async(ddst, 0x1234, 128, s0)",),
    "cuMemsetD32_v2": ("cu.cuMemsetD32_v2(ddst, c.c_uint(0xdeadbeef), 64)",),
    "cuMemsetD32Async": ("cu.cuMemsetD32Async(ddst, c.c_uint(0xdeadbeef), 64, s0)",),
    "cuMemHostAlloc": ("cu.cuMemHostAlloc(ob, 4096, 0)", "", "rt.cudaFreeHost(out_ptr())", OOM),
    "cuMemAllocHost_v2": ("cu.cuMemAllocHost_v2(ob, 4096)", "", "rt.cudaFreeHost(out_ptr())", OOM),
    "cuMemFreeHost": ("cu.cuMemFreeHost(ph)", "ph = new_pinned(); probes = [lambda: pointer_type(ph)]"),
    "cuMemHostRegister_v2": ("cu.cuMemHostRegister_v2(hreg, 4096, 0)", "probes = [lambda: pointer_type(hreg)]",
                             "rt.cudaHostUnregister(hreg)"),
    "cuMemHostUnregister": ("cu.cuMemHostUnregister(hreg)",
                            "rt.cudaHostRegister(hreg, 4096, 0); probes = [lambda: pointer_type(hreg)]"),
    "cuMemHostGetDevicePointer_v2": ("cu.cuMemHostGetDevicePointer_v2(ob, pin, 0)",),
    "cuIpcGetMemHandle": ("cu.cuIpcGetMemHandle(ob, dsrc)",),
    "cuIpcOpenMemHandle_v2": ("cu.cuIpcOpenMemHandle_v2(ob, ipc, 0)", "", "rt.cudaIpcCloseMemHandle(out_ptr())", OOM),
    "cuIpcCloseMemHandle": ("cu.cuIpcCloseMemHandle(dsrc)", "assert rt.cudaIpcOpenMemHandle(c.byref(c.c_void_p()), ipc, 0) == 0"),
    "cuPointerGetAttribute": ("cu.cuPointerGetAttribute(ob, 2, dsrc)",),
    "cuPointerGetAttributes": ("cu.cuPointerGetAttributes(2, attrs, datas, dsrc)",),
    "cuMemAdvise": ("cu.cuMemAdvise(man, c.c_size_t(4096), 1, 0)", "probes = [read_mostly]",
                    "cu.cuMemAdvise(man, c.c_size_t(4096), 2, 0)"),
    "cuMemAdvise_v2": ("cu.cuMemAdvise_v2(man, c.c_size_t(4096), 1, location(0))", "probes = [read_mostly]",
                       "cu.cuMemAdvise_v2(man, c.c_size_t(4096), 2, location(0))"),
    "cuMemRangeGetAttribute": ("cu.cuMemRangeGetAttribute(ob, c.c_size_t(4), 1, man, c.c_size_t(4096))",),
    "cuMemPrefetchAsync": ("cu.cuMemPrefetchAsync(man, c.c_size_t(4096), 1, s0)", "probes = [last_prefetch]",
                           "discard()"),
    "cuMemPrefetchAsync_v2": ("cu.cuMemPrefetchAsync_v2(man, c.c_size_t(4096), location(1), 0, s0)",
                              "probes = [last_prefetch]", "discard()"),
    "cuMemPrefetchBatchAsync": ("cu.cuMemPrefetchBatchAsync(man_ptrs, man_sizes, c.c_size_t(1), man_locs, man_idx, "
                                "c.c_size_t(1), c.c_ulonglong(0), s0)", "probes = [last_prefetch]", "discard()"),
    "cuMemDiscardBatchAsync": ("cu.cuMemDiscardBatchAsync(man_ptrs, man_sizes, c.c_size_t(1), c.c_ulonglong(0), s0)",
                               "cu.cuMemPrefetchAsync_v2(man, c.c_size_t(4096), location(1), 0, s0); "
                               "probes = [last_prefetch]"),
    "cuMemDiscardAndPrefetchBatchAsync": ("cu.cuMemDiscardAndPrefetchBatchAsync(man_ptrs, man_sizes, c.c_size_t(1), "
                                          "man_locs, man_idx, c.c_size_t(1), c.c_ulonglong(0), s0)",
                                          "probes = [last_prefetch]", "discard()"),
    "cuMemPoolExportToShareableHandle": ("cu.cuMemPoolExportToShareableHandle(ob, spool, 1, c.c_ulonglong(0))", "",
                                         "os.close(c.c_int.from_buffer(ob).value)", OOM),
    "cuMemPoolImportFromShareableHandle": ("cu.cuMemPoolImportFromShareableHandle(ob, c.c_void_p(sfd), 1, "
                                           "c.c_ulonglong(0))", "", "", OOM),
    "cuMemPoolExportPointer": ("cu.cuMemPoolExportPointer(ob, sptr)",),
    "cuMemPoolImportPointer": ("cu.cuMemPoolImportPointer(ob2, spool, c.byref(sdata))",),
    "cuMemRangeGetAttributes": ("cu.cuMemRangeGetAttributes(datas, range_sizes, range_attrs, c.c_size_t(2), man, "
                                "c.c_size_t(4096))",),
}

SCRIPT = """
import ctypes as c, json, os, threading
rt = c.CDLL({cudart!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = c.CDLL({driver!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
rt.accelEmuSetFail.argtypes = [c.c_char_p]
cases = {cases!r}

ob, ob2 = c.create_string_buffer(64), c.create_string_buffer(64)
out_ptr = lambda: c.c_void_p(c.c_void_p.from_buffer(ob).value)
def new_stream():
    p = c.c_void_p(); assert rt.cudaStreamCreate(c.byref(p)) == 0; return p
def new_event(flags=0):
    p = c.c_void_p(); assert rt.cudaEventCreateWithFlags(c.byref(p), flags) == 0; return p
def new_event_on(dev):
    assert rt.cudaSetDevice(dev) == 0
    e = new_event()
    assert rt.cudaSetDevice(0) == 0
    return e
ctx0, ctx1 = c.c_void_p(), c.c_void_p()
assert cu.cuInit(0) == 0 and cu.cuDevicePrimaryCtxRetain(c.byref(ctx1), 1) == 0
assert cu.cuDevicePrimaryCtxRetain(c.byref(ctx0), 0) == 0 and cu.cuCtxSetCurrent(ctx0) == 0
HOSTFN = c.CFUNCTYPE(None, c.c_void_p)
gate, ran = threading.Event(), []
hold, count = HOSTFN(lambda _: gate.wait()), HOSTFN(lambda _: ran.append(1))
assert rt.cudaSetDevice(3) == 0
busy, sw = new_stream(), new_stream()
assert rt.cudaLaunchHostFunc(busy, hold, None) == 0
evb = new_event(2)
assert rt.cudaEventRecord(evb, busy) == 0 and rt.cudaSetDevice(0) == 0
s0 = new_stream()
ev_done, t0, t1 = new_event(2), new_event(), new_event()
assert rt.cudaEventRecord(t0, s0) == rt.cudaEventRecord(t1, s0) == rt.cudaEventRecord(ev_done, s0) == 0

# memory (all on device 0, the current one; dsrc1 on device 1)
VP, SZ = c.c_void_p, c.c_size_t
def new_dev(n=4096, dev=0):
    p = VP(); assert rt.cudaSetDevice(dev) == 0 and rt.cudaMalloc(c.byref(p), n) == 0 and rt.cudaSetDevice(0) == 0
    return p
def new_async():
    p = VP(); assert rt.cudaMallocAsync(c.byref(p), 4096, s0) == 0; return p
def new_pinned():
    p = VP(); assert rt.cudaHostAlloc(c.byref(p), 4096, 0) == 0; return p
class Props(c.Structure):
    _fields_ = [("allocType", c.c_int), ("handleTypes", c.c_int), ("locType", c.c_int), ("locId", c.c_int),
                ("win32", c.c_void_p), ("maxSize", c.c_size_t), ("usage", c.c_ushort), ("reserved", c.c_char * 54)]
pool_props = c.byref(Props(1, 0, 1, 0))
def new_pool():
    p = VP(); assert rt.cudaMemPoolCreate(c.byref(p), pool_props) == 0; return p
class access(c.Structure):
    _fields_ = [("type", c.c_int), ("id", c.c_int), ("flags", c.c_int)]
    def __init__(self, dev, flags): super().__init__(1, dev, flags)
class location(c.Structure):
    _fields_ = [("type", c.c_int), ("id", c.c_int)]
    def __init__(self, dev): super().__init__(1, dev)
def pool_attr(pool, attr):
    v = c.c_uint64(); r = rt.cudaMemPoolGetAttribute(pool, attr, c.byref(v)); return [r, v.value]
def fill_pool():           # leaves a free block reserved in upool
    p = VP()
    assert rt.cudaMemPoolSetAttribute(upool, 4, c.byref(c.c_uint64(1 << 30))) == 0
    assert rt.cudaMallocFromPoolAsync(c.byref(p), 4096, upool, s0) == 0 and rt.cudaFreeAsync(p, s0) == 0
    assert rt.cudaStreamSynchronize(s0) == 0
man = c.c_void_p()         # managed memory, for the advice calls
assert rt.cudaMallocManaged(c.byref(man), 4096, 1) == 0
man = c.c_uint64(man.value)
range_sizes, range_attrs = (SZ * 2)(4, 4), (c.c_int * 2)(1, 5)
spool, sfd, sptr, sdata = VP(), c.c_int(), c.c_uint64(), (c.c_char * 64)()    # a pool shared by descriptor
assert cu.cuMemPoolCreate(c.byref(spool), c.byref(Props(1, 1, 1, 0))) == 0
assert cu.cuMemPoolExportToShareableHandle(c.byref(sfd), spool, 1, c.c_ulonglong(0)) == 0
sfd = sfd.value
assert cu.cuMemAllocFromPoolAsync(c.byref(sptr), c.c_size_t(256), spool, s0) == 0
assert cu.cuMemPoolExportPointer(sdata, sptr) == 0
man_ptrs, man_sizes, man_idx = (c.c_uint64 * 1)(man.value), (SZ * 1)(4096), (SZ * 1)(0)
man_locs = (location * 1)(location(1))
def last_prefetch():
    v = c.c_int(); r = cu.cuMemRangeGetAttribute(c.byref(v), c.c_size_t(4), 4, man, c.c_size_t(4096)); return [r, v.value]
def discard():
    assert cu.cuMemDiscardBatchAsync(man_ptrs, man_sizes, c.c_size_t(1), c.c_ulonglong(0), s0) == 0
def read_mostly():
    v = c.c_int(); r = cu.cuMemRangeGetAttribute(c.byref(v), c.c_size_t(4), 1, man, c.c_size_t(4096)); return [r, v.value]
def pointer_type(p):
    at = (c.c_int * 22)(); r = rt.cudaPointerGetAttributes(at, p); return [r, at[0]]
def api_version(ctx):
    v = c.c_uint(); return cu.cuCtxGetApiVersion(ctx, c.byref(v))
def limit(which):
    v = SZ(); rt.cudaDeviceGetLimit(c.byref(v), which); return v.value
def cache_config():
    v = c.c_int(); cu.cuCtxGetCacheConfig(c.byref(v)); return v.value
def new_ctx():             # a created context of device 1, not left on the stack
    x = VP(); assert cu.cuCtxCreate_v2(c.byref(x), 0, 1) == 0 and cu.cuCtxPopCurrent_v2(None) == 0; return x
upool, dpool0 = new_pool(), VP()
assert rt.cudaDeviceGetDefaultMemPool(c.byref(dpool0), 0) == 0
dsrc, ddst, dsrc1 = new_dev(), new_dev(), new_dev(dev=1)
hsrc, hdst, hreg = (c.create_string_buffer(b"\x3c" * 4096, 4096), c.create_string_buffer(4096),
                    c.create_string_buffer(4096))
hsrc_p = VP(c.addressof(hsrc))
assert rt.cudaMemset(dsrc, 0x5a, 4096) == 0 and rt.cudaMemset(dsrc1, 0x6b, 4096) == 0
pin = new_pinned()
class Copy2D(c.Structure):
    _fields_ = [("srcX", SZ), ("srcY", SZ), ("srcType", c.c_int), ("srcHost", VP), ("srcDevice", c.c_uint64),
                ("srcArray", VP), ("srcPitch", SZ), ("dstX", SZ), ("dstY", SZ), ("dstType", c.c_int),
                ("dstHost", VP), ("dstDevice", c.c_uint64), ("dstArray", VP), ("dstPitch", SZ),
                ("width", SZ), ("height", SZ)]
copy2d = Copy2D(0, 0, 1, c.addressof(hsrc), 0, None, 64, 4, 1, 2, None, ddst.value, None, 32, 16, 4)
class Handle(c.Structure):
    _fields_ = [("reserved", c.c_char * 64)]
ipc = Handle()             # passed by value, as cudaIpcMemHandle_t / CUipcMemHandle are
assert rt.cudaIpcGetMemHandle(c.byref(ipc), dsrc) == 0
attrs = (c.c_int * 2)(2, 9)
datas = (c.c_void_p * 2)(c.addressof(ob), c.addressof(ob2))
CALLBACK = c.CFUNCTYPE(None, c.c_void_p, c.c_int, c.c_void_p)
callback = CALLBACK(lambda s, e, a: ran.append(1))
free0, total0 = SZ(), SZ()

def state():
    dev, cur, flags, act = c.c_int(), c.c_void_p(), c.c_uint(), c.c_int()
    assert rt.cudaStreamSynchronize(s0) == 0               # host functions queued on s0 have run
    active = [cu.cuDevicePrimaryCtxGetState(d, c.byref(flags), c.byref(act)) or act.value for d in range(4)]
    rt.cudaGetDevice(c.byref(dev))
    cu.cuCtxGetCurrent(c.byref(cur))
    dbytes = c.create_string_buffer(4096)
    assert rt.cudaMemcpy(dbytes, ddst, 4096, 2) == 0
    assert rt.cudaMemGetInfo(c.byref(free0), c.byref(total0)) == 0
    curpool = VP()
    assert rt.cudaDeviceGetMemPool(c.byref(curpool), 0) == 0
    acc = c.c_int()
    assert rt.cudaMemPoolGetAccess(c.byref(acc), upool, c.byref(location(1))) == 0
    return [rt.accelEmuLiveStreams(), rt.accelEmuLiveEvents(), dev.value, cur.value, active,
            rt.cudaStreamQuery(sw), [rt.cudaEventQuery(e) for e in events], len(ran),
            rt.cudaPeekAtLastError(), ob.raw.hex(), ob2.raw.hex(),
            free0.value, pool_attr(dpool0, 7), pool_attr(upool, 7), pool_attr(upool, 5), pool_attr(upool, 4),
            curpool.value, acc.value, dbytes.raw.hex(), hdst.raw.hex(), [p() for p in probes]]

# Freeing or unregistering pinned memory waits for every device's queued work (as cudaFreeHost does): those
# cases run last, once the busy stream is released.
late = ("cuMemHostAlloc", "cuMemAllocHost_v2", "cuMemFreeHost", "cuMemHostRegister_v2", "cuMemHostUnregister")
got = {{}}
for name, (call, setup, undo) in sorted(cases.items(), key=lambda case: case[0] in late):
    if name in late and not gate.is_set():
        gate.set()
        assert rt.cudaSetDevice(3) == 0 and rt.cudaDeviceSynchronize() == 0 and rt.cudaSetDevice(0) == 0
    events, probes = [], []
    c.memset(hdst, 0, 4096)
    assert rt.cudaMemset(ddst, 0, 4096) == 0
    exec(setup)
    if "er" in globals(): events = [er]
    c.memset(ob, 0xAB, 64); c.memset(ob2, 0xCD, 64)
    before = state()
    armed = rt.accelEmuSetFail(f"{{name}}:1".encode())
    fault = eval(call)
    after = state()
    again = eval(call)
    done = state()
    rt.accelEmuSetFail(None)
    exec(undo)
    globals().pop("er", None)
    got[name] = [armed, fault, before == after, again, after != done, before, after]
gate.set()
assert rt.cudaDeviceSynchronize() == 0
print(json.dumps(got))
"""


@pytest.fixture(scope="module")
def outcomes():
    cases = {name: (case[0], case[1] if len(case) > 1 else "", case[2] if len(case) > 2 else "")
             for name, case in CASES.items()}
    code = SCRIPT.format(cudart=emu.cudart_path(), driver=emu.driver_path(), cases=cases)
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEL_EMU_FAIL", "ACCEL_EMU_TRACE", "CUDA_VISIBLE_DEVICES")}
    env["ACCEL_EMU_DEVICES"] = "4"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Calls whose success the state above cannot see (every other call's success changes it, which shows
# that the state would see the call had the fault let it through).
NO_VISIBLE_EFFECT = {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxSetFlags_v2", "cuCtxSynchronize", "cuStreamQuery",
                     "cuStreamSynchronize", "cuEventQuery", "cuEventSynchronize",
                     "cuCtxEnablePeerAccess", "cuProfilerStart", "cuProfilerStop", "cuIpcCloseMemHandle"}


@pytest.mark.parametrize("name", list(CASES))
def test_a_driver_fault_fails_the_call_and_changes_nothing(outcomes, name):
    armed, fault, unchanged, again, seen, before, after = outcomes[name]
    expected = CASES[name][3] if len(CASES[name]) > 3 else UNKNOWN
    assert armed == 0, f"{name} cannot be armed"
    assert fault == expected, f"{name} returned {fault} with its fault armed"
    assert unchanged, f"{name}'s fault changed the state: {before} -> {after}"
    assert again == 0, f"{name} failed after its one fault: {again}"
    assert seen == (name not in NO_VISIBLE_EFFECT), f"{name}: the state {'missed' if not seen else 'saw'} its success"


def test_the_cases_cover_every_armable_driver_entry_point():
    text = (REPO / "accel" / "_emu" / "emu_internal.h").read_text()
    block = text[text.index("#define EMU_DRIVER_SYMBOLS(X)"):]
    names = [n for n in re.findall(r"X\((\w+)\)", block[:block.index("\n\n")]) if n != "EMU_DRVMEM_SYMBOLS"]
    assert sorted(names) == sorted(CASES)


def _run(code, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("ACCEL_EMU_FAIL", "ACCEL_EMU_TRACE", "LD_PRELOAD")}
    full.update(env)
    prelude = textwrap.dedent(f"""
        import ctypes as c, json, os
        rt = c.CDLL({emu.cudart_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        cu = c.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        rt.accelEmuSetFail.argtypes = [c.c_char_p]
        """)
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], env=full, capture_output=True,
                          text=True, timeout=120, cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_driver_faults_from_the_environment_and_through_variants():
    # ACCEL_EMU_FAIL arms driver names like runtime ones; the per-thread-default-stream variants and
    # the pointers cuGetProcAddress hands out count as the entry point they are a variant of
    got = _run("""
        ctx, s, fn = c.c_void_p(), c.c_void_p(), c.c_void_p()
        cu.cuInit(0); cu.cuDevicePrimaryCtxRetain(c.byref(ctx), 0); cu.cuCtxSetCurrent(ctx)
        out = [cu.cuStreamCreate(c.byref(s), 0), rt.accelEmuLiveStreams(), cu.cuStreamCreate(c.byref(s), 0),
               rt.accelEmuLiveStreams()]
        out.append(cu.cuStreamQuery_ptsz(None))                                     # 1st cuStreamQuery
        cu.cuGetProcAddress_v2(b"cuStreamQuery", c.byref(fn), 13000, 2, None)
        out.append(c.CFUNCTYPE(c.c_int, c.c_void_p)(fn.value)(None))                # 2nd
        out.append(cu.cuStreamQuery(None))                                          # 3rd: not armed
        out.append(rt.cudaStreamQuery(None))     # the runtime's cudaStreamQuery is a name of its own
        print(json.dumps(out))
        """, ACCEL_EMU_DEVICES="2", ACCEL_EMU_FAIL="cuStreamCreate:1,cuStreamQuery:1,cuStreamQuery:2")
    assert got == [OOM, 0, 0, 1, UNKNOWN, UNKNOWN, 0, 0]


def test_only_entry_points_that_can_fail_are_armable():
    # the unsupported driver stubs always fail; names outside the lists are a malformed spec
    got = _run("""
        print(json.dumps([rt.accelEmuSetFail(n) for n in (b"cuTensorMapEncodeTiled:1", b"cuStreamQuery_ptsz:1",
                                                            b"cuCtxGetCurrent:1", b"cuEventRecord:2")]))
        """)
    assert got[0] != 0 and got[1] != 0 and got[2:] == [0, 0]



def test_a_context_change_the_runtime_refuses_leaves_the_context_stack_as_it_was():
    # the driver makes the runtime follow the stack's top (cudaSetDevice); when that call fails, the
    # push, pop or set fails with its error and the stack, the popped-out parameter and the runtime's
    # device are as they were
    got = _run("""
        ctx0, ctx1, out = c.c_void_p(), c.c_void_p(), c.c_void_p(0xAB)
        assert cu.cuInit(0) == 0 and cu.cuDevicePrimaryCtxRetain(c.byref(ctx0), 0) == 0
        assert cu.cuDevicePrimaryCtxRetain(c.byref(ctx1), 1) == 0
        def device():
            d = c.c_int(); assert rt.cudaGetDevice(c.byref(d)) == 0; return d.value
        def depth():       # pops the whole stack, counting
            n = 0
            while cu.cuCtxPopCurrent_v2(None) == 0: n += 1
            return n
        def refused(call):
            assert rt.accelEmuSetFail(b"cudaSetDevice:1") == 0
            r = call()
            rt.accelEmuSetFail(None)
            return r
        got = [refused(lambda: cu.cuCtxSetCurrent(ctx1)), device(), depth()]        # empty stack
        assert cu.cuCtxPushCurrent_v2(ctx0) == 0
        got += [refused(lambda: cu.cuCtxPushCurrent_v2(ctx1)), device(), depth()]   # [ctx0]
        assert cu.cuCtxPushCurrent_v2(ctx0) == 0 and cu.cuCtxPushCurrent_v2(ctx1) == 0
        got += [refused(lambda: cu.cuCtxPopCurrent_v2(c.byref(out))), out.value, device()]
        got += [refused(lambda: cu.cuCtxSetCurrent(None)), device(), depth()]      # [ctx0, ctx1]
        print(json.dumps(got))
        """, ACCEL_EMU_DEVICES="2")
    assert got == [UNKNOWN, 0, 0, UNKNOWN, 0, 1, UNKNOWN, 0xAB, 1, UNKNOWN, 1, 2]

@_fx.needs_cuda_core
def test_cuda_core_sees_a_driver_fault_as_a_cuda_error():
    code = f"""
import json, ctypes as c
import accel.emu; accel.emu.activate(devices=2)
from cuda.core import Device
rt = c.CDLL({emu.cudart_path()!r})                  # the stand-in activate() loaded
rt.accelEmuSetFail.argtypes = [c.c_char_p]
live = lambda: (rt.accelEmuLiveStreams(), rt.accelEmuLiveEvents())
d = Device(1); d.set_current()
out = []
for name, make in (("cuStreamCreateWithPriority", d.create_stream), ("cuEventCreate", d.create_event)):
    # the driver entry points cuda.core creates streams and events with
    before = live()
    assert rt.accelEmuSetFail(f"{{name}}:1".encode()) == 0
    try:
        make()
        out.append(["no error"])
    except Exception as e:
        out.append([type(e).__name__, str(e).split(":")[0], live() == before])
    obj = make()                                    # the next call succeeds
    out[-1].append(live() != before)
    rt.accelEmuSetFail(None)
    obj.close()
print(json.dumps(out))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEL_EMU_FAIL", "ACCEL_EMU_TRACE", "LD_PRELOAD",
                                                            "ACCEL_CUDART", "ACCEL_EMU_DEVICES")}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr
    stream, event = json.loads(proc.stdout.strip().splitlines()[-1])
    assert stream == ["CUDAError", "CUDA_ERROR_OUT_OF_MEMORY", True, True]
    # cuda.core 1.2 turns a failed cuEventCreate into RuntimeError("Failed to create CUDA event")
    assert event[0] != "no error" and event[2:] == [True, True]
