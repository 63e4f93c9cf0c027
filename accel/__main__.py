"""The ``accel`` command (the console script of pyproject.toml) and ``python -m accel``: one program.

``accel``: the environment report (backend, CUDA runtime, driver, devices, NVML).

``accel bench``: the hot-path timing table (see accel/_benchtable.py).

``accel emu [--devices N] [--profile P] [--] COMMAND [ARGS...]``: COMMAND on the emulated runtime's
stand-in libraries (see accel/emu.py).

``python -m accel`` typed in the checkout's root runs the installed build too (accel/_checkout.py).
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
        return "NVML: nvidia-ml-py is not installed (pip install nvidia-ml-py, or pip install '.[nvml]' in accel's checkout)"
    try:
        lib = _lib.nvml()
    except LibraryNotFoundError as exc:
        # the error's message is a heading and one line per place searched: all of it, indented as the report is
        return "NVML: nvidia-ml-py installed, but " + "\n  ".join(str(exc).splitlines())
    return f"NVML: nvidia-ml-py installed, library {lib.path}"


def _emulator_hint(prog):
    """The lines that tell a user without a usable GPU how to try everything on the bundled emulator."""
    if not os.path.exists(_lib.emu_path()):
        return "no usable GPU; this install has no emulated runtime (it was built with -Dnative=false)"
    return (f"no usable GPU: `ACCEL_CUDART=emu {prog}` shows the bundled emulated runtime instead;\n"
            f"  `{prog} emu -- python your_program.py` runs any program (torch, cuda.core, nvidia-ml-py, a test\n"
            f"  suite) on emulated GPUs; `{prog} emu --profile a100 -- ...` picks the kind of GPU "
            f"({prog} emu --help)")


def report(out=sys.stdout, prog="python -m accel"):
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
        p(_emulator_hint(prog))
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
        if not lib.emulated:
            p(_emulator_hint(prog))
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


def usage(prog):
    """The program's help text; ``prog`` is how it was run (``accel`` or ``python -m accel``)."""
    return (f"usage: {prog} [-h | --help | -V | --version] [bench | emu ...]\n"
            f"  {prog}                 the environment report: backend, CUDA runtime, devices, NVML\n"
            f"  {prog} --version       accel's version, its backend and the Python it runs on\n"
            f"  {prog} bench           a quick hot-path timing table (on the emulator when no GPU is usable)\n"
            f"  {prog} emu [--devices N] [--profile P] [--] COMMAND [ARGS...]\n"
            f"  {'':{len(prog)}}                 run COMMAND on the emulated CUDA runtime ({prog} emu --help)\n"
            "`accel` and `python -m accel` are the same program.  No GPU?  "
            f"`ACCEL_CUDART=emu {prog}` reports the emulated\n"
            f"devices and `{prog} emu -- COMMAND` runs any CUDA program on them.\n"
            "Environment: ACCEL_BACKEND (auto | native | python), ACCEL_CUDART (a libcudart path, or emu),\n"
            "ACCEL_EMU_DEVICES, ACCEL_EMU_PROFILE, ACCEL_EMU_MEMORY, ACCEL_EMU_FAIL, ACCEL_EMU_TRACE\n"
            "(docs/configuration.md).")


def emu_usage(prog):
    return f"usage: {prog} emu [--devices N] [--profile P] [--] COMMAND [ARGS...]"


def _emu_args(argv):
    """(devices or None, profile or None, command list) from the arguments after ``emu``; ValueError says
    what is wrong."""
    from accel import emu

    devices = profile = None
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if arg == "--devices" or arg.startswith("--devices="):
            if arg == "--devices":
                if i + 1 == len(argv):
                    raise ValueError("--devices needs a value (the number of emulated devices, "
                                     f"0..{emu.MAX_DEVICES})")
                value, i = argv[i + 1], i + 2
            else:
                value, i = arg.split("=", 1)[1], i + 1
            if not (value.isascii() and value.isdigit()) or int(value) > emu.MAX_DEVICES:
                raise ValueError(f"--devices expects an integer from 0 to {emu.MAX_DEVICES}, got {value!r}")
            devices = int(value)
            continue
        if arg == "--profile" or arg.startswith("--profile="):
            if arg == "--profile":
                if i + 1 == len(argv):
                    raise ValueError("--profile needs a value (a GPU profile such as a100, or h100:2,a100:2)")
                profile, i = argv[i + 1], i + 2
            else:
                profile, i = arg.split("=", 1)[1], i + 1
            continue
        raise ValueError(f"unknown option {arg!r}")
    if i == len(argv):
        raise ValueError("no COMMAND given")
    return devices, profile, argv[i:]


