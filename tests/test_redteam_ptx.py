"""The PTX engine and the driver's kernel entry points attacked as a hostile user would (red team of issue 32):
addresses that wrap around 2^64 past the fast paths' bounds checks, and the other probes listed in each test.
Each test names the defect it pins; crashes are run in a fresh interpreter with a timeout so that a defect
fails the test instead of the suite."""
import importlib.util
import pathlib

import numpy as np
import pytest

from accel import emu

_HERE = pathlib.Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("ptx_harness", _HERE / "ptx_harness.py")
H = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(H)
_spec = importlib.util.spec_from_file_location("standin_fixtures", _HERE / "standin_fixtures.py")
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

pytestmark = pytest.mark.skipif(not H.HAVE_EMU, reason="no emulator in this install (-Dnative=false)")

HDR = ".version 8.0\n.target sm_80\n.address_size 64\n"

# a fresh interpreter that runs PTX through tests/ptx_harness.py and prints one JSON line
_PRELUDE = f"""
import ctypes, importlib.util, json, sys
import numpy as np
_spec = importlib.util.spec_from_file_location("ptx_harness", {str(_HERE / "ptx_harness.py")!r})
H = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(H)
HDR = {HDR!r}
def K(body, params=""):
    return HDR + ".visible .entry k(" + params + ")\\n{{\\n" + body + "\\n}}\\n"
"""


# a fresh interpreter on the driver stand-in (libcuda.so.1), device 0's primary context current; module(text, name):
# cuModuleLoadData's code and the kernel's CUfunction
_DRIVER = f"""
import ctypes as c, json, os, time
import numpy as np
cu = c.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
VP = c.c_void_p
h = VP()
assert cu.cuInit(0) == 0 and cu.cuDevicePrimaryCtxRetain(c.byref(h), 0) == 0 and cu.cuCtxSetCurrent(h) == 0
cu.cuLaunchKernel.argtypes = [VP] + [c.c_uint] * 7 + [VP] * 3
cu.cuMemAlloc_v2.argtypes = [c.POINTER(c.c_uint64), c.c_size_t]
cu.cuMemFree_v2.argtypes = [c.c_uint64]
HDR = {HDR.encode()!r}
def module(text, name):
    m, f = VP(), VP()
    r = cu.cuModuleLoadData(c.byref(m), text)
    if not r:
        assert cu.cuModuleGetFunction(c.byref(f), m, name) == 0
    return r, f
"""

# each runs its prelude and the code in a fresh interpreter (untraced) and returns what its last line printed
_, _sub = _fx.runners(_PRELUDE)
_, _driver = _fx.runners(_DRIVER)


# ------------------------------------------------------------------ addresses that wrap around 2^64
@pytest.mark.parametrize("op", ["ld", "st"])
def test_shared_access_below_the_window_is_a_fault_not_a_heap_write(subprocess_python, op):
    # defect: ld/st.shared's fast path checked `a + size <= smem_size`; s + -4 wraps that sum to 0, so the
    # store wrote 4 bytes before the block's shared buffer (glibc: "double free or corruption") and the load
    # read them silently
    body = {"ld": "ld.shared.u32 %r2, [%r1+-4];", "st": "st.shared.u32 [%r1+-4], %r2;"}[op]
    got = _sub(subprocess_python, f"""
print(json.dumps(H.run(K(".shared .b32 s[4];\\n.reg .b32 %r<4>;\\nmov.u32 %r1, s;\\nmov.u32 %r2, 7;\\n{body}\\nret;"),
                       "k", (1,), (1,), [])))
""")
    assert got[0] == H.ILLEGAL_ADDRESS and "shared memory" in got[1], got


@pytest.mark.parametrize("op", ["ld", "st"])
def test_global_access_wrapping_past_2_64_is_a_fault_not_a_segfault(subprocess_python, op):
    # defect: ld/st.global's fast path checked `a >= lo && a + size <= hi`; an address a few bytes below 2^64
    # passes both (the sum wraps) once the warp has touched any allocation, and the engine dereferenced it
    body = {"ld": "ld.global.u32 %r2, [%rd2];", "st": "st.global.u32 [%rd2], %r2;"}[op]
    got = _sub(subprocess_python, f"""
d = H.Dev(np.zeros(4, np.uint32))
print(json.dumps(H.run(K(".reg .b64 %rd<4>;\\n.reg .b32 %r<4>;\\nld.param.u64 %rd1, [p];\\nld.global.u32 %r2, [%rd1];\\n"
                         "mov.u64 %rd2, -4;\\n{body}\\nret;", ".param .u64 p"), "k", (1,), (1,), [d])))
""")
    assert got[0] == H.ILLEGAL_ADDRESS and "0xfffffffffffffffc" in got[1], got


