"""Lazy initialisation, queued calls and fork poisoning for one device backend (backend-agnostic).

torch gives every accelerator module (torch.cuda, torch.mtia, ...) the same machinery, written out once
per module; accel has it once, here, and ``accel.cuda`` and ``accel.mtia`` each own one ``DeviceInit``:

- ``lazy_init()`` runs the backend's ``start`` once, under a lock, before the first device use; then the
  calls queued with ``lazy_call`` run in order (a failure raises the backend's Deferred...CallError
  naming the call site); a queued call may use the device again (re-entrant, same thread) or queue more.
- the fork handler is registered at the backend's first use (``register_fork_handler``), never at import,
  so a process that never touched the device stays fork-safe; in the forked child ``lazy_init`` raises
  ``"Cannot re-initialize <NAME> in forked subprocess. ..."`` (torch's text).

Device arguments (``"cuda:1"``, ``"mtia"``, device objects, ...) are parsed by ``DeviceArgs`` below,
shared the same way.
"""
import builtins
import os
import re
import threading
import traceback

from accel import _stream_common as _sc

__all__ = ["DeviceInit", "DeviceArgs", "GuardEntries"]


class DeviceInit:
    """The init state of one backend.

    ``name``: the backend's name in messages ("CUDA", "MTIA"); ``start()``: the backend's own
    initialisation (raises to refuse it; run under the lock, once per successful init);
    ``deferred_error``: the exception class for a failed queued call; ``on_state(initialized)``: told
    when the state flips (after init, and False in a forked child).
    """

    def __init__(self, name, start, deferred_error, on_state=None):
        self.name = name
        self.start = start
        self.deferred_error = deferred_error
        self.on_state = on_state
        self.initialized = False
        self.in_bad_fork = False
        self.fork_handler_registered = False
        self.lock = threading.RLock()  # re-entrant: a queued call may queue another
        self.tls = threading.local()
        self.queued_calls = []  # (callable, formatted call-site traceback)

    @property
    def fork_message(self):
        return (f"Cannot re-initialize {self.name} in forked subprocess. To use {self.name} with "
                "multiprocessing, you must use the 'spawn' start method")

    def _after_fork_in_child(self):
        self.in_bad_fork = True
        self.initialized = False
        if self.on_state is not None:
            self.on_state(False)

    def register_fork_handler(self):
        """Poison forked children from now on (called at the backend's first use)."""
        if not self.fork_handler_registered:
            self.fork_handler_registered = True
            os.register_at_fork(after_in_child=self._after_fork_in_child)

    def is_initialized(self):
        """Whether the backend is initialised in this process (False in a forked child)."""
        return self.initialized and not self.in_bad_fork

    def lazy_call(self, callable, seed=False, seed_all=False):
        """Run ``callable()`` now if initialised, else at initialisation, in order (the call site is kept
        for the deferred error).  ``seed`` / ``seed_all``: torch's keywords for its RNG-seeding calls;
        accel has no RNG, so such calls queue and run in order like any other (torch keeps only the latest
        seed / seed_all call and runs it after the others)."""
        if not builtins.callable(callable):
            raise TypeError(f"_lazy_call expects a callable, got {type(callable).__name__}: {callable!r}")
        with self.lock:
            if self.is_initialized():
                callable()
            else:
                self.queued_calls.append((callable, traceback.format_stack()))

    def lazy_init(self):
        """Initialise once (thread-safe, re-entrant from queued calls): RuntimeError in a forked child,
        what ``start`` raises, the deferred error if a queued call fails (the queue is then kept)."""
        if self.is_initialized() or hasattr(self.tls, "is_initializing"):
            return
        with self.lock:
            if self.is_initialized():
                return
            if self.in_bad_fork:
                raise RuntimeError(self.fork_message)
            self.start()
            self.tls.is_initializing = True
            try:
                for queued_call, orig_traceback in self.queued_calls:
                    try:
                        queued_call()
                    except Exception as e:
                        msg = (f"{self.name} call failed lazily at initialization with error: {e}\n\n"
                               f"{self.name} call was originally invoked at:\n\n{''.join(orig_traceback)}")
                        raise self.deferred_error(msg) from e
                self.queued_calls = []
            finally:
                delattr(self.tls, "is_initializing")
            self.initialized = True
            if self.on_state is not None:
                self.on_state(True)