def emu_main(argv, prog="python -m accel"):
    """Run COMMAND on the stand-ins (replaces this process); 2 on a usage error, 1 when the stand-ins
    are missing, 127 when COMMAND is not found."""
    from accel import emu

    if argv[:1] in (["-h"], ["--help"]):
        standins = ", ".join(os.path.basename(p) for p in emu._preloads(emu.real_nvrtc_path()))
        profiles = "\n".join(f"  {key:6} {board} (compute capability {cc[0]}.{cc[1]})"
                             for key, (board, cc) in emu.PROFILES.items())
        print(emu_usage(prog))
        print(f"Runs COMMAND with accel's emulated CUDA runtime standing in for {standins} (LD_PRELOAD); "
              "--devices sets the number of emulated devices (default: ACCEL_EMU_DEVICES if set, else 4).\n"
              "--profile sets what they are (ACCEL_EMU_PROFILE; default h100): one of\n"
              f"{profiles}\n"
              "or a mixed machine such as h100:2,a100:2 (PROFILE:COUNT,...; --devices, if given, must equal "
              "its total).\nProperties, attributes, NVML and cudaMemGetInfo follow the profile; "
              "ACCEL_EMU_MEMORY overrides its memory size.\n"
              f"Example: {prog} emu --profile t4 -- python -c \"import torch; "
              "print(torch.cuda.get_device_capability())\"")
        return 0
    try:
        devices, profile, command = _emu_args(argv)
    except ValueError as exc:
        print(f"{emu_usage(prog)}\nerror: {exc}", file=sys.stderr)
        return 2

    try:
        env = emu.environ(devices, profile=profile)
        emu._check_config(env)
    except (LibraryNotFoundError, ValueError) as exc:     # no stand-ins, or a path LD_PRELOAD cannot carry
        print(f"{prog} emu: {exc}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(command[0], command, env)
    except OSError as exc:
        print(f"{prog} emu: cannot run {command[0]!r}: {exc.strerror}", file=sys.stderr)
        return 127 if isinstance(exc, FileNotFoundError) else 126


def main(argv=None, prog="python -m accel"):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        return report(prog=prog)
    if argv[0] in ("-h", "--help"):
        print(usage(prog))
        return 0
    if argv[0] in ("-V", "--version"):
        if argv[1:]:
            print(f"usage: {prog} --version\nerror: unexpected argument {argv[1]!r}", file=sys.stderr)
            return 2
        print(f"accel {accel.__version__} (distribution accel-runtime; backend {accel.backend}; "
              f"Python {sys.version.split()[0]})")
        return 0
    if argv[0] == "bench":
        if argv[1:2] in (["-h"], ["--help"]):
            print(f"usage: {prog} bench\nTimes accel's hot paths on both twins (and torch.cuda, cuda.core, CuPy "
                  "when importable) with timeit; on the emulated runtime when no GPU is usable, and it says so.")
            return 0
        if argv[1:]:
            print(f"usage: {prog} bench\nerror: unexpected argument {argv[1]!r}", file=sys.stderr)
            return 2
        from accel import _benchtable
        return _benchtable.main([])
    if argv[0] == "emu":
        return emu_main(argv[1:], prog)
    print(f"{usage(prog)}\nerror: unknown argument {argv[0]!r}", file=sys.stderr)
    return 2


def run(prog="python -m accel"):
    """Exit with main()'s status; a closed stdout (``accel | head``) ends quietly, as other CLI tools do."""
    try:
        sys.exit(main(prog=prog))
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


def console():
    """The ``accel`` console script ([project.scripts] in pyproject.toml)."""
    run("accel")


if __name__ == "__main__":
    run()
