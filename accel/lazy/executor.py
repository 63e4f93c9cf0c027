"""LTC's LazyGraphExecutor for lazy tensors: graph hash, IR text, sync / mark_step with the computation
cache, and execution on the selected backend (numpy by default)."""
import os

import numpy as _np

from accel import _impl
from accel.lazy import _dtypes as D
from accel.lazy import dump as _dump
from accel.lazy import metrics as _metrics
from accel.lazy import tensors as _t
from accel.lazy import backend as _backend_mod
from accel.lazy.backend import NumpyBackend
from accel.lazy.cuda_backend import CudaBackend
from accel.lazy.cache import ComputationCache
from accel.lazy._cuda_data import as_handle as _as_handle, host_array as _host_array, host_value as _host_value, \
    host_params as _host_params
from accel.lazy.inplace import current as _current
from accel.lazy.tensors import Data, LazyTensor
from accel.lazy.trie import TrieCache, hold as _trie_hold, release_all as _trie_release_all

_ir = _impl.module("_ir")
_hash = _impl.module("_hash")
_Output = _ir.Output            # a tensor of a multi-output node (topk, sort, max.dim) holds Output(node, i)

COMPILATION_CACHE_SIZE = 1024          # FLAGS_torch_lazy_compilation_cache_size


def _cache_bytes_setting(default=1 << 30):
    """ACCEL_LAZY_CACHE_BYTES: the computation cache's byte budget (default 1 GiB; 'none': unbounded)."""
    v = os.environ.get("ACCEL_LAZY_CACHE_BYTES", "").strip()
    if not v:
        return default
    if v.lower() == "none":
        return None
    try:
        n = int(v)
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(f"ACCEL_LAZY_CACHE_BYTES={v!r} is not valid: expected a number of bytes >= 0 or 'none'")
    return n


COMPILATION_CACHE_BYTES = _cache_bytes_setting()
_cache = ComputationCache(COMPILATION_CACHE_SIZE, COMPILATION_CACHE_BYTES)
_backend = NumpyBackend()
_latest = [None]
_device_lock = _t.device_lock

_c = _t._cell
_c_synced = _c("SyncedTensorsWithIR")
_c_cached = _c("CachedCompile")
_c_uncached = _c("UncachedCompile")
_c_markstep = _c("MarkStep")
_c_to_data = _c("SyncTensorsToData")
_m_graph_size = _metrics.Metric("TensorsGraphSize")
_MHASH_TRUE = _hash.mhash(True)
_MHASH_FALSE = _hash.mhash(False)


def set_backend(backend):
    """Use ``backend`` (an object with ``name`` and ``compile(post, roots) -> Program``, or a name: ``"numpy"``,
    ``"cuda"``: accel.lazy.cuda_backend, which needs NVRTC) from now on; returns the previous one.  The
    computation cache is cleared: programs belong to their backend."""
    if isinstance(backend, str):
        if backend == "numpy":
            backend = NumpyBackend()
        elif backend == "cuda":
            backend = CudaBackend()         # (NVRTC is opened here: ImportError without it)
        else:
            raise ValueError(f"set_backend: unknown backend name {backend!r}: expected 'numpy' or 'cuda' "
                             "(or a backend object)")
    if not callable(getattr(backend, "compile", None)):
        raise TypeError(f"set_backend needs an object with a compile(post, roots) method, got {backend!r}")
    global _backend
    with _device_lock:
        prev, _backend = _backend, backend
        _cache.clear()
        _t.source_hook[0] = getattr(backend, "upload", None)
    return prev


def computation_cache():
    """The ComputationCache (LRU keyed by graph hash) that sync and mark_step use: at most
    COMPILATION_CACHE_SIZE programs holding at most ``max_bytes`` (ACCEL_LAZY_CACHE_BYTES, default 1 GiB;
    settable) of scratch buffers and source."""
    return _cache


def _check_tensors(tensors, what):
    if isinstance(tensors, LazyTensor):
        tensors = [tensors]
    try:
        tensors = list(tensors)
    except TypeError:
        raise TypeError(f"{what} needs a list of lazy tensors, got {type(tensors).__name__}: {tensors!r}") from None
    for i, t in enumerate(tensors):
        if type(t) is not LazyTensor:
            raise TypeError(f"{what}: tensors[{i}] must be a lazy tensor, got {type(t).__name__}: {t!r}")
    return [_current(t) for t in tensors]


def _collect(tensors):
    """CollectSyncTensors (force_ltc_data): tensors deduplicated by id, without device data, that hold IR.
    Tensors holding only source data are uploaded instead (they get it as device data: counter
    SyncTensorsToData), so that later graphs read them as parameters, not as roots."""
    seen = set()
    roots = []
    for t in tensors:
        if t._id in seen:
            continue
        seen.add(t._id)
        if t._handle is None:
            if t._node is not None:
                roots.append(t)
            elif t._src is not None:
                t._handle = t._src
                t._src = None
                _c_to_data[0] += 1
    return roots


