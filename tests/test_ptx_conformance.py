"""Per-instruction conformance of the PTX engine (issue 32, item 5): each variant of tests/ptx_reference.py
runs as a one-instruction kernel over its edge operands (±0, subnormals, NaN payloads, ±inf, INT_MIN,
shifts >= width, rounding ties); every result is checked against the reference written from the PTX ISA,
and, where tools/gen_ptx_golden.py has recorded a real GPU's results (tests/data/ptx_golden/*.json),
against those bit for bit."""
import ctypes
import importlib.util
import json
import pathlib

import numpy as np
import pytest


def _load(name):
    spec = importlib.util.spec_from_file_location(name, pathlib.Path(__file__).with_name(f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


H = _load("ptx_harness")
R = _load("ptx_reference")

pytestmark = pytest.mark.skipif(not H.HAVE_EMU, reason="no emulator in this install (-Dnative=false)")

VARIANTS = R.all_variants()
GOLDEN = pathlib.Path(__file__).resolve().parent / "data" / "ptx_golden"


def engine_results(v):
    inp = R.inputs_array(v)
    n = len(inp)
    din, dout, dscr = H.Dev(inp), H.Dev(np.zeros(n, np.uint64)), H.Dev(np.zeros(n, np.uint64))
    H.run_ok(R.kernel_text(v), "k", ((n + R.BLOCK - 1) // R.BLOCK,), (R.BLOCK,), [din, dout, ctypes.c_uint32(n), dscr])
    return [int(x) for x in dout.get()]


@pytest.mark.parametrize("v", VARIANTS, ids=[v.name for v in VARIANTS])
def test_variant_matches_reference(v):
    got = engine_results(v)
    bad = []
    for ops, e, g in zip(v.inputs, v.expected(), got):
        if not R.matches(e, g, v.td):
            bad.append(f"{v.name}{tuple(hex(x) for x in ops)}: expected {e if not isinstance(e, int) else hex(e)}, got {hex(g)}")
    assert not bad, f"{len(bad)} of {len(got)} wrong:\n" + "\n".join(bad[:12])


MATRIX = R.matrix_variants()


def matrix_results(v):
    inp = R.matrix_inputs_array(v)
    n = len(inp)
    din, dout, dscr = H.Dev(inp), H.Dev(np.zeros(n * v.nout, np.uint64)), H.Dev(np.zeros(n, np.uint64))
    H.run_ok(R.matrix_kernel_text(v), "k", ((n + R.BLOCK - 1) // R.BLOCK,), (R.BLOCK,), [din, dout, ctypes.c_uint32(n), dscr])
    return [int(x) for x in dout.get()]


@pytest.mark.parametrize("v", MATRIX, ids=[v.name for v in MATRIX])
def test_matrix_variant_matches_reference(v):
    """mma / ldmatrix / stmatrix / movmatrix / cp.async over whole warps: every lane's words against the
    reference's fragment layouts and arithmetic."""
    got = matrix_results(v)
    exp = v.expected()
    assert len(exp) == len(got)
    bad = [f"{v.name} thread {i // v.nout} word {i % v.nout}: expected {e if not isinstance(e, int) else hex(e)}, got {hex(g)}"
           for i, (e, g) in enumerate(zip(exp, got)) if not R.matches(e, g, v.td)]
    assert not bad, f"{len(bad)} of {len(got)} wrong:\n" + "\n".join(bad[:12])


def test_matrix_reference_catches_a_wrong_layout():
    """The vectors discriminate layouts: m16n8k16 run as if B were m16n8k8's two halves swapped fails."""
    v = next(x for x in MATRIX if x.name == "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    # swap the two B registers of every lane in the body: b0,b1 <-> b2,b3 of the fragment
    wrong = R.MV("swapped", v.body.replace("{%a4, %a5}", "{%a5, %a4}"), v.td, [v.inputs[i:i + 32] for i in range(0, 64, 32)],
                 v.ref, v.nin, v.nout)
    got = matrix_results(wrong)
    assert any(not R.matches(e, g, v.td) for e, g in zip(wrong.expected(), got))


def test_reference_catches_a_wrong_rounding_mode():
    """The vectors discriminate: executing fma.rm as round-to-nearest (what whole-kernel tests missed) fails."""
    v = next(x for x in VARIANTS if x.name == "fma.rm.f32")
    wrong = R.V("fma.rm.f32 as rn", v.body.replace(".rm.", ".rn."), "f32", "f32", v.inputs, v.ref)
    got = engine_results(wrong)
    assert any(not R.matches(e, g, "f32") for e, g in zip(v.expected(), got))


def _goldens():
    return sorted(GOLDEN.glob("*.json")) if GOLDEN.exists() else []


def golden_differences(paths):
    """Every result where the engine differs from a recorded GPU result (NaN payloads included)."""
    by_name = {v.name: v for v in VARIANTS + MATRIX}
    bad = []
    for path in paths:
        data = json.loads(pathlib.Path(path).read_text())
        for name, rec in data["variants"].items():
            v = by_name.get(name)
            if v is None or [list(x) for x in v.inputs] != rec["inputs"]:
                bad.append(f"{pathlib.Path(path).name} {name}: the vectors changed since the recording (run tools/gen_ptx_golden.py again)")
                continue
            got = matrix_results(v) if isinstance(v, R.MV) else engine_results(v)
            mask = (1 << R.type_bits(v.td)) - 1
            nw = R.out_words(v)
            for i, (g, want) in enumerate(zip(got, rec["outputs"])):
                if (g & mask) != (want & mask):
                    ops = v.inputs[i // nw]
                    word = f" word {i % nw}" if nw > 1 else ""
                    bad.append(f"{pathlib.Path(path).name} {name}{tuple(hex(x) for x in ops)}{word}: GPU {hex(want)}, engine {hex(g)}")
    return bad


@pytest.mark.skipif(not _goldens(), reason="no GPU goldens recorded yet (tools/gen_ptx_golden.py on a GPU machine)")
def test_engine_matches_gpu_goldens():
    bad = golden_differences(_goldens())
    assert not bad, f"{len(bad)} differences from the GPU:\n" + "\n".join(bad[:20])


def test_golden_comparison_reports_a_matrix_difference(tmp_path):
    """A recorded warp-wide variant is compared word by word (its threads write several words)."""
    v = next(x for x in MATRIX if x.name.startswith("ldmatrix.sync.aligned.m8n8.x4.trans"))
    outputs = matrix_results(v)
    rec = {"device": "test", "cc": "9.0", "refused": {},
           "variants": {v.name: {"body": v.body, "td": v.td, "inputs": [list(x) for x in v.inputs], "outputs": outputs}}}
    good = tmp_path / "good.json"
    good.write_text(json.dumps(rec))
    assert golden_differences([good]) == []
    rec["variants"][v.name]["outputs"][7] ^= 1 << 20
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(rec))
    diffs = golden_differences([bad])
    assert len(diffs) == 1 and "word 3" in diffs[0], diffs


def test_golden_comparison_reports_a_difference(tmp_path):
    """The comparison itself can fail: a recording that differs in one result is reported."""
    v = next(x for x in VARIANTS if x.name == "add.rn.f32")
    outputs = engine_results(v)
    rec = {"device": "test", "cc": "9.0", "refused": {},
           "variants": {v.name: {"body": v.body, "td": v.td, "inputs": [list(x) for x in v.inputs], "outputs": outputs}}}
    good = tmp_path / "good.json"
    good.write_text(json.dumps(rec))
    assert golden_differences([good]) == []
    rec["variants"][v.name]["outputs"][5] ^= 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(rec))
    diffs = golden_differences([bad])
    assert len(diffs) == 1 and "add.rn.f32" in diffs[0]
