"""The emulated CUDA runtime as a drop-in for other CUDA libraries (torch, cuda.core, any program).

accel ships stand-in libraries built from its emulator (``accel/_emu/standin``):

- ``libcudart.so.13``: soname and version node ``libcudart.so.13`` on every export, exporting every
  runtime symbol torch's CUDA libraries import (``accel/_emu/torch_cudart13_imports.txt``);
- ``libcudart.so.12`` (x86_64 and aarch64 builds), for torch's cu12 builds: soname and version node
  ``libcudart.so.12``, exporting every runtime symbol they import (``torch_cudart12_imports.txt``),
  ``cudaDeviceProp`` in the CUDA 12 layout and runtime version 12080; it holds no state of its own but
  calls into ``libcudart.so.13``, so both runtimes in one process are the same emulated devices;
- ``libcuda.so.1``: the driver API (``cuGetProcAddress_v2``, ``cuInit``, devices and attributes,
  primary and created contexts with a per-thread context stack, streams, events, memory, error names),
  found through its dependency on the runtime stand-in, so both share the emulator's one state;
- ``libnvJitLink.so.13``: nvJitLink for numba-cuda and cuda.core's linker, which links their PTX into
  accel's linked image (PTX texts in a container the emulator's loader accepts) where the real one
  makes a SASS cubin the emulator cannot execute; LTO-IR (numba-cuda's default) goes through the real
  nvJitLink's PTX output (``ACCEL_EMU_NVJITLINK``, ``real_nvjitlink_path``); SASS inputs are refused;
- ``libnvrtc.so.13`` (only when a real NVRTC is found: ``real_nvrtc_path``): the real NVRTC
  (``ACCEL_EMU_NVRTC`` names it), except that a compile for a real architecture (``-arch=sm_XX``) is
  done for ``compute_XX`` and its "cubin" is accel's linked image holding the PTX;
- ``ptxas`` (an executable): Triton's assembler under ``accel emu`` (``TRITON_PTXAS_PATH``, which
  ``environ`` sets with ``TRITON_LIBCUDA_PATH`` unless they are set): it writes accel's linked image
  holding Triton's PTX where the real one writes a SASS cubin, so Triton's kernels run on the emulator;
- ``libnvidia-ml.so.1``: NVML (``nvmlInit``, device count and handles by index, UUID or PCI bus id, name,
  UUID, serial, memory info that follows the emulator's allocations, utilisation, temperature, power,
  clocks, PCI info, compute and MIG mode, running processes, versions, error strings), what
  nvidia-ml-py, cuda.core's ``system`` and torch call; also found through the runtime stand-in.  It sees
  the machine's physical devices whatever ``CUDA_VISIBLE_DEVICES`` says, as the real NVML does.

What kind of GPU the devices are: ``ACCEL_EMU_PROFILE`` (``PROFILES``: h100, the default, a100, a10, l4,
t4, b200) for all of them, or a mixed machine such as ``h100:2,a100:2``.  Properties, attributes, NVML
and ``cudaMemGetInfo`` follow the profile.

What works on them: devices (count, current device, properties in the CUDA 13 layout, attributes,
PCI ids, UUIDs), streams (create/destroy/query/synchronize, priorities, flags, ids, waits, host
functions, callbacks), events (create/record/query/synchronize/elapsed time, IPC handles within the
process), memory accounting (cudaMalloc/cudaFree/cudaMemGetInfo, async copies and sets on emulated
memory, synchronous, 2D and peer copies), stream-ordered pools (cudaMallocAsync & co, created pools),
pinned host memory (cudaHostAlloc, cudaHostRegister), managed memory (host memory), IPC memory handles
within the process, and the driver API's memory and contexts on the same state (numba-cuda's driver
tests run on it), kernels given as PTX (modules, libraries, the linker, launches, stream capture and
graphs; the nvcc ``-cudart shared`` registration path), executed by the PTX engine (``accel/_emu/ptx``).
What does not: SASS-only images (torch's own kernels) are refused with CUDA_ERROR_NO_BINARY_FOR_GPU and
one stderr line naming the kernel; instructions the engine lacks fail the load naming the opcode; the
calls the emulator does not model return cudaErrorNotSupported (driver: CUDA_ERROR_NOT_SUPPORTED), and
with ``ACCEL_EMU_TRACE=1`` the first call of each is named on stderr.  Libraries that link the CUDA runtime statically (CuPy, ``cuda.bindings.runtime``) reach the
driver through NVIDIA's private export tables (``cuGetExportTable``), which the emulator does not
have: they do not run on it.

Use: ``python -m accel emu [--devices N] [--profile P] [--] COMMAND [ARGS...]`` runs COMMAND with the
stand-ins preloaded (``LD_PRELOAD`` beats the DT_RPATH in torch's libraries; a library already loaded
under the soname wins in cuda.pathfinder's search, and cuda.bindings looks functions up in the global
scope before it searches) and ``ACCEL_CUDART`` pointing at the same library, so accel in that process
shares the runtime.  The driver version the emulator reports (``ACCEL_EMU_DRIVER_VERSION``) is the
newest of CUDA 13.0 and those NVRTC's and nvJitLink's versions, so that PTX they generate is not newer
than the driver (cuda.core warns then).  In-process,
``activate(devices=N, profile=P)`` does the same before the CUDA library is imported.
"""
import ctypes
import functools
import importlib.metadata
import os
import re
import subprocess
import sys

