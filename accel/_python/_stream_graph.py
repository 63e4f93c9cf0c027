"""CUDAGraph of accel._python._stream (it needs Stream, the guard helpers and the current-stream state);
twin of accel/_native/_stream_graph.pxi.  Import it through accel._python._stream."""
from ctypes import addressof, c_int, c_size_t, c_ulonglong, c_void_p, create_string_buffer

from accel import _graph_common as _gc
from accel._python import _cudart
from accel._python import _device as _dm
from accel._python import _stream as _s
from accel._python._device import _c_ensure_init

_enter, _leave, _check, _current_stream = _s._enter, _s._leave, _s._check, _s.current_stream


def _bind_launch(x, s):
    """cudaGraphLaunch, unprototyped (``c_void_p`` handles: CUDAGraph._xp, Stream._pp), bound on first use."""
    global _launch
    _launch = _cudart._unprototyped("cudaGraphLaunch")
    return _launch(x, s)


_launch = _bind_launch
_osa = object.__setattr__


def _relaxed_destroy(fn, handle):
    """Destroy a graph / executable graph in relaxed capture mode (a capture elsewhere must not refuse it, as
    torch's reset()); the error code, the sticky error cleared."""
    t = _s._T
    mode = c_int(_gc.MODE_RELAXED)
    swapped = not t.cudaThreadExchangeStreamCaptureMode(mode)
    if not swapped:
        t.cudaGetLastError()
    err = getattr(t, fn)(handle)
    if err:
        t.cudaGetLastError()
    if swapped:
        t.cudaThreadExchangeStreamCaptureMode(mode)
    return err


_GRAPH_FIELDS = frozenset(("_keep", "_graph", "_exec", "_xp", "_has_graph", "_has_exec", "_ended", "_capturing",
                           "_dev", "_stream", "_pool", "_thread", "_uses", "_stale"))   # the compiled twin's cdef fields (no attributes there)


