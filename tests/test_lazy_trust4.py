"""Issue 31 items 8-12 (lazy tensors), against what torch 2.13 does (tests/data/lazy_trust4.json, made by
tools/gen_lazy_trust4.py from eager torch and LTC's TorchScript backend): gather / index_select / embedding with
negative or out-of-range indices, randint / random_ bounds that do not fit the dtype, nonzero(as_tuple=True) of
0-dim tensors, one_hot / nll_loss / cross_entropy messages.  Each case compares the value (dtype, shape, values),
or the exception's type and message, and the warnings; the counter scenarios (exponential_ / bernoulli_(tensor p),
item 11) compare LTC's counters and the values, run in torch's order in an interpreter of their own (the
computation cache they share decides CachedCompile / UncachedCompile).  Each runs once per twin."""
import json
import pathlib

import pytest

PATH = pathlib.Path(__file__).resolve().parent / "data" / "lazy_trust4.json"
DATA = json.loads(PATH.read_text())
# the groups whose fixes are in (issue 31 items: index 8, randint 9, nonzero 10, losses 12)
GROUPS = ("index", "randint", "nonzero", "losses")
CASES = [c for c in DATA["cases"] if c["group"] in GROUPS]

CHECKS = r'''
import json, warnings
import numpy as np
import accel.lazy as T
import accel.lazy.nn.functional as F

dev = "lazy"

def t(a):
    return T.tensor(np.array(a))

def encode(r):
    if isinstance(r, (tuple, list)):
        return {"tuple": [encode(x) for x in r]}
    v = r.numpy()
    return {"dtype": "bfloat16" if r.dtype == T.bfloat16 else np.dtype(r.dtype).name, "shape": list(v.shape),
            "values": v.tolist()}

def run(code):
    T.manual_seed(0)
    ns = {"T": T, "F": F, "np": np, "dev": dev, "t": t}
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        try:
            exec(code, ns)
            res = {"ok": encode(ns["out"])}
        except Exception as e:
            res = {"error": [type(e).__name__, str(e)]}
    res["warnings"] = [str(w.message) for w in ws]
    return res

def compare(case):
    got = run(case["code"])
    want = case["expect"]
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True), (case["code"], got, want)

def counters():
    # (CreateLtcTensor / DestroyLtcTensor also count LTC's temporaries: a README deviation)
    from accel.lazy import metrics as M
    return {n: M.counter_value(n) for n in M.counter_names() if n not in ("CreateLtcTensor", "DestroyLtcTensor")}

# LTC's counters (torch 2.13, TorchScript backend) for the same steps, after a mark_step and a metrics reset
def check_nonzero_tuple_0d_counters():
    from accel.lazy import metrics as M
    for v, want in ((np.float32(5), [[0]]), (np.array([0.0, 2.0], np.float32), [[1]]), (np.int64(0), [[]])):
        x = t(v)
        T.mark_step()
        M.reset()
        r = T.nonzero(x, as_tuple=True)
        got = counters()
        assert [a.numpy().tolist() for a in r] == want
        if v.ndim == 0:       # torch's nonzero_numpy: unsqueeze(0) (traced), computed for the eager nonzero
            assert got == {"SyncedTensorsWithIR": 1, "UncachedCompile": 1, "aten::nonzero": 1,
                           "aten::unbind_copy.int": 1, "lazy::_to_copy": 3, "lazy::unsqueeze_copy": 1}, got
        else:
            assert got == {"aten::nonzero": 1, "aten::unbind_copy.int": 1, "lazy::_to_copy": 3}, got

def check_random_from_without_to():
    # (red team of issue 31) torch's random_(from, None) draws from [from, the dtype's largest value] (LTC's
    # RandomFrom node); accel read it as random_(to=from) and drew from [0, from) without a word.  Until the open
    # bound is drawn as torch's (test_random_from_without_to_as_torch), it is refused and the tensor unchanged.
    for dt in (T.int64, T.int32, T.uint8, T.float32, T.bool):
        x = T.zeros(3, dtype=dt, device=dev)
        try:
            x.random_(5 if dt is not T.bool else 0, None)
        except NotImplementedError as e:
            assert "to=None" in str(e) and "RandomFrom" in str(e), str(e)
        else:
            raise AssertionError(f"random_(from, None) of {dt} drew {x.numpy().tolist()}")
        assert x.numpy().tolist() == [0, 0, 0]
    x = T.zeros(3, dtype=T.int64, device=dev)
    assert all(0 <= v < 5 for v in x.random_(5).numpy().tolist())         # random_(to) unchanged
    assert all(2 <= v < 5 for v in x.random_(2, 5).numpy().tolist())

def check_nll_loss_spatial_byte_target():
    # (red team of issue 31) torch 2.13 refuses a Byte target of an [N, C, d...] input (nll_loss2d's kernel reads
    # int64 targets) after its shape and weight checks and before any target value; accel computed a loss
    for shape, tshape in (((2, 3, 2), (2, 2)), ((2, 3, 2, 2), (2, 2, 2)), ((1, 4, 2, 1), (1, 2, 1))):
        for tv in (0, 7):
            x = t(np.zeros(shape, np.float32))
            y = t(np.full(tshape, tv, np.uint8))
            for kw in ({}, {"reduction": "none"}, {"ignore_index": tv}):
                try:
                    F.nll_loss(x, y, **kw)
                except RuntimeError as e:
                    assert str(e) == "expected scalar type Long but found Byte", str(e)
                else:
                    raise AssertionError(f"nll_loss of {shape} with a Byte target {tshape} gave a loss")
    x = t(np.zeros((2, 3, 2), np.float32))
    try:
        F.nll_loss(x, t(np.zeros((2, 2), np.uint8)), weight=t(np.ones(4, np.float32)))
    except RuntimeError as e:       # the weight check comes first, as torch's
        assert str(e) == "weight tensor should be defined either for all or no classes", str(e)
    assert F.nll_loss(t(np.zeros((2, 3), np.float32)), t(np.zeros(2, np.uint8))).numpy().tolist() == 0.0

def check_where_condition_dtype_message():
    # (red team of issue 31) torch 2.13 names the condition's dtype as a scalar type (Long, Double, Byte), accel
    # named numpy's (int64, float64).  (A uint8 condition, which torch takes with a deprecation warning, is left out.)
    for v, name in (([1, 0], "Long"), ([1.0, 0.0], "Double"), (np.array([1, 0], np.float16), "Half"),
                    (np.array([1, 0], np.int8), "Char")):
        for form in (lambda c: T.where(c, 1, 2), lambda c: t([1, 2]).where(c, 0)):
            try:
                form(t(v))
            except RuntimeError as e:
                assert str(e) == ("where expected condition to be a boolean tensor, but got a tensor with dtype "
                                  + name), str(e)
            else:
                raise AssertionError(f"where of a {name} condition gave a result")

for _i, _c in enumerate(CASES):
    globals()[f"check_case_{_i}"] = (lambda c=_c: compare(c))
'''


