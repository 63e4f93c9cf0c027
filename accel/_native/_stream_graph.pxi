# CUDAGraph: included by _stream.pyx (it needs Stream, the guard helpers and the current-stream state);
# twin of accel/_python/_stream_graph.py.

DEF GRAPH_INSTANTIATE_FLAGS = 9   # AutoFreeOnLaunch | UseNodePriority, as torch (_graph_common.INSTANTIATE_FLAGS)


cdef int _relaxed_destroy(bint exec_, uintptr_t h) noexcept:
    # Destroy a graph / executable graph in relaxed capture mode (a capture elsewhere must not refuse it, as
    # torch's reset()); the error code, the sticky error cleared.
    cdef int mode = 2    # cudaStreamCaptureModeRelaxed
    cdef int err
    cdef bint swapped = not _t.cudaThreadExchangeStreamCaptureMode(&mode)
    if not swapped:
        _t.cudaGetLastError()
    with nogil:
        if exec_:
            err = _t.cudaGraphExecDestroy(<cudaGraphExec_t>h)
        else:
            err = _t.cudaGraphDestroy(<cudaGraph_t>h)
    if err:
        _t.cudaGetLastError()
    if swapped:
        _t.cudaThreadExchangeStreamCaptureMode(&mode)
    return err


cdef int _relaxed_free(uintptr_t p) noexcept:
    # cudaFree of a graph allocation in relaxed capture mode (as _relaxed_destroy); the error code, cleared.
    cdef int mode = 2    # cudaStreamCaptureModeRelaxed
    cdef int err
    cdef bint swapped = not _t.cudaThreadExchangeStreamCaptureMode(&mode)
    if not swapped:
        _t.cudaGetLastError()
    with nogil:
        err = _t.cudaFree(<void*>p)
    if err:
        _t.cudaGetLastError()
    if swapped:
        _t.cudaThreadExchangeStreamCaptureMode(&mode)
    return err


cdef inline int _check_leave(int err, int orig) except -1:
    if err:
        ex = error(err)
        c_leave_device(orig)
        raise ex
    c_leave_device(orig)
    return 0


