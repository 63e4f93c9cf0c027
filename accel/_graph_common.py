"""Pieces of CUDA graphs shared by the twins (accel._native / accel._python ``_stream``: CUDAGraph) and by
accel.cuda's graph API, off the hot path: torch's messages (aten/src/ATen/cuda/CUDAGraph.cpp), the capture
modes, memory pool ids and the process-wide debug flag."""
import itertools
import os
import threading
import warnings
import weakref

# cudaStreamCaptureMode
MODES = {"global": 0, "thread_local": 1, "relaxed": 2}
MODE_RELAXED = 2
CAPTURE_ACTIVE = 1
# cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUseNodePriority, as torch instantiates
INSTANTIATE_FLAGS = 1 | 8
DOT_FLAGS_VERBOSE = 1

OWNS_GRAPH = ("This CUDAGraph instance already owns a captured graph. "
              "To capture a new graph, create a new instance.")
DEFAULT_STREAM = ("CUDA graphs must be captured on a non-default stream. "
                  "(However, after capture, it's ok to replay them on the default stream.)")
SAME_STREAM = "Capture must end on the same stream it began on."
NOT_BEGUN = "capture_end() called before capture_begin()."
# torch's capture_end compares the *current device's* current stream with the capture stream, so a set_device
# to another device during a capture (which torch, like CUDA, allows) makes capture_end fail; accel says why.
DEVICE_SWITCHED = (SAME_STREAM + " The current device is {} but the capture began on a stream of device {}: "
                   "set_device({}) (or leave the device context) before capture_end().")
ALREADY_CAPTURING = "capture_begin() called while this CUDAGraph is capturing: call capture_end() first."
INVALID = "Invalid capture."
# cudaStreamEndCapture from a thread other than capture_begin()'s, for a capture not in relaxed mode
WRONG_THREAD = 908
RESET_WRONG_THREAD = ("reset(): this CUDAGraph's capture was begun on another thread, and CUDA lets only that "
                      "thread end a capture whose capture_error_mode is not 'relaxed' "
                      "(cudaErrorStreamCaptureWrongThread): call reset() or capture_end() on the thread that called "
                      "capture_begin(); the capture is still open")
DEL_OPEN = "CUDA warning: a CUDAGraph dropped with its capture still open: {}"
PER_THREAD = 2              # cudaStreamPerThread: each thread's own default stream
PTDS_WRONG_THREAD = ("{}: this CUDAGraph's capture is on the per-thread default stream (cudaStreamPerThread) of the "
                     "thread that called capture_begin(), and on this thread that handle is another stream: call "
                     "capture_end() or reset() on that thread; the capture is still open")
thread_id = threading.get_ident
EMPTY = ("The CUDA Graph is empty. This usually means that the graph was attempted to be captured on wrong "
         "device or stream.")
NOT_ENDED = "capture_end() must have been called before calling instantiate"
KEEP_ONLY = "instantiate() is intended to be called by the user only when keep_graph=true"
NO_REPLAY = "Called CUDAGraph::replay without a preceding successful capture."
NO_POOL = "Called CUDAGraph::pool() without a preceding successful capture."
NO_RAW_KEEP = "You cannot access the raw cudaGraph_t instance unless CUDAGraph was initialized with keep_graph=true"
NO_RAW_GRAPH = "You cannot access the raw cudaGraph_t instance until capture_end() has been called"
NO_RAW_EXEC = "You cannot access the raw cudaGraphExec_t instance until instantiate() has been called"
DEBUG_OFF = "CUDA Graphs debug not enabled, set with [graph].enable_debug_mode()"
FREED_SINCE_CAPTURE = ("invalid argument: a DeviceBuffer that this graph's copies or memsets use was freed since "
                       "the capture, so a replay would write into whatever memory took its place; nothing was "
                       "queued (reset() and capture again)")