class CUDAGraph:
    """A CUDA graph captured from a stream and replayed, torch.cuda.CUDAGraph's names and semantics: capture
    on the current (non-default) stream between capture_begin() and capture_end(), replay() on the current
    stream of the capture device.  ``keep_graph``: keep the cudaGraph_t after capture (instantiate() then
    makes the executable graph, raw_cuda_graph() returns it)."""

    __slots__ = ("_keep", "_graph", "_exec", "_xp", "_has_graph", "_has_exec", "_ended", "_capturing", "_dev",
                 "_stream", "_pool", "_thread", "_uses", "_stale", "__weakref__")

    def __init__(self, keep_graph=False):
        _osa(self, "_keep", bool(keep_graph))
        for name in ("_graph", "_exec"):
            _osa(self, name, 0)
        for name in ("_has_graph", "_has_exec", "_ended", "_capturing", "_stale"):
            _osa(self, name, False)
        _osa(self, "_dev", -1)
        _osa(self, "_thread", 0)
        _osa(self, "_xp", None)
        _osa(self, "_stream", None)
        _osa(self, "_pool", None)
        _osa(self, "_uses", None)

    def __setattr__(self, name, value):
        # As the compiled twin's cdef class: its fields and methods cannot be set; a user subclass's instances
        # have a __dict__ for their own attributes.
        if type(self) is CUDAGraph or name in _GRAPH_FIELDS:
            if name == "__class__" and not isinstance(value, type):
                object.__setattr__(self, name, value)  # raises CPython's own TypeError, as the compiled twin
            raise _s._frozen(self, name, CUDAGraph, _GRAPH_FIELDS, frozenset())
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name == "__class__":
            object.__delattr__(self, name)  # raises CPython's own TypeError, as the compiled twin
        if type(self) is CUDAGraph or name in _GRAPH_FIELDS:
            raise _s._frozen(self, name, CUDAGraph, _GRAPH_FIELDS, frozenset())
        object.__delattr__(self, name)

    def capture_begin(self, pool=None, capture_error_mode="global"):
        """Begin capturing the current stream (not the default stream) into this graph; ``pool`` shares a
        memory pool id (graph_pool_handle() / another graph's pool()), ``capture_error_mode`` is "global",
        "thread_local" or "relaxed" (cudaStreamCaptureMode)."""
        mode = _gc.capture_mode(capture_error_mode)
        if self._has_exec or self._ended:
            raise RuntimeError(_gc.OWNS_GRAPH)
        if self._capturing:
            raise RuntimeError(_gc.ALREADY_CAPTURING)
        pool = _gc.pool_arg(pool)
        s = _current_stream()
        if s._ptr in (0, 1):
            raise RuntimeError(_gc.DEFAULT_STREAM)
        orig = _enter(s.device_index)
        err = _s._T.cudaStreamBeginCapture(s._ptr, mode)
        st, cid = c_int(0), c_ulonglong(0)
        if not err and _s._T.cudaStreamGetCaptureInfo(s._ptr, st, cid, None, None, None, None):
            _s._T.cudaGetLastError()    # (no id: copies on the stream do not find the graph; never fails)
        _check(err, orig)
        _osa(self, "_stream", s)
        _osa(self, "_dev", s.device_index)
        _osa(self, "_thread", _gc.thread_id())
        _osa(self, "_pool", pool)
        _osa(self, "_capturing", True)
        _gc.drop_uses(self._uses)
        _osa(self, "_stale", False)
        _osa(self, "_uses", _gc.open_capture(self, cid.value))

    def capture_end(self):
        """End the capture (on the stream it began on); without keep_graph, instantiate the graph and drop
        the cudaGraph_t.  CudaError when the capture was invalidated (cudaErrorStreamCaptureInvalidated)."""
        if not self._capturing:
            raise RuntimeError(_gc.NOT_BEGUN)
        s = self._stream
        cur = _current_stream()
        if cur._ptr != s._ptr or cur.device_index != s.device_index:
            if cur.device_index != s.device_index:
                raise RuntimeError(_gc.DEVICE_SWITCHED.format(cur.device_index, s.device_index, s.device_index))
            raise RuntimeError(_gc.SAME_STREAM)
        if s._ptr == _gc.PER_THREAD and _gc.thread_id() != self._thread:
            raise RuntimeError(_gc.PTDS_WRONG_THREAD.format("capture_end()"))
        _c_ensure_init()
        t = _s._T
        g = c_size_t()
        orig = _enter(self._dev)
        err = t.cudaStreamEndCapture(s._ptr, g)
        if err:
            # A capture CUDA did not end (wrong thread, a failed call) is still this graph's to end (reset()).
            st = c_int(0)
            t.cudaGetLastError()
            _osa(self, "_capturing", not t.cudaStreamIsCapturing(s._ptr, st) and st.value != 0)
        else:
            _osa(self, "_capturing", False)
        if not self._capturing:
            _gc.close_capture(self._uses)
            if err:             # no graph: nothing of the capture is used
                _gc.drop_uses(self._uses)
                _osa(self, "_uses", None)
        _check(err, orig)
        if not g.value:
            raise RuntimeError(_gc.INVALID)
        _osa(self, "_graph", g.value)
        _osa(self, "_has_graph", True)
        _osa(self, "_ended", True)
        n = c_size_t(0)
        if t.cudaGraphGetNodes(g.value, None, n):
            t.cudaGetLastError()         # only for the empty-graph warning
        elif n.value == 0:
            _gc.warn(_gc.EMPTY)
        if not self._keep:
            self.instantiate()
            if not _gc.debug_enabled():
                _relaxed_destroy("cudaGraphDestroy", self._graph)
                _osa(self, "_has_graph", False)
                _osa(self, "_graph", 0)

    def instantiate(self):
        """Make the executable graph (called by capture_end() unless keep_graph; with keep_graph, again
        after changes).  RuntimeError before capture_end()."""
        if not self._ended:
            raise RuntimeError(_gc.NOT_ENDED)
        if self._has_exec:
            if not self._keep:
                raise RuntimeError(_gc.KEEP_ONLY)
            _relaxed_destroy("cudaGraphExecDestroy", self._exec)
            _osa(self, "_has_exec", False)
            _osa(self, "_exec", 0)
            _osa(self, "_xp", None)
        _c_ensure_init()
        x = c_size_t()
        orig = _enter(self._dev)
        _check(_s._T.cudaGraphInstantiateWithFlags(x, self._graph, _gc.INSTANTIATE_FLAGS), orig)
        _osa(self, "_exec", x.value)
        _osa(self, "_xp", c_void_p(x.value))
        _osa(self, "_has_exec", True)

    def replay(self):
        """Launch the executable graph on the current stream of the capture device (instantiating it first
        with keep_graph).  RuntimeError without a successful capture."""
        if not self._has_exec:
            # Only a keep_graph graph is instantiated here (torch's replay()); without keep_graph, capture_end()
            # does it, and a replay on another thread must not race it (a second executable graph, leaked).
            if not (self._ended and self._keep):
                raise RuntimeError(_gc.NO_REPLAY)
            self.instantiate()
        if not _dm._initialized and _dm._init_hook is not None:
            _c_ensure_init()  # the fork check
        if self._stale:
            raise _gc.freed_error()
        d = self._dev
        cur = _s._tls.cur
        if cur is None:
            cur = _s._tstate_cur()
        orig = _enter(d)
        err = _launch(self._xp, cur[d]._pp)
        if err or orig >= 0:
            _check(err, orig)
        u = self._uses
        if u is not None and (not u.launched or u.remade):
            _gc.launched(u)             # the graph's own allocations are made by its replays from now on

    def reset(self):
        """Destroy the graph and the executable graph (ending a capture still under way) and release the
        graph's memory; the instance can capture again.  Failures are warnings, as torch's."""
        t = _s._T
        if t is None:
            return
        _osa(self, "_ended", False)          # first: a replay on another thread must not instantiate again
        if self._capturing:
            if self._stream._ptr == _gc.PER_THREAD and _gc.thread_id() != self._thread:
                raise RuntimeError(_gc.PTDS_WRONG_THREAD.format("reset()"))
            g = c_size_t()
            orig = _s._enter(self._dev) if _dm._initialized else -1
            err = t.cudaStreamEndCapture(self._stream._ptr, g)
            if err:
                t.cudaGetLastError()
                st = c_int(0)
                if not t.cudaStreamIsCapturing(self._stream._ptr, st) and st.value != 0:
                    # CUDA did not end it (another thread's capture, a failed call): it stays this graph's
                    _leave(orig)
                    if err == _gc.WRONG_THREAD:
                        raise RuntimeError(_gc.RESET_WRONG_THREAD)
                    raise _cudart._error(err)
                t.cudaGetLastError()
            elif g.value:
                _relaxed_destroy("cudaGraphDestroy", g.value)
            _osa(self, "_capturing", False)
            _leave(orig)
        if self._uses is not None:
            _gc.close_capture(self._uses)
            for d, p in _gc.take_remade(self._uses):    # (made again by a replay after the user's free)
                orig = _s._enter(d) if _dm._initialized else -1
                if _relaxed_destroy("cudaFree", p):
                    _gc.warn("CUDA warning: cudaFree of a graph allocation failed in CUDAGraph.reset()")
                _leave(orig)
            _gc.drop_uses(self._uses)
            _osa(self, "_uses", None)
        _osa(self, "_stale", False)
        if self._has_graph:
            _osa(self, "_has_graph", False)
            if _relaxed_destroy("cudaGraphDestroy", self._graph):
                _gc.warn("CUDA warning: cudaGraphDestroy failed in CUDAGraph.reset()")
        if self._has_exec:
            _osa(self, "_has_exec", False)
            if _relaxed_destroy("cudaGraphExecDestroy", self._exec):
                _gc.warn("CUDA warning: cudaGraphExecDestroy failed in CUDAGraph.reset()")
        _osa(self, "_graph", 0)
        _osa(self, "_exec", 0)
        _osa(self, "_xp", None)

    def _buffer_freed(self):
        """A DeviceBuffer this graph's nodes use was freed (accel._graph_common.buffer_freed): replays raise."""
        _osa(self, "_stale", True)

    def pool(self):
        """The memory pool id of this graph's capture (pass it to another capture_begin to share it)."""
        if not self._ended:
            raise RuntimeError(_gc.NO_POOL)
        return self._pool

    def enable_debug_mode(self):
        """Keep captured graphs for debug_dump() (process-wide, as torch's)."""
        _gc.enable_debug()

    def debug_dump(self, debug_path):
        """Write the captured graph as DOT (cudaGraphDebugDotPrint, verbose) to ``debug_path``; needs debug
        mode or keep_graph (a warning otherwise).  Without keep_graph the graph is dropped afterwards."""
        raw = _gc.dot_path(debug_path)
        if not (_gc.debug_enabled() or self._keep):
            _gc.warn(_gc.DEBUG_OFF)
            return
        _gc.warn("DEBUG: calling debug_dump()")
        if not self._has_graph:
            return
        _gc.warn(f"DEBUG: calling cudaGraphDebugDotPrint() with {debug_path}")
        buf = create_string_buffer(raw, len(raw))
        t = _s._T
        if t.cudaGraphDebugDotPrint(self._graph, addressof(buf), _gc.DOT_FLAGS_VERBOSE):
            err = t.cudaGetLastError()
            _gc.warn(f"CUDA warning: {_cudart.cudaGetErrorString(err)} (cudaGraphDebugDotPrint)")
        if not self._keep:
            _osa(self, "_has_graph", False)
            _relaxed_destroy("cudaGraphDestroy", self._graph)
            _osa(self, "_graph", 0)

    def raw_cuda_graph(self):
        """The cudaGraph_t (int); needs keep_graph=True and capture_end()."""
        if not self._keep:
            raise RuntimeError(_gc.NO_RAW_KEEP)
        if not self._has_graph:
            raise RuntimeError(_gc.NO_RAW_GRAPH)
        return self._graph

    def raw_cuda_graph_exec(self):
        """The cudaGraphExec_t (int); needs instantiate() (capture_end() without keep_graph)."""
        if not self._has_exec:
            raise RuntimeError(_gc.NO_RAW_EXEC)
        return self._exec

    def __repr__(self):
        state = ("capturing" if self._capturing else "instantiated" if self._has_exec
                 else "captured" if self._ended else "empty")
        return f"<accel.cuda.CUDAGraph {state}>"

    def __reduce__(self):
        """Refused (TypeError): a CUDA graph is owned by one CUDAGraph in one process."""
        raise _gc.refuse_copy(self)

    def __copy__(self):
        """Refused (TypeError): a CUDA graph is owned by one CUDAGraph in one process."""
        raise _gc.refuse_copy(self)

    def __deepcopy__(self, memo):
        """Refused (TypeError): a CUDA graph is owned by one CUDAGraph in one process."""
        raise _gc.refuse_copy(self)

    def __del__(self):
        try:
            # In a forked child of a process that used CUDA the handles are the parent's, and the driver refuses
            # the child: they are dropped, as the streams' and buffers' are there.
            if (self._capturing or self._has_graph or self._has_exec) and (
                    _dm._initialized or _dm._init_hook is None):
                self.reset()
        except Exception as e:  # noqa: BLE001 - a finaliser must not raise; the handles are the process's anyway
            try:
                _gc.warn(_gc.DEL_OPEN.format(e), stacklevel=2)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass


CUDAGraph.__module__ = _s.__name__  # accel._python._stream.CUDAGraph, as the compiled twin's is accel._native._stream.CUDAGraph
