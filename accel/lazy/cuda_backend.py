"""accel.lazy's CUDA backend (``set_backend("cuda")``): each graph compiled by NVRTC into one CUDA C source holding
its kernels (accel.lazy._cuda_gen: fused elementwise chains and views, block reductions, softmax, tiled matmul),
loaded and launched through accel's own bindings (accel._cudart's cuModuleLoadData / cuModuleGetFunction /
cuLaunchKernel) on accel's current stream, in order.

Number parameters (0-dim device data: Python scalars, alpha) are kernel parameters, so a step with new values
reuses the program.  A graph with a node the code generation does not cover runs on the numpy backend (host
copies of its device parameters), counted as ``CudaFallback``; ``last_fallback`` says why.

The generated code computes as the numpy backend does (torch's rule): every operand cast to the result's dtype
(comparisons: to the compared dtype), the operation in that dtype, integers wrapping around (computed unsigned),
no FMA contraction (``-fmad=false``): float32 / int / bool elementwise results are bit-exact with the numpy
backend; exp / log / tanh are CUDA's (within their documented ulp bounds, not numpy's bits); reductions and
matmul add in another order (see accel.lazy._cuda_gen for the tolerances); a float cast to an integer out of the
integer's range (or NaN) saturates as the GPU's cvt does where numpy's result is undefined.

Images: PTX for ``compute_XX`` on the emulator (it executes PTX), a cubin for the device's ``sm_XX`` on a real
GPU (PTX from an NVRTC newer than the driver would not load there).  Compiled code is cached per (kernel
source, architecture) for the process, so an equal graph compiled again (after set_backend, or evicted from
the computation cache) skips NVRTC; with ACCEL_LAZY_KERNEL_CACHE=DIR images are kept on disk too (keyed by the
source, NVRTC's version, the architecture and the options), so another process skips NVRTC (counter
CudaKernelDiskHit).  A program's bytes in the computation cache
are its image and its text.

Data (accel.lazy._cuda_data): tensors' values live in DeviceArrays on accel's allocator (the current device),
copied in by tensor() and results left there between steps; numpy() copies back.  A graph's tensor parameters
are read where they are (a host handle, e.g. a factory's array, is uploaded once and keeps its device copy);
its roots are new device arrays.  Numbers are kernel parameters, passed by value.
"""
import collections
import ctypes
import hashlib
import threading
import time
import weakref

import numpy as _np

from accel import _impl
from accel.errors import CudaError
from accel.lazy import _dtypes as D
from accel.lazy import _nvrtc
from accel.lazy import _cuda_data as _cd
from accel.lazy import _cuda_gen as _cg
from accel.lazy import metrics as _metrics
from accel.lazy.backend import NumpyBackend, Program

__all__ = ["CudaBackend", "CudaCompileError", "CudaKernelFault"]

_ir = _impl.module("_ir")

_c_compile = _metrics.Counter("NvrtcCompile")
_c_launch = _metrics.Counter("CudaKernelLaunch")
_c_fallback = _metrics.Counter("CudaFallback")
_c_disk = _metrics.Counter("CudaKernelDiskHit")
_m_compile = _metrics.Metric("NvrtcCompileTime", _metrics.metric_fn_time)

_PCTYPE = {D.FLOAT32: ctypes.c_float, D.FLOAT64: ctypes.c_double, D.INT32: ctypes.c_int32,
           D.INT64: ctypes.c_int64, D.BOOL: ctypes.c_bool, D.INT8: ctypes.c_int8, D.UINT8: ctypes.c_uint8,
           D.INT16: ctypes.c_int16, D.FLOAT16: ctypes.c_float}     # (a float16 number is passed as a float)