UNKNOWN_CAPTURE_OUT = ("copy_to_host() without out= on stream {!r}, which is capturing a graph that no accel "
                       "CUDAGraph began on it (another library's capture, or a stream forked from one): the "
                       "graph's copy node would write into an array nothing keeps alive; pass out= a host array "
                       "that you keep for every replay")
STAGED_IN_CAPTURE = ("{}: stream {!r} is capturing a graph, and a non-contiguous DeviceArray is copied through a "
                     "synchronous host staging step that a capture cannot record: copy a C-contiguous array (or "
                     "copy outside the capture)")
HOST_FUNC = ("launch_host_func: a Python host function cannot be captured into a CUDA graph (stream {!r} is "
             "capturing): a replay would call it again after its reference was released")

class Uses:
    """What one accel capture uses beside its graph: the host arrays its copy nodes read or write (kept alive
    while the graph is), a weak reference to the CUDAGraph, ``open`` while the capture is under way, ``live``
    (False once the graph was reset), the capture's ``id`` (cudaStreamGetCaptureInfo's: shared by every stream
    joined to the capture through an event), the DeviceBuffers allocated in the capture (``born``: graph
    memory, weakly), ``launched`` (True once a replay made that memory) and ``remade`` (``[device, address,
    made]`` of each such buffer the user freed after a replay: ``made`` once a later replay made it again, which
    nothing else owns then: reset() frees it)."""

    __slots__ = ("graph", "held", "live", "open", "id", "born", "used", "launched", "remade", "__weakref__")

    def __init__(self, graph, capture_id):
        self.graph = weakref.ref(graph)
        self.held = []
        self.live = self.open = True
        self.id = capture_id
        self.born = weakref.WeakSet()
        self.used = weakref.WeakSet()       # the born buffers a copy or memset of the capture used
        self.launched = False
        self.remade = []

    def __reduce__(self):
        raise refuse_copy(self)


# The captures accel's CUDAGraphs have open: capture id -> Uses.  Copies, memsets and allocations on a
# capturing stream (the capture's own or one joined to it through an event) find their graph here by the
# stream's capture id: their host arrays are kept with it, their buffers told of it.
_open = {}


def open_capture(graph, capture_id):
    """A CUDAGraph began the capture ``capture_id`` (cudaStreamGetCaptureInfo's id): its Uses (to keep on the
    graph)."""
    u = Uses(graph, capture_id)
    _open[capture_id] = u
    return u


def close_capture(uses):
    """The capture of ``uses`` ended (or was dropped): copies on its streams no longer find it."""
    uses.open = False
    if _open.get(uses.id) is uses:
        del _open[uses.id]


def capture_uses(status, capture_id):
    """The Uses of the accel capture with id ``capture_id`` (when ``status``, a cudaStreamCaptureStatus, is
    capturing), or None."""
    return _open.get(capture_id) if status and _open else None


def captures_open():
    """Whether an accel CUDAGraph is capturing, on any device (the out-of-memory retry must not synchronise
    then: a device synchronisation, even of another device, invalidates a global-mode capture).  Entries
    whose CUDAGraph is gone (dropped with its capture open) are removed."""
    for cid, u in list(_open.items()):
        if u.graph() is None or not u.open:
            if _open.get(cid) is u:
                del _open[cid]
    return bool(_open)


def note_alloc(status, capture_id, buf):
    """An allocation on a stream in capture ``capture_id``: a buffer of an accel capture's graph memory."""
    u = capture_uses(status, capture_id)
    if u is not None:
        u.born.add(buf)
        buf._graph_use(u)               # (its free() after a replay: the memory a later replay makes again)


def launched(uses):
    """A replay of the graph of ``uses`` was queued: the buffers it allocated are made by it from now on (those
    the user freed are made again)."""
    if uses is not None:
        uses.launched = True
        for r in uses.remade:
            r[2] = True


