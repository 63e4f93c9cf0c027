"""The computation cache's byte budget (issue 17 B8): each cached numpy program keeps its scratch buffers,
so with many distinct shapes the cache is bounded by bytes (``max_bytes``, ACCEL_LAZY_CACHE_BYTES) as
well as by LTC's entry count.  The ComputationCache checks run in-process (plain Python); the end-to-end
checks once per twin in their own interpreter (ACCEL_BACKEND), as the cache's setting is read at import."""
import json

import pytest

import accel.lazy as lazy


class _Sized:
    def __init__(self, nbytes):
        self.nbytes = nbytes


def test_bytes_evict_least_recent_and_keep_the_newest():
    c = lazy.ComputationCache(10, max_bytes=100)
    a, b, d = _Sized(40), _Sized(40), _Sized(40)
    c.add("a", a), c.add("b", b)
    assert c.nbytes == 80 and len(c) == 2
    c.add("c", d)                                  # 120 > 100: the least recent (a) goes
    assert c.get("a") is None and c.nbytes == 80 and len(c) == 2
    assert c.get("b") is b                         # b is now the most recent: c goes next
    c.add("d", _Sized(30))
    assert "c" not in c and "b" in c and c.nbytes == 70
    big = _Sized(500)
    assert c.add("e", big) is big                  # larger than the budget: alone, but cached
    assert len(c) == 1 and c.get("e") is big and c.nbytes == 500 and c.get_latest() is big
    assert c.add("e", _Sized(1)) is big and c.nbytes == 500       # an existing key keeps the old value
    assert c.erase("e") and c.nbytes == 0 and not c.erase("e")
    c.add("x", "no nbytes"), c.add("y", _Sized(7))               # values without nbytes count 0
    assert c.nbytes == 7
    c.clear()
    assert c.nbytes == 0 and len(c) == 0


def test_count_semantics_unchanged_and_budget_settable():
    c = lazy.ComputationCache(2)                   # LTC's cache: no byte budget by default
    assert c.max_bytes is None
    for k in "abc":
        c.add(k, _Sized(1 << 40))
    assert len(c) == 2 and "a" not in c and c.nbytes == 2 << 40
    c.max_bytes = 1 << 40                          # setting the budget evicts down to it now
    assert len(c) == 1 and "c" in c and c.nbytes == 1 << 40
    c.max_bytes = None
    off = lazy.ComputationCache(0, max_bytes=10)
    assert off.add("a", _Sized(5)) is not None and off.nbytes == 0 and len(off) == 0


@pytest.mark.parametrize("bad", [-1, True, 1.5, "10"])
def test_bad_budget_is_refused(bad):
    with pytest.raises(ValueError, match="max_bytes must be None or an int >= 0, got"):
        lazy.ComputationCache(4, max_bytes=bad)
    c = lazy.ComputationCache(4, max_bytes=10)
    with pytest.raises(ValueError, match=repr(bad).replace(".", r"\.")):
        c.max_bytes = bad
    assert c.max_bytes == 10


@pytest.mark.parametrize("bad", [-1, True, 2.0, "3"])
def test_bad_value_size_changes_nothing(bad):
    c = lazy.ComputationCache(4, max_bytes=10)
    c.add("a", _Sized(4))
    with pytest.raises(TypeError, match="nbytes must be an int >= 0"):
        c.add("b", _Sized(bad))
    assert len(c) == 1 and "b" not in c and c.nbytes == 4


CHECK = r'''
import gc, json, sys
import numpy as np
import accel, accel.lazy as L

gc.disable()                    # what is freed must be freed at once, not by a later collection

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

c = L.computation_cache()
out = {"backend": accel.backend, "max_bytes": c.max_bytes, "maxsize": c.maxsize}
if sys.argv[1:] == ["many"]:
    # variable sequence lengths: one program per shape, each with an (n, 512) float32 scratch buffer
    base = rss()
    total = peak = 0
    values_ok = True
    for n in range(1, 201):
        x = L.tensor(np.full((n, 512), 0.5, np.float32))
        y = ((x * 2 + 1).exp() * 3).sum()
        L.mark_step()
        total += c.get_latest().nbytes
        peak = max(peak, c.nbytes - c.get_latest().nbytes)
        want = np.float32(n * 512) * (np.exp(np.float32(2)) * np.float32(3))
        values_ok &= bool(np.isclose(y.numpy(), want, rtol=1e-5))
    out.update(entries=len(c), nbytes=c.nbytes, total=total, peak_others=peak, rss=rss() - base,
               values_ok=values_ok)
print(json.dumps(out))
'''


def _run(subprocess_python, twin, env, *args):
    from accel import _build_config
    if twin == "native" and not _build_config.NATIVE:
        pytest.skip("installed with -Dnative=false: no compiled twin")
    code = "import sys; sys.argv[1:] = %r\n" % (list(args),) + CHECK
    return subprocess_python(code, env={"ACCEL_BACKEND": twin, **env}, timeout=300)


@pytest.mark.parametrize("twin", ["native", "python"])
def test_many_shapes_hold_bounded_memory(subprocess_python, twin):
    r = _run(subprocess_python, twin, {"ACCEL_LAZY_CACHE_BYTES": str(2_000_000)}, "many")
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["backend"] == twin and out["max_bytes"] == 2_000_000 and out["maxsize"] == 1024
    assert out["values_ok"]
    # 200 programs would keep > 40 MB of scratch; the cache holds the budget (besides the newest one)
    assert out["total"] > 40_000_000, out
    assert out["peak_others"] <= 2_000_000 and out["nbytes"] <= 2_000_000 + 512 * 200 * 4 + 100_000, out
    assert out["entries"] < 20, out
    assert out["rss"] < 16_000_000, out          # evicted programs are freed (RSS grew ~43 MB before)


@pytest.mark.parametrize("twin", ["native", "python"])
@pytest.mark.parametrize("setting, want", [(None, 1 << 30), ("none", None), ("0", 0), (" 12345 ", 12345)])
def test_budget_setting(subprocess_python, twin, setting, want):
    r = _run(subprocess_python, twin, {"ACCEL_LAZY_CACHE_BYTES": setting})
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1])["max_bytes"] == want


@pytest.mark.parametrize("bad", ["-1", "1GiB", "1e9"])
def test_bad_budget_setting_names_it(subprocess_python, bad):
    r = _run(subprocess_python, "python", {"ACCEL_LAZY_CACHE_BYTES": bad})
    assert r.returncode != 0
    assert f"ACCEL_LAZY_CACHE_BYTES={bad!r} is not valid: expected a number of bytes >= 0 or 'none'" in r.stderr