# Compiled kernels of the process, by (source sha256, architecture): kept across set_backend and computation-cache
# evictions, so that an equal graph compiled again skips NVRTC (the source is a function of the graph's structure,
# shapes and dtypes, which its graph hash covers; scalar values are parameters).
# At most KERNELS_MAX of them (least recently used first out, as the computation cache); a kernel no program holds
# any more unloads its modules when it is freed.
_KERNELS = collections.OrderedDict()
_KERNELS_LOCK = threading.Lock()
KERNELS_MAX = 1024


class CudaKernelFault(RuntimeError):
    """A kernel of a graph failed on the device (an illegal address, a trap): raised by the sync / mark_step /
    read that ran the graph, naming its graph hash; the tensors of that graph keep their IR, earlier steps'
    tensors keep their data (a fault is sticky: the device may refuse further work, as CUDA does)."""


class CudaCompileError(RuntimeError):
    """NVRTC refused a generated kernel: the message holds NVRTC's log and the offending source lines."""


def _lines_cited(source, log):
    """The source lines NVRTC's log names (``kernel.cu(12): error ...``), numbered, with one line around each."""
    import re
    lines = source.splitlines()
    want = sorted({int(m) for m in re.findall(r"\((\d+)\): ", log)})
    out = []
    for n in want:
        for k in range(max(1, n - 1), min(len(lines), n + 1) + 1):
            text = f"{'>' if k == n else ' '} {k:4d} | {lines[k - 1]}"
            if text not in out:
                out.append(text)
    return "\n".join(out)


class _Kernel:
    """A compiled graph: its source and image; loaded lazily per device (module, then its functions by name)."""
    __slots__ = ("source", "image", "loaded", "lock", "modules", "__weakref__")

    def __init__(self, source, image):
        self.source, self.image = source, image
        self.loaded = {}
        self.lock = threading.Lock()
        self.modules = []                # (bindings, module handle) loaded, unloaded when this kernel is freed
        weakref.finalize(self, _unload, self.modules)

    def function(self, rt, device, name):
        f = self.loaded.get((device, name))
        if f is None:
            with self.lock:
                f = self.loaded.get((device, name))
                if f is None:
                    mod = self.loaded.get(device)
                    if mod is None:
                        img = ctypes.create_string_buffer(self.image, len(self.image) + 1)
                        mod = rt.cuModuleLoadData(ctypes.addressof(img))
                        self.modules.append((rt, mod))
                        self.loaded[device] = mod
                    cname = ctypes.create_string_buffer(name.encode())
                    f = rt.cuModuleGetFunction(mod, ctypes.addressof(cname))
                    self.loaded[(device, name)] = f
        return f


def _unload(modules):
    for rt, mod in modules:
        try:
            rt.cuModuleUnload(mod)
        except Exception:       # noqa: BLE001 (a context already reset or torn down: nothing left to unload)
            pass
    modules.clear()


class CudaBackend:
    """Compiles graphs to CUDA kernels (see the module docstring)."""
    name = "cuda"
    upload = staticmethod(_cd.upload)      # tensor()'s copy-in: its values live on the device
    device_params = True                   # its programs take device-only handles (the executor copies none back)

    def __init__(self):
        _nvrtc.load()                    # ImportError naming what to install
        self._numpy = NumpyBackend()
        self._kernels = _KERNELS         # (source sha256, arch) -> _Kernel, for the process
        self._lock = _KERNELS_LOCK
        self.last_fallback = None        # why the last graph the CUDA code generation did not cover fell back

    @staticmethod
    def _target():
        """(arch option, cubin?) for the current device: PTX for compute_XX on the emulator, else sm_XX's cubin."""
        from accel import _lib
        import accel.cuda as cuda
        major, minor = cuda.get_device_capability()
        if _lib.cudart().emulated:
            return f"compute_{major}{minor}", False
        return f"sm_{major}{minor}", True

    def compile(self, post, roots):
        gen = _cg.Graph(post, roots)
        why = gen.build() if not _ir.dynamic_shapes_enabled() else "dynamic shapes"
        if why is not None:
            self.last_fallback = why
            return _fallback_program(self._numpy.compile(post, roots), why)
        arch, cubin = self._target()
        key = (hashlib.sha256(gen.source.encode()).hexdigest(), arch)
        with self._lock:
            k = self._kernels.get(key)
            if k is not None:
                self._kernels.move_to_end(key)
            else:
                image = _compile(gen.source, arch, cubin)
                k = self._kernels[key] = _Kernel(gen.source, image)
                while len(self._kernels) > KERNELS_MAX:
                    self._kernels.popitem(last=False)
        host = self._numpy.compile(post, roots) if gen.has_err else None   # (an index out of range: see _program)
        return _program(gen, k, _ir.graph_hash(list(roots)).hex(), host)