from accel import _lib
from accel.errors import LibraryNotFoundError

__all__ = ["standin_dir", "cudart_path", "cudart12_path", "driver_path", "nvml_path", "nvjitlink_path",
           "nvrtc_shim_path", "real_nvrtc_path", "real_nvjitlink_path", "driver_version", "environ", "activate",
           "config_error", "MAX_DEVICES", "MAX_FAIL_POINTS", "PROFILES", "CUPY_UNSUPPORTED"]

#: The most devices the emulator models (ACCEL_EMU_DEVICES is 0..MAX_DEVICES): torch's device index is 8 bits
#: (its device count asserts "Too many CUDA devices, DeviceIndex overflowed" past 127).
MAX_DEVICES = 127
#: The most fault points ACCEL_EMU_FAIL may name.
MAX_FAIL_POINTS = 64

#: The device profiles of ACCEL_EMU_PROFILE (accel/_emu/emu_profiles.c): name -> (board, compute capability).
PROFILES = {"h100": ("NVIDIA H100 80GB HBM3", (9, 0)), "a100": ("NVIDIA A100-SXM4-80GB", (8, 0)),
            "a10": ("NVIDIA A10", (8, 6)), "l4": ("NVIDIA L4", (8, 9)), "t4": ("Tesla T4", (7, 5)),
            "b200": ("NVIDIA B200", (10, 0))}

#: Why CuPy cannot run on the emulator (the bench and ``python -m accel bench`` skip it with this).
CUPY_UNSUPPORTED = ("CuPy links the CUDA runtime statically and needs NVIDIA's private driver export tables: "
                    "it runs only on a real GPU")

_CUDART = "libcudart.so.13"
_CUDART12 = "libcudart.so.12"
_DRIVER = "libcuda.so.1"
_NVML = "libnvidia-ml.so.1"
_NVJITLINK = "libnvJitLink.so.13"
_NVRTC = "libnvrtc.so.13"
_EMU_CUDA_VERSION = 13000   # the runtime's version and the driver's least (EMU_CUDA_VERSION, emu_internal.h)
_active = None      # the device count activate() configured (None: not activated)
_active_profile = None  # and the profile
_handles = []       # the stand-ins' ctypes handles, kept open for the life of the process


def standin_dir():
    """Directory holding the stand-in libraries (absent in a -Dnative=false install; in an editable install,
    the build directory's, where meson links them)."""
    return os.path.dirname(_lib.package_file("_emu", "standin", _CUDART))


def cudart_path():
    """Path of the ``libcudart.so.13`` stand-in."""
    return os.path.join(standin_dir(), _CUDART)


def cudart12_path():
    """Path of the ``libcudart.so.12`` stand-in (for torch cu12 builds; absent where it is not built)."""
    return os.path.join(standin_dir(), _CUDART12)


def driver_path():
    """Path of the ``libcuda.so.1`` stand-in."""
    return os.path.join(standin_dir(), _DRIVER)


