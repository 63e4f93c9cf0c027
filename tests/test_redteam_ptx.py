"""The PTX engine and the driver's kernel entry points attacked as a hostile user would (red team of issue 32):
addresses that wrap around 2^64 past the fast paths' bounds checks, and the other probes listed in each test.
Each test names the defect it pins; crashes are run in a fresh interpreter with a timeout so that a defect
fails the test instead of the suite."""
import importlib.util
import json
import pathlib

import numpy as np
import pytest

_HERE = pathlib.Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("ptx_harness", _HERE / "ptx_harness.py")
H = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(H)

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


def _sub(subprocess_python, code, timeout=60):
    proc = subprocess_python(_PRELUDE + code, env={"ACCEL_EMU_TRACE": None}, timeout=timeout)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


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
