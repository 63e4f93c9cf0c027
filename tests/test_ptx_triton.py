"""Triton kernels under `python -m accel emu` (issue 32's stretch goal): accel emu points Triton's ptxas
at accel's stand-in (it keeps the PTX in accel's linked image, which Triton loads as its cubin) and its
libcuda search at the driver stand-in, so `kernel[grid](...)` compiles, loads and runs on the emulator
with no change to the program.  At compute capability 8.0 (`--profile a100`) tl.dot is ldmatrix +
mma.sync; at 9.0 Triton emits wgmma, which the engine lacks (the load names it).

The stand-in itself is tested without Triton; the end-to-end runs skip without triton (pip install
triton) or a C compiler (Triton builds its launcher with one)."""
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest

from accel import emu

HERE = pathlib.Path(__file__).resolve().parent
HAVE_PTXAS = os.path.exists(emu.ptxas_path())
pytestmark = pytest.mark.skipif(not HAVE_PTXAS, reason="no emulator stand-ins in this install (-Dnative=false)")

PTX = (HERE / "data" / "ptx" / "triton_add.ptx").read_text()


def _image_texts(data):
    """The PTX texts of accel's linked image (PTX_CONTRACT.md)."""
    assert data[:8] == b"AEMUPTX1"
    count, _, total = struct.unpack_from("<IIQ", data, 8)
    assert total == len(data)
    pos, out = 24, []
    for _ in range(count):
        (n,) = struct.unpack_from("<Q", data, pos)
        out.append(data[pos + 8:pos + 8 + n].decode())
        pos += 8 + n + (-n % 8)
    return out


def test_ptxas_stand_in_answers_a_version_triton_parses():
    out = subprocess.run([emu.ptxas_path(), "--version"], capture_output=True, text=True, check=True).stdout
    assert "release 12.9," in out and "accel" in out


def test_ptxas_stand_in_keeps_the_ptx_in_accels_image(tmp_path):
    src, dst = tmp_path / "k.ptx", tmp_path / "k.cubin"
    src.write_text(PTX)
    # Triton's command line: options with and without values, then the input and -o
    r = subprocess.run([emu.ptxas_path(), "-lineinfo", "-v", "--opt-level", "0", "--regAllocOptLevel=2", "--gpu-name=sm_80",
                        str(src), "-o", str(dst)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert _image_texts(dst.read_bytes()) == [PTX]


@pytest.mark.parametrize("content,args,message", [
    (b"\x7fELF\x02\x01\x01", ["-o", "x.o"], "not PTX text"),
    (None, ["-o", "x.o"], "no input file"),
    (PTX.encode(), ["extra.ptx"], "more than one input"),
])
def test_ptxas_stand_in_refuses_what_it_cannot_keep(tmp_path, content, args, message):
    argv = [emu.ptxas_path()]
    if content is not None:
        (tmp_path / "in.ptx").write_bytes(content)
        argv.append("in.ptx")
    r = subprocess.run(argv + args, capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 255 and message in r.stderr, (r.returncode, r.stderr)


def test_accel_emu_points_triton_at_the_stand_ins_and_keeps_the_users_choice():
    env = emu.environ(base={"PATH": os.environ.get("PATH", "")})
    assert env["TRITON_PTXAS_PATH"] == emu.ptxas_path() and env["TRITON_LIBCUDA_PATH"] == emu.standin_dir()
    mine = emu.environ(base={"PATH": os.environ.get("PATH", ""), "TRITON_PTXAS_PATH": "/opt/cuda/bin/ptxas"})
    assert mine["TRITON_PTXAS_PATH"] == "/opt/cuda/bin/ptxas"


_SCRIPT = textwrap.dedent("""
    import ctypes, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    import triton
    import triton_kernels as TK
    cu = ctypes.CDLL("libcuda.so.1")
    assert cu.cuInit(0) == 0
    ctx = ctypes.c_void_p()
    assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0 and cu.cuCtxSetCurrent(ctx) == 0

    class Buf:   # what Triton takes for a tensor without torch: data_ptr() and a dtype
        def __init__(self, arr):
            self.arr = np.ascontiguousarray(arr)
            self.dtype = {{np.float32: triton.language.float32, np.float16: triton.language.float16}}[self.arr.dtype.type]
            p = ctypes.c_uint64()
            assert cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(self.arr.nbytes)) == 0
            self.ptr = p.value
            assert cu.cuMemcpyHtoD_v2(ctypes.c_uint64(self.ptr), self.arr.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(self.arr.nbytes)) == 0
        def data_ptr(self):
            return self.ptr
        def get(self):
            out = np.empty_like(self.arr)
            assert cu.cuCtxSynchronize() == 0
            assert cu.cuMemcpyDtoH_v2(out.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint64(self.ptr), ctypes.c_size_t(out.nbytes)) == 0
            return out

    rng = np.random.default_rng(0)
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    o = Buf(np.zeros(n, np.float32))
    TK.add_kernel[((n + 255) // 256,)](Buf(x), Buf(y), o, n, BLOCK=256)
    assert np.array_equal(o.get(), x + y)
    print("add ok")
    xs = rng.standard_normal((7, 100)).astype(np.float32)
    o = Buf(np.zeros_like(xs))
    TK.softmax_kernel[(7,)](o, Buf(xs), 100, 100, 100, BLOCK=128)
    e = np.exp(xs.astype(np.float64) - xs.max(1, keepdims=True))
    assert np.allclose(o.get(), e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-7)
    print("softmax ok")
    if {matmul}:
        M, N, K = 37, 45, 70
        a = rng.integers(-3, 4, (M, K)).astype(np.float16)
        b = rng.integers(-3, 4, (K, N)).astype(np.float16)
        c = Buf(np.zeros((M, N), np.float32))
        TK.matmul_kernel[((M + {bm} - 1) // {bm}, (N + {bm} - 1) // {bm})](Buf(a), Buf(b), c, M, N, K, K, 1, N, 1, N, 1, BM={bm}, BN={bm}, BK=32)
        assert np.array_equal(c.get(), a.astype(np.float32) @ b.astype(np.float32))
        print("matmul ok")
""")


def _run_triton(tmp_path, profile, matmul, bm=32):
    pytest.importorskip("triton")
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("Triton builds its launcher with a C compiler; none is installed")
    script = tmp_path / "run.py"
    script.write_text(_SCRIPT.format(tests=str(HERE), matmul=matmul, bm=bm))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env.update(TRITON_CACHE_DIR=str(tmp_path / "cache"), TRITON_DEFAULT_FP_FUSION="1")
    return subprocess.run([sys.executable, "-m", "accel", "emu", "--profile", profile, "--", sys.executable, str(script)],
                          capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)


def test_triton_add_softmax_and_tl_dot_matmul_run_under_accel_emu(tmp_path):
    r = _run_triton(tmp_path, "a100", True)
    assert r.returncode == 0 and "matmul ok" in r.stdout, r.stdout + r.stderr


def test_triton_at_sm_90_runs_elementwise_and_names_wgmma(tmp_path):
    """On the default h100 profile, add and softmax run; a 64x64 tl.dot tile becomes wgmma, which the
    engine lacks: the load fails and the error names it."""
    r = _run_triton(tmp_path, "h100", True, bm=64)
    assert r.returncode != 0 and "softmax ok" in r.stdout and "wgmma" in r.stderr, r.stdout + r.stderr
