"""Lazy tensors against torch's LTC: for every program in tests/data/lazy_golden.json (made by
tools/gen_lazy_golden.py from torch 2.13.0 CPU, TorchScript backend), the IR text (and the dot graph
where recorded) and the graph hash equal torch's byte for byte, and the values after mark_step equal
torch's eager CPU values.  Both twins, each in its own interpreter (ACCEL_BACKEND), so that the tensor
layer runs over that twin's IR."""
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "lazy_golden.json"
TOOLS = ROOT / "tools" / "gen_lazy_golden.py"

CHECK = r'''
import importlib.util, json, sys
import numpy as np
spec = importlib.util.spec_from_file_location("gen", sys.argv[1])
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
import accel, accel.lazy as L
assert accel.backend == sys.argv[3], accel.backend
doc = json.load(open(sys.argv[2]))
fails = []
for i, p in enumerate(doc["programs"]):
    why = []
    try:
        arrays = gen.make_inputs(p["inputs"], i)
        out = gen.run_program(L, p["code"], [L.tensor(a) for a in arrays], L.mark_step)
        text = L.get_tensors_text(out)
        if text != p["text"]:
            why.append("text:\n" + text + "expected:\n" + p["text"])
        if "dot" in p and L.get_tensors_dot(out) != p["dot"]:
            why.append("dot:\n" + L.get_tensors_dot(out) + "expected:\n" + p["dot"])
        h = L.get_graph_hash(out).hex()
        if h != p["hash"]:
            why.append(f"hash {h} != {p['hash']}")
        L.mark_step()
        for k, (t, e) in enumerate(zip(out, p["values"])):
            v = t.numpy()
            want = np.array(e["data"], dtype=e["dtype"]).reshape(e["shape"])
            if v.dtype != want.dtype or v.shape != want.shape:
                why.append(f"out[{k}] is {v.dtype}{list(v.shape)}, torch gives {want.dtype}{list(want.shape)}")
            elif want.dtype.kind in "biu":
                if not np.array_equal(v, want):
                    why.append(f"out[{k}] = {v.tolist()} != {want.tolist()}")
            else:
                rtol = 1e-5 if want.dtype == np.float32 else 1e-12
                if not np.allclose(v, want, rtol=rtol, atol=rtol, equal_nan=True):
                    why.append(f"out[{k}] = {v.tolist()} != {want.tolist()}")
    except Exception as exc:
        why.append(f"{type(exc).__name__}: {exc}")
    if why:
        fails.append(p["name"] + ": " + "; ".join(why))
from accel.lazy import metrics as M
for sc in doc["counter_scenarios"]:
    L.mark_step()
    M.reset()
    texts = gen.run_scenario(L, sc["code"], L.tensor, L.mark_step, L.get_graph_hash, L.sync_multi,
                             lambda t: t.numpy(), L.get_tensors_text, L.set_reuse_ir, L.force_fallback)
    if texts != sc["texts"]:
        fails.append(f"texts of {sc['name']}: {texts} != {sc['texts']}")
    got = {n: M.counter_value(n) for n in M.counter_names() if n not in gen.COUNTERS_SKIPPED}
    if got != sc["counters"]:
        fails.append(f"counters of {sc['name']}: {got} != {sc['counters']}")
print(json.dumps({"count": len(doc["programs"]), "fails": fails}))
'''


@pytest.fixture(scope="module")
def golden():
    return json.loads(DATA.read_text())


def test_golden_file(golden):
    assert golden["torch_version"].startswith("2.13.0")
    assert len(golden["programs"]) >= 100
    names = [p["name"] for p in golden["programs"]]
    assert len(set(names)) == len(names)
    assert sum("dot" in p for p in golden["programs"]) >= 30
    assert len(golden["counter_scenarios"]) >= 5


@pytest.mark.parametrize("backend", ["native", "python"])
def test_programs_match_torch(backend, subprocess_python):
    from accel import _build_config
    if backend == "native" and not _build_config.NATIVE:
        pytest.skip("installed with -Dnative=false: no compiled twin")
    code = f"import sys; sys.argv = ['x', {str(TOOLS)!r}, {str(DATA)!r}, {backend!r}]\n" + CHECK
    r = subprocess_python(code, env={"ACCEL_BACKEND": backend}, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["count"] >= 100
    assert res["fails"] == [], "\n".join(res["fails"][:10])