SCENARIOS = DATA["counter_scenarios"]

SCENARIO_CHECKS = r'''
import json
import numpy as np
import accel.lazy as T
from accel.lazy import metrics as M

def t(a):
    return T.tensor(np.array(a))

def encode(r):
    v = r.numpy()
    return {"dtype": np.dtype(r.dtype).name, "shape": list(v.shape), "values": v.tolist()}

def scenario(sc):
    T.mark_step()
    M.reset()
    T.manual_seed(0)
    ns = {"T": T, "np": np, "t": t, "step": T.mark_step}
    exec(sc["code"], ns)
    counters = {n: M.counter_value(n) for n in M.counter_names() if n not in ("CreateLtcTensor", "DestroyLtcTensor")}
    got = {"counters": counters, "values": [encode(x) for x in ns["out"]]}
    want = {"counters": sc["counters"], "values": sc["values"]}
    assert got == want, (sc["code"], got, want)

for _i, _c in enumerate(SCENARIOS):        # (in order: the checks run in the order they are defined)
    globals()[f"check_scenario_{_i}"] = (lambda c=_c: scenario(c))
'''


@pytest.fixture(scope="module", params=["native", "python"])
def scenario_results(request, lazy_checks):
    return lazy_checks(f"import json as _j\nSCENARIOS = _j.load(open({str(PATH)!r}))['counter_scenarios']\n"
                       + SCENARIO_CHECKS, request.param)


@pytest.mark.parametrize("i", range(len(SCENARIOS)), ids=[sc["name"] for sc in SCENARIOS])
def test_lazy_trust4_counter_scenarios(scenario_results, i):
    assert scenario_results[f"check_scenario_{i}"] == "ok", scenario_results[f"check_scenario_{i}"]


@pytest.fixture(scope="module", params=["native", "python"])
def results(request, lazy_checks):
    return lazy_checks(f"import json as _j\nCASES = [c for c in _j.load(open({str(PATH)!r}))['cases'] "
                       f"if c['group'] in {GROUPS!r}]\n" + CHECKS, request.param)


EXTRA = [n for n in CHECKS.split("\ndef ")[1:] if n.startswith("check_")]
EXTRA = [n.split("(")[0] for n in EXTRA]


@pytest.mark.parametrize("name", EXTRA)
def test_lazy_trust4_counters(results, name):
    assert results[name] == "ok", results[name]


def test_data_from_torch_213():
    assert DATA["torch_version"].startswith("2.13") and len(DATA["cases"]) > 200 and CASES


@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{c['group']}:{c['name']}" for c in CASES])
def test_lazy_trust4(results, i):
    assert results[f"check_case_{i}"] == "ok", results[f"check_case_{i}"]


# torch 2.13 LTC (TorchScript backend), torch.manual_seed(0): torch.zeros(3, dtype=torch.int64,
# device="lazy").random_(5, None) traces "aten::random(%1), from=5, to=null, generator=null" (NodeType RandomFrom)
# and gives these values (eager CPU gives the same for int64)
RANDOM_FROM_5_INT64 = [900450186894289465, 3969543146641149130, 1895649597198586629]


@pytest.mark.xfail(strict=True, reason="red team of issue 31: random_(from, None) (LTC's RandomFrom node, an open "
                                       "upper bound) is refused by accel.lazy instead of drawn as torch's")
@pytest.mark.parametrize("backend", ["native", "python"])
def test_random_from_without_to_as_torch(lazy_checks, backend):
    code = ("import accel.lazy as T\n"
            "def check_values():\n"
            "    T.manual_seed(0)\n"
            "    x = T.zeros(3, dtype=T.int64, device='lazy')\n"
            f"    assert x.random_(5, None).numpy().tolist() == {RANDOM_FROM_5_INT64!r}\n")
    assert lazy_checks(code, backend)["check_values"] == "ok"