def nvml_path():
    """Path of the ``libnvidia-ml.so.1`` stand-in."""
    return os.path.join(standin_dir(), _NVML)


def nvjitlink_path():
    """Path of the ``libnvJitLink.so.13`` stand-in."""
    return os.path.join(standin_dir(), _NVJITLINK)


def nvrtc_shim_path():
    """Path of the ``libnvrtc.so.13`` shim (it forwards to ``real_nvrtc_path()``)."""
    return os.path.join(standin_dir(), _NVRTC)


# The real libraries the producers' stand-ins forward to: soname -> NVIDIA wheel directories holding it.
_REAL = {_NVRTC: ("cu13", "cuda_nvrtc"), _NVJITLINK: ("cu13", "nvjitlink")}


def _library_dirs(subdirs, env):
    """Where a real CUDA toolkit library is looked for, in cuda.pathfinder's order: NVIDIA's wheels in
    this interpreter's path, the conda environment, LD_LIBRARY_PATH, CUDA_PATH / CUDA_HOME."""
    dirs = [os.path.join(entry, "nvidia", sub, "lib") for entry in sys.path if entry for sub in subdirs]
    if env.get("CONDA_PREFIX"):
        dirs.append(os.path.join(env["CONDA_PREFIX"], "lib"))
    dirs += [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if env.get(var):
            dirs += [os.path.join(env[var], "lib64"), os.path.join(env[var], "lib")]
    return dirs


def _real_library(soname, env):
    ours = os.path.realpath(os.path.join(standin_dir(), soname))
    for d in _library_dirs(_REAL[soname], env):
        path = os.path.join(d, soname)
        if os.path.isfile(path) and os.path.realpath(path) != ours:
            return os.path.abspath(path)
    return None


def real_nvrtc_path(env=None):
    """The real NVRTC (``libnvrtc.so.13``) a CUDA library of this interpreter would load (``env``: the
    environment to read, default ``os.environ``), or None; never the shim."""
    return _real_library(_NVRTC, os.environ if env is None else env)


def real_nvjitlink_path(env=None):
    """The real nvJitLink (``libnvJitLink.so.13``) this interpreter would load, or None; never the
    stand-in.  The stand-in hands it LTO-IR (it links LTO-IR into PTX)."""
    return _real_library(_NVJITLINK, os.environ if env is None else env)


@functools.lru_cache(maxsize=None)
def _library_version(path):
    """(major, minor) of the NVRTC or nvJitLink at ``path``, without loading it into this process (a real
    one loaded here would make activate() refuse): from its file name (libnvrtc.so.13.0.88), the NVRTC
    builtins beside it (libnvrtc-builtins.so.13.5, as cuda.pathfinder reads it), the NVIDIA wheel that
    installed it, else by asking it (nvrtcVersion / nvJitLinkVersion) in a child process."""
    name = os.path.basename(os.path.realpath(path)).split(".")
    if len(name) >= 4 and name[1] == "so" and name[2].isdigit() and name[3].isdigit():
        return int(name[2]), int(name[3])
    nvrtc = os.path.basename(path).startswith("libnvrtc")
    if nvrtc:
        pattern = re.compile(r"libnvrtc-builtins\.so\.(\d+)\.(\d+)$")
        found = [tuple(map(int, m.groups())) for m in map(pattern.match, os.listdir(os.path.dirname(path))) if m]
        if found:
            return max(found)
    real = os.path.realpath(path)
    for dist in importlib.metadata.distributions():
        dname = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if dname.startswith("nvidia-") and ("nvrtc" if nvrtc else "nvjitlink") in dname:
            if any(os.path.realpath(dist.locate_file(f)) == real for f in dist.files or ()):
                major, minor = dist.version.split(".")[:2]
                return int(major), int(minor)
    query = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); a, b = ctypes.c_int(), ctypes.c_int(); "
             f"rc = lib.{'nvrtcVersion' if nvrtc else 'nvJitLinkVersion'}(ctypes.byref(a), ctypes.byref(b)); "
             "print(rc, a.value, b.value)")
    out = subprocess.run([sys.executable, "-c", query, path], capture_output=True, text=True, timeout=60).stdout.split()
    if len(out) != 3 or out[0] != "0":
        raise RuntimeError(f"cannot read the version of {path}")
    return int(out[1]), int(out[2])