def take_remade(uses):
    """reset(): the (device, address) of the graph allocations a replay made again after the user freed their
    DeviceBuffer (nobody else owns them: the caller frees them), forgotten by ``uses``."""
    if uses is None or not uses.remade:
        return []
    out = [(d, p) for d, p, made in uses.remade if made]
    uses.remade = []
    return out


def drop_uses(uses):
    """reset(): the graph no longer uses its buffers or host arrays."""
    if uses is not None:
        uses.live = False
        uses.held = []


def buffer_freed(uses_list, capture_id, buf):
    """DeviceBuffer ``buf``, which the captures ``uses_list`` used, was freed: each graph still holding its
    nodes is marked, so that its replays raise (FREED_SINCE_CAPTURE).  ``capture_id``: the id of the capture
    the free was queued in (0: none; in the graph's own capture it is a free node, and the graph owns the
    memory).  A buffer the graph allocated itself (graph memory) freed after a replay made it is the user's
    to free, as CUDA's: the next replay makes it again at its address (nothing else is given that address
    while the graph lives), so its graph is not marked; freed before any replay, it is."""
    for u in uses_list:
        if not u.live or (capture_id and u.open and u.id == capture_id):
            continue
        if buf in u.born:
            if u.launched:
                u.remade.append([buf.device.index, buf.ptr, False])
                continue
            if buf not in u.used:       # no node of the graph reads or writes it
                continue
        g = u.graph()
        if g is not None:
            g._buffer_freed()


def freed_error():
    """The CudaError of a replay of a graph whose buffer was freed (cudaErrorInvalidValue, nothing queued)."""
    from accel.errors import CudaError
    return CudaError(1, "cudaErrorInvalidValue", FREED_SINCE_CAPTURE)


_debug = [False]            # CUDAGraph.enable_debug_mode(): process-wide, as torch's _cuda_graphs_debug
_pool_ids = itertools.count(1)


def debug_enabled():
    return _debug[0]


def enable_debug():
    _debug[0] = True


def capture_mode(mode):
    """The cudaStreamCaptureMode of torch's ``capture_error_mode`` string."""
    if isinstance(mode, str) and mode in MODES:
        return MODES[mode]
    raise RuntimeError(f"Unknown capture error mode. Expected `global`, `thread_local`, or `relaxed`, got {mode}")


def new_pool(user_created):
    """A memory pool id as torch's: ``(0, n)`` from graph_pool_handle(), ``(n, 0)`` for a graph's own."""
    n = next(_pool_ids)
    return (0, n) if user_created else (n, 0)


def pool_arg(pool):
    """capture_begin's ``pool``: None (a new pool of the graph's own) or an id from graph_pool_handle() /
    CUDAGraph.pool() (a tuple of two ints, exactly one of them non-zero)."""
    if pool is None:
        return new_pool(False)
    if (isinstance(pool, tuple) and len(pool) == 2 and all(type(v) is int and v >= 0 for v in pool)
            and (pool[0] == 0) != (pool[1] == 0)):
        return pool
    raise TypeError(f"pool must be None or a memory pool id from graph_pool_handle() / CUDAGraph.pool() "
                    f"(a tuple of two ints, one of them 0), got {type(pool).__name__}: {pool!r}")


def dot_path(path):
    """debug_dump's path as the NUL-terminated bytes cudaGraphDebugDotPrint takes."""
    try:
        raw = os.fsencode(path)
    except TypeError:
        raise TypeError(f"debug_path must be a str, bytes or os.PathLike path, got {type(path).__name__}: "
                        f"{path!r}") from None
    if b"\0" in raw:
        raise ValueError(f"debug_path must not contain NUL bytes, got {path!r}")
    return raw + b"\0"


def warn(msg, stacklevel=3):
    warnings.warn(msg, UserWarning, stacklevel=stacklevel)


def refuse_copy(obj):
    return TypeError(f"cannot pickle or copy {obj!r}: a CUDA graph is owned by one CUDAGraph in one process")
