"""``python -m accel``: the environment report (backend, CUDA runtime, driver, devices, NVML).

``python -m accel bench``: the hot-path timing table (see accel/_benchtable.py).
"""
import os
import sys

import accel
from accel import _impl, _lib
from accel.errors import CudaError, LibraryNotFoundError

_ATTRS = (("compute capability", (75, 76)), ("multiprocessors", 16), ("warp size", 10),
          ("L2 cache bytes", 38), ("max threads per multiprocessor", 39))


def _versions(rt):
    out = []
    for label, fn in (("runtime version", rt.cudaRuntimeGetVersion), ("driver version", rt.cudaDriverGetVersion)):
        try:
            v = fn()
            out.append(f"{label}: {v // 1000}.{(v % 1000) // 10}" if v else f"{label}: none (no driver installed)")
        except (CudaError, NotImplementedError) as exc:
            out.append(f"{label}: unavailable ({str(exc).splitlines()[0]})")
    return out


def _device_lines(rt, index):
    name, uuid, total = rt.cudaGetDeviceProperties(index)
    lines = [f"  cuda:{index}: {name}", f"    uuid: GPU-{uuid.hex()[:8]}-{uuid.hex()[8:12]}-{uuid.hex()[12:16]}-"
             f"{uuid.hex()[16:20]}-{uuid.hex()[20:]}", f"    total memory: {total / 2**30:.1f} GiB"]
    for label, attr in _ATTRS:
        try:
            if isinstance(attr, tuple):
                value = ".".join(str(rt.cudaDeviceGetAttribute(a, index)) for a in attr)
            else:
                value = rt.cudaDeviceGetAttribute(attr, index)
        except (CudaError, NotImplementedError) as exc:
            value = f"unavailable ({str(exc).splitlines()[0]})"
        lines.append(f"    {label}: {value}")
    return lines


def _nvml_line():
    try:
        import pynvml  # noqa: F401  (the nvidia-ml-py distribution)
    except ImportError:
        return "NVML: nvidia-ml-py is not installed (pip install 'accel[nvml]')"
    try:
        lib = _lib.nvml()
    except LibraryNotFoundError as exc:
        return f"NVML: nvidia-ml-py installed, but {str(exc).splitlines()[0]}"
    return f"NVML: nvidia-ml-py installed, library {lib.path}"


def report(out=sys.stdout):
    """Print the environment report; returns 0 (a machine without CUDA is a valid environment)."""
    p = lambda *a: print(*a, file=out)  # noqa: E731
    p(f"accel {accel.__version__} ({os.path.dirname(accel.__file__)})")
    p(f"backend: {accel.backend} ({accel.backend_reason})")
    try:
        rt = _impl.cudart  # the bindings without lazy init: a machine without a GPU is reported too
        rt.load()
    except LibraryNotFoundError as exc:
        p(f"CUDA runtime: not found; {exc}")
        p("devices: 0 (no CUDA runtime)")
        p(_nvml_line())
        return 0
    lib = _lib.cudart()
    emulated = " (the bundled EMULATED runtime, no GPU involved)" if lib.emulated else ""
    p(f"CUDA runtime: {lib.path} [found via: {lib.how}]{emulated}")
    for line in _versions(rt):
        p(line)
    try:
        count = rt.cudaGetDeviceCount()
    except CudaError as exc:
        p(f"devices: 0 ({exc.name}: {exc.string})")
        p(_nvml_line())
        return 0
    p(f"devices: {count}")
    for i in range(count):
        try:
            for line in _device_lines(rt, i):
                p(line)
        except CudaError as exc:
            p(f"  cuda:{i}: unavailable ({exc.name}: {exc.string})")
    p(_nvml_line())
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        return report()
    if argv[0] == "bench":
        from accel import _benchtable
        return _benchtable.main(argv[1:])
    print(f"usage: python -m accel [bench]  (unknown argument {argv[0]!r})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # e.g. `python -m accel | head`: stop quietly like other CLI tools
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