def _params(post):
    """RunPostOrder's parameters: the device-data handles in post order, deduplicated by identity."""
    out = []
    seen = set()
    for n in post:
        if n.is_device_data:
            h = n.handle
            if id(h) not in seen:
                seen.add(id(h))
                out.append(h)
    return out


def _graph_key(nodes, force_ltc_data=True):
    if force_ltc_data:
        return _ir.graph_hash(nodes)
    # GetTensors (force_ltc_data=false): the same walk, started from MHash(false)
    h = int.from_bytes(_ir.graph_hash(nodes), "little")
    return (h ^ _MHASH_TRUE ^ _MHASH_FALSE).to_bytes(16, "little") + b"F"


def get_graph_hash(tensors):
    """torch._C._lazy._get_graph_hash: the 16-byte computation-cache key of syncing ``tensors``."""
    tensors = _check_tensors(tensors, "get_graph_hash")
    with _device_lock:
        roots = _collect(tensors)
        if not roots and tensors:
            # CollectSyncTensors started from MHash(true), then the empty parameter sequence
            h = _hash.hash_combine(_MHASH_TRUE, _hash.container_hash([]))
            return h.to_bytes(16, "little")
        _c_synced[0] += len(roots)        # CollectSyncTensors counts them here too
        return _ir.graph_hash([t._node for t in roots])


# cache key -> the wiring_hash of the post order its program was compiled from (under the device lock)
_wirings = {}


def _execute(nodes, key):
    """Post-order, cache lookup (compile on a miss), run; returns the roots' arrays.  The caller holds
    the device lock."""
    post = _ir.post_order(nodes)
    params = _params(post)
    if _ir.dynamic_shapes_enabled():
        # the dag hash leaves sizes out; a numpy program is compiled for its sizes, so they join the key
        key = key + repr([tuple(n.shapes[0].sizes) if n.shapes else () for n in post]).encode()
    prog = _cache.get(key)
    wiring = _ir.wiring_hash(post)
    if prog is not None and _wirings.get(key) != wiring:
        # the same graph hash, other wiring: LTC's hash sees operands only through their hashes (a
        # device-data node's is its shape's), so f(a, a, c) and f(b, c, b) hash alike; the program
        # compiled for one would read the other's tensors in the wrong places.  Compiled afresh.
        _cache.erase(key)
        prog = None
    if prog is None:
        _c_uncached[0] += 1
        prog = _backend.compile(post, nodes)
        if prog.num_params != len(params):
            raise RuntimeError(f"compiled program takes {prog.num_params} parameters, graph has {len(params)}")
        prog = _cache.add(key, prog)
        if len(_wirings) >= 2 * max(_cache.maxsize, 16):     # forget the evicted programs' wirings
            live = set(_cache._items)
            for k in [k for k in _wirings if k not in live]:
                del _wirings[k]
        _wirings[key] = wiring
    else:
        _c_cached[0] += 1
    _latest[0] = prog
    _m_graph_size.add_sample(len(post))
    gens = _t.run_args(post)              # e.g. the generators random ops given generator= draw from
    if not getattr(_backend, "device_params", False):
        params = _host_params(params)     # (tensors left on the device by the CUDA backend: their values)
    try:
        with _np.errstate(all="ignore"):     # torch gives inf/nan silently, as numpy then does
            return prog.run(params, gens) if gens else prog.run(params)
    except BaseException:
        _t.drop_after()                  # a failed run updates nothing
        raise


def sync_tensors(tensors):
    """SyncTensorsGraph: compute every given tensor that holds IR and replace its IR by device data."""
    with _device_lock:
        roots = _collect(tensors)
        if not roots:
            return
        _c_synced[0] += len(roots)
        nodes = [t._node for t in roots]
        outs = _execute(nodes, _ir.graph_hash(nodes))
        for t, n, a in zip(roots, nodes, outs):
            if t._node is not n:        # an in-place op on another thread gave it a newer value meanwhile
                continue
            t._handle = _as_handle(a)   # data first: a tracing thread reading _node then _handle sees one
            t._node = None
            t._src = None
        _t.run_after()                  # the kernels' updates of other tensors (batch_norm's running stats)


def sync_multi(tensors, devices=None):
    """torch._lazy.sync_multi: sync the given lazy tensors (others are ignored, as torch filters them)."""
    if isinstance(tensors, LazyTensor):
        tensors = [tensors]
    sync_tensors([_current(t) for t in tensors if type(t) is LazyTensor])