# ------------------------------------------------------------------ vector widths
@pytest.mark.parametrize("insn", ["ld.global.v2.u32 {%r0,%r1,%r2}, [%rd1];", "ld.global.v4.u32 {%r0,%r1}, [%rd1];",
                                  "st.global.v2.u32 [%rd1], {%r0,%r1,%r2,%r3};", "st.global.v4.u32 [%rd1], {%r0,%r1};",
                                  "ld.global.u32 {%r0,%r1}, [%rd1];", "ld.global.v2.u32 %r0, [%rd1];",
                                  "st.global.v2.u32 [%rd1], %r0;"])
def test_a_vector_whose_operands_do_not_match_its_width_is_invalid_ptx(insn):
    # defect: ld/st took the number of braced operands and ignored .v2 / .v4, so `ld.global.v2.u32 {a,b,c}`
    # loaded 12 bytes checked for 8-byte alignment and `ld.global.v4.u32 {a,b}` loaded 8 (ptxas refuses both)
    text = HDR + (".visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<2>;\n.reg .b32 %r<4>;\n"
                  f"ld.param.u64 %rd1, [p];\n{insn}\nret;\n}}\n")
    rc, msg = H.build(text)
    assert rc == H.INVALID_PTX and "line 9" in msg, (rc, msg)


def test_vectors_of_the_declared_width_still_load_and_store():
    x = np.arange(8, dtype=np.uint32) + 100
    d, o = H.Dev(x), H.Dev(np.zeros(8, np.uint32))
    text = HDR + (".visible .entry k(.param .u64 p, .param .u64 q)\n{\n.reg .b64 %rd<3>;\n.reg .b32 %r<6>;\n"
                  "ld.param.u64 %rd1, [p];\nld.param.u64 %rd2, [q];\n"
                  "ld.global.v4.u32 {%r0,%r1,%r2,%r3}, [%rd1];\nld.global.v2.u32 {%r4,_}, [%rd1+16];\n"
                  "st.global.v2.u32 [%rd2], {%r3,%r2};\nst.global.v4.u32 [%rd2+16], {%r1,%r0,%r4,%r4};\nret;\n}\n")
    H.run_ok(text, "k", (1,), (1,), [d, o])
    assert o.get().tolist() == [103, 102, 0, 0, 101, 100, 104, 104]


# ------------------------------------------------------------------ memory freed under a running kernel
_SPIN = HDR + """.visible .entry spin(.param .u64 p, .param .u32 n)
{
.reg .b64 %rd<4>;
.reg .b32 %r<6>;
.reg .pred %p1;
ld.param.u64 %rd1, [p];
ld.param.u32 %r2, [n];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 4;
add.u64 %rd1, %rd1, %rd2;
mov.u32 %r3, 0;
L:
st.global.u32 [%rd1], %r3;
add.u32 %r3, %r3, 1;
setp.lt.u32 %p1, %r3, %r2;
@%p1 bra L;
ret;
}
"""


def test_cumemfree_while_a_kernel_runs_does_not_hand_its_bytes_back_under_it(subprocess_python):
    # defect: cuMemFree / cudaFree (which, unlike CUDA's, do not wait for the device) gave the bytes back to
    # malloc at once while a kernel on a stream was still storing into them (the engine caches an
    # allocation's bounds for the launch): the process died with SIGSEGV or the host heap was overwritten.
    # Now the bytes of an allocation freed while kernels run are kept until no kernel runs; the kernel's
    # later lookups of the freed range still fault
    got = _driver(subprocess_python, f"""
r, f = module({_SPIN.encode()!r}, b"spin")
s = VP()
assert r == 0 and cu.cuStreamCreate(c.byref(s), 1) == 0
d = c.c_uint64()
assert cu.cuMemAlloc_v2(c.byref(d), 4096) == 0
n = c.c_uint(200000)
args = (VP * 2)(c.cast(c.byref(d), VP), c.cast(c.byref(n), VP))
assert cu.cuLaunchKernel(f, 1, 1, 1, 1024, 1, 1, 0, s, args, None) == 0
time.sleep(0.3)
out = [cu.cuMemFree_v2(d.value)]
bufs = [c.create_string_buffer(4096) for _ in range(64)]
junk = [np.zeros(1024, np.uint32) for _ in range(64)]
out.append(cu.cuStreamSynchronize(s))
out.append(sum(1 for b in bufs if any(b.raw)) + sum(int(j.any()) for j in junk))
print(json.dumps(out))
""")
    assert got[0] == 0 and got[1] in (0, 700) and got[2] == 0, got


