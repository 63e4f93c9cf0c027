"""Finds and opens the CUDA runtime, driver and NVML libraries (SPEC 1.2); shared by both twins.

Nothing here binds a function: it only decides *which* file to dlopen, opens it once (the ctypes
``CDLL`` handle is the one both twins use), and remembers where it looked.  Search order for the
runtime: ``ACCEL_CUDART`` (a path, or ``emu``) -> a libcudart already loaded in this process ->
pip wheels -> ``$CONDA_PREFIX/lib`` -> ``CUDA_HOME`` / ``CUDA_PATH`` -> the system loader, each
trying the sonames newest first.  ``ACCEL_DEBUG_LOADING=1`` logs every attempt to stderr.
"""
import ctypes
import os
import sys
import threading

from accel.errors import LibraryNotFoundError

__all__ = ["Library", "cudart", "driver", "nvml", "emu_path", "package_file", "search_cudart", "CUDART_SONAMES"]

CUDART_SONAMES = ("libcudart.so.13", "libcudart.so.12")
DRIVER_SONAMES = ("libcuda.so.1",)
NVML_SONAMES = ("libnvidia-ml.so.1",)
_WHEEL_DIRS = (("nvidia", "cu13", "lib"), ("nvidia", "cuda_runtime", "lib"))
_EMU_NAME = "libaccel_cudart_emu.so"


class Library:
    """An opened shared library: ``path`` (resolved file), ``how`` (which search step found it),
    ``cdll`` (the ctypes handle), ``handle`` (the dlopen handle as an int), ``emulated``."""

    __slots__ = ("path", "how", "cdll", "handle", "emulated")

    def __init__(self, path, how, cdll, emulated=False):
        self.path = path
        self.how = how
        self.cdll = cdll
        self.handle = cdll._handle
        self.emulated = emulated

    def __repr__(self):
        return f"Library({self.path!r}, how={self.how!r})"


def _debug(msg):
    if os.environ.get("ACCEL_DEBUG_LOADING", "") not in ("", "0"):
        print(f"accel loading: {msg}", file=sys.stderr, flush=True)


