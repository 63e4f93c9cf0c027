"""The numpy backend computes an elementwise result that only a cat reads straight into its part of the cat's
buffer (no concatenate copy): the values over several cached steps, and the cases where it must not (the
operand read elsewhere, a root, a view, the cat itself a root or seen through a view, the same operand twice,
mixed dtypes), on both twins."""
import re

import pytest

CHECKS = r'''
import re

import numpy as np
import accel.lazy as L

rng = np.random.default_rng(0)


def arr(*shape, dt=np.float32):
    return rng.standard_normal(shape).astype(dt)


def src():
    return L.get_latest_computation_graph()


def steps(build, ref, inputs, n=3):
    """Run build over n cached steps with fresh input values each step; every result equals ref's."""
    for s in range(n):
        vals = [v + s for v in inputs]
        ts = [L.tensor(v) for v in vals]
        L.mark_step()
        outs = build(*ts)
        L.mark_step()
        want = ref(*vals)
        for o, w in zip(outs, want):
            got = o.numpy()
            assert got.dtype == w.dtype and got.shape == w.shape, (got.dtype, w.dtype, got.shape, w.shape)
            assert np.allclose(got, w, rtol=1e-6, atol=1e-6), (s, np.max(np.abs(got - w)))


def check_rotary_halves_written_in_place():
    a, b, c = arr(4, 3, 8), arr(4, 3, 8), arr(3, 8)
    def build(a, b, c):
        y = L.cat([a * c - b, a + b * c], -1)
        return [(y * 2).sum(-1)]
    def ref(a, b, c):
        return [(np.concatenate([a * c - b, a + b * c], -1) * 2).sum(-1)]
    steps(build, ref, [a, b, c])
    text = src()
    assert "_concatenate" not in text, text
    assert re.search(r"_p\d+_0\)", text) and re.search(r"_p\d+_1\)", text), text


def check_axis_0_and_middle():
    a, b = arr(2, 5, 3), arr(4, 5, 3)
    def build(a, b):
        return [(L.cat([a * 2, b + 1], 0) + 1).sum(0), (L.cat([a - 1, a * 3], 1) * 2).mean(1)]
    def ref(a, b):
        return [(np.concatenate([a * 2, b + 1], 0) + 1).sum(0), (np.concatenate([a - 1, a * 3], 1) * 2).mean(1)]
    steps(build, ref, [a, b])
    assert "_concatenate" not in src()


def check_operand_also_read_elsewhere():
    a, b = arr(3, 4), arr(3, 4)
    def build(a, b):
        t = a * b
        return [(L.cat([t, b], 1) * 2).sum(1), t.sum(1)]        # t read by the cat and by sum
    def ref(a, b):
        t = a * b
        return [(np.concatenate([t, b], 1) * 2).sum(1), t.sum(1)]
    steps(build, ref, [a, b])


def check_operand_is_a_root_or_a_view():
    a, b = arr(3, 4), arr(3, 4)
    keep = []
    def build(a, b):
        t = a + b
        keep.append(t)
        return [(L.cat([t, b.t().t()], 0) - 1).sum(0), t]      # t also a root; a view operand
    def ref(a, b):
        return [(np.concatenate([a + b, b], 0) - 1).sum(0), a + b]
    steps(build, ref, [a, b])
    # the roots of earlier steps kept their values (the cat's buffer is rewritten each step)
    for s, t in enumerate(keep):
        assert np.allclose(t.numpy(), (a + s) + (b + s))


def check_cat_itself_a_root_and_kept():
    a, b = arr(2, 3), arr(2, 3)
    kept = []
    for s in range(3):
        ta, tb = L.tensor(a + s), L.tensor(b + s)
        L.mark_step()
        y = L.cat([ta * 2, tb * 3], 1)
        v = L.cat([ta + 1, tb - 1], 1).view(-1)                # a view of a cat as the root
        L.mark_step()
        kept.append((y, v, s))
    for y, v, s in kept:                                        # earlier steps' results are not overwritten
        assert np.allclose(y.numpy(), np.concatenate([(a + s) * 2, (b + s) * 3], 1))
        assert np.allclose(v.numpy(), np.concatenate([a + s + 1, b + s - 1], 1).reshape(-1))


def check_same_operand_twice_and_mixed_dtypes():
    a, b = arr(3, 2), arr(3, 2, dt=np.float64)
    def build(a, b):
        t = a * 2
        return [(L.cat([t, t], 1) + 1).sum(1), (L.cat([a * 2, b * 2], 1) + 1).sum(1),
                (L.cat([a * 2, (a > 0).float()], 1) + 1).sum(1)]
    def ref(a, b):
        t = a * 2
        return [(np.concatenate([t, t], 1) + 1).sum(1),
                (np.concatenate([(a * 2).astype(np.float64), b * 2], 1) + 1).sum(1),
                (np.concatenate([a * 2, (a > 0).astype(np.float32)], 1) + 1).sum(1)]
    steps(build, ref, [a, b])


def check_attention_rotary_block_values():
    q = arr(2, 2, 8, 8)
    pos = np.arange(8, dtype=np.float32)[:, None] * np.float32(0.1)
    cos, sin = np.cos(pos * np.arange(4, dtype=np.float32)), np.sin(pos * np.arange(4, dtype=np.float32))
    def build(q, cos, sin):
        t1, t2 = q[..., :4], q[..., 4:]
        r = L.cat([t1 * cos - t2 * sin, t1 * sin + t2 * cos], -1)
        return [(r @ r.transpose(-1, -2)).softmax(-1)]
    def ref(q, cos, sin):
        t1, t2 = q[..., :4], q[..., 4:]
        r = np.concatenate([t1 * cos - t2 * sin, t1 * sin + t2 * cos], -1)
        s = r @ r.transpose(0, 1, 3, 2)
        e = np.exp(s - s.max(-1, keepdims=True))
        return [e / e.sum(-1, keepdims=True)]
    for s in range(3):
        vals = [q + s, cos, sin]
        outs = build(*[L.tensor(v) for v in vals])
        L.mark_step()
        assert np.allclose(outs[0].numpy(), ref(*vals)[0], rtol=1e-5, atol=1e-6)
'''

NAMES = re.findall(r"^def (check_\w+)\(", CHECKS, re.M)


@pytest.fixture(scope="module", params=["native", "python"])
def results(request, lazy_checks):
    return lazy_checks(CHECKS, request.param)


@pytest.mark.parametrize("name", NAMES)
def test_lazy_cat_into(results, name):
    assert results[name] == "ok", results[name]