def mark_step(device="", wait=False):
    """SyncLiveTensorsGraph then MarkStep: sync every live tensor (ascending id), reset the IR trie."""
    with _device_lock:
        sync_tensors(_t.live_tensors())
        if _t._reuse[0]:
            _drop_kept_ir()
        _c_markstep[0] += 1
    TrieCache.get().reset_current()


def _drop_kept_ir():
    """With IR reuse on, a tensor that kept its IR after a read (numpy(), as LTC's ``.cpu()``) drops it at
    mark_step and keeps its data.  Its IR's device-data nodes belong to the trie, which hands them new data
    (DeviceData::SetData) when a later step traces an equal graph; IR kept across the step would then read
    that step's inputs (torch 2.13 LTC does: a kept ``a + b`` reads the next step's tensors).  Later ops on
    the tensor read its data as a device-data node instead: the IR text differs from LTC's there, the
    values are right.  A tensor whose IR is the device-data node of its own data keeps it, as in LTC (the
    trie's counters stay LTC's), and drops it only if a later trace reuses that node for other data."""
    _trie_release_all()
    for t in _t.live_tensors():
        n, h = t._node, t._handle
        if h is not None and n is not None:
            if type(n) is not _Output and n.is_device_data and n.handle is h:
                _trie_hold(n, t)
            else:
                t._node = None


def wait_device_ops(devices=None):
    """Wait for pending device work: the numpy backend runs synchronously, so there is none."""
    return None


def compute_nodes(nodes):
    """Values of IR nodes without touching any tensor (LTC GetTensors with force_ltc_data=false)."""
    nodes = list(nodes)
    with _device_lock:
        out = [_host_value(a) for a in _execute(nodes, _graph_key(nodes, False))]
        _t.run_after()
        return out


def compute_values(tensors):
    """Values of tensors without changing their IR (used by eager fallbacks)."""
    out = [None] * len(tensors)
    pending = []
    with _device_lock:
        for i, t in enumerate(tensors):
            if t._handle is not None:
                out[i] = _host_array(t._handle)
            elif t._src is not None:
                out[i] = _host_array(t._src)
            else:
                pending.append(i)
        if pending:
            _c_synced[0] += len(pending)
            vals = compute_nodes([tensors[i]._node for i in pending])
            for i, v in zip(pending, vals):
                out[i] = v
    return out


def tensor_value(t):
    """The array of one tensor (the returned array must not be written).  Like LTC's ``.cpu()``
    (LazyTensor::ToTensor): a tensor holding IR is computed once (GetTensors, force_ltc_data=false) and
    gets the result as its device data while keeping its IR (later ops still build on the IR; syncs skip
    it, as it has data).  A tensor still holding its source data returns that (no handle: still a root), and
    once an op has read it as IR, drops it (``.cpu()`` is ToTensor(detached=true): the IR is authoritative),
    so that the next read computes it and gives it a handle."""
    h = t._handle
    if h is None:
        with _device_lock:
            h = t._handle
            if h is None:
                src = t._src
                if src is not None:
                    if t._node is not None:
                        t._src = None
                    return _host_array(src)
                if t._node is None:         # a stale alias (accel.lazy.inplace): regenerate it first
                    t._ir()
                    return tensor_value(t)
                h = t._handle = Data(compute_values([t])[0])
    return _host_array(h)


_SCALAR_KINDS = {D.BOOL: "b", D.INT64: "bui", D.FLOAT64: "buif"}     # the kinds a number parameter takes


def run_cached_graph(hash_bytes, inputs):
    """torch._lazy.computation.run_cached_graph: run the program cached under a graph hash (from
    get_graph_hash, after a sync compiled it) on ``inputs`` (lazy tensors, arrays or numbers, one per
    parameter in parameter-sequence order); returns lazy tensors holding the results."""
    if not isinstance(hash_bytes, (bytes, bytearray)) or len(hash_bytes) != 16:
        raise RuntimeError("Expected hash_str.size() == sizeof(hash_t) to be true, but got false.  "
                           f"(a graph hash is 16 bytes, got {hash_bytes!r})")
    prog = _cache.get(bytes(hash_bytes))
    if prog is None:
        raise RuntimeError("Failed to get computation by hash. Maybe the entry get kicked out of the LRU cache")
    inputs = list(inputs)
    if len(inputs) != prog.num_params:
        raise RuntimeError(f"the cached computation takes {prog.num_params} inputs, got {len(inputs)}")
    arrays = [_np.asarray(tensor_value(x) if isinstance(x, LazyTensor) else x) for x in inputs]
    shapes = getattr(prog, "param_shapes", None)
    if shapes is not None:
        # the program's scratch buffers are made for its graph's sizes: another shape would be broadcast
        # into them (or another dtype cast), silently
        for i, (a, s) in enumerate(zip(arrays, shapes)):
            want = tuple(s.sizes)
            if not want:
                # a number parameter: a number of its kind or a narrower one (bool < int < float), as its
                # dtype; not a complex, an object or a string (numpy would drop an imaginary part, silently)
                ok = a.ndim == 0 and a.dtype.kind in _SCALAR_KINDS.get(s.dtype, "")
                if ok:
                    arrays[i] = a.astype(D.CODE_TO_NP[s.dtype])
            else:
                ok = a.shape == want and a.dtype == D.CODE_TO_NP[s.dtype]
            if not ok:
                raise RuntimeError(f"run_cached_graph: inputs[{i}] must be {D.DTYPES[s.dtype]}{list(want)} as the "
                                   f"cached computation was compiled for, got {a.dtype}{list(a.shape)}")
    params = [Data(a) for a in arrays]
    with _device_lock, _np.errstate(all="ignore"):
        _latest[0] = prog
        try:
            outs = prog.run(params)
        finally:
            # a kernel's updates of tensors of the graph it was compiled from (batch_norm's running statistics)
            # are not made: the inputs given here are not those tensors
            _t.drop_after()
    return [_t.tensor(_host_value(a)) for a in outs]