_OPTIONS = ("-fmad=false",)


def _disk_dir():
    """ACCEL_LAZY_KERNEL_CACHE: a directory for compiled kernels (made if missing), or None (unset / empty)."""
    import os
    d = os.environ.get("ACCEL_LAZY_KERNEL_CACHE", "").strip()
    if not d:
        return None
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"ACCEL_LAZY_KERNEL_CACHE={d!r} is not a usable directory: {exc}") from None
    return d


def _compile(source, arch, cubin):
    """The image of ``source`` for ``arch``: NVRTC's (counted NvrtcCompile, timed NvrtcCompileTime), or the
    on-disk cache's (ACCEL_LAZY_KERNEL_CACHE; counted CudaKernelDiskHit), keyed by the source, NVRTC's version,
    the architecture and the options; a compiled image is written there (atomically: another process reads a
    whole file or none)."""
    import os
    options = [f"-arch={arch}", *_OPTIONS]
    d = _disk_dir()
    path = None
    if d is not None:
        ident = "\0".join([source, repr(_nvrtc.version()), arch, " ".join(options), "cubin" if cubin else "ptx"])
        path = os.path.join(d, hashlib.sha256(ident.encode()).hexdigest() + (".cubin" if cubin else ".ptx"))
        try:
            with open(path, "rb") as f:
                image = f.read()
        except OSError:
            pass
        else:
            if image:
                _c_disk.add(1)
                return image
    t0 = time.perf_counter_ns()
    try:
        image, _log = _nvrtc.compile_program(source, "accel_lazy.cu", options, cubin)
    except _nvrtc.NvrtcError as exc:
        raise CudaCompileError(f"NVRTC could not compile the kernel of this graph: {exc}\n"
                               f"{_lines_cited(source, exc.log)}") from None
    _m_compile.add_sample(time.perf_counter_ns() - t0)
    _c_compile.add(1)
    if path is not None:
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(image)
            os.replace(tmp, path)
        except OSError:           # (a read-only or full cache directory: the kernel is still compiled)
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return image


def _result(dev):
    """A kernel's output DeviceArray as what the program returns: a device-only handle, or a 0-dim number's host
    array (numbers are host values: later kernels take them by value)."""
    if dev.ndim == 0:
        a = _np.empty((), dev.dtype)
        dev.copy_to_host(out=a)
        return a
    return _cd.wrap_device(dev)


def _same(h):
    """A parameter handed back as a root: a new handle on the same values (device-only: the same DeviceArray)."""
    if _cd.is_device_only(h):
        return _cd.wrap_device(_cd.device_array(h))
    return h.array


def _fallback_program(prog, why):
    run = prog.run

    def run_on_host(P, *args):
        _c_fallback.add(1)
        return run(_cd.host_params(P), *args)
    return Program(run_on_host, f"# CUDA backend: on the host ({why})\n" + prog.text, prog.num_params,
                   prog.graph_size, prog.nbytes, prog.param_shapes)