def driver_version(env=None):
    """The driver version (major * 1000 + minor * 10) the emulator reports under ``accel emu``: CUDA 13.0's,
    or that of the real NVRTC / nvJitLink (``real_nvrtc_path``, ``real_nvjitlink_path``: PTX they generate
    must not be newer than the driver) when one is newer."""
    versions = [_EMU_CUDA_VERSION]
    for path in (real_nvrtc_path(env), real_nvjitlink_path(env)):
        if path is not None:
            major, minor = _library_version(path)
            versions.append(major * 1000 + minor * 10)
    return max(versions)


def _check_driver_version(value):
    if not (value.isdigit() and len(value) <= 5 and int(value) >= _EMU_CUDA_VERSION):
        raise ValueError(f"ACCEL_EMU_DRIVER_VERSION={value!r} is malformed: the emulated runtime expects a "
                         f"CUDA version number from {_EMU_CUDA_VERSION} to 99999 (major * 1000 + minor * 10)")


def _preloads(nvrtc=None):
    """The stand-ins to load, in this order: libcudart.so.13 ahead of libcudart.so.12, so that a lookup
    without a version (dlsym(RTLD_DEFAULT), an unversioned import) finds the CUDA 13 entry points; the
    NVRTC shim only when there is a real NVRTC (``nvrtc``) for it to forward to."""
    paths = [cudart_path(), driver_path()]
    if os.path.exists(cudart12_path()):
        paths.append(cudart12_path())
    paths += [nvml_path(), nvjitlink_path()]
    if nvrtc is not None:
        paths.append(nvrtc_shim_path())
    return paths


def _check_devices(devices):
    if devices is None:
        return None
    if isinstance(devices, bool) or not isinstance(devices, int):
        raise TypeError(f"devices must be an int (0..{MAX_DEVICES}) or None, got {type(devices).__name__} "
                        f"{devices!r}")
    if not 0 <= devices <= MAX_DEVICES:
        raise ValueError(f"devices must be between 0 and {MAX_DEVICES}, got {devices}")
    return devices


def _check_profile(profile):
    if profile is not None and not isinstance(profile, str):
        raise TypeError(f"profile must be a str (one of {', '.join(PROFILES)}, or a machine such as "
                        f"'h100:2,a100:2') or None, got {type(profile).__name__} {profile!r}")
    return profile


def _require_standins():
    for path in (cudart_path(), driver_path(), nvml_path(), nvjitlink_path(), nvrtc_shim_path()):
        if not os.path.exists(path):
            raise LibraryNotFoundError("stand-in CUDA libraries of accel",
                                       [f"{path}: no such file (this accel was built with -Dnative=false)"])
    for path in _preloads(nvrtc_shim_path()):
        if any(c in path for c in " :"):
            raise ValueError(f"the stand-ins' path {path!r} contains a space or a colon, which LD_PRELOAD "
                             "cannot carry; install accel elsewhere")


def environ(devices=None, base=None, profile=None):
    """The environment (a new dict from ``base``, default ``os.environ``) that runs a child process on
    the stand-ins: ``LD_PRELOAD`` gets them first, ``ACCEL_CUDART`` names the runtime stand-in,
    ``ACCEL_EMU_NVRTC`` / ``ACCEL_EMU_NVJITLINK`` the real NVRTC / nvJitLink (when found; the shim and
    the stand-in forward to them), ``ACCEL_EMU_DRIVER_VERSION`` the driver version
    (``driver_version``; one already in ``base`` is kept, and must be well-formed),
    ``ACCEL_EMU_DEVICES`` is set when ``devices`` is given and ``ACCEL_EMU_PROFILE`` when ``profile`` is."""
    devices = _check_devices(devices)
    profile = _check_profile(profile)
    _require_standins()
    env = dict(os.environ if base is None else base)
    env.update(_producer_settings(env))
    preload = _preloads(env.get("ACCEL_EMU_NVRTC"))
    preload += [p for p in env.get("LD_PRELOAD", "").replace(":", " ").split() if p not in preload]
    env["LD_PRELOAD"] = " ".join(preload)
    env["ACCEL_CUDART"] = cudart_path()
    if devices is not None:
        env["ACCEL_EMU_DEVICES"] = str(devices)
    if profile is not None:
        env["ACCEL_EMU_PROFILE"] = profile
    return env