def get_tensor_id(t):
    """The tensor's unique id (a global counter from 1, as LTC's)."""
    if type(t) is not LazyTensor:
        raise TypeError(f"get_tensor_id needs a lazy tensor, got {type(t).__name__}: {t!r}")
    return t._id


def get_latest_computation_graph():
    """The source of the most recently run compiled program."""
    p = _latest[0]
    if p is None:
        raise RuntimeError("no computation has run yet")
    return p.text


# ---- IR text ----
def _tags(node):
    if node.is_device_data:
        return f", device={node.device}" if node.device is not None else ""
    a = _t.node_attrs(node)
    t = ", " + a[2] if a is not None and a[2] else ""
    if node.num_outputs > 1:            # Node::ToString's first tag
        t = f", num_outputs={node.num_outputs}" + t
    return t


def get_tensors_text(tensors):
    """torch._C._lazy._get_tensors_text without the ``, NodeType=`` tags: the IR of the tensors' values."""
    tensors = _check_tensors(tensors, "get_tensors_text")
    nodes = [t._ir() for t in tensors]
    post = _ir.post_order(nodes)
    ids = {n: i for i, n in enumerate(post)}
    root_of = {}
    for i, n in enumerate(nodes):
        root_of[n.node if type(n) is _Output else n] = i        # DumpUtil: roots by node, the last one wins
    lines = ["IR {"]
    for i, n in enumerate(post):
        ops = ", ".join(f"%{ids[o.node]}" + (f".{o.index}" if o.node.num_outputs > 1 else "") for o in n.operands)
        line = f"  %{i} = [{', '.join(D.shape_text(s) for s in n.shapes)}] {n.op.qualified_name}({ops}){_tags(n)}"
        r = root_of.get(n)
        if r is not None:
            line += f", ROOT={r}"
        lines.append(line)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _tag_pairs(node):
    t = _tags(node)
    out = []
    for part in _split_tags(t[2:]) if t else ():
        name, _, value = part.partition("=")
        out.append((name, value))
    return out


def _split_tags(text):
    # ", " separates tags outside (), [] and {} (LTC's tag parsing in ir_dump_util.cpp)
    parts, depth, start = [], 0, 0
    i = 0
    while i < len(text):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(", ", i):
            parts.append(text[start:i])
            start = i + 2
            i += 1
        i += 1
    parts.append(text[start:])
    return parts


def get_tensors_dot(tensors):
    """torch._C._lazy._get_tensors_dot: the tensors' IR as a graphviz digraph (DumpUtil::ToDot's layout)."""
    tensors = _check_tensors(tensors, "get_tensors_dot")
    return _dump.to_dot([t._ir() for t in tensors], tags=_tag_pairs, shape_text=D.shape_text)


# ---- eager fallback ----
def fallback(counter, name, inputs, code, params=()):
    """Run an op LTC has no lazy kernel for eagerly (its CPU fallback), with the op table's eager kernel
    ``name`` (and its ``params``): the inputs are computed as by ``numpy()`` (they keep their IR), the
    result (cast to torch's dtype ``code``) is a new tensor holding data; counted as ``counter``."""
    _metrics.Counter(counter).add(1)
    tensors = [t for t in inputs if type(t) is LazyTensor]
    args = [tensor_value(t) if type(t) is LazyTensor else t for t in inputs]
    _t._c_to_copy[0] += len(tensors)     # the inputs' copies to the CPU
    result = _np.asarray(_backend_mod.eager(name, args, params)).astype(D.CODE_TO_NP[code], copy=False)
    return _t.tensor(result, D.bfloat16) if code == D.BFLOAT16 else _t.tensor(result)


_t.install_runtime(tensor_value=tensor_value, compute_nodes=compute_nodes)