@cython.auto_pickle(False)
cdef class CUDAGraph:
    """CUDAGraph(keep_graph=False)
--

    A CUDA graph captured from a stream and replayed, torch.cuda.CUDAGraph's names and semantics: capture
    on the current (non-default) stream between capture_begin() and capture_end(), replay() on the current
    stream of the capture device.  ``keep_graph``: keep the cudaGraph_t after capture (instantiate() then
    makes the executable graph, raw_cuda_graph() returns it)."""

    cdef uintptr_t _graph, _exec
    cdef bint _keep, _has_graph, _has_exec, _ended, _capturing
    cdef bint _stale        # a DeviceBuffer its nodes use was freed since the capture: replays raise
    cdef int _dev
    cdef object _stream, _pool, _thread
    cdef object _uses       # accel._graph_common.Uses of the capture (None: none)
    cdef object __weakref__

    def __cinit__(self):
        self._dev = -1

    def __init__(self, keep_graph=False):
        self._keep = bool(keep_graph)

    def capture_begin(self, pool=None, capture_error_mode="global"):
        """Begin capturing the current stream (not the default stream) into this graph; ``pool`` shares a
        memory pool id (graph_pool_handle() / another graph's pool()), ``capture_error_mode`` is "global",
        "thread_local" or "relaxed" (cudaStreamCaptureMode)."""
        cdef int mode = _gc.capture_mode(capture_error_mode)
        if self._has_exec or self._ended:
            raise RuntimeError(_gc.OWNS_GRAPH)
        if self._capturing:
            raise RuntimeError(_gc.ALREADY_CAPTURING)
        pool = _gc.pool_arg(pool)
        cdef Stream s = <Stream>current_stream()
        if s._ptr == 0 or s._ptr == 1:
            raise RuntimeError(_gc.DEFAULT_STREAM)
        cdef int orig = c_enter_device(_t, s.device_index)
        cdef int err
        cdef cudaStream_t p = <cudaStream_t>s._ptr
        cdef int st = 0
        cdef unsigned long long cid = 0
        with nogil:
            err = _t.cudaStreamBeginCapture(p, mode)
        if not err and _t.cudaStreamGetCaptureInfo(p, &st, &cid, NULL, NULL, NULL, NULL):
            _t.cudaGetLastError()       # (no id: copies on the stream do not find the graph; never fails)
        _check_leave(err, orig)
        self._stream = s
        self._dev = s.device_index
        self._thread = _gc.thread_id()
        self._pool = pool
        self._capturing = True
        _gc.drop_uses(self._uses)
        self._stale = False
        self._uses = _gc.open_capture(self, cid)

    def capture_end(self):
        """End the capture (on the stream it began on); without keep_graph, instantiate the graph and drop
        the cudaGraph_t.  CudaError when the capture was invalidated (cudaErrorStreamCaptureInvalidated)."""
        if not self._capturing:
            raise RuntimeError(_gc.NOT_BEGUN)
        cdef Stream s = <Stream>self._stream
        cdef Stream cur = <Stream>current_stream()
        if cur._ptr != s._ptr or cur.device_index != s.device_index:
            if cur.device_index != s.device_index:
                raise RuntimeError(_gc.DEVICE_SWITCHED.format(cur.device_index, s.device_index, s.device_index))
            raise RuntimeError(_gc.SAME_STREAM)
        if s._ptr == _gc.PER_THREAD and _gc.thread_id() != self._thread:
            raise RuntimeError(_gc.PTDS_WRONG_THREAD.format("capture_end()"))
        c_ensure_init()
        cdef void* g = NULL
        cdef size_t n = 0
        cdef int err
        cdef int orig = c_enter_device(_t, self._dev)
        cdef cudaStream_t p = <cudaStream_t>s._ptr
        cdef int status = 0
        with nogil:
            err = _t.cudaStreamEndCapture(p, <cudaGraph_t*>&g)
        if err:
            # A capture CUDA did not end (wrong thread, a failed call) is still this graph's to end (reset()).
            _t.cudaGetLastError()
            self._capturing = not _t.cudaStreamIsCapturing(p, &status) and status != 0
        else:
            self._capturing = False
        if not self._capturing:
            _gc.close_capture(self._uses)
            if err:             # no graph: nothing of the capture is used
                _gc.drop_uses(self._uses)
                self._uses = None
        _check_leave(err, orig)
        if g == NULL:
            raise RuntimeError(_gc.INVALID)
        self._graph = <uintptr_t>g
        self._has_graph = True
        self._ended = True
        if _t.cudaGraphGetNodes(<cudaGraph_t>g, NULL, &n):
            _t.cudaGetLastError()        # only for the empty-graph warning
        elif n == 0:
            _gc.warn(_gc.EMPTY, 2)
        if not self._keep:
            self.instantiate()
            if not _gc.debug_enabled():
                _relaxed_destroy(False, self._graph)
                self._has_graph = False
                self._graph = 0

    def instantiate(self):
        """Make the executable graph (called by capture_end() unless keep_graph; with keep_graph, again
        after changes).  RuntimeError before capture_end()."""
        if not self._ended:
            raise RuntimeError(_gc.NOT_ENDED)
        if self._has_exec:
            if not self._keep:
                raise RuntimeError(_gc.KEEP_ONLY)
            _relaxed_destroy(True, self._exec)
            self._has_exec = False
            self._exec = 0
        c_ensure_init()
        cdef void* x = NULL
        cdef int err
        cdef int orig = c_enter_device(_t, self._dev)
        cdef cudaGraph_t g = <cudaGraph_t>self._graph
        with nogil:
            err = _t.cudaGraphInstantiateWithFlags(<cudaGraphExec_t*>&x, g, GRAPH_INSTANTIATE_FLAGS)
        _check_leave(err, orig)
        self._exec = <uintptr_t>x
        self._has_exec = True

    def replay(self):
        """Launch the executable graph on the current stream of the capture device (instantiating it first
        with keep_graph).  RuntimeError without a successful capture."""
        if not self._has_exec:
            # Only a keep_graph graph is instantiated here (torch's replay()); without keep_graph, capture_end()
            # does it, and a replay on another thread must not race it (a second executable graph, leaked).
            if not (self._ended and self._keep):
                raise RuntimeError(_gc.NO_REPLAY)
            self.instantiate()
        if self._stale:
            raise _gc.freed_error()
        if c_uninitialized():
            c_ensure_init()  # the fork check
        cdef PyObject* st = accel_stream_tls
        if st == NULL:
            _tstate()
            st = accel_stream_tls
        cdef int d = self._dev
        cdef cudaStream_t p = <cudaStream_t>(<Stream>PyList_GET_ITEM((<_ThreadState>st).cur, d))._ptr
        cdef cudaGraphExec_t x = <cudaGraphExec_t>self._exec
        cdef int orig = c_enter_device(_t, d)
        cdef int err
        with nogil:
            err = _t.cudaGraphLaunch(x, p)
        if err or orig >= 0:
            _check_leave(err, orig)
        u = self._uses
        if u is not None and (not u.launched or u.remade):
            _gc.launched(u)             # the graph's own allocations are made by its replays from now on

    def reset(self):
        """Destroy the graph and the executable graph (ending a capture still under way) and release the
        graph's memory; the instance can capture again.  Failures are warnings, as torch's."""
        self._reset()

    cdef int _reset(self) except -1:
        cdef void* g = NULL
        cdef int orig = -1
        cdef int err, status = 0
        cdef cudaStream_t p
        if _t == NULL:
            return 0
        self._ended = False                 # first: a replay on another thread must not instantiate again
        if self._capturing:
            if (<Stream>self._stream)._ptr == _gc.PER_THREAD and _gc.thread_id() != self._thread:
                raise RuntimeError(_gc.PTDS_WRONG_THREAD.format("reset()"))
            p = <cudaStream_t>(<Stream>self._stream)._ptr
            if not c_uninitialized():
                orig = c_enter_device(_t, self._dev)
            err = _t.cudaStreamEndCapture(p, <cudaGraph_t*>&g)
            if err:
                _t.cudaGetLastError()
                if not _t.cudaStreamIsCapturing(p, &status) and status != 0:
                    # CUDA did not end it (another thread's capture, a failed call): it stays this graph's
                    c_leave_device(orig)
                    if err == _gc.WRONG_THREAD:
                        raise RuntimeError(_gc.RESET_WRONG_THREAD)
                    raise error(err)
                _t.cudaGetLastError()
            elif g != NULL:
                _relaxed_destroy(False, <uintptr_t>g)
            self._capturing = False
            c_leave_device(orig)
        if self._uses is not None:
            _gc.close_capture(self._uses)
            for d, addr in _gc.take_remade(self._uses):    # (made again by a replay after the user's free)
                orig = c_enter_device(_t, d)
                if _relaxed_free(<uintptr_t>addr):
                    _gc.warn("CUDA warning: cudaFree of a graph allocation failed in CUDAGraph.reset()")
                c_leave_device(orig)
            _gc.drop_uses(self._uses)
            self._uses = None
        self._stale = False
        if self._has_graph:
            self._has_graph = False
            if _relaxed_destroy(False, self._graph):
                _gc.warn("CUDA warning: cudaGraphDestroy failed in CUDAGraph.reset()", 2)
        if self._has_exec:
            self._has_exec = False
            if _relaxed_destroy(True, self._exec):
                _gc.warn("CUDA warning: cudaGraphExecDestroy failed in CUDAGraph.reset()", 2)
        self._graph = 0
        self._exec = 0
        return 0

    def _buffer_freed(self):
        """A DeviceBuffer this graph's nodes use was freed (accel._graph_common.buffer_freed): replays raise."""
        self._stale = True

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
        cdef bytes raw = _gc.dot_path(debug_path)
        cdef int err
        if not (_gc.debug_enabled() or self._keep):
            _gc.warn(_gc.DEBUG_OFF, 2)
            return
        _gc.warn("DEBUG: calling debug_dump()", 2)
        if not self._has_graph:
            return
        _gc.warn(f"DEBUG: calling cudaGraphDebugDotPrint() with {debug_path}", 2)
        cdef const char* path = raw
        cdef cudaGraph_t g = <cudaGraph_t>self._graph
        cdef unsigned int flags = _gc.DOT_FLAGS_VERBOSE
        with nogil:                         # writing the file may block (a FIFO, a full pipe)
            err = _t.cudaGraphDebugDotPrint(g, <const void*>path, flags)
        if err:
            _t.cudaGetLastError()
            _gc.warn(f"CUDA warning: {_t.cudaGetErrorString(err).decode()} (cudaGraphDebugDotPrint)", 2)
        if not self._keep:
            self._has_graph = False
            _relaxed_destroy(False, self._graph)
            self._graph = 0

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

    def __dealloc__(self):
        # In a forked child of a process that used CUDA the handles are the parent's, and the driver refuses the
        # child: they are dropped, as the streams' and buffers' are there.
        if (self._capturing or self._has_graph or self._has_exec) and not c_uninitialized():
            try:
                self._reset()
            except BaseException as e:  # a finaliser must not raise; the handles are the process's anyway
                try:
                    _gc.warn(_gc.DEL_OPEN.format(e), 2)
                except BaseException:  # interpreter shutdown
                    pass
