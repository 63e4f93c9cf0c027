"""Event of accel._python._stream (it needs Stream, the guard helpers and the current-stream state);
twin of accel/_native/_stream_event.pxi.  Import it through accel._python._stream."""
import ctypes
import threading
from ctypes import c_float, c_int, c_size_t, c_void_p

from accel import _stream_common as _sc
from accel._python import _cudart
from accel._python import _device as _dm
from accel._python import _stream as _s
from accel._python._device import _c_ensure_init, _c_exchange_device, _c_maybe_set_device, _c_set_device

_NOT_READY = _sc.NOT_READY
_DISABLE_TIMING, _INTERPROCESS = _sc.EVENT_DISABLE_TIMING, _sc.EVENT_INTERPROCESS
_enter, _leave, _check, _current_stream, _Stream = _s._enter, _s._leave, _s._check, _s.current_stream, _s.Stream
_tstate_cur, _out_of_range, _stls, _dtls = _s._tstate_cur, _sc.out_of_range, _s._tls, _dm._tls


def _bind_record(e, s):
    """cudaEventRecord, unprototyped (``c_void_p`` handles: Event._hp, Stream._pp), bound on first use."""
    global _record
    _record = _cudart._unprototyped("cudaEventRecord")
    return _record(e, s)


def _bind_query(e):
    """cudaEventQuery, unprototyped (Event._hp), bound on first use."""
    global _query
    _query = _cudart._unprototyped("cudaEventQuery")
    return _query(e)


_record, _query = _bind_record, _bind_query
_install_lock = threading.Lock()  # makes an Event's lazy creation create-once
_osa = object.__setattr__  # writes an Event's fields (Event.__setattr__ refuses every assignment)
# The compiled twin's cdef fields (not attributes there) and its data attributes (properties).
_EVENT_FIELDS = frozenset(("_h", "_hp", "_dev", "_flags", "_created"))
_EVENT_DATA = frozenset(("cuda_event", "event_id", "device", "_as_parameter_"))