# ------------------------------------------------------------------ parameter space past the driver's limit
@pytest.mark.parametrize("size", [32768, 4294967304, 18446744073709551615])
def test_kernel_parameters_past_the_drivers_limit_are_refused_at_load(subprocess_python, size):
    # defect: `.param .b8 p[N]` was taken for any N, its offsets and sizes cut to 32 bits: p[2^64-1] made
    # cuLaunchKernel copy 2^64-1 bytes (SIGSEGV), p[2^32+8] launched with an 8-byte parameter buffer.  A
    # kernel's parameters take at most 32764 bytes (ptxas refuses more): CUDA_ERROR_INVALID_PTX at load
    got = _driver(subprocess_python, f"""
r, f = module(HDR + b".visible .entry k(.param .align 8 .b8 p[{size}])\\n{{\\nret;\\n}}\\n", b"k")
out = [r]
if not r:
    big = c.create_string_buffer(1 << 16)
    out += [cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, (VP * 1)(c.cast(big, VP)), None), cu.cuCtxSynchronize()]
print(json.dumps(out))
""")
    assert got == [218]


def test_kernel_parameters_up_to_the_limit_still_load_and_reach_the_kernel():
    o = H.Dev(np.zeros(2, np.uint64))
    blob = bytes(range(256)) * 127 + bytes(32764 - 256 * 127 - 8)
    text = HDR + (".visible .entry k(.param .align 8 .b8 p[32752], .param .u64 q)\n{\n.reg .b64 %rd<3>;\n"
                  "ld.param.u64 %rd1, [q];\nld.param.u64 %rd2, [p+32504];\nst.global.u64 [%rd1], %rd2;\nret;\n}\n")
    H.run_ok(text, "k", (1,), (1,), [blob[:32752], o])
    assert o.get()[0] == int.from_bytes(blob[32504:32512], "little")


def test_a_function_parameter_of_2_64_bytes_is_refused_not_a_crash(subprocess_python):
    got = _sub(subprocess_python, """
t = HDR + ".func f(.param .align 8 .b8 a[18446744073709551615])\\n{\\nret;\\n}\\n" + K("call f, ();\\nret;").replace(HDR, "")
print(json.dumps(H.build(t)))
""")
    assert got[0] in (H.INVALID_PTX, H.NOT_SUPPORTED) and "'f'" in got[1], got


# ------------------------------------------------------------------ initialisers longer than their variable
def test_an_initialiser_longer_than_its_array_is_invalid_ptx():
    # defect: `.global .u32 g[2] = {1,2,3}` built, the third value dropped without a word (ptxas refuses it)
    rc, msg = H.build(HDR + ".visible .global .u32 g[2] = {1,2,3};\n.visible .entry k()\n{\nret;\n}\n")
    assert rc == H.INVALID_PTX and "initialiser" in msg, (rc, msg)


def test_an_unsized_array_with_a_long_initialiser_is_refused_not_read_past_its_buffer():
    # defect: an unsized `g[]`'s initialiser went into a 64 KiB buffer, the values past it dropped, and the
    # variable's size set to the whole count: its initial bytes were then copied from past that buffer
    rc, msg = H.build(HDR + ".visible .global .u32 g[] = {" + ",".join(["7"] * 20000) + "};\n"
                      ".visible .entry k()\n{\nret;\n}\n")
    assert rc != H.OK and "initialiser" in msg, (rc, msg)


def test_initialisers_that_fit_still_initialise():
    o = H.Dev(np.zeros(4, np.uint32))
    text = HDR + (".visible .global .u32 g[4] = {1,2,3};\n.visible .global .u32 h[] = {9,8};\n"
                  ".visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<2>;\n.reg .b32 %r<5>;\nld.param.u64 %rd1, [p];\n"
                  "ld.global.v4.u32 {%r1,%r2,%r3,%r4}, [g];\nadd.u32 %r4, %r4, %r3;\nld.global.u32 %r3, [h+4];\n"
                  "st.global.v4.u32 [%rd1], {%r1,%r2,%r3,%r4};\nret;\n}\n")
    H.run_ok(text, "k", (1,), (1,), [o])
    assert o.get().tolist() == [1, 2, 8, 3]


