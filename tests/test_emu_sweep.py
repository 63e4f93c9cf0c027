"""Every pointer-, handle- and size-taking entry point of the emulated runtime given NULL, garbage and
huge values, through ctypes on the library itself: each returns the real runtime's error code where the
real runtime checks (cudaErrorInvalidValue=1 for NULL out-pointers and bad ranges, 400 for handles,
2 for sizes it cannot allocate, 101 for ordinals, 21 for copy kinds; NVML's own codes), and nothing
crashes inside the emulator, now or later on one of its worker threads.

What no runtime can check is left out: a garbage (non-NULL) host pointer or host-function pointer is
dereferenced or called when the stream reaches it, by the real runtime as by the emulator.

The sweep runs in a subprocess (this file as a script), so that a crash is reported, not suffered.
"""
import ctypes
import importlib.util
import os
import pathlib
import subprocess
import sys

c_int, c_uint, c_size_t, c_void_p = ctypes.c_int, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p
byref = ctypes.byref
INT_MAX, INT_MIN, UINT_MAX = 2**31 - 1, -2**31, 2**32 - 1
SIZE_MAX = 2**64 - 1
OK, INVALID_VALUE, OOM, INVALID_DEVICE, INVALID_HANDLE, BAD_KIND = 0, 1, 2, 101, 400, 21
NVML_UNINITIALIZED, NVML_INVALID_ARGUMENT, NVML_INSUFFICIENT_SIZE = 1, 2, 7
HANDLE_BASE = 0x5e0000000000     # the emulator's handle layout: BASE + id*256 + tag (0x30 stream, 0x50 event)