class Event:
    """A CUDA event, created lazily on its first record (on the stream's device).  Flags as torch:
    timing off unless ``enable_timing``; ``blocking`` syncs by blocking; ``interprocess`` for IPC;
    ``external``: recorded / waited inside a graph capture as event record / wait nodes (torch's)."""

    # Instance attributes over class defaults (not slots): the defaults are what a bare
    # ``Event.__new__(Event)`` reads, as the compiled twin's zeroed object does.  Immutable like the
    # compiled twin's: __setattr__ refuses every assignment; the module writes fields with _osa.
    __slots__ = ("__dict__", "__weakref__")
    _h = _dev = _flags = 0
    _hp = None  # _h as a c_void_p, what the unprototyped hot-path calls take
    _created = False

    def __init__(self, enable_timing=False, blocking=False, interprocess=False, external=False):
        _osa(self, "_flags", (_sc.EVENT_BLOCKING_SYNC if blocking else 0) |
             (0 if enable_timing else _DISABLE_TIMING) | (_INTERPROCESS if interprocess else 0) |
             (_sc.EVENT_EXTERNAL if external else 0))

    def __setattr__(self, name, value):
        if type(self) is Event or name in _EVENT_FIELDS or name in _EVENT_DATA:
            if name == "__class__" and not isinstance(value, type):
                object.__setattr__(self, name, value)  # raises CPython's own TypeError, as the compiled twin
            raise _s._frozen(self, name, Event, _EVENT_FIELDS, _EVENT_DATA)
        object.__setattr__(self, name, value)  # a user subclass's own attribute, as on the compiled twin

    def __delattr__(self, name):
        if name == "__class__":
            object.__delattr__(self, name)  # raises CPython's own TypeError, as the compiled twin
        if type(self) is Event or name in _EVENT_FIELDS or name in _EVENT_DATA:
            raise _s._frozen(self, name, Event, _EVENT_FIELDS, _EVENT_DATA)
        object.__delattr__(self, name)

    def _create(self, d):
        # Create-once: threads racing into the first record each make a handle while the GIL is released;
        # the first to take the lock installs its own, the others destroy theirs.
        out = c_size_t()
        orig = _enter(d)
        t = _s._T
        err = t.cudaEventCreateWithFlags(out, self._flags & ~_sc.EVENT_EXTERNAL)  # accel's own bit
        if not err:
            with _install_lock:
                lost = self._created
                if not lost:
                    _osa(self, "_h", out.value)
                    _osa(self, "_hp", c_void_p(out.value))
                    _osa(self, "_dev", d)
                    _osa(self, "_created", True)
            if lost and t.cudaEventDestroy(out.value):
                t.cudaGetLastError()
        _check(err, orig)

    def record(self, stream=None):
        """Record the event on ``stream`` (None: the current stream).  RuntimeError if the event was
        created on another device than the stream's."""
        here = stream is None  # current_stream() leaves the runtime device on its device
        if here:
            # current_stream(), inlined: this is the hot path
            if not _dm._initialized and _dm._init_hook is not None:
                _c_ensure_init()
            d = _dtls.target if _dm._targets else -1
            if d >= 0:
                _c_set_device(d, False)
            else:
                v, vp = _dm._tls.dev_out
                err = _dm._get(vp)
                if err:
                    raise _cudart._error(err)
                d = v.value
            cur = _stls.cur
            if cur is None:
                cur = _tstate_cur()
            if d >= _s._ndev:
                raise _out_of_range(d, _s._ndev)
            s = cur[d]
        else:
            s = stream if isinstance(stream, _Stream) else _s._as_stream(stream)
            if not _dm._initialized and _dm._init_hook is not None:
                _c_ensure_init()  # the fork check (current_stream() made it when ``here``)
        d = s.device_index
        if not self._created:
            self._create(d)
            if self._dev != d:  # another thread created it first, on another device
                raise RuntimeError(f"Event device {self._dev} does not match recording stream's device {d}.")
        elif self._dev != d:
            raise RuntimeError(f"Event device {self._dev} does not match recording stream's device {d}.")
        if here:
            orig = -1
        else:
            # _enter(d), inlined
            v, vp = _dm._tls.dev_out
            err = _dm._get(vp)
            if err:
                raise _cudart._error(err)
            orig = -1 if v.value == d else _c_exchange_device(d)
        if self._flags & _sc.EVENT_EXTERNAL:
            err = _s._T.cudaEventRecordWithFlags(self._h, s._ptr, 1)  # cudaEventRecordExternal
        else:
            err = _record(self._hp, s._pp)
        if err or orig >= 0:
            _check(err, orig)

    def wait(self, stream=None):
        """Make future work on ``stream`` (None: the current stream) wait for the latest record; a
        never-recorded event is a no-op."""
        here = stream is None
        s = _current_stream() if here else stream if isinstance(stream, _Stream) else _s._as_stream(stream)
        if not self._created:
            return
        if not here and not _dm._initialized and _dm._init_hook is not None:
            _c_ensure_init()
        orig = -1 if here else _enter(s.device_index)
        flags = 0
        if self._flags & _sc.EVENT_EXTERNAL:
            st = c_int()  # cudaEventWaitExternal is only valid during capture
            if not _s._T.cudaStreamIsCapturing(s._ptr, st) and st.value == 1:
                flags = 1
            _s._T.cudaGetLastError()
        _check(_s._T.cudaStreamWaitEvent(s._ptr, self._h, flags), orig)

    def query(self):
        """True if the latest record was reached (or the event was never recorded), else False."""
        if not self._created:
            return True
        if not _dm._initialized and _dm._init_hook is not None:
            _c_ensure_init()
        err = _query(self._hp)
        if err == 0:
            return True
        if err == _NOT_READY:
            _s._T.cudaGetLastError()
            return False
        raise _cudart._error(err)

    def synchronize(self):
        """Wait (GIL released) until the latest record is reached; no-op if never recorded."""
        if not self._created:
            return
        if not _dm._initialized and _dm._init_hook is not None:
            _c_ensure_init()
        err = _s._T.cudaEventSynchronize(self._h)
        if err:
            raise _cudart._error(err)

    def elapsed_time(self, end_event):
        """Milliseconds from this event to ``end_event``.  ValueError unless both have enable_timing=True
        and were recorded; RuntimeError unless both completed."""
        if not isinstance(end_event, Event):
            raise TypeError(f"expected an accel.cuda.Event, got {type(end_event).__name__}: {end_event!r}")
        if (self._flags | end_event._flags) & _DISABLE_TIMING:
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._created and end_event._created):
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        if not (self.query() and end_event.query()):
            raise RuntimeError("Both events must be completed before calculating elapsed time.")
        ms = c_float()
        orig = _enter(self._dev)
        _check(_s._T.cudaEventElapsedTime(ms, self._h, end_event._h), orig)
        return ms.value

    def ipc_handle(self):
        """The 64-byte IPC handle (bytes) of an ``interprocess=True`` event, created on the current
        device if needed; CudaError for a non-interprocess event."""
        if not self._created:
            self._create(_s._resolve(None))
        h = _cudart._IpcEventHandle()
        orig = _enter(self._dev)
        _check(_s._T.cudaIpcGetEventHandle(h, self._h), orig)
        return ctypes.string_at(ctypes.addressof(h), _sc.IPC_HANDLE_SIZE)

    @classmethod
    def from_ipc_handle(cls, device, handle):
        """Open the event of an IPC ``handle`` (64 bytes) on ``device``; ValueError for a wrong size,
        CudaError for a handle the runtime rejects."""
        raw = _sc.ipc_bytes(handle)
        d = _s._resolve(device)
        h = _cudart._IpcEventHandle.from_buffer_copy(raw)
        ev = cls.__new__(cls)
        _osa(ev, "_flags", _DISABLE_TIMING | _INTERPROCESS)
        out = c_size_t()
        orig = _enter(d)
        err = _s._T.cudaIpcOpenEventHandle(out, h)
        if not err:
            _osa(ev, "_h", out.value)
            _osa(ev, "_hp", c_void_p(out.value))
            _osa(ev, "_dev", d)
            _osa(ev, "_created", True)
        _check(err, orig)
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

    def __del__(self):
        if not getattr(self, "_created", False):
            return
        try:
            t = _s._T
            r = c_int()
            # Destroy under a guard on the event's device, so that no context is created elsewhere.
            if t.cudaGetDevice(r) or r.value == self._dev:
                t.cudaEventDestroy(self._h)
                t.cudaGetLastError()
                return
            try:
                orig = _c_exchange_device(self._dev)
            except Exception:  # noqa: BLE001 - the guard failed: destroy anyway rather than leak
                t.cudaEventDestroy(self._h)
                t.cudaGetLastError()
                return
            t.cudaEventDestroy(self._h)
            t.cudaGetLastError()
            _c_maybe_set_device(orig)
        except Exception:  # noqa: BLE001 - interpreter shutdown, or a failed restore: nothing to report to
            pass


Event.__module__ = _s.__name__  # it is accel._python._stream.Event, as the compiled twin's is accel._native._stream.Event