def test_a_global_aligned_to_1024_loads():
    # defect: the load failed with CUDA_ERROR_OUT_OF_MEMORY ('cannot allocate 4 bytes'): the module allocator
    # refused alignments above cudaMalloc's 256; PTX allows any power of two, and the variable must be aligned
    o = H.Dev(np.zeros(1, np.uint64))
    text = HDR + (".visible .global .align 1024 .b8 g[4];\n.visible .global .align 4096 .b8 h[4];\n"
                  ".visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<4>;\nld.param.u64 %rd1, [p];\n"
                  "mov.u64 %rd2, g;\nmov.u64 %rd3, h;\nand.b64 %rd2, %rd2, 1023;\nand.b64 %rd3, %rd3, 4095;\n"
                  "or.b64 %rd2, %rd2, %rd3;\nst.global.u64 [%rd1], %rd2;\nret;\n}\n")
    H.run_ok(text, "k", (1,), (1,), [o])
    assert o.get()[0] == 0, hex(o.get()[0])   # g % 1024 | h % 4096


@pytest.mark.parametrize("align", ["3", "0", "24"])
def test_an_alignment_that_is_not_a_power_of_two_is_invalid_ptx(align):
    rc, msg = H.build(HDR + f".visible .global .align {align} .b8 g[4];\n.visible .entry k()\n{{\nret;\n}}\n")
    assert rc == H.INVALID_PTX and f".align {align}" in msg, (rc, msg)


# ------------------------------------------------------------------ local memory past a GPU thread's 512 KiB
def test_local_memory_past_512_kib_per_thread_is_refused_at_load_not_a_sticky_fault(subprocess_python):
    # defect: `.local .b8 l[2^40]` loaded; the launch returned 0 and the kernel then failed on the stream with
    # a sticky CUDA_ERROR_OUT_OF_MEMORY (the engine could not allocate its lanes' local memory), which ended the
    # context: every later call returned 2.  ptxas refuses more than 512 KiB of local memory per thread
    got = _driver(subprocess_python, """
def load(size):
    r, f = module(HDR + (".visible .entry k()\\n{\\n.local .align 8 .b8 l[SIZE];\\n.reg .b32 %r;\\n"
                         "ld.local.u32 %r, [l];\\nret;\\n}\\n").replace("SIZE", str(size)).encode(), b"k")
    return [r] if r else [r, cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, None, None, None), cu.cuCtxSynchronize()]
print(json.dumps([load(1 << 40), load(524289), load(524288)]))
""")
    assert got == [[218], [218], [0, 0, 0]]


def test_cumemfree_after_a_queued_launch_lets_the_kernel_run_first(subprocess_python):
    # defect: cuMemFree / cudaFree did not wait for the device as CUDA's do: a kernel queued on a stream
    # before the free, not yet started, then found the allocation gone and faulted with a sticky
    # CUDA_ERROR_ILLEGAL_ADDRESS (numba frees a setitem's temporary right after queueing the kernel that reads
    # it: test_cuda_array_slicing under load)
    got = _driver(subprocess_python, f"""
r, f = module({_SPIN.encode()!r}, b"spin")
s = VP()
assert r == 0 and cu.cuStreamCreate(c.byref(s), 1) == 0
d1, d2 = c.c_uint64(), c.c_uint64()
assert cu.cuMemAlloc_v2(c.byref(d1), 4096) == 0 and cu.cuMemAlloc_v2(c.byref(d2), 4096) == 0
n = c.c_uint(100000)
a1 = (VP * 2)(c.cast(c.byref(d1), VP), c.cast(c.byref(n), VP))
a2 = (VP * 2)(c.cast(c.byref(d2), VP), c.cast(c.byref(n), VP))
out = [cu.cuLaunchKernel(f, 1, 1, 1, 1024, 1, 1, 0, s, a1, None), cu.cuLaunchKernel(f, 1, 1, 1, 1024, 1, 1, 0, s, a2, None),
       cu.cuMemFree_v2(d2.value), cu.cuStreamSynchronize(s)]
print(json.dumps(out))
""")
    assert got == [0, 0, 0, 0]


@pytest.mark.parametrize("size", [49153, 65536])
def test_static_shared_memory_over_48_kib_is_refused_at_load(size):
    # defect: it loaded and launched; ptxas refuses it ('uses too much shared data (0x10000 bytes, 0xc000
    # max)'): only dynamic shared memory may pass 48 KiB, with the opt-in
    rc, msg = H.build(HDR + f".visible .entry k()\n{{\n.shared .align 1 .b8 g[{size}];\n.reg .b32 %r;\n"
                      "ld.shared.u32 %r, [g];\nret;\n}\n")
    assert rc == H.INVALID_PTX and "too much shared data" in msg and "'k'" in msg, (rc, msg)


def test_static_shared_memory_of_48_kib_loads():
    rc, msg = H.build(HDR + ".visible .entry k()\n{\n.shared .align 8 .b8 g[49152];\n.reg .b32 %r;\n"
                      "ld.shared.u32 %r, [g];\nret;\n}\n")
    assert rc == H.OK, (rc, msg)