def _abi():
    spec = importlib.util.spec_from_file_location("emu_abi", pathlib.Path(__file__).with_name("test_emu_abi.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cases(lib, abi):
    """(name, expected, thunk) for every call of the sweep; objects are made as the cases are listed."""
    s, e, p, gone_s, gone_e = c_void_p(), c_void_p(), c_void_p(), c_void_p(), c_void_p()
    assert lib.cudaStreamCreateWithFlags(byref(s), 1) == 0 and lib.cudaEventCreateWithFlags(byref(e), 2) == 0
    assert lib.cudaMalloc(byref(p), 64) == 0
    assert lib.cudaStreamCreate(byref(gone_s)) == 0 and lib.cudaStreamDestroy(gone_s) == 0
    assert lib.cudaEventCreate(byref(gone_e)) == 0 and lib.cudaEventDestroy(gone_e) == 0
    host = ctypes.create_string_buffer(64)
    i, u, f, z = c_int(), c_uint(), ctypes.c_float(), c_size_t()
    ull, out = ctypes.c_ulonglong(), c_void_p()
    ipc, attr, props = abi.IpcHandle(), abi.PtrAttr(), ctypes.create_string_buffer(2048)
    noop = abi.HOSTFN(lambda _arg: None)
    dev = p.value

    garbage = [0xDEADBEEF, 3, 2**63, 2**63 - 1, SIZE_MAX, HANDLE_BASE + (10**9 << 8) + 0x30,
               HANDLE_BASE + (10**9 << 8) + 0x50]
    streams = garbage + [gone_s.value, e.value]          # 0, 1, 2 are the legacy / per-thread streams
    events = garbage + [0, gone_e.value, s.value]
    c = []

    def case(name, expected, thunk):
        c.append((name, expected, thunk))

    for h in streams:
        hv = c_void_p(h)
        for fn in ("cudaStreamDestroy", "cudaStreamQuery", "cudaStreamSynchronize"):
            case(f"{fn}({h:#x})", INVALID_HANDLE, lambda fn=fn, hv=hv: getattr(lib, fn)(hv))
        for fn, o in (("cudaStreamGetPriority", i), ("cudaStreamGetFlags", u), ("cudaStreamGetId", ull),
                      ("cudaStreamGetDevice", i), ("cudaStreamIsCapturing", i)):
            case(f"{fn}({h:#x})", INVALID_HANDLE, lambda fn=fn, hv=hv, o=o: getattr(lib, fn)(hv, byref(o)))
        case(f"cudaStreamWaitEvent({h:#x})", INVALID_HANDLE, lambda hv=hv: lib.cudaStreamWaitEvent(hv, e, 0))
        case(f"cudaLaunchHostFunc({h:#x})", INVALID_HANDLE, lambda hv=hv: lib.cudaLaunchHostFunc(hv, noop, None))
        case(f"cudaEventRecord(stream {h:#x})", INVALID_HANDLE, lambda hv=hv: lib.cudaEventRecord(e, hv))
        case(f"cudaEventRecordWithFlags(stream {h:#x})", INVALID_HANDLE,
             lambda hv=hv: lib.cudaEventRecordWithFlags(e, hv, 0))
        case(f"cudaMemcpyAsync(stream {h:#x})", INVALID_HANDLE,
             lambda hv=hv: lib.cudaMemcpyAsync(c_void_p(dev), c_void_p(dev + 8), 8, 3, hv))
        case(f"cudaMemsetAsync(stream {h:#x})", INVALID_HANDLE, lambda hv=hv: lib.cudaMemsetAsync(c_void_p(dev), 0, 8, hv))
    for h in events:
        hv = c_void_p(h)
        for fn in ("cudaEventDestroy", "cudaEventQuery", "cudaEventSynchronize"):
            case(f"{fn}({h:#x})", INVALID_HANDLE, lambda fn=fn, hv=hv: getattr(lib, fn)(hv))
        case(f"cudaEventRecord({h:#x})", INVALID_HANDLE, lambda hv=hv: lib.cudaEventRecord(hv, None))
        case(f"cudaEventRecordWithFlags({h:#x})", INVALID_HANDLE, lambda hv=hv: lib.cudaEventRecordWithFlags(hv, None, 0))
        case(f"cudaStreamWaitEvent(event {h:#x})", INVALID_HANDLE, lambda hv=hv: lib.cudaStreamWaitEvent(None, hv, 0))
        case(f"cudaEventElapsedTime({h:#x}, e)", INVALID_HANDLE, lambda hv=hv: lib.cudaEventElapsedTime(byref(f), hv, e))
        case(f"cudaEventElapsedTime(e, {h:#x})", INVALID_HANDLE, lambda hv=hv: lib.cudaEventElapsedTime(byref(f), e, hv))
        case(f"cudaIpcGetEventHandle({h:#x})", INVALID_HANDLE, lambda hv=hv: lib.cudaIpcGetEventHandle(byref(ipc), hv))

    # NULL out-pointers
    for fn, args in [("cudaGetDeviceCount", ()), ("cudaGetDevice", ()), ("cudaDriverGetVersion", ()),
                     ("cudaRuntimeGetVersion", ()), ("cudaStreamCreate", ()), ("cudaStreamCreateWithFlags", (0,)),
                     ("cudaStreamCreateWithPriority", (0, 0)), ("cudaThreadExchangeStreamCaptureMode", ()),
                     ("cudaEventCreate", ()), ("cudaEventCreateWithFlags", (2,)), ("cudaMalloc", (8,)),
                     ("cuDriverGetVersion", ())]:
        case(f"{fn}(NULL)", INVALID_VALUE, lambda fn=fn, args=args: getattr(lib, fn)(None, *args))
    for fn in ("cudaStreamGetPriority", "cudaStreamGetFlags", "cudaStreamGetId", "cudaStreamGetDevice",
               "cudaStreamIsCapturing"):
        case(f"{fn}(s, NULL)", INVALID_VALUE, lambda fn=fn: getattr(lib, fn)(s, None))
    case("cudaEventElapsedTime(NULL)", INVALID_VALUE, lambda: lib.cudaEventElapsedTime(None, e, e))
    case("cudaIpcGetEventHandle(NULL)", INVALID_VALUE, lambda: lib.cudaIpcGetEventHandle(None, e))
    case("cudaIpcOpenEventHandle(NULL)", INVALID_VALUE, lambda: lib.cudaIpcOpenEventHandle(None, ipc))
    case("cudaMemGetInfo(NULL, &t)", INVALID_VALUE, lambda: lib.cudaMemGetInfo(None, byref(z)))
    case("cudaMemGetInfo(&f, NULL)", INVALID_VALUE, lambda: lib.cudaMemGetInfo(byref(z), None))
    case("cudaPointerGetAttributes(NULL)", INVALID_VALUE, lambda: lib.cudaPointerGetAttributes(None, p))
    case("cudaDeviceGetAttribute(NULL)", INVALID_VALUE, lambda: lib.cudaDeviceGetAttribute(None, 1, 0))
    case("cudaGetDeviceProperties(NULL)", INVALID_VALUE, lambda: lib.cudaGetDeviceProperties(None, 0))
    case("cudaGetDeviceProperties_v2(NULL)", INVALID_VALUE, lambda: lib.cudaGetDeviceProperties_v2(None, 0))
    case("cudaDeviceCanAccessPeer(NULL)", INVALID_VALUE, lambda: lib.cudaDeviceCanAccessPeer(None, 0, 1))
    case("cudaDeviceGetPCIBusId(NULL)", INVALID_VALUE, lambda: lib.cudaDeviceGetPCIBusId(None, 32, 0))
    case("cudaDeviceGetStreamPriorityRange(NULL, NULL)", OK, lambda: lib.cudaDeviceGetStreamPriorityRange(None, None))
    case("cudaLaunchHostFunc(fn=NULL)", INVALID_VALUE, lambda: lib.cudaLaunchHostFunc(s, abi.HOSTFN(), None))
    case("cuDevicePrimaryCtxGetState(NULL flags)", INVALID_VALUE, lambda: lib.cuDevicePrimaryCtxGetState(0, None, byref(i)))
    case("cuDevicePrimaryCtxGetState(NULL active)", INVALID_VALUE, lambda: lib.cuDevicePrimaryCtxGetState(0, byref(u), None))
    case("cuGetErrorName(NULL)", INVALID_VALUE, lambda: lib.cuGetErrorName(0, None))
    case("cuGetErrorString(NULL)", INVALID_VALUE, lambda: lib.cuGetErrorString(0, None))
    for n in (0, 8):
        exp = OK if n == 0 else INVALID_VALUE
        case(f"cudaMemcpyAsync(NULL dst, n={n})", exp, lambda n=n: lib.cudaMemcpyAsync(None, host, n, 0, s))
        case(f"cudaMemcpyAsync(NULL src, n={n})", exp, lambda n=n: lib.cudaMemcpyAsync(host, None, n, 0, s))
        case(f"cudaMemsetAsync(NULL, n={n})", exp, lambda n=n: lib.cudaMemsetAsync(None, 0, n, s))
    case("cudaFree(NULL)", OK, lambda: lib.cudaFree(None))

    # ordinals, flags, kinds and modes out of range
    for d in (INT_MIN, -1, INT_MAX):
        case(f"cudaSetDevice({d})", INVALID_DEVICE, lambda d=d: lib.cudaSetDevice(d))
        case(f"cudaDeviceGetAttribute(dev={d})", INVALID_DEVICE, lambda d=d: lib.cudaDeviceGetAttribute(byref(i), 1, d))
        case(f"cudaGetDeviceProperties({d})", INVALID_DEVICE, lambda d=d: lib.cudaGetDeviceProperties(props, d))
        case(f"cudaDeviceCanAccessPeer(0, {d})", INVALID_DEVICE, lambda d=d: lib.cudaDeviceCanAccessPeer(byref(i), 0, d))
        case(f"cudaDeviceGetPCIBusId(dev={d})", INVALID_DEVICE, lambda d=d: lib.cudaDeviceGetPCIBusId(props, 32, d))
        case(f"cuDevicePrimaryCtxGetState({d})", INVALID_DEVICE,
             lambda d=d: lib.cuDevicePrimaryCtxGetState(d, byref(u), byref(i)))
    for a in (INT_MIN, -1, INT_MAX):
        case(f"cudaDeviceGetAttribute(attr={a})", INVALID_VALUE, lambda a=a: lib.cudaDeviceGetAttribute(byref(i), a, 0))
        case(f"cuGetErrorName({a})", INVALID_VALUE, lambda a=a: lib.cuGetErrorName(a, byref(ctypes.c_char_p())))
    for n in (INT_MIN, 0):
        case(f"cudaDeviceGetPCIBusId(len={n})", INVALID_VALUE, lambda n=n: lib.cudaDeviceGetPCIBusId(props, n, 0))
    case("cuInit(UINT_MAX)", INVALID_VALUE, lambda: lib.cuInit(UINT_MAX))
    case("cudaStreamCreateWithFlags(UINT_MAX)", INVALID_VALUE, lambda: lib.cudaStreamCreateWithFlags(byref(out), UINT_MAX))
    case("cudaStreamCreateWithPriority(flags=UINT_MAX)", INVALID_VALUE,
         lambda: lib.cudaStreamCreateWithPriority(byref(out), UINT_MAX, 0))
    case("cudaEventCreateWithFlags(UINT_MAX)", INVALID_VALUE, lambda: lib.cudaEventCreateWithFlags(byref(out), UINT_MAX))
    case("cudaEventRecordWithFlags(flags=UINT_MAX)", INVALID_VALUE, lambda: lib.cudaEventRecordWithFlags(e, s, UINT_MAX))
    case("cudaStreamWaitEvent(flags=UINT_MAX)", INVALID_VALUE, lambda: lib.cudaStreamWaitEvent(s, e, UINT_MAX))
    for m in (INT_MIN, -1, 3, INT_MAX):
        case(f"cudaThreadExchangeStreamCaptureMode({m})", INVALID_VALUE,
             lambda m=m: lib.cudaThreadExchangeStreamCaptureMode(byref(c_int(m))))
    for k in (INT_MIN, -1, 5, INT_MAX):
        case(f"cudaMemcpyAsync(kind={k})", BAD_KIND, lambda k=k: lib.cudaMemcpyAsync(host, host, 8, k, s))

    # sizes and ranges: nothing allocatable, nothing past an allocation, whatever the arithmetic
    for n in (SIZE_MAX, 2**63, 2**62):
        case(f"cudaMalloc({n:#x})", OOM, lambda n=n: lib.cudaMalloc(byref(out), n))
    for q in (0xDEADBEEF, SIZE_MAX, dev + 1, dev + 64):
        case(f"cudaFree({q:#x})", INVALID_VALUE, lambda q=q: lib.cudaFree(c_void_p(q)))
    for off, n in ((0, 65), (63, 2), (1, SIZE_MAX), (8, SIZE_MAX - 7), (63, 2**63), (0, SIZE_MAX)):
        case(f"cudaMemsetAsync(p+{off}, n={n:#x})", INVALID_VALUE,
             lambda off=off, n=n: lib.cudaMemsetAsync(c_void_p(dev + off), 0, n, s))
        case(f"cudaMemcpyAsync(D2D p+{off} <- p, n={n:#x})", INVALID_VALUE,
             lambda off=off, n=n: lib.cudaMemcpyAsync(c_void_p(dev + off), p, n, 3, s))
        case(f"cudaMemcpyAsync(D2D p <- p+{off}, n={n:#x})", INVALID_VALUE,
             lambda off=off, n=n: lib.cudaMemcpyAsync(p, c_void_p(dev + off), n, 3, s))
        case(f"cudaMemcpyAsync(H2D p+{off}, n={n:#x})", INVALID_VALUE,
             lambda off=off, n=n: lib.cudaMemcpyAsync(c_void_p(dev + off), host, n, 1, s))
        case(f"cudaMemcpyAsync(D2H p+{off}, n={n:#x})", INVALID_VALUE,
             lambda off=off, n=n: lib.cudaMemcpyAsync(host, c_void_p(dev + off), n, 2, s))
        case(f"cudaMemcpyAsync(default p+{off}, n={n:#x})", INVALID_VALUE,
             lambda off=off, n=n: lib.cudaMemcpyAsync(c_void_p(dev + off), host, n, 4, s))
    case("cudaMemsetAsync(host memory)", INVALID_VALUE, lambda: lib.cudaMemsetAsync(host, 0, 8, s))
    case("cudaMemcpyAsync(H2D into host memory)", INVALID_VALUE, lambda: lib.cudaMemcpyAsync(host, host, 8, 1, s))
    case("cudaMemcpyAsync(D2H from host memory)", INVALID_VALUE, lambda: lib.cudaMemcpyAsync(host, host, 8, 2, s))
    case("cudaPointerGetAttributes(SIZE_MAX)", OK, lambda: lib.cudaPointerGetAttributes(byref(attr), c_void_p(SIZE_MAX)))

    # IPC handles: garbage bytes, and the emulator's layout with an id never issued
    forged = abi.IpcHandle()
    ctypes.memmove(ctypes.addressof(forged), b"ACCELEMU" + os.getpid().to_bytes(4, sys.byteorder) + b"\0" * 4
                   + SIZE_MAX.to_bytes(8, sys.byteorder), 24)
    case("cudaIpcOpenEventHandle(zeros)", INVALID_HANDLE, lambda: lib.cudaIpcOpenEventHandle(byref(out), abi.IpcHandle()))
    case("cudaIpcOpenEventHandle(id never issued)", INVALID_VALUE, lambda: lib.cudaIpcOpenEventHandle(byref(out), forged))

    # the NVML stand-in: NVML's own codes
    nvml_dev = c_void_p()
    case("nvmlDeviceGetCount_v2 before nvmlInit", NVML_UNINITIALIZED, lambda: lib.nvmlDeviceGetCount_v2(byref(u)))
    case("nvmlShutdown before nvmlInit", NVML_UNINITIALIZED, lambda: lib.nvmlShutdown())
    case("nvmlInit_v2", OK, lambda: lib.nvmlInit_v2())
    case("nvmlDeviceGetCount_v2(NULL)", NVML_INVALID_ARGUMENT, lambda: lib.nvmlDeviceGetCount_v2(None))
    for idx in (4, UINT_MAX):
        case(f"nvmlDeviceGetHandleByIndex_v2({idx})", NVML_INVALID_ARGUMENT,
             lambda idx=idx: lib.nvmlDeviceGetHandleByIndex_v2(idx, byref(nvml_dev)))
    case("nvmlDeviceGetHandleByIndex_v2(0, NULL)", NVML_INVALID_ARGUMENT, lambda: lib.nvmlDeviceGetHandleByIndex_v2(0, None))
    case("nvmlDeviceGetHandleByIndex_v2(3)", OK, lambda: lib.nvmlDeviceGetHandleByIndex_v2(3, byref(nvml_dev)))
    case("nvmlDeviceGetUUID(NULL buffer)", NVML_INVALID_ARGUMENT, lambda: lib.nvmlDeviceGetUUID(nvml_dev, None, 96))
    case("nvmlDeviceGetUUID(40 bytes)", NVML_INSUFFICIENT_SIZE, lambda: lib.nvmlDeviceGetUUID(nvml_dev, props, 40))
    for h in (0, 0xDEADBEEF, SIZE_MAX):
        case(f"nvmlDeviceGetUUID(handle {h:#x})", NVML_INVALID_ARGUMENT,
             lambda h=h: lib.nvmlDeviceGetUUID(c_void_p(h), props, 96))
    case("nvmlShutdown", OK, lambda: lib.nvmlShutdown())
    case("nvmlDeviceGetUUID after nvmlShutdown", NVML_UNINITIALIZED, lambda: lib.nvmlDeviceGetUUID(nvml_dev, props, 96))
    return c, (s, e, p)


def _declare_nvml(lib):
    for name, args in {"nvmlInit_v2": [], "nvmlShutdown": [], "nvmlDeviceGetCount_v2": [c_void_p],
                       "nvmlDeviceGetHandleByIndex_v2": [c_uint, c_void_p],
                       "nvmlDeviceGetUUID": [c_void_p, c_void_p, c_uint]}.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = c_int, args


def main(path):
    """Runs the sweep on the library at ``path``; prints one line per case, then "done"."""
    abi = _abi()
    lib = abi._declare(ctypes.CDLL(path))
    _declare_nvml(lib)
    cases, (s, e, p) = _cases(lib, abi)
    for name, expected, thunk in cases:
        rc = thunk()
        lib.cudaGetLastError()
        print(f"{rc} {expected} {name}", flush=True)
        # asynchronous damage (a worker thread running a bad copy) shows up here, not later
        assert lib.cudaStreamSynchronize(s) == 0 and lib.cudaDeviceSynchronize() == 0, name
    assert lib.cudaStreamDestroy(s) == 0 and lib.cudaEventDestroy(e) == 0 and lib.cudaFree(p) == 0
    print("done", flush=True)


def test_sweep_gives_the_runtimes_codes_and_never_crashes():
    abi_path = pathlib.Path(__file__).with_name("test_emu_abi.py")
    assert abi_path.exists()
    from accel import _lib
    path = os.environ.get("ACCEL_EMU_LIB") or _lib.emu_path()
    if not os.path.exists(path):
        import pytest
        pytest.skip(f"emulated runtime not built: {path}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_EMU_") and k != "CUDA_VISIBLE_DEVICES"}
    proc = subprocess.run([sys.executable, __file__, path], env=env, capture_output=True, text=True, timeout=300)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines[-1:] == ["done"], \
        f"exit status {proc.returncode} after: {lines[-1:]}\n{proc.stderr[-2000:]}"
    wrong = [line for line in lines[:-1] if line.split(" ", 2)[0] != line.split(" ", 2)[1]]
    assert not wrong, "got, expected, call:\n" + "\n".join(wrong)
    assert len(lines) > 250


if __name__ == "__main__":
    main(sys.argv[1])
