"""A C program linked by soname against the stand-ins (as a CUDA program links -lcudart -lcuda): its
imports carry the version node libcudart.so.13 and resolve at load time, and the device, stream,
event and driver-context calls work on the emulator's one state."""
import os
import shutil
import subprocess
import sys

import pytest

from accel import emu

pytestmark = [
    pytest.mark.skipif(not os.path.exists(emu.cudart_path()), reason="the stand-ins are not part of this install"),
    pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) to build the test program"),
]

PROGRAM = r"""
#include <stdio.h>
typedef void *stream_t, *event_t, *ctx_t;
int cudaGetDeviceCount(int *);
int cudaSetDevice(int);
int cudaGetDevice(int *);
int cudaStreamCreate(stream_t *);
int cudaStreamDestroy(stream_t);
int cudaStreamSynchronize(stream_t);
int cudaStreamWaitEvent(stream_t, event_t, unsigned);
int cudaStreamGetDevice(stream_t, int *);
int cudaEventCreate(event_t *);
int cudaEventRecord(event_t, stream_t);
int cudaEventQuery(event_t);
int cudaEventSynchronize(event_t);
int cudaEventDestroy(event_t);
typedef struct { unsigned x, y, z; } dim3;
int cudaLaunchKernel(const void *, dim3, dim3, void **, unsigned long, stream_t);
const char *cudaGetErrorName(int);
int cuInit(unsigned);
int cuDeviceGetCount(int *);
int cuDevicePrimaryCtxRetain(ctx_t *, int);
int cuCtxSetCurrent(ctx_t);
int cuStreamQuery(stream_t);

#define CHECK(call) do { int r_ = (call); if (r_) { printf("FAIL %s -> %d\n", #call, r_); return 1; } } while (0)

int main(void)
{
    int n = -1, dn = -1, dev = -1, sdev = -1;
    stream_t s0, s1;
    event_t e;
    ctx_t ctx;
    CHECK(cudaGetDeviceCount(&n));
    CHECK(cuInit(0));
    CHECK(cuDeviceGetCount(&dn));
    CHECK(cudaSetDevice(1));
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamGetDevice(s1, &sdev));
    CHECK(cudaEventCreate(&e));
    CHECK(cudaEventRecord(e, s1));
    CHECK(cudaEventSynchronize(e));
    CHECK(cudaEventQuery(e));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 2));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaStreamCreate(&s0));
    CHECK(cudaStreamWaitEvent(s0, e, 0));
    CHECK(cudaStreamSynchronize(s0));
    CHECK(cuStreamQuery(s1));
    CHECK(cudaStreamDestroy(s0));
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaEventDestroy(e));
    printf("devices %d %d stream-device %d ctx-device %d kernel %s\n", n, dn, sdev, dev,
           cudaGetErrorName(cudaLaunchKernel((const void *)main, (dim3){1, 1, 1}, (dim3){1, 1, 1}, 0, 0, 0)));
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("standin_prog")
    src, exe = d / "prog.c", d / "prog"
    src.write_text(PROGRAM)
    lib = emu.standin_dir()
    build = subprocess.run(["cc", "-o", str(exe), str(src), f"-L{lib}", "-l:libcudart.so.13", "-l:libcuda.so.1",
                            f"-Wl,-rpath,{lib}"], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    return exe


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) is not installed")
def test_program_imports_are_versioned_by_soname(program):
    dyn = subprocess.run(["readelf", "-dW", "--dyn-syms", str(program)], capture_output=True, text=True).stdout
    assert "Shared library: [libcudart.so.13]" in dyn
    for name in ("cudaStreamCreate", "cudaEventRecord", "cudaGetDeviceCount"):
        assert f"{name}@libcudart.so.13" in dyn


def test_program_runs_device_stream_event_and_context_calls(program):
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEL_CUDART", "CUDA_VISIBLE_DEVICES")}
    env["ACCEL_EMU_DEVICES"] = "3"
    proc = subprocess.run([str(program)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "devices 3 3 stream-device 1 ctx-device 2 kernel cudaErrorInvalidDeviceFunction"


def test_accel_emu_runs_a_program_that_knows_nothing_of_accel(program, tmp_path):
    # linked against the soname only (no rpath, as a CUDA program is): the preload supplies the library
    exe = tmp_path / "plain"
    lib = emu.standin_dir()
    build = subprocess.run(["cc", "-o", str(exe), str(program) + ".c", f"-L{lib}", "-l:libcudart.so.13",
                            "-l:libcuda.so.1"], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEL_CUDART", "CUDA_VISIBLE_DEVICES", "LD_PRELOAD")}
    proc = subprocess.run([sys.executable, "-m", "accel", "emu", "--devices", "3", "--", str(exe)], env=env,
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "devices 3 3 stream-device 1 ctx-device 2 kernel cudaErrorInvalidDeviceFunction"
