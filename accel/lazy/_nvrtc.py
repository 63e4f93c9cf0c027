"""NVRTC (the CUDA C runtime compiler) for accel.lazy's CUDA backend; shared by both twins.

NVRTC is an optional library of its own (the ``nvidia-cuda-nvrtc`` wheel, or a CUDA toolkit), not part of
the runtime / driver that accel's binding table describes: its functions return nvrtcResult (not
cudaError_t / CUresult, so not the table's error classes), and it is needed only by the CUDA backend, which
is pure Python on both twins.  So it is bound here, once, with ctypes, as accel._lib is shared by both twins.
It is found as CUDA libraries find it (accel.emu.real_nvrtc_path: NVIDIA's wheels on sys.path, the conda
environment, LD_LIBRARY_PATH, CUDA_PATH / CUDA_HOME), never the emulator's NVRTC shim.
"""
import ctypes
import os
import threading

__all__ = ["load", "compile_program", "version", "NvrtcError", "INSTALL_HINT"]

INSTALL_HINT = ('accel.lazy\'s CUDA backend needs NVRTC (libnvrtc.so.13): install it with '
                '`pip install nvidia-cuda-nvrtc` (the cuda-lazy extra of accel-runtime) or set CUDA_HOME to a CUDA 13 toolkit')

_lock = threading.Lock()
_lib = [None]


class NvrtcError(RuntimeError):
    """An NVRTC call failed: ``code`` (nvrtcResult), ``name`` (nvrtcGetErrorString), ``log`` (the compile log)."""

    def __init__(self, message, code=0, name="", log=""):
        super().__init__(message)
        self.code = code
        self.name = name
        self.log = log


# name -> (restype, argtypes); every function returns nvrtcResult (int)
_PROTOTYPES = {
    "nvrtcVersion": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]),
    "nvrtcGetErrorString": (ctypes.c_char_p, [ctypes.c_int]),
    "nvrtcCreateProgram": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_char_p,
                                          ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]),
    "nvrtcCompileProgram": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]),
    "nvrtcGetProgramLogSize": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
    "nvrtcGetProgramLog": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    "nvrtcGetPTXSize": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
    "nvrtcGetPTX": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    "nvrtcGetCUBINSize": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
    "nvrtcGetCUBIN": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    "nvrtcDestroyProgram": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
}


def load():
    """The NVRTC library (a ctypes CDLL with the program API bound), opened once; ImportError naming what to
    install when there is none."""
    lib = _lib[0]
    if lib is not None:
        return lib
    with _lock:
        if _lib[0] is None:
            from accel import emu as _emu
            path = _emu.real_nvrtc_path()
            if path is None:
                raise ImportError(INSTALL_HINT + " (none found in NVIDIA's wheels on sys.path, $CONDA_PREFIX/lib, "
                                  "LD_LIBRARY_PATH, $CUDA_PATH, $CUDA_HOME)", name="nvrtc")
            try:
                # NVRTC opens its builtins (libnvrtc-builtins.so.MAJOR.MINOR) by name: one beside it (a wheel's
                # directory is on no loader path) is loaded first, so that the name is found loaded
                here = os.path.dirname(path)
                for name in sorted(os.listdir(here)):
                    if name.startswith("libnvrtc-builtins.so."):
                        ctypes.CDLL(os.path.join(here, name), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
                lib = ctypes.CDLL(path)
            except OSError as exc:
                raise ImportError(f"{INSTALL_HINT}: {path} does not load: {exc}", name="nvrtc", path=path) from None
            for name, (res, args) in _PROTOTYPES.items():
                try:
                    f = getattr(lib, name)
                except AttributeError:
                    raise ImportError(f"{INSTALL_HINT}: {path} lacks {name}", name="nvrtc", path=path) from None
                f.restype, f.argtypes = res, args
            lib.accel_path = path
            _lib[0] = lib
    return _lib[0]


def _check(lib, rc, what, log=""):
    if rc != 0:
        name = (lib.nvrtcGetErrorString(rc) or b"").decode(errors="replace")
        raise NvrtcError(f"{what} failed: {name} ({rc})" + (f"\n{log}" if log else ""), rc, name, log)


def version():
    """(major, minor) of the loaded NVRTC."""
    lib = load()
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(lib, lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return major.value, minor.value


def compile_program(source, name, options, cubin):
    """Compile CUDA C ``source`` with ``options`` (a list of str); returns (image bytes, log).  ``cubin``:
    the image is nvrtcGetCUBIN's (compile for a real sm_XX), else nvrtcGetPTX's text (NUL-terminated).  A
    failed compile raises NvrtcError whose ``log`` is NVRTC's log."""
    lib = load()
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None),
           "nvrtcCreateProgram")
    try:
        opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        rc = lib.nvrtcCompileProgram(prog, len(options), opts)
        size = ctypes.c_size_t()
        _check(lib, lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)), "nvrtcGetProgramLogSize")
        buf = ctypes.create_string_buffer(max(size.value, 1))
        _check(lib, lib.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
        log = buf.value.decode(errors="replace")
        _check(lib, rc, "nvrtcCompileProgram", log)
        get_size, get = (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN) if cubin else (lib.nvrtcGetPTXSize, lib.nvrtcGetPTX)
        _check(lib, get_size(prog, ctypes.byref(size)), get_size.__name__)
        img = ctypes.create_string_buffer(size.value)
        _check(lib, get(prog, img), get.__name__)
        return img.raw, log
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