def ptxas_path():
    """Path of the ``ptxas`` stand-in (Triton's assembler under ``accel emu``: it keeps the PTX)."""
    return os.path.join(standin_dir(), "ptxas")


def _triton_settings(env):
    """Triton's knobs that send its kernels to the emulator as PTX: ``TRITON_PTXAS_PATH`` (and the
    Blackwell one) name the ptxas stand-in, ``TRITON_LIBCUDA_PATH`` the directory of the driver stand-in
    (Triton looks for libcuda.so.1 there to build its launcher).  Values already in ``env`` are kept."""
    names = {"TRITON_PTXAS_PATH": ptxas_path(), "TRITON_PTXAS_BLACKWELL_PATH": ptxas_path(),
             "TRITON_LIBCUDA_PATH": standin_dir()}
    if not os.path.exists(ptxas_path()):
        return {}
    return {k: v for k, v in names.items() if not env.get(k)}


def _producer_settings(env):
    """ACCEL_EMU_NVRTC, ACCEL_EMU_NVJITLINK and ACCEL_EMU_DRIVER_VERSION for an environment ``env`` (the
    NVRTC shim reads the first, the nvJitLink stand-in the second, the emulator the third), and Triton's
    (``_triton_settings``)."""
    settings = _triton_settings(env)
    nvrtc, nvjitlink = real_nvrtc_path(env), real_nvjitlink_path(env)
    if nvrtc is not None:
        settings["ACCEL_EMU_NVRTC"] = nvrtc
    if nvjitlink is not None:
        settings["ACCEL_EMU_NVJITLINK"] = nvjitlink
    if env.get("ACCEL_EMU_DRIVER_VERSION"):
        _check_driver_version(env["ACCEL_EMU_DRIVER_VERSION"])
    else:
        settings["ACCEL_EMU_DRIVER_VERSION"] = str(driver_version(env))
    return settings


def _foreign_cuda_libraries():
    """Mapped CUDA runtime/driver files of this process that are not the stand-ins."""
    ours = {os.path.realpath(p) for p in (cudart_path(), cudart12_path(), driver_path(), nvml_path(),
                                          nvjitlink_path(), nvrtc_shim_path())}
    found = []
    for stem in ("libcudart.so", "libcuda.so", "libnvidia-ml.so", "libnvJitLink.so", "libnvrtc.so"):
        found += [p for p in _lib._loaded_in_process(stem) if os.path.realpath(p) not in ours]
    return found


# The emulator's configuration variables, in the order of accelEmuCheckConfig's arguments, and what each expects.
_CONFIG = (("ACCEL_EMU_DEVICES", f"an integer from 0 to {MAX_DEVICES} (torch's device index is 8 bits: more devices "
                                 "overflow it)"),
           ("CUDA_VISIBLE_DEVICES", "a comma-separated list of device ordinals or GPU-/MIG- UUID prefixes"),
           ("ACCEL_EMU_MEMORY", "a byte count, optionally with a K, M, G or T suffix (e.g. 16G)"),
           ("ACCEL_EMU_FAIL", "symbol:n[,symbol:n...] with n >= 1 and a symbol the emulator can fail, "
                              f"{MAX_FAIL_POINTS} points at most"),
           ("ACCEL_EMU_PROFILE", f"one of {', '.join(PROFILES)}, or a machine such as h100:2,a100:2 (name:count, "
                                 f"...; ACCEL_EMU_DEVICES unset or equal to its total, {MAX_DEVICES} at most)"))


def _malformed(bad, value):
    name, expected = _CONFIG[bad - 1]
    return f"{name}={value!r} is malformed: the emulated runtime expects {expected}"


