"""accel.lazy's CUDA backend (``set_backend("cuda")``): a graph's elementwise chain as ONE CUDA C kernel, compiled
by NVRTC and launched through accel's own bindings (accel._cudart's cuModuleLoadData / cuModuleGetFunction /
cuLaunchKernel) on accel's current stream.

What it covers (this first slice): graphs whose roots all have one shape and whose every other node is one of
add / sub (with alpha) / mul / div / neg / exp / log / sqrt / relu / tanh / eq / ne / lt / le / gt / ge /
_to_copy over float32 / float64 / int32 / int64 / bool, each operand broadcast to the roots' shape.  Number
parameters (0-dim device data: Python scalars, alpha) are kernel parameters, so a step with new values reuses
the program.  Any other graph runs on the numpy backend (host copies), counted as ``CudaFallback``.

The generated code computes as the numpy backend does (torch's rule): every operand cast to the result's dtype
(comparisons: to the compared dtype), the operation in that dtype, integers wrapping around (computed unsigned),
no FMA contraction (``-fmad=false``): float32 / int / bool results are bit-exact with the numpy backend; exp /
log / tanh are CUDA's (within their documented ulp bounds, not numpy's bits); a float cast to an integer out of
the integer's range (or NaN) saturates as the GPU's cvt does where numpy's result is undefined.

Images: PTX for ``compute_XX`` on the emulator (it executes PTX), a cubin for the device's ``sm_XX`` on a real
GPU (PTX from an NVRTC newer than the driver would not load there).  Compiled code is cached per (kernel
source, architecture) for the process, so an equal graph compiled again (after set_backend, or evicted from
the computation cache) skips NVRTC; there is no disk cache yet.  A program's bytes in the computation cache
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
from accel.lazy import _dtypes as D
from accel.lazy import _nvrtc
from accel.lazy import _cuda_data as _cd
from accel.lazy import metrics as _metrics
from accel.lazy.backend import NumpyBackend, Program
from accel.lazy.tensors import node_attrs, run_arg as _run_arg, Output as _Output

__all__ = ["CudaBackend", "CudaCompileError"]

_ir = _impl.module("_ir")

_c_compile = _metrics.Counter("NvrtcCompile")
_c_launch = _metrics.Counter("CudaKernelLaunch")
_c_fallback = _metrics.Counter("CudaFallback")
_m_compile = _metrics.Metric("NvrtcCompileTime", _metrics.metric_fn_time)

_CTYPE = {D.FLOAT32: "float", D.FLOAT64: "double", D.INT32: "int", D.INT64: "long long", D.BOOL: "bool"}
_UTYPE = {D.INT32: "unsigned int", D.INT64: "unsigned long long"}
_PCTYPE = {D.FLOAT32: ctypes.c_float, D.FLOAT64: ctypes.c_double, D.INT32: ctypes.c_int32,
           D.INT64: ctypes.c_int64, D.BOOL: ctypes.c_bool}
_UNARY = {"aten::exp": "exp", "aten::log": "log", "aten::sqrt": "sqrt", "aten::tanh": "tanh"}
_CMP = {"aten::eq": "==", "aten::ne": "!=", "aten::lt": "<", "aten::le": "<=", "aten::gt": ">", "aten::ge": ">="}
_BINARY = {"aten::mul": "*", "aten::div": "/"}
_COVERED = frozenset(("aten::add", "aten::sub", "aten::neg", "aten::relu", "aten::_to_copy")) | set(_UNARY) | \
    set(_CMP) | set(_BINARY)
_BLOCK = 256


# Compiled kernels of the process, by (source sha256, architecture): kept across set_backend and computation-cache
# evictions, so that an equal graph compiled again skips NVRTC (the source is a function of the graph's structure,
# shapes and dtypes, which its graph hash covers; scalar values are parameters).
# At most KERNELS_MAX of them (least recently used first out, as the computation cache); a kernel no program holds
# any more unloads its modules when it is freed.
_KERNELS = collections.OrderedDict()
_KERNELS_LOCK = threading.Lock()
KERNELS_MAX = 1024


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
    """A compiled kernel: its source, image and entry name; loaded lazily per device (module, function)."""
    __slots__ = ("source", "image", "name", "loaded", "lock", "modules", "__weakref__")

    def __init__(self, source, image, name):
        self.source, self.image, self.name = source, image, name
        self.loaded = {}
        self.lock = threading.Lock()
        self.modules = []                # (bindings, module handle) loaded, unloaded when this kernel is freed
        weakref.finalize(self, _unload, self.modules)

    def function(self, rt, device):
        f = self.loaded.get(device)
        if f is None:
            with self.lock:
                f = self.loaded.get(device)
                if f is None:
                    img = ctypes.create_string_buffer(self.image, len(self.image) + 1)
                    mod = rt.cuModuleLoadData(ctypes.addressof(img))
                    self.modules.append((rt, mod))
                    name = ctypes.create_string_buffer(self.name.encode())
                    f = rt.cuModuleGetFunction(mod, ctypes.addressof(name))
                    self.loaded[device] = f
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
        gen = _Gen(post, roots)
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
                t0 = time.perf_counter_ns()
                try:
                    image, _log = _nvrtc.compile_program(gen.source, "accel_lazy.cu",
                                                         [f"-arch={arch}", "-fmad=false"], cubin)
                except _nvrtc.NvrtcError as exc:
                    raise CudaCompileError(f"NVRTC could not compile the kernel of this graph: {exc}\n"
                                           f"{_lines_cited(gen.source, exc.log)}") from None
                _m_compile.add_sample(time.perf_counter_ns() - t0)
                _c_compile.add(1)
                k = self._kernels[key] = _Kernel(gen.source, image, gen.entry)
                while len(self._kernels) > KERNELS_MAX:
                    self._kernels.popitem(last=False)
        return gen.program(k)


# The device arrays of launches the stream may not have run yet, with an event recorded after each launch: kept
# alive until the event completes.  (Freeing is stream-ordered, so the memory itself would be safe; but the
# emulator drops a freed allocation from its table at once and its engine checks every access against that
# table, so a kernel running after its arrays' free would fault there.)
_INFLIGHT = collections.deque()


def _hold(arrays):
    import accel.cuda as cuda
    while _INFLIGHT and _INFLIGHT[0][0].query():
        _INFLIGHT.popleft()
    ev = cuda.Event()
    ev.record()
    _INFLIGHT.append((ev, arrays))


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


class _Gen:
    """One fused elementwise kernel for a post order (``build`` returns None, or why it does not cover it)."""

    def __init__(self, post, roots):
        self.post, self.roots = post, roots
        self.index = {n: i for i, n in enumerate(post)}

    def build(self):
        post, index = self.post, self.index
        handles, param_of = {}, {}
        for i, n in enumerate(post):
            if n.is_device_data:
                k = handles.get(id(n.handle))
                if k is None:
                    k = handles[id(n.handle)] = len(handles)
                param_of[i] = k
        # roots: computed by the kernel, or device data handed back as it is (the parameter's array)
        rnodes, self.rets = [], []
        for r in self.roots:
            if type(r) is _Output:
                if r.node.num_outputs > 1:
                    return "a multi-output root"
                r = r.node
            if r.is_device_data:
                self.rets.append(("param", param_of[index[r]]))
            else:
                self.rets.append(("out", len(rnodes)))
                rnodes.append(r)
        sizes = tuple(rnodes[0].shapes[0].sizes) if rnodes else ()
        if any(tuple(r.shapes[0].sizes) != sizes for r in rnodes):
            return "roots of different shapes"
        self.sizes = sizes
        self.num_params = len(handles)
        self.param_shapes = [None] * len(handles)
        for i, k in param_of.items():
            self.param_shapes[k] = post[i].shapes[0]
        for i, n in enumerate(post):
            if n.num_outputs != 1:
                return f"{n.op.qualified_name}: {n.num_outputs} outputs"
            if _run_arg(n) is not None:
                return f"{n.op.qualified_name}: a run-time argument"
            s = n.shapes[0]
            if s.dtype not in _CTYPE:
                return f"{n.op.qualified_name}: dtype {D.DTYPES[s.dtype]}"
            if len(s.sizes) > len(sizes) or any(
                    a not in (1, b) for a, b in zip(reversed(tuple(s.sizes)), reversed(sizes))):
                return f"{n.op.qualified_name}: shape {list(s.sizes)} does not broadcast to {list(sizes)}"
            if i in param_of:
                continue
            a = node_attrs(n)
            kind = a[0] if a is not None else n.op.qualified_name
            if kind not in _COVERED:
                return f"{kind} is not covered by the CUDA code generation yet"
            if kind in _CMP and (a is None or a[1] not in _CTYPE):
                return f"{kind}: compared dtype"
            if kind == "aten::div" and s.dtype not in (D.FLOAT32, D.FLOAT64):
                return "aten::div: an integer result"
            if kind in _UNARY and s.dtype not in (D.FLOAT32, D.FLOAT64):
                return f"{kind}: an integer result"
            if kind in ("aten::neg", "aten::relu") and s.dtype == D.BOOL:
                return f"{kind} of bool"
        self.param_of = param_of
        self._emit(rnodes)
        return None

    def _emit(self, rnodes):
        post, index, param_of, sizes = self.post, self.index, self.param_of, self.sizes
        args, body = [], []
        self.outs = [r.shapes[0].dtype for r in rnodes]
        for j, code in enumerate(self.outs):
            args.append(f"{_CTYPE[code]}* __restrict__ out{j}")
        self.scalars = {}                # param index -> dtype code (passed by value)
        self.tensors = {}                # param index -> dtype code (a pointer)
        for k, s in enumerate(self.param_shapes):
            if s.sizes:
                self.tensors[k] = s.dtype
                args.append(f"const {_CTYPE[s.dtype]}* __restrict__ p{k}")
            else:
                self.scalars[k] = s.dtype
                args.append(f"{_CTYPE[s.dtype]} s{k}")
        args.append("long long n")
        body.append("long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;")
        body.append("if (i >= n) return;")
        nd = len(sizes)
        if nd:
            body.append("long long r = i;")
            for d in range(nd - 1, 0, -1):
                body.append(f"long long c{d} = r % {sizes[d]}LL; r /= {sizes[d]}LL;")
            body.append("long long c0 = r;")
        names = {}
        for i, n in enumerate(post):
            s = n.shapes[0]
            ct = _CTYPE[s.dtype]
            v = f"v{i}"
            names[i] = v
            if i in param_of:
                k = param_of[i]
                if not s.sizes:
                    body.append(f"{ct} {v} = s{k};")
                else:
                    body.append(f"{ct} {v} = p{k}[{self._offset(s.sizes)}];")
                continue
            ins = [names[index[o.node]] for o in n.operands]
            a = node_attrs(n)
            kind = a[0] if a is not None else n.op.qualified_name
            body.append(f"{ct} {v} = {self._expr(kind, s.dtype, ins, [o.node for o in n.operands], a)};")
        for j, r in enumerate(rnodes):
            body.append(f"out{j}[i] = {names[index[r]]};")
        self.entry = "accel_lazy_kernel"
        self.source = ('extern "C" __global__ void accel_lazy_kernel(' + ", ".join(args) + ")\n{\n"
                       + "".join(f"    {b}\n" for b in body) + "}\n")
        # int32 add / sub alphas: torch's checked conversion, at run time (as the numpy backend checks them)
        self.checked = []
        for i, n in enumerate(post):
            if i not in param_of and n.op.qualified_name in ("aten::add", "aten::sub") and n.shapes[0].dtype == D.INT32:
                k = param_of.get(index[n.operands[2].node])
                if k is not None:
                    self.checked.append((k, D.INT32))

    def _offset(self, psizes):
        sizes = self.sizes
        nd, pd = len(sizes), len(psizes)
        terms, stride = [], 1
        for d in range(pd - 1, -1, -1):
            if psizes[d] != 1:
                c = f"c{d + nd - pd}"
                terms.append(c if stride == 1 else f"{c} * {stride}LL")
            stride *= psizes[d]
        return " + ".join(reversed(terms)) or "0"

    @staticmethod
    def _expr(kind, code, ins, opnodes, a):
        ct = _CTYPE[code]
        if kind == "aten::_to_copy":
            return f"({ct}){ins[0]}"
        x = f"({ct}){ins[0]}"
        if kind in ("aten::add", "aten::sub"):
            y, alpha = f"({ct}){ins[1]}", ins[2]
            if code == D.BOOL:
                if kind == "aten::add":
                    return f"({x} || ({y} && {alpha} != 0))"
                return f"({x} != {y})"        # (never reached: torch refuses bool sub)
            op = "+" if kind == "aten::add" else "-"
            if code in _UTYPE:
                u = _UTYPE[code]
                return (f"({alpha} == 1 ? ({ct})(({u}){x} {op} ({u}){y}) : "
                        f"({ct})(({u}){x} {op} ({u}){y} * ({u})({ct}){alpha}))")
            # numpy: x + y if alpha == 1, else x + (y * alpha) in the result's dtype (rounded there)
            return f"({alpha} == 1 ? ({ct})({x} {op} {y}) : ({ct})({x} {op} ({ct})({y} * ({ct}){alpha})))"
        if kind in _BINARY:
            op = _BINARY[kind]
            y = f"({ct}){ins[1]}"
            if code in _UTYPE:
                u = _UTYPE[code]
                return f"({ct})(({u}){x} {op} ({u}){y})"
            if code == D.BOOL:
                return f"({x} && {y})"
            return f"({ct})({x} {op} {y})"
        if kind == "aten::neg":
            if code in _UTYPE:
                return f"({ct})(0 - ({_UTYPE[code]}){x})"
            return f"(-{x})"
        if kind == "aten::relu":
            if code in (D.FLOAT32, D.FLOAT64):
                # numpy's maximum(x, 0): NaN stays, an equal pair gives the second (relu(-0.0) is +0.0)
                return f"({x} != {x} ? {x} : ({x} > 0 ? {x} : ({ct})0))"
            return f"({x} > 0 ? {x} : ({ct})0)"
        if kind in _UNARY:
            f = _UNARY[kind] + ("f" if code == D.FLOAT32 else "")
            return f"{f}({x})"
        if kind in _CMP:
            cmp = _CTYPE[a[1]]
            return f"(({cmp}){ins[0]} {_CMP[kind]} ({cmp}){ins[1]})"
        raise AssertionError(kind)

    def program(self, kernel):
        sizes, outs, scalars, tensors, checked = self.sizes, self.outs, self.scalars, self.tensors, self.checked
        num = int(_np.prod(sizes, dtype=_np.int64)) if sizes else 1
        nparams = self.num_params

        rets = self.rets

        def run(P, G=None):
            import accel.cuda as cuda
            rt = _impl.module("_cudart")
            for k, code in checked:
                D.checked_int(P[k].value, code)
            if num == 0 or not outs:
                results = [_np.empty(sizes, D.CODE_TO_NP[c]) for c in outs]
                return tuple(results[j] if w == "out" else _same(P[j]) for w, j in rets)
            device = cuda.current_device()
            stream = cuda.current_stream().cuda_stream
            outs_dev = [cuda.empty(sizes, D.CODE_TO_NP[c]) for c in outs]
            vals = [ctypes.c_uint64(d.ptr) for d in outs_dev]
            for k in range(nparams):
                if k in tensors:
                    vals.append(ctypes.c_uint64(_cd.device_array(P[k]).ptr))
                else:
                    vals.append(_PCTYPE[scalars[k]](_np.asarray(P[k].array).astype(D.CODE_TO_NP[scalars[k]])[()]))
            vals.append(ctypes.c_int64(num))
            ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
            f = kernel.function(rt, device)
            rt.cuLaunchKernel(f, (num + _BLOCK - 1) // _BLOCK, 1, 1, _BLOCK, 1, 1, 0, stream, ctypes.addressof(ptrs))
            _c_launch.add(1)
            _hold([_cd.device_array(P[k]) for k in tensors] + outs_dev)
            results = [_result(d) for d in outs_dev]
            return tuple(results[j] if w == "out" else _same(P[j]) for w, j in rets)

        text = f"// CUDA backend: {kernel.name}, grid of {num} threads\n{kernel.source}"
        return Program(run, text, nparams, len(self.post), len(kernel.image) + len(text), tuple(self.param_shapes))
