"""An nvcc-built host program (``-arch=sm_90 -cudart shared``: compute_90 PTX, zstd-compressed, and sm_90 SASS in
its fatbin) runs its kernels under ``python -m accel emu``: the registration path (__cudaRegisterFatBinary,
__cudaRegisterFunction, __cudaRegisterVar), <<<...>>> launches, cudaMemcpyToSymbol / FromSymbol, symbol address and
size, cudaFuncGetAttributes, occupancy, a bad configuration's error, a launch captured into a graph and replayed,
an explicit kernel node.
Skipped without nvcc (nvidia-cuda-nvcc or a CUDA toolkit)."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from accel import emu

SOURCE = pathlib.Path(__file__).with_name("data") / "nvcc" / "add_prog.cu"

pytestmark = [
    pytest.mark.skipif(not os.path.exists(emu.cudart_path()), reason="the stand-ins are not part of this install"),
    pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed"),
]


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("nvcc_prog")
    # the wheels ship only libcudart.so.13: link through a libcudart.so symlink (to the stand-in, same soname)
    (d / "libcudart.so").symlink_to(emu.cudart_path())
    exe = d / "add_prog"
    build = subprocess.run(["nvcc", "-arch=sm_90", "-cudart", "shared", "-o", str(exe), str(SOURCE), f"-L{d}"],
                           capture_output=True, text=True, timeout=600)
    if build.returncode != 0:
        pytest.skip(f"nvcc could not build the program: {build.stderr.strip()[:300]}")
    return exe


def test_an_nvcc_program_runs_its_kernels_under_accel_emu(program):
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEL_CUDART", "CUDA_VISIBLE_DEVICES", "LD_PRELOAD")}
    proc = subprocess.run([sys.executable, "-m", "accel", "emu", "--", str(program)], env=env, capture_output=True,
                          text=True, timeout=300, cwd="/")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == ("direct 1 symbol 1 size 4 regs 1 ptx 90 blocks 16 bad cudaErrorInvalidConfiguration "
                                   "replay 1 node 1")
    assert proc.stderr == ""