def _program(gen, kernel, graph, host=None):
    """The Program running ``gen``'s stages (accel.lazy._cuda_gen.Graph) with ``kernel``'s functions."""
    post, stages, rets, param_shapes = gen.post, gen.stages, gen.rets, gen.param_shapes
    checked = []
    # int32 add / sub alphas: torch's checked conversion, at run time (as the numpy backend checks them)
    for i, kind in gen.kinds.items():
        if kind in ("aten::add", "aten::sub") and post[i].shapes[0].dtype == D.INT32:
            k = gen.param_of.get(gen.index[post[i].operands[2].node])
            if k is not None:
                checked.append(k)
    shapes = {i: (tuple(post[i].shapes[0].sizes), D.CODE_TO_NP[post[i].shapes[0].dtype]) for i in gen.mat}
    scalar_np = {k: _np.float32 if s.dtype == D.FLOAT16 else D.CODE_TO_NP[s.dtype]
                 for k, s in enumerate(param_shapes) if not s.sizes}

    def run(P, G=None):
        import accel.cuda as cuda
        rt = _impl.module("_cudart")
        for k in checked:
            D.checked_int(P[k].value, D.INT32)
        device = cuda.current_device()
        stream = cuda.current_stream().cuda_stream
        bufs = {i: cuda.empty(*shapes[i]) for i in shapes}
        err = cuda.zeros((1,), _np.int32) if host is not None else None
        for st in stages:
            if st.kind == "ewise":
                n = st.grid[1]
                grid, block = ((n + _cg.BLOCK - 1) // _cg.BLOCK, 1, 1), (_cg.BLOCK, 1, 1)
            elif st.kind in ("reduce", "softmax"):
                n = st.grid[1]
                grid, block = (n, 1, 1), (_cg.BLOCK, 1, 1)
            else:
                gx, gy, gz = st.grid[1]
                n = gx * gy * gz
                grid, block = (gx, gy, gz), (_cg.TILE, _cg.TILE, 1)
            if n == 0 or grid[0] * grid[1] * grid[2] == 0:
                continue
            vals = [ctypes.c_uint64(bufs[i].ptr) for i in st.outs]
            if st.err:
                vals.append(ctypes.c_uint64(err.ptr))
            for w, k in st.bufs:
                if w == "node":
                    vals.append(ctypes.c_uint64(bufs[k].ptr))
                else:
                    vals.append(ctypes.c_uint64(_cd.device_array(P[k]).ptr))
            for k in st.scalars:
                vals.append(_PCTYPE[param_shapes[k].dtype](_np.asarray(P[k].array).astype(scalar_np[k])[()]))
            vals.extend(ctypes.c_int64(z) for z in st.consts)
            vals.append(ctypes.c_int64(n))
            ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
            f = kernel.function(rt, device, st.entry)
            try:
                rt.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, stream,
                                  ctypes.addressof(ptrs))
            except CudaError as exc:     # (an earlier kernel's sticky fault, or the launch refused)
                raise CudaKernelFault(f"a kernel of lazy graph {graph} could not be launched: {exc}") from exc
            _c_launch.add(1)
        if stages:
            # a fault surfaces here, at the step that ran the graph (and, as the stream has then run the kernels,
            # the arrays they read may be freed as soon as this returns; the emulator checks every access against
            # its live allocations, a GPU would read freed memory)
            try:
                cuda.current_stream().synchronize()
            except CudaError as exc:
                raise CudaKernelFault(f"a kernel of lazy graph {graph} failed on the device: {exc}") from exc
            if err is not None and err.copy_to_host()[0]:
                # an index out of range: the graph again on the host, which raises the numpy backend's error
                # (torch's message) -- or computes it, where numpy's rule accepts what the kernel flagged
                return host.run(_cd.host_params(P), *((G,) if G is not None else ()))
        return tuple(_result(bufs[j]) if w == "node" else _same(P[j]) for w, j in rets)

    text = f"// CUDA backend: {len(stages)} kernel(s)\n{kernel.source}"
    return Program(run, text, gen.num_params, len(post), len(kernel.image) + len(text), tuple(param_shapes))
