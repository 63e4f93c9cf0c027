"""The numpy backend runs softmax(masked_fill(x * number, mask, number), -1) as one kernel when each step is
read by the next alone: the fused program's values equal the unfused ones over cached steps, and it is not
fused where a step is read elsewhere, is a root, is not over the last dim, is log_softmax, casts or
broadcasts; both twins."""
import re

import pytest

CHECKS = r'''
import numpy as np
import accel.lazy as L

rng = np.random.default_rng(0)
S = 8
MASK = np.triu(np.ones((S, S), bool), 1)


def src():
    return L.get_latest_computation_graph()


def run(build, inputs, n=3):
    """build's results over n cached steps (fresh values each step) and the last program's text."""
    res = []
    for s in range(n):
        ts = [L.tensor(v + s) if v.dtype != bool else L.tensor(v) for v in inputs]
        L.mark_step()
        outs = build(*ts)
        L.mark_step()
        res.append([o.numpy() for o in outs])
    return res, src()


def softmax_np(t):
    e = np.exp(t - t.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def check_attention_pattern_fused_and_equal():
    x = rng.standard_normal((2, 3, S, S)).astype(np.float32)
    def build(x, m):
        return [(x * 0.125).masked_fill(m, float("-inf")).softmax(-1)]
    res, text = run(build, [x, MASK])
    assert "_masked_softmax(" in text and "_masked_fill(" not in text and "_multiply(" not in text, text
    for s, (got,) in enumerate(res):
        want = softmax_np(np.where(MASK, np.float32(-np.inf), (x + s) * np.float32(0.125)))
        assert np.allclose(got, want, rtol=1e-6, atol=1e-7)


def check_only_masked_or_only_scaled():
    x = rng.standard_normal((4, S)).astype(np.float64)
    def build(x, m):
        return [x.masked_fill(m[0], -1e9).softmax(-1), (x * 3).softmax(-1), (2 * x).softmax(dim=1),
                (x * x).masked_fill(m[1], 0).softmax(-1)]           # a tensor product: the masked_fill fused
    res, text = run(build, [x, MASK])
    assert text.count("_masked_softmax(") == 4, text
    for s, (a, b, c, d) in enumerate(res):
        xs = x + s
        assert np.allclose(d, softmax_np(np.where(MASK[1], 0, xs * xs)), rtol=1e-12)
        assert np.allclose(a, softmax_np(np.where(MASK[0], -1e9, xs)), rtol=1e-12)
        assert np.allclose(b, softmax_np(xs * 3), rtol=1e-12)
        assert np.allclose(c, softmax_np(xs * 2), rtol=1e-12)


def check_not_fused_when_a_step_is_read_elsewhere_or_a_root():
    x = rng.standard_normal((3, S)).astype(np.float32)
    def build(x, m):
        t = x * 0.5
        f = t.masked_fill(m[:3], -5.0)
        return [f.softmax(-1), t.sum(-1)]                # t read twice: the mul stays
    res, text = run(build, [x, MASK])
    assert "_masked_softmax(" in text and ("_multiply(" in text or "_kmultiply(" in text), text
    for s, (a, b) in enumerate(res):
        xs = (x + s) * np.float32(0.5)
        assert np.allclose(a, softmax_np(np.where(MASK[:3], np.float32(-5), xs)), rtol=1e-6)
        assert np.allclose(b, xs.sum(-1), rtol=1e-6)
    def build2(x, m):
        f = x.masked_fill(m[:3], -5.0)
        return [f.softmax(-1), f]                        # the masked_fill a root: not fused
    res, text = run(build2, [x, MASK])
    assert "_masked_softmax(" not in text and "_masked_fill(" in text, text
    for s, (a, f) in enumerate(res):
        assert np.array_equal(f, np.where(MASK[:3], np.float32(-5), x + s))
        assert np.allclose(a, softmax_np(f), rtol=1e-6)


def check_not_fused_other_dims_log_casts_broadcasts():
    x = rng.standard_normal((S, S)).astype(np.float32)
    h = rng.standard_normal((S, S)).astype(np.float16)
    def build(x, h, m):
        return [(x * 2).softmax(0), (x * 2).log_softmax(-1), (h * 2).softmax(-1),
                x.masked_fill(m, 1).softmax(-1, dtype=L.float64)]
    res, text = run(build, [x, h, MASK])
    assert "_masked_softmax(" not in text, text
    for s, (a, b, c, e) in enumerate(res):
        xs = x + s
        assert np.allclose(a, softmax_np((xs * 2).T).T, rtol=1e-6)
        assert np.allclose(b, np.log(softmax_np(xs * 2)), rtol=1e-5, atol=1e-6)
        assert c.dtype == np.float16
        assert e.dtype == np.float64


def check_integer_scale_and_value_and_multi_use_of_the_mask():
    x = rng.standard_normal((2, S, S)).astype(np.float32)
    def build(x, m):
        return [(x * 3).masked_fill(m, -7).softmax(-1), (x * 2).masked_fill(m, -7).softmax(-1), m.sum()]
    res, text = run(build, [x, MASK])
    assert text.count("_masked_softmax(") == 2, text
    for s, (a, b, c) in enumerate(res):
        xs = x + s
        assert np.allclose(a, softmax_np(np.where(MASK, np.float32(-7), xs * np.float32(3))), rtol=1e-6)
        assert np.allclose(b, softmax_np(np.where(MASK, np.float32(-7), xs * np.float32(2))), rtol=1e-6)
        assert c == MASK.sum()
'''

NAMES = re.findall(r"^def (check_\w+)\(", CHECKS, re.M)


@pytest.fixture(scope="module", params=["native", "python"])
def results(request, lazy_checks):
    return lazy_checks(CHECKS, request.param)


@pytest.mark.parametrize("name", NAMES)
def test_lazy_masked_softmax(results, name):
    assert results[name] == "ok", results[name]
