"""torch (CUDA wheel) on the stand-ins with `python -m accel emu`: its device, stream, event and memory
paths run on the emulated runtime, shared with accel; a kernel launch fails as not supported, named by
the trace.  Optional: skipped unless this interpreter has torch with CUDA (a 5.5 GB wheel)."""
import os
import subprocess
import sys
import tempfile

import pytest

from accel import emu

try:
    import torch
    TORCH_CUDA = torch.version.cuda is not None
    WHY = f"torch {torch.__version__} is a CPU build"
except ImportError:
    TORCH_CUDA, WHY = False, "torch is not installed"

pytestmark = [
    pytest.mark.skipif(not os.path.exists(emu.cudart_path()), reason="the stand-ins are not part of this install"),
    pytest.mark.skipif(not TORCH_CUDA, reason=f"needs torch's CUDA wheel ({WHY})"),
]


def on_emu(code, devices=2, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("ACCEL_CUDART", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES")}
    full.update(env)
    proc = subprocess.run([sys.executable, "-m", "accel", "emu", "--devices", str(devices), "--", sys.executable,
                           "-c", code], env=full, capture_output=True, text=True, timeout=300,
                          cwd=tempfile.gettempdir())
    return proc


def test_torch_sees_the_emulated_devices():
    proc = on_emu("import torch; print(torch.cuda.is_available(), torch.cuda.device_count(), "
                  "torch.cuda.get_device_capability(1), torch.cuda.get_device_name(0))", devices=3)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True 3 (9, 0) Emulated NVIDIA H100 80GB HBM3 (accel emu)"
    assert "compute capability" not in proc.stderr   # no "CC 0.0" warning: the whole cudaDeviceProp is filled


def test_torch_streams_and_events():
    code = """
import torch
s = torch.cuda.Stream(device=1)
a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
a.record(s); b.record(s); b.synchronize()
s2 = torch.cuda.Stream(device=1); s2.wait_stream(s); s2.synchronize()
with torch.cuda.stream(s):
    inside = [torch.cuda.current_stream() == s, torch.cuda.current_device()]
print([a.elapsed_time(b) >= 0, b.query(), inside, torch.cuda.current_stream().cuda_stream, s2.query()])
"""
    proc = on_emu(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[True, True, [True, 1], 0, True]"


def test_torch_and_accel_share_one_runtime():
    code = """
import torch, accel.cuda as ac
torch.cuda.set_device(1)
out = [ac.current_device()]
s = ac.Stream(device=1)
ts = torch.cuda.ExternalStream(s.cuda_stream, device=torch.device("cuda", 1))
e = torch.cuda.Event(); e.record(ts); e.synchronize()
ae = ac.Event(); ae.record(s); ae.synchronize()
out += [e.query(), ae.query(), ts.cuda_stream == s.cuda_stream]
print(out)
"""
    proc = on_emu(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[1, True, True, True]"


def test_torch_memory_accounting():
    code = """
import torch
x = torch.empty(1024, device="cuda")
free, total = torch.cuda.mem_get_info()
print(x.device, torch.cuda.memory_allocated() >= 4096, total == 80 << 30, free < total)
"""
    proc = on_emu(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "cuda:0 True True True"


def test_a_sass_only_kernel_is_refused_and_named_once():
    """torch ships SASS only: its first kernel (``torch.ones``'s fill) is refused with "no kernel image" and one
    stderr line, without any variable set, names the kernel and says the emulator executes PTX only."""
    code = """
import torch
for _ in range(2):
    try:
        torch.ones(4, device="cuda")
    except Exception as exc:
        print(type(exc).__name__, str(exc).splitlines()[0])
"""
    proc = on_emu(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["AcceleratorError CUDA error: no kernel image is available for execution on "
                                        "the device"] * 2
    notices = [line for line in proc.stderr.splitlines() if line.startswith("accel emu: kernel ")]
    assert len(notices) == 1 and "FillFunctor" in notices[0]
    assert notices[0].endswith("is SASS only (a cubin for a real GPU, no PTX): accel's emulator executes PTX only "
                               "(CUDA_ERROR_NO_BINARY_FOR_GPU)")


def test_torch_cuda_graph_replays_a_copy():
    """torch.cuda.CUDAGraph over the emulator's stream capture: ``dst.copy_(src)`` captured once (torch's
    graph() context on its side stream), replayed with fresh bytes in the static input each time (copies
    only: a kernel launch is not supported).  Ran with torch 2.14.1+cu130."""
    code = """
import numpy as np, torch
src = torch.from_numpy(np.zeros(256, np.uint8)).cuda()      # a copy: torch.zeros(device=) would launch a kernel
dst = torch.empty_like(src)
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    dst.copy_(src)
out = [torch.cuda.is_current_stream_capturing()]
for k in (3, 7, 11):
    src.copy_(torch.full((256,), k, dtype=torch.uint8))
    g.replay()
    torch.cuda.synchronize()
    out.append(int(dst.cpu().sum()) == 256 * k)
g.reset()
print(out)
"""
    proc = on_emu(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[False, True, True, True]"


def test_torch_capturing_a_sass_kernel_fails_at_the_launch():
    """A kernel launched inside torch.cuda.graph (``x + 1``) is refused at the launch, as outside a capture (torch's
    kernels are SASS only), so the capture raises instead of recording a node that could never run."""
    code = """
import numpy as np, torch
x = torch.from_numpy(np.zeros(16, np.float32)).cuda()
g = torch.cuda.CUDAGraph()
out = []
try:
    with torch.cuda.graph(g):
        y = x + 1
    out.append("captured")
except Exception as e:
    out.append(type(e).__name__ + ": " + str(e).splitlines()[0])
print(out)
"""
    proc = on_emu(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("['AcceleratorError: CUDA error: no kernel image is available for execution on the "
                                   "device']")