class GuardEntries:
    """The ``prev_idx`` bookkeeping of a re-entrant device guard (device_interface.DeviceGuard,
    accel.mtia.device, accel.accelerator.device_index): ``_entered(prev)`` once the switch succeeded (a
    failed entry changes nothing), ``_leaving()`` gives the device to restore.  The same guard may be
    re-entered while entered: each exit restores the device of its own entry."""

    prev_idx = -1
    _depth = 0     # entries not exited yet
    _outer = None  # the prev_idx of the outer entries while re-entered (a list once needed)

    def _entered(self, prev):
        if self._depth:
            if self._outer is None:
                self._outer = []
            self._outer.append(self.prev_idx)
        self._depth += 1
        self.prev_idx = prev

    def _leaving(self):
        prev = self.prev_idx
        if self._depth > 1:
            self.prev_idx = self._outer.pop()
        if self._depth:
            self._depth -= 1
        return prev


_DEVICE_STRING = re.compile(r"([a-zA-Z_]+)(?::([1-9][0-9]*|0))?\Z")


class DeviceArgs:
    """torch's ``_get_device_index`` for one device type ``kind`` ("cuda", "mtia"): ints as is (unchecked),
    anything with ``__index__``, ``"<kind>"`` / ``"<kind>:N"`` (``"cpu"`` with allow_cpu, giving -1),
    ``context_type`` instances (their ``.idx``), and other libraries' device objects: ``.type``/``.index``
    (torch.device), ``.id`` (cupy.cuda.Device), ``.device_id`` (cuda.core Device).  A bool is rejected
    (TypeError).  ``current()`` gives the current index for None with ``optional`` (None: no device)."""

    def __init__(self, kind, current, context_type=None):
        self.kind = kind
        self.current = current
        self.context_type = context_type
        self.expected = (f"an int (not a bool), '{kind}', '{kind}:N', None, or a device object with "
                         ".type/.index, .id or .device_id")

    def parse_string(self, s):
        """(type, index or None) of a device string like torch.device(str); ValueError naming ``s``."""
        m = _DEVICE_STRING.match(s)
        if m is None:
            raise ValueError(f"Invalid device string: {s!r}: expected '{self.kind}', '{self.kind}:N' (N >= 0, "
                             "no leading zeros) or 'cpu'")
        return m.group(1), (int(m.group(2)) if m.group(2) is not None else None)

    def _from_typed(self, dev_type, index, device, allow_cpu):
        if not isinstance(dev_type, str):
            dev_type = getattr(dev_type, "name", str(dev_type)).lower()  # e.g. an enum
        if allow_cpu:
            if dev_type not in (self.kind, "cpu"):
                raise ValueError(f"Expected a {self.kind} or cpu device, but got: {device}")
        elif dev_type != self.kind:
            raise ValueError(f"Expected a {self.kind} device, but got: {device}")
        if dev_type == "cpu":
            return -1
        if index is not None and type(index) is not int:
            index = self._as_int(index, device)
        return index

    @staticmethod
    def _as_int(value, device):
        if type(value) is int:
            return value
        if isinstance(value, bool) or not hasattr(type(value), "__index__"):
            raise TypeError(f"Expected an integer device index, but got {type(value).__name__}: {value!r} "
                            f"(from {device!r})")
        return _sc.index_of(value, "device index")

    def index_or_none(self, device, allow_cpu=False):
        """The index ``device`` names, or None where it names none (None, "<kind>", a device object whose
        index is None).  TypeError for an unsupported type, ValueError for a bad value."""
        if type(device) is int:
            return device
        if isinstance(device, str):
            dev_type, idx = self.parse_string(device)
            return self._from_typed(dev_type, idx, device, allow_cpu)
        if self.context_type is not None and isinstance(device, self.context_type):
            return device.idx
        if isinstance(device, bool):
            raise TypeError(f"Expected a {self.kind.upper()} device: {self.expected}; got bool: {device!r}")
        if device is None:
            return None
        if hasattr(type(device), "__index__"):
            return _sc.index_of(device, "device index")
        if hasattr(device, "type") and hasattr(device, "index"):
            return self._from_typed(device.type, device.index, device, allow_cpu)
        if hasattr(device, "device_id"):
            return self._as_int(device.device_id, device)
        if hasattr(device, "id"):
            return self._as_int(device.id, device)
        raise TypeError(f"Expected a {self.kind.upper()} device: {self.expected}; got {type(device).__name__}: "
                        f"{device!r}")

    def get_device_index(self, device, optional=False, allow_cpu=False):
        """torch's _get_device_index (see the class docstring)."""
        if type(device) is int:
            return device
        idx = self.index_or_none(device, allow_cpu)
        if idx is None:
            if optional:
                return self.current()
            raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
        return idx