def _check_config(env):
    """ValueError naming the variable of ``env`` the emulated runtime would reject, and what it expects;
    asks the emulator's own parser (accelEmuCheckConfig of the bundled runtime, loaded privately: no
    stand-in is loaded and no state changes)."""
    check = ctypes.CDLL(_lib.emu_path()).accelEmuCheckConfig
    check.restype = ctypes.c_int
    check.argtypes = [ctypes.c_char_p] * len(_CONFIG)
    values = [env.get(name) for name, _ in _CONFIG]
    bad = check(*[None if v is None else os.fsencode(v) for v in values])
    if bad:
        raise ValueError(_malformed(bad, values[bad - 1]))


def config_error():
    """Why the emulated runtime accel opened refused its configuration ("ACCEL_EMU_DEVICES='x' is malformed:
    ..." for the variable it read malformed), or "" (not emulated, not opened, or its configuration valid)."""
    lib = _lib.cudart._result
    fn = getattr(lib.cdll, "accelEmuConfigError", None) if lib is not None and lib.emulated else None
    if fn is None:
        return ""
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.POINTER(ctypes.c_char_p)]
    value = ctypes.c_char_p()
    bad = fn(ctypes.byref(value))
    return _malformed(bad, os.fsdecode(value.value or b"")) if 1 <= bad <= len(_CONFIG) else ""


def activate(devices=None, profile=None):
    """Load the stand-ins into this process (``RTLD_GLOBAL``) so that a CUDA library imported afterwards
    (torch, cuda.core, nvidia-ml-py, ...) and accel itself run on the emulated runtime.  ``devices`` sets
    the number of emulated devices (``ACCEL_EMU_DEVICES``; default: that variable, else 4), ``profile``
    what they are (``ACCEL_EMU_PROFILE``: a name of ``PROFILES`` or a machine such as ``"h100:2,a100:2"``).
    Returns the runtime stand-in's path.  Raises RuntimeError when a real CUDA runtime, driver or NVML is
    already loaded, or when accel already opened another runtime; calling it again is a no-op unless
    ``devices`` or ``profile`` differs."""
    global _active, _active_profile
    devices = _check_devices(devices)
    profile = _check_profile(profile)
    if _active is not None:
        if devices is not None and devices != _active:
            raise RuntimeError(f"accel.emu is already active with {_active} devices; the emulated runtime "
                               f"reads its configuration once, so it cannot switch to {devices}")
        if profile is not None and profile != _active_profile:
            raise RuntimeError(f"accel.emu is already active with profile {_active_profile!r}; the emulated "
                               f"runtime reads its configuration once, so it cannot switch to {profile!r}")
        return cudart_path()
    _require_standins()
    foreign = _foreign_cuda_libraries()
    if foreign:
        raise RuntimeError(f"a CUDA library is already loaded in this process ({foreign[0]}); call "
                           "accel.emu.activate() before importing the library that loads it (or run the "
                           "program with `python -m accel emu -- ...`)")
    opened = _lib.cudart._result
    if opened is not None and os.path.realpath(opened.path) != os.path.realpath(cudart_path()):
        raise RuntimeError(f"accel already uses the CUDA runtime {opened.path}; call accel.emu.activate() "
                           "before the first CUDA call")
    settings = {"ACCEL_CUDART": cudart_path(), **_producer_settings(os.environ)}
    if devices is not None:
        settings["ACCEL_EMU_DEVICES"] = str(devices)
    if profile is not None:
        settings["ACCEL_EMU_PROFILE"] = profile
    _check_config({**os.environ, **settings})     # before anything changes: a failed activation changes nothing
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    loaded = len(_handles)
    try:
        for path in _preloads(settings.get("ACCEL_EMU_NVRTC")):
            _handles.append(ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_GLOBAL))
        count = _handles[0].accelEmuDeviceCount()
        if count < 0:   # the stand-ins were already loaded (LD_PRELOAD) and read another configuration
            raise ValueError("the emulated runtime already loaded in this process rejected its configuration "
                             "(ACCEL_EMU_DEVICES, ACCEL_EMU_PROFILE, ACCEL_EMU_MEMORY, ACCEL_EMU_FAIL or CUDA_VISIBLE_DEVICES was "
                             "malformed when it first read them)")
    except BaseException:
        del _handles[loaded:]
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        raise
    _active = count if devices is None else devices
    _active_profile = os.environ.get("ACCEL_EMU_PROFILE") or "h100"
    return cudart_path()
