# Event: included by _stream.pyx (it needs Stream, the guard helpers and the current-stream state).

@cython.auto_pickle(False)
cdef class Event:
    """Event(enable_timing=False, blocking=False, interprocess=False, external=False)
--

    A CUDA event, created lazily on its first record (on the stream's device).  Flags as torch:
    timing off unless ``enable_timing``; ``blocking`` syncs by blocking; ``interprocess`` for IPC;
    ``external``: recorded / waited inside a graph capture as event record / wait nodes (torch's)."""

    cdef uintptr_t _h
    cdef int _dev          # the event's device once created
    cdef unsigned int _flags
    cdef bint _created
    cdef object __weakref__   # weak references, as torch's Event

    def __init__(self, enable_timing=False, blocking=False, interprocess=False, external=False):
        self._flags = ((_sc.EVENT_BLOCKING_SYNC if blocking else 0) |
                       (0 if enable_timing else DISABLE_TIMING) | (INTERPROCESS if interprocess else 0) |
                       (_sc.EVENT_EXTERNAL if external else 0))

    cdef int _create(self, int d) except -1:
        # Create-once: threads racing into the first record each make a handle while the GIL is released;
        # the first to return installs its own (check and store hold the GIL), the others destroy theirs.
        cdef uintptr_t h = 0
        cdef int err
        cdef unsigned int flags = self._flags & ~_sc.EVENT_EXTERNAL   # accel's own bit, not a CUDA flag
        cdef int orig = c_enter_device(_t, d)
        with nogil:
            err = _t.cudaEventCreateWithFlags(<cudaEvent_t*>&h, flags)
        if err:
            e = error(err)
            c_leave_device(orig)
            raise e
        if self._created:
            if _t.cudaEventDestroy(<cudaEvent_t>h):
                _t.cudaGetLastError()
        else:
            self._h = h
            self._dev = d
            self._created = True
        c_leave_device(orig)
        return 0

    def record(self, stream=None):
        """Record the event on ``stream`` (None: the current stream).  RuntimeError if the event was
        created on another device than the stream's."""
        cdef Stream s
        cdef bint here = stream is None  # current_stream() leaves the runtime device on its device
        if here:
            s = <Stream>current_stream()
        elif isinstance(stream, Stream):
            s = <Stream>stream
        else:
            s = _as_stream(stream)
        cdef int d = s.device_index, err
        if not here:
            c_ensure_init()  # the fork check (current_stream() made it when ``here``)
        if not self._created:
            self._create(d)
            if self._dev != d:  # another thread created it first, on another device
                raise RuntimeError(f"Event device {self._dev} does not match recording stream's device {d}.")
        elif self._dev != d:
            raise RuntimeError(f"Event device {self._dev} does not match recording stream's device {d}.")
        cdef int orig = -1 if here else c_enter_device(_t, d)
        cdef cudaEvent_t e = <cudaEvent_t>self._h
        cdef cudaStream_t p = <cudaStream_t>s._ptr
        if self._flags & _EXTERNAL:
            with nogil:
                err = _t.cudaEventRecordWithFlags(e, p, 1)   # cudaEventRecordExternal
        else:
            with nogil:
                err = _t.cudaEventRecord(e, p)
        if err:
            ex = error(err)
            c_leave_device(orig)
            raise ex
        c_leave_device(orig)

    def wait(self, stream=None):
        """Make future work on ``stream`` (None: the current stream) wait for the latest record; a
        never-recorded event is a no-op."""
        cdef Stream s
        cdef bint here = stream is None
        if here:
            s = <Stream>current_stream()
        elif isinstance(stream, Stream):
            s = <Stream>stream
        else:
            s = _as_stream(stream)
        if not self._created:
            return
        if not here:
            c_ensure_init()
        cdef int err, capturing = 0
        cdef unsigned int flags = 0
        cdef int orig = -1 if here else c_enter_device(_t, s.device_index)
        cdef cudaEvent_t e = <cudaEvent_t>self._h
        cdef cudaStream_t p = <cudaStream_t>s._ptr
        if self._flags & _EXTERNAL:
            # cudaEventWaitExternal is only valid during capture
            if not _t.cudaStreamIsCapturing(p, &capturing) and capturing == 1:
                flags = 1
            _t.cudaGetLastError()
        with nogil:
            err = _t.cudaStreamWaitEvent(p, e, flags)
        if err:
            ex = error(err)
            c_leave_device(orig)
            raise ex
        c_leave_device(orig)

    def query(self):
        """True if the latest record was reached (or the event was never recorded), else False."""
        if not self._created:
            return True
        c_ensure_init()
        cdef int err = _t.cudaEventQuery(<cudaEvent_t>self._h)
        if err == 0:
            return True
        if err == NOT_READY:
            _t.cudaGetLastError()
            return False
        raise error(err)

    def synchronize(self):
        """Wait (GIL released) until the latest record is reached; no-op if never recorded."""
        if not self._created:
            return
        c_ensure_init()
        cdef int err
        cdef cudaEvent_t e = <cudaEvent_t>self._h
        with nogil:
            err = _t.cudaEventSynchronize(e)
        if err:
            raise error(err)

    def elapsed_time(self, end_event):
        """Milliseconds from this event to ``end_event``.  ValueError unless both have enable_timing=True
        and were recorded; RuntimeError unless both completed."""
        if not isinstance(end_event, Event):
            raise TypeError(f"expected an accel.cuda.Event, got {type(end_event).__name__}: {end_event!r}")
        cdef Event other = <Event>end_event
        if (self._flags | other._flags) & DISABLE_TIMING:
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._created and other._created):
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        if not (self.query() and other.query()):
            raise RuntimeError("Both events must be completed before calculating elapsed time.")
        cdef float ms = 0
        cdef int orig = c_enter_device(_t, self._dev)
        cdef int err = _t.cudaEventElapsedTime(&ms, <cudaEvent_t>self._h, <cudaEvent_t>other._h)
        if err:
            ex = error(err)
            c_leave_device(orig)
            raise ex
        c_leave_device(orig)
        return ms

    def ipc_handle(self):
        """The 64-byte IPC handle (bytes) of an ``interprocess=True`` event, created on the current
        device if needed; CudaError for a non-interprocess event."""
        cdef IpcEventHandle h
        if not self._created:
            self._create(_resolve(None))
        cdef int orig = c_enter_device(_t, self._dev)
        cdef int err = _t.cudaIpcGetEventHandle(&h, <cudaEvent_t>self._h)
        if err:
            ex = error(err)
            c_leave_device(orig)
            raise ex
        c_leave_device(orig)
        return PyBytes_FromStringAndSize(h.reserved, _sc.IPC_HANDLE_SIZE)

    @classmethod
    def from_ipc_handle(cls, device, handle):
        """Open the event of an IPC ``handle`` (64 bytes) on ``device``; ValueError for a wrong size,
        CudaError for a handle the runtime rejects."""
        cdef bytes raw = _sc.ipc_bytes(handle)
        cdef int d = _resolve(device)
        cdef IpcEventHandle h
        cdef uintptr_t e = 0
        cdef int err
        memcpy(h.reserved, <const char*>raw, _sc.IPC_HANDLE_SIZE)
        cdef Event ev = cls.__new__(cls)
        ev._flags = DISABLE_TIMING | INTERPROCESS
        cdef int orig = c_enter_device(_t, d)
        with nogil:
            err = _t.cudaIpcOpenEventHandle(<cudaEvent_t*>&e, h)
        if err:
            ex = error(err)
            c_leave_device(orig)
            raise ex
        ev._h = e
        ev._dev = d
        ev._created = True
        c_leave_device(orig)
        return ev

    @property
    def device(self):
        """The event's device, None until it is created."""
        return _sc.cuda_device(self._dev) if self._created else None

    @property
    def cuda_event(self):
        """The raw cudaEvent_t as an int (0 until created)."""
        return self._h

    @property
    def event_id(self):
        """torch's other name of cuda_event: the raw cudaEvent_t as an int (0 until created)."""
        return self._h

    @property
    def _as_parameter_(self):
        return ctypes.c_void_p(self._h)

    def __repr__(self):
        if self._created:
            return f"<accel.cuda.Event {self._h:#x}>"
        return "<accel.cuda.Event uninitialized>"

    def __reduce__(self):
        """Refused (TypeError): share an event with ipc_handle() / Event.from_ipc_handle()."""
        raise TypeError(f"cannot pickle {self!r}: share it with ipc_handle() / Event.from_ipc_handle()")

    def __dealloc__(self):
        cdef int r = -1
        if not self._created or _t == NULL:
            return
        # Destroy under a guard on the event's device, so that no context is created elsewhere.
        if _t.cudaGetDevice(&r) or r == self._dev:
            _t.cudaEventDestroy(<cudaEvent_t>self._h)
            _t.cudaGetLastError()
            return
        try:
            orig = c_exchange_device(self._dev)
            _t.cudaEventDestroy(<cudaEvent_t>self._h)
            _t.cudaGetLastError()
            c_maybe_set_device(orig)
        except Exception:  # the guard failed: destroy anyway rather than leak the handle
            _t.cudaEventDestroy(<cudaEvent_t>self._h)
            _t.cudaGetLastError()