def package_file(*parts):
    """Path of the file ``accel/<parts...>`` of this install: in the package's directory; in a meson-python
    editable install (``pip install --no-build-isolation -e .``: the package is the checkout's accel/ and what
    the build makes stays in the build directory, rebuilt on import) where the editable loader's install plan
    puts it.  The package-directory path when neither has it."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), *parts)
    if os.path.exists(here):
        return here
    spec = getattr(sys.modules.get("accel"), "__spec__", None)
    reader = getattr(getattr(spec, "loader", None), "get_resource_reader", None)
    if reader is None or not type(spec.loader).__module__.endswith("_editable_loader"):
        return here
    try:
        found = reader("accel").files().joinpath(*parts)
    except (OSError, TypeError, ValueError):
        return here
    return os.fspath(found) if isinstance(found, os.PathLike) and os.path.exists(found) else here


def emu_path():
    """Path of the bundled emulated runtime (it may be absent in a -Dnative=false install)."""
    return package_file("_emu", _EMU_NAME)


def _loaded_in_process(stem):
    """Paths of already-mapped libraries whose file name starts with ``stem`` (Linux /proc)."""
    found = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rsplit(None, 1)[-1] if "/" in line else ""
                if os.path.basename(path).startswith(stem) and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found


def _resolved_path(cdll, fallback):
    """The file the loader actually mapped for ``cdll`` (dlinfo through /proc), else ``fallback``."""
    if os.path.isabs(fallback):
        return os.path.realpath(fallback)
    stem = fallback.split(".so")[0] + ".so"
    for path in _loaded_in_process(stem):
        return path
    return fallback


def _candidates(sonames, env_var, allow_emu):
    """Yield (how, path-or-soname) in search order."""
    override = os.environ.get(env_var, "").strip() if env_var else ""
    if override:
        if allow_emu and override == "emu":
            yield f"{env_var}=emu (the bundled emulated runtime)", emu_path()
        else:
            yield f"{env_var}={override}", override
        return  # an explicit override is never second-guessed
    stem = sonames[0].split(".so")[0] + ".so"
    for path in _loaded_in_process(stem):
        yield "already loaded in this process", path
    wheel_roots = [e for e in sys.path if e and os.path.isdir(os.path.join(e, "nvidia"))]
    if not wheel_roots:
        yield "pip wheels", "no 'nvidia' package directory on sys.path"
    for entry in wheel_roots:
        for parts in _WHEEL_DIRS:
            for so in sonames:
                yield f"pip wheel ({os.path.join(*parts)})", os.path.join(entry, *parts, so)
    conda = os.environ.get("CONDA_PREFIX")
    if conda:
        for so in sonames:
            yield "$CONDA_PREFIX/lib", os.path.join(conda, "lib", so)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root:
            for sub in ("lib64", "lib"):
                for so in sonames:
                    yield f"${var}/{sub}", os.path.join(root, sub, so)
    for so in sonames:
        yield "system loader", so


def _open(what, sonames, env_var, allow_emu=False):
    searched = []
    seen = set()
    for how, cand in _candidates(sonames, env_var, allow_emu):
        if cand in seen:
            continue
        seen.add(cand)
        if how == "pip wheels":
            searched.append(f"pip wheels: {cand}")
            continue
        if cand == emu_path() and not os.path.exists(cand):
            searched.append(f"{cand} [{how}]: the emulated runtime is not part of this install "
                            "(it was built with -Dnative=false)")
            continue
        if os.path.isabs(cand) and not os.path.exists(cand):
            searched.append(f"{cand} [{how}]: no such file")
            _debug(f"{what}: {cand} [{how}]: no such file")
            continue
        try:
            cdll = ctypes.CDLL(cand, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as exc:
            searched.append(f"{cand} [{how}]: {exc}")
            _debug(f"{what}: {cand} [{how}]: {exc}")
            continue
        path = _resolved_path(cdll, cand)
        _debug(f"{what}: loaded {path} [{how}]")
        # The bundled emulator, or its libcudart.so.13 stand-in (accel.emu): both export the emulator API.
        emulated = os.path.basename(path) == _EMU_NAME or hasattr(cdll, "accelEmuDeviceCount")
        return Library(path, how, cdll, emulated=emulated)
    raise LibraryNotFoundError(what, searched)


class _Once:
    """Open a library once per process; remember the failure too (same error every time)."""

    def __init__(self, opener):
        self._opener = opener
        self._lock = threading.Lock()
        self._result = None
        self._error = None

    def __call__(self):
        if self._result is not None:
            return self._result
        with self._lock:
            if self._result is None and self._error is None:
                try:
                    self._result = self._opener()
                except LibraryNotFoundError as exc:
                    self._error = exc
            if self._error is not None:
                raise self._error
            return self._result


def search_cudart():
    """Open the CUDA runtime following SPEC 1.2 (no caching; ``cudart()`` caches)."""
    return _open("CUDA runtime library (libcudart)", CUDART_SONAMES, "ACCEL_CUDART", allow_emu=True)


def _open_driver():
    rt = cudart()
    if rt.emulated:  # the emulator exports the driver entry points it emulates
        return rt
    return _open("CUDA driver library (libcuda)", DRIVER_SONAMES, "ACCEL_CUDA_DRIVER")


def _open_nvml():
    # On the emulated runtime NVML is the emulator's (the same devices and allocations), unless ACCEL_NVML
    # names a library.  The runtime is consulted only when it is already open or ACCEL_CUDART names one:
    # NVML must not be what first searches for (and caches) the runtime.
    if not os.environ.get("ACCEL_NVML", "").strip():
        rt = cudart._result
        if rt is None and os.environ.get("ACCEL_CUDART", "").strip():
            try:
                rt = cudart()
            except LibraryNotFoundError:
                rt = None
        if rt is not None and rt.emulated:
            return Library(rt.path, "the emulated runtime's NVML", rt.cdll, emulated=True)
    return _open("NVML library (libnvidia-ml)", NVML_SONAMES, "ACCEL_NVML")


#: The CUDA runtime ``Library`` (opened on first call; raises LibraryNotFoundError listing the search).
cudart = _Once(search_cudart)
#: The CUDA driver ``Library`` (the emulator itself when the runtime is emulated).
driver = _Once(_open_driver)
#: The NVML ``Library`` (the emulator's NVML when the runtime is emulated).
nvml = _Once(_open_nvml)
