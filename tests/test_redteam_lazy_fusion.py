"""Red team of the numpy backend's cat-in-place (_plan_cats / _emit_cat), fused masked softmax (_plan_softmax /
_emit_masked_softmax) and accel._kernels ufunc calls: programs run over several cached steps with changing
inputs, every step's results kept alive and checked at the end against numpy, and the program text checked
to show that the fused path was taken.  Cats along every axis (negative ones too) with strided, broadcast,
flipped and transposed operands, a cat of a cat, one elementwise result read by two cats, in-place ops and
item assignment on cat results, mixed / narrow / empty parts; fused softmaxes with transposed, broadcast,
0-dim and computed masks, multi-output operands, special values, empty shapes; elementwise results written
over the released buffer of an operand they read through a flipped / expanded / transposed view; both
fusions chained (rotary cat -> q @ k^T -> masked softmax); IR reuse with a computation cache that evicts
every program; threads and forks running the fused program; a small random-graph fuzzer.  Both twins."""
import re

import pytest

CHECKS = r'''
import os, random, re, threading, time

import numpy as np
import accel.lazy as L

rng = np.random.default_rng(0)
F32 = np.float32


def arr(*shape, dt=np.float32):
    return rng.standard_normal(shape).astype(dt)


def src():
    return L.get_latest_computation_graph()


def softmax_np(t):
    with np.errstate(all="ignore"):
        e = np.exp(t - t.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)


def steps(build, ref, inputs, n=3, tol=1e-5):
    """build over n cached steps (fresh values each step: shifted and scaled), every step's results kept and
    compared with ref's at the end; returns the last program's text."""
    kept = []
    for s in range(n):
        vals = [v if v.dtype == bool else (v * (1 + 0.25 * s) + s if v.dtype.kind == "f" else v + s)
                for v in inputs]
        vals = [v.astype(inputs[k].dtype) for k, v in enumerate(vals)]
        ts = [L.tensor(v) for v in vals]
        L.mark_step()
        outs = build(*ts)
        L.mark_step()
        kept.append((outs, ref(*vals)))
    for s, (outs, want) in enumerate(kept):
        assert len(outs) == len(want)
        for k, (o, w) in enumerate(zip(outs, want)):
            got, w = o.numpy(), np.asarray(w)
            assert got.shape == w.shape, (s, k, got.shape, w.shape)
            ok = np.allclose(got.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)
            assert ok, (s, k, np.nanmax(np.abs(got.astype(np.float64) - w)), src())
    return src()


def parts_written(text):
    """How many elementwise results the program computes straight into a cat's part."""
    return len(set(re.findall(r"if v\d+ is not (_p\d+_\d+): _copyto", text)))


# ---------------------------------------------------------------- cat written in place
def check_cat_every_axis_negative_too():
    a, b = arr(2, 3, 5), arr(2, 3, 5)
    for ax in (0, 1, 2, -1, -2, -3):
        text = steps(lambda a, b: [(L.cat([a * 2, b - 1, a * b], ax) * 3).sum(ax)],
                     lambda a, b: [(np.concatenate([a * 2, b - 1, a * b], ax) * 3).sum(ax)], [a, b])
        assert "_concatenate" not in text and parts_written(text) == 3, (ax, text)


def check_cat_parts_strided_broadcast_flipped_transposed():
    for dt in (np.float32, np.float64):
        for shp, ax in (((5, 37), -1), ((3, 5, 33), 1), ((2, 3, 4, 17), 2), ((64, 3), 0), ((1, 65), -1)):
            a, b = arr(*shp, dt=dt), arr(*shp, dt=dt)
            cs = list(shp)
            cs[ax] = 1
            c = arr(*cs, dt=dt)
            rs = [1] * len(shp)
            rs[-1] = shp[-1]
            r = arr(*rs, dt=dt)

            def build(a, b, c, r):
                at = a.transpose(0, -1).transpose(0, -1)
                return [(L.cat([a * b, b - r, a / (c + 3), at + c, (a * 1).flip(-1) * r, b.expand(*shp) * 2], ax)
                         * 2).sum(ax)]

            def ref(a, b, c, r):
                return [(np.concatenate([a * b, b - r, a / (c + 3), a + c, a[..., ::-1] * r, b * 2], ax) * 2).sum(ax)]
            text = steps(build, ref, [a, b, c, r])
            assert "_concatenate" not in text and parts_written(text) == 6, text
            assert "_kmultiply(" in text and "_kdivide(" in text, text


def check_cat_of_cat_and_one_operand_in_two_cats():
    a, b, c = arr(3, 4), arr(3, 4), arr(3, 4)

    def build(a, b, c):
        t = a * b                                            # read by two cats: computed once, copied into both
        inner = L.cat([a * 2, b + 1], 1)
        return [(L.cat([inner, c * 3], 1) + 1).sum(1), (L.cat([t, b], 1) + 1).sum(1), (L.cat([b, t], 0) * 2).sum(0)]

    def ref(a, b, c):
        t = a * b
        return [(np.concatenate([np.concatenate([a * 2, b + 1], 1), c * 3], 1) + 1).sum(1),
                (np.concatenate([t, b], 1) + 1).sum(1), (np.concatenate([b, t], 0) * 2).sum(0)]
    text = steps(build, ref, [a, b, c])
    assert parts_written(text) == 3, text                  # a * 2, b + 1, c * 3; not t


def check_inplace_and_setitem_on_cat_results():
    a, b = arr(3, 4), arr(3, 4)

    def build(a, b):
        y = L.cat([a * 2, b + 1], 1)
        t = y.t()                                            # a view taken before the in-place ops
        y.add_(1)
        y.mul_(2)
        y[0] = 5.0
        y[:, 1] = a[:, 0]
        z = L.cat([a - 1, b * b], 0)
        z[2:4] = z[0:2] * 3
        return [t.sum(0) * 1, y, (z * 1).sum(1), L.cat([a * 3, b / 2], 1).reshape(-1)]

    def ref(a, b):
        y = (np.concatenate([a * 2, b + 1], 1) + 1) * 2
        y[0] = 5
        y[:, 1] = a[:, 0]
        z = np.concatenate([a - 1, b * b], 0)
        z[2:4] = z[0:2] * 3
        return [y.T.sum(0), y, z.sum(1), np.concatenate([a * 3, b / 2], 1).reshape(-1)]
    steps(build, ref, [a, b], n=4)


def check_cat_mixed_narrow_empty_one_part():
    a, e = arr(3, 4), arr(3, 0)
    i = rng.integers(-5, 5, (3, 4)).astype(np.int64)
    h = arr(3, 4, dt=np.float16)

    def build(a, e, i, h):
        return [(L.cat([a * 2, e * 3, i + 1, h * 2, (a > 0).float(), e + 1], 1) * 2).sum(1),
                (L.cat([a * 2], -1) * 2).sum(1), L.cat([h * 2, h + 1], 1).float().sum(1),
                L.cat([a.bfloat16() * 2, a.bfloat16() + 1], 0).float(), (L.cat([i * 2, i - 1], 0) * 1).sum(0)]

    def ref(a, e, i, h):
        bf = lambda x: (x.astype(np.float32).view(np.uint32) + 0x7FFF + ((x.view(np.uint32) >> 16) & 1)
                        & 0xFFFF0000).view(np.float32)
        return [(np.concatenate([a * 2, e * 3, (i + 1).astype(F32), (h * 2).astype(F32), (a > 0).astype(F32),
                                 e + 1], 1) * 2).sum(1),
                (a * 4).sum(1), np.concatenate([h * 2, h + 1], 1).astype(F32).sum(1),
                np.concatenate([bf(bf(a) * 2), bf(bf(a) + 1)], 0), np.concatenate([i * 2, i - 1], 0).sum(0)]
    steps(build, ref, [a, e, i, h], tol=2e-2)
    # bfloat16 / float16 / integer / bool elementwise parts of a float32 cat: copied in (a bfloat16 result is
    # rounded after its kernel wrote it: computed into the part, the cat would hold it unrounded)
    def build2(a, i, h):
        b = a.bfloat16()
        return [L.cat([a * 2, b * 3, b + b * 0.1, h * 2, i * 3, a > 0], 1) * 1]

    def ref2(a, i, h):
        bf = lambda x: (((x.astype(F32).view(np.uint32) + np.uint32(0x7FFF) + ((x.astype(F32).view(np.uint32) >> 16)
                                                                            & np.uint32(1))) & np.uint32(0xFFFF0000))
                        .view(F32))
        b = bf(a)
        return [np.concatenate([a * 2, bf(b * 3), bf(b + bf(b * F32(0.1))), (h * 2).astype(F32), (i * 3).astype(F32),
                                (a > 0).astype(F32)], 1)]
    text = steps(build2, ref2, [a, i, h], tol=0)
    assert "_concatenate" not in text and parts_written(text) == 1, text


def check_cat_and_stack_operands_buffers_released_after_them():
    """A buffer that only a cat (or a stack) reads, through its tensor list, is free again once the cat has
    copied it: the next result of that size takes it (three buffers for the chain below, not six; before, every
    such buffer stayed taken for the rest of the program, its scratch memory growing with each cat); the values
    hold over cached steps."""
    a, b = arr(16, 16), arr(16, 16)

    def build(a, b):
        d1 = (L.cat([a @ b, b], 1) * 2)[:, :16]             # a @ b in a buffer, copied into the cat's
        d2 = (L.cat([d1 @ b, a], 1) * 3)[:, :16]
        d3 = (L.stack([d2 @ b, a], 0) * 2)[0]
        return [(d3 @ b).sum(1)]

    def ref(a, b):
        d1 = (np.concatenate([a @ b, b], 1) * 2)[:, :16]
        d2 = (np.concatenate([d1 @ b, a], 1) * 3)[:, :16]
        d3 = (np.stack([d2 @ b, a], 0) * 2)[0]
        return [(d3 @ b).sum(1)]
    text = steps(build, ref, [a, b], tol=1e-4)
    assert text.count("_matmul(") == 4 and text.count("out=_b0)") == 4 and "_b2" in text and "_b3" not in text, text


# ---------------------------------------------------------------- elementwise over a released buffer
def check_elementwise_over_the_buffer_an_operand_view_reads():
    pats = [
        (lambda y: y.flip(0) + y, lambda y: y[::-1] + y),
        (lambda y: y[0:1].expand(4, 4) + y, lambda y: y[0:1] + y),
        (lambda y: y * y[2:3].expand(4, 4), lambda y: y * y[2:3]),
        (lambda y: y[:, 1:2].expand(4, 4) - y.t(), lambda y: y[:, 1:2] - y.T),
        (lambda y: y.t() / (y + 5), lambda y: y.T / (y + 5)),
        (lambda y: y.t().sigmoid(), lambda y: 1 / (1 + np.exp(-y.T))),
        (lambda y: y.t().clamp(-0.2, 0.3) + y.flip(1), lambda y: np.clip(y.T, -0.2, 0.3) + y[:, ::-1]),
        (lambda y: (y.t() * 2).masked_fill(y > 0.5, -1.0).softmax(-1) * y,
         lambda y: softmax_np(np.where(y > 0.5, F32(-1), y.T * 2)) * y),
    ]
    a, b = arr(4, 4), arr(4, 4)
    for f, g in pats:
        text = steps(lambda a, b: [f(a * b) * 1, f(a + b)], lambda a, b: [g(a * b), g(a + b)], [a, b])
    assert re.search(r"_kmultiply\((v\d+), v\d+, (_b\d+)\)", text), text


def check_kernel_ufuncs_round_as_torch_bit_for_bit():
    """accel._kernels' add / subtract / multiply / divide only where they give torch's float32 roundings: a
    Python number or a 0-dim float64 result is cast to float32 first (no float64 product rounded once), a
    large int64 operand is cast to float32 first; the program's buffers written in place.  Exact values."""
    a, d = arr(4, 8) * 3, arr(4, 8, dt=np.float64)
    i = rng.integers(1 << 40, 1 << 41, (4, 8))

    def build(a, d, i):
        s = d.sum()
        return [((a * 1) * 0.1) * 1, ((a * 1) / 0.3) * 1, ((a * 1) + s) * 1, ((a * 1) * s) * 1, ((a * 1) - i) * 1,
                ((a * 1) / (d * 1).mean()) * 1]

    def ref(a, d, i):
        s = F32(d.sum())
        return [a * F32(0.1), a / F32(0.3), a + s, a * s, a - i.astype(F32), a / F32(d.mean())]
    kept = []
    for k in range(3):
        vals = [a + k, d * (k + 1), i + k]
        ts = [L.tensor(v) for v in vals]
        L.mark_step()
        kept.append((build(*ts), ref(*vals)))
        L.mark_step()
    text = src()
    for k, (got, want) in enumerate(kept):
        for q, (g, w) in enumerate(zip(got, want)):
            assert g.numpy().dtype == np.float32 and np.array_equal(g.numpy(), w), (k, q, text)


# ---------------------------------------------------------------- fused masked softmax
def check_masked_softmax_mask_layouts_and_computed_masks():
    x, m = arr(2, 8, 8), np.triu(np.ones((8, 8), bool), 1)

    def build(x, m):
        return [(x * 2).masked_fill(m.t(), -1.0).softmax(-1), (x * 2).masked_fill(m[:, :1], -1.0).softmax(-1),
                (x * 2).masked_fill(m[:1], -2.0).softmax(-1), (x.transpose(-1, -2) * 2).masked_fill(m, 1.0).softmax(-1),
                (x * 2).masked_fill(x > 0.5, 0.0).softmax(2), (x * 3).masked_fill(m, -7).softmax(-1),
                (x * x).masked_fill(m, -7).softmax(-1)]

    def ref(x, m):
        return [softmax_np(np.where(m.T, F32(-1), x * 2)), softmax_np(np.where(m[:, :1], F32(-1), x * 2)),
                softmax_np(np.where(m[:1], F32(-2), x * 2)), softmax_np(np.where(m, F32(1), x.transpose(0, 2, 1) * 2)),
                softmax_np(np.where(x > 0.5, F32(0), x * 2)), softmax_np(np.where(m, F32(-7), x * 3)),
                softmax_np(np.where(m, F32(-7), x * x))]
    text = steps(build, ref, [x, m])
    assert text.count("_masked_softmax(") == 7 and "_masked_fill(" not in text, text


def check_masked_softmax_special_values_and_empty_shapes():
    x = arr(4, 16) * 5
    x[2, 3] = np.inf
    m = rng.random((4, 16)) > 0.6
    m[1] = True                                              # a row wholly masked with -inf: NaN, as torch

    def build(x, m):
        return [(x * 0.37).masked_fill(m, float("-inf")).softmax(-1), (x * 0).softmax(-1),
                (x * -3.0).masked_fill(m[:1], float("inf")).softmax(-1)]

    def ref(x, m):
        with np.errstate(all="ignore"):
            return [softmax_np(np.where(m, F32(-np.inf), x * F32(0.37))), softmax_np(x * F32(0)),
                    softmax_np(np.where(m[:1], F32(np.inf), x * F32(-3)))]
    text = steps(build, ref, [x, m])
    assert text.count("_masked_softmax(") == 3, text
    for shp in ((3, 0), (0, 8), (8,), (2, 0, 3), (2, 3, 1)):
        x = arr(*shp)
        m = np.zeros(shp, bool)
        m.reshape(-1)[::2] = True
        text = steps(lambda x, m: [(x * 2).masked_fill(m, -1.0).softmax(-1)],
                     lambda x, m: [softmax_np(np.where(m, F32(-1), x * 2)) if x.size else x.copy()], [x, m])
        assert "_masked_softmax(" in text, (shp, text)


def check_masked_softmax_0dim_mask_scale_and_multi_output_operands():
    x, y = arr(3, 8), arr(3, 8)
    fn = L.nn.functional

    def ln(t):
        d = t - t.mean(-1, keepdims=True)
        return d / np.sqrt((d * d).mean(-1, keepdims=True) + F32(1e-5))

    def build(x, y):
        s, i = x.sort(-1)
        v, j = y.max(-1, keepdim=True)
        return [(fn.layer_norm(x, (8,)) * 0.5).masked_fill(j > 3, -1.0).softmax(-1),
                (s * 2).masked_fill(i > 4, 0.0).softmax(-1), (x * 2).masked_fill(L.tensor(False), -1.0).softmax(-1),
                x.masked_fill(L.tensor(True), 3.0).softmax(-1), (x * L.tensor(0.3, dtype=L.float64)).softmax(-1)]

    def ref(x, y):
        i, j = np.argsort(x, -1, kind="stable"), y.argmax(-1)[:, None]
        return [softmax_np(np.where(j > 3, F32(-1), ln(x) * F32(0.5))), softmax_np(np.where(i > 4, F32(0), np.sort(x, -1) * 2)),
                softmax_np(x * 2), softmax_np(np.full_like(x, 3)), softmax_np(x * F32(0.3))]
    text = steps(build, ref, [x, y], tol=1e-4)
    assert text.count("_masked_softmax(") == 5, text
    i = rng.integers(-4, 4, (3, 8))                          # an integer tensor times a number: a float product

    def build2(i, x):
        return [(i * 0.5).softmax(-1), (i * 0.5).masked_fill(i > 1, -1.0).softmax(-1), (x * i).softmax(-1)]

    def ref2(i, x):
        return [softmax_np(i.astype(F32) * F32(0.5)), softmax_np(np.where(i > 1, F32(-1), i.astype(F32) * F32(0.5))),
                softmax_np(x * i.astype(F32))]
    text = steps(build2, ref2, [i, x])
    assert text.count("_masked_softmax(") == 1, text         # (the masked_fill over i * 0.5 alone)


def check_attention_block_both_fusions_chained():
    q, k = arr(2, 2, 8, 8), arr(2, 2, 8, 8)
    pos = np.arange(8, dtype=F32)[:, None] * F32(0.1)
    cos, sin = np.cos(pos * np.arange(4, dtype=F32)), np.sin(pos * np.arange(4, dtype=F32))
    m = np.triu(np.ones((8, 8), bool), 1)

    def rot(t, cos, sin, cat):
        t1, t2 = t[..., :4], t[..., 4:]
        return cat([t1 * cos - t2 * sin, t1 * sin + t2 * cos], -1)

    def build(q, k, cos, sin, m):
        r, s = rot(q, cos, sin, L.cat), rot(k, cos, sin, L.cat)
        a = ((r @ s.transpose(-1, -2)) * 0.35).masked_fill(m, float("-inf")).softmax(-1)
        return [a @ r, a.sum(-1)]

    def ref(q, k, cos, sin, m):
        cat = lambda parts, ax: np.concatenate(parts, ax)
        r, s = rot(q, cos, sin, cat), rot(k, cos, sin, cat)
        a = softmax_np(np.where(m, F32(-np.inf), (r @ s.transpose(0, 1, 3, 2)) * F32(0.35)))
        return [a @ r, a.sum(-1)]
    text = steps(build, ref, [q, k, cos, sin, m], n=4)
    assert "_masked_softmax(" in text and "_concatenate" not in text and parts_written(text) == 4, text


def check_fused_steps_operands_released_at_the_softmax():
    """The skipped steps' operands live until the fused softmax and no longer: a float result computed after
    it takes their buffer (two buffers in all, not three), and the values hold over cached steps."""
    a, b, c = arr(4, 8), arr(4, 8), arr(4, 8)
    m = np.triu(np.ones((4, 8), bool), 1)

    def build(a, b, c, m):
        s = ((a + b) * 0.5).masked_fill(m, -1.0).softmax(-1)
        return [((c * 3) * s).sum(-1)]

    def ref(a, b, c, m):
        return [((c * 3) * softmax_np(np.where(m, F32(-1), (a + b) * F32(0.5)))).sum(-1)]
    text = steps(build, ref, [a, b, c, m])
    assert "_masked_softmax(" in text and "_b1" in text and "_b2" not in text, text


# ---------------------------------------------------------------- caches, threads, fork
def check_reuse_ir_and_a_cache_that_evicts_every_program():
    c = L.computation_cache()
    old = c.max_bytes
    L.set_reuse_ir(True)
    c.max_bytes = 1                    # only the most recent program stays: the two graphs recompile in turn
    try:
        a, b, m = arr(4, 8), arr(4, 8), np.triu(np.ones((4, 8), bool), 1)
        for _ in range(2):
            steps(lambda a, b, m: [L.cat([a * 2, b + 1], 0).t(), (L.cat([a - 1, b], 1)[:, :8] * 0.5)
                                   .masked_fill(m, -1.0).softmax(-1)],
                  lambda a, b, m: [np.concatenate([a * 2, b + 1], 0).T,
                                   softmax_np(np.where(m, F32(-1), (a - 1) * F32(0.5)))], [a, b, m])
            steps(lambda a, b, m: [(L.cat([a * b, b], -1) * 2).sum(-1), (a * 3).softmax(-1)],
                  lambda a, b, m: [(np.concatenate([a * b, b], -1) * 2).sum(-1), softmax_np(a * 3)], [a, b, m])
    finally:
        c.max_bytes = old
        L.set_reuse_ir(False)


def _attn_step(av, bv, m):
    ta, tb, tm = L.tensor(av), L.tensor(bv), L.tensor(m)
    c = L.cat([ta * 2, tb + 1], -1)
    s = (c[:, :8] @ c[:, 8:].t() * 0.5).masked_fill(tm, float("-inf")).softmax(-1)
    L.rand(3)
    L.mark_step()
    return c, s


def _attn_check(c, s, av, bv, m):
    cw = np.concatenate([av * 2, bv + 1], -1)
    sw = softmax_np(np.where(m, F32(-np.inf), cw[:, :8] @ cw[:, 8:].T * F32(0.5)))
    assert np.allclose(c.numpy(), cw, atol=1e-5) and np.allclose(s.numpy(), sw, atol=1e-5)


def check_threads_and_forks_running_the_fused_program():
    m = np.triu(np.ones((8, 8), bool), 1)
    A, B = arr(8, 8), arr(8, 8)
    errs, stop = [], [False]

    def work(tid):
        try:
            kept, k = [], 0
            while not stop[0] or k < 5:
                av, bv = A + tid + k * F32(0.01), B - tid
                kept.append((_attn_step(av, bv, m), av, bv))
                k += 1
            for (c, s), av, bv in kept[-40:]:
                _attn_check(c, s, av, bv, m)
        except Exception as e:
            errs.append(repr(e))
    ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    codes = []
    try:
        for f in range(3):
            pid = os.fork()
            if pid == 0:
                code = 3
                try:
                    for j in range(3):
                        c, s = _attn_step(A + 100 + j, B, m)
                        _attn_check(c, s, A + 100 + j, B, m)
                    code = 0
                finally:
                    os._exit(code)
            end = time.monotonic() + 20
            while True:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    codes.append(os.waitstatus_to_exitcode(st))
                    break
                if time.monotonic() > end:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    codes.append("hung")
                    break
                time.sleep(0.01)
    finally:
        stop[0] = True
        for t in ts:
            t.join()
    assert codes == [0, 0, 0] and not errs, (codes, errs)


def check_decode_loop_kv_cache_cat_of_earlier_results():
    """A kv cache grown by cat each step (the previous step's result as a part, the new rotary keys computed
    into theirs), feeding q @ k^T and the fused masked softmax: every step's results kept and checked."""
    B, H, D, S0 = 2, 2, 8, 4
    W = [arr(D, D) * F32(0.3) for _ in range(3)]

    def rot(t, cos, sin, cat):
        t1, t2 = t[..., :D // 2], t[..., D // 2:]
        return cat([t1 * cos - t2 * sin, t1 * sin + t2 * cos], -1)
    kc = vc = kn = vn = None
    kept = []
    for step in range(5):
        S = S0 if step == 0 else 1
        x = arr(B, H, S, D)
        t0 = 0 if step == 0 else S0 + step - 1
        pos = np.arange(t0, t0 + S, dtype=F32)[:, None] * F32(0.1)
        cos, sin = np.cos(pos * np.arange(D // 2, dtype=F32)), np.sin(pos * np.arange(D // 2, dtype=F32))
        X, C, Sn = L.tensor(x), L.tensor(cos), L.tensor(sin)
        wq, wk, wv = (L.tensor(w) for w in W)
        k = rot(X @ wk, C, Sn, L.cat)
        v = (X @ wv) * 1
        if kc is not None:
            k, v = L.cat([kc, k], 2), L.cat([vc, v * 1], 2)
        t = k.shape[2]
        mask = np.triu(np.ones((S, t), bool), t - S + 1)
        a = ((rot(X @ wq, C, Sn, L.cat) @ k.transpose(-1, -2)) * (1 / np.sqrt(D))) \
            .masked_fill(L.tensor(mask), float("-inf")).softmax(-1)
        o = a @ v
        kc, vc = k, v
        del X, C, Sn, wq, wk, wv
        L.mark_step()
        assert "_masked_softmax(" in src(), src()
        kk, vv = rot(x @ W[1], cos, sin, np.concatenate), x @ W[2]
        if kn is not None:
            kk, vv = np.concatenate([kn, kk], 2), np.concatenate([vn, vv], 2)
        an = softmax_np(np.where(mask, F32(-np.inf), (rot(x @ W[0], cos, sin, np.concatenate)
                                                       @ kk.transpose(0, 1, 3, 2)) * F32(1 / np.sqrt(D))))
        kn, vn = kk, vv
        kept.append(((o, a, k, v), (an @ vv, an, kk, vv)))
    for s, (got, want) in enumerate(kept):
        for g, w in zip(got, want):
            assert np.allclose(g.numpy(), w, rtol=1e-5, atol=1e-5), s


def check_threads_with_their_own_generators_share_the_fused_program():
    x = arr(4, 16)
    m = np.triu(np.ones((4, 16), bool), 3)

    def run(seed, n=6):
        g = L.Generator()
        g.manual_seed(seed)
        res = []
        for s in range(n):
            X, M = L.tensor(x + s), L.tensor(m)
            y = ((X * L.rand(4, 16, generator=g)) * 0.5).masked_fill(M, float("-inf")).softmax(-1)
            L.mark_step()
            res.append(y)
        return [r.numpy() for r in res]
    ref = run(7)
    assert "_masked_softmax(" in src(), src()
    out = {}
    ts = [threading.Thread(target=lambda i=i: out.__setitem__(i, run(7))) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(all(np.array_equal(a, b) for a, b in zip(ref, out[i])) for i in range(3)), out.keys()


# ---------------------------------------------------------------- random graphs
def _apply(ops, vals, isL):
    cat = L.cat if isL else np.concatenate
    T = (lambda x: x.t()) if isL else (lambda x: x.T)
    for kind, i, j, k, c, p in ops:
        x, y, z = vals[i], vals[j], vals[k]
        n = x.shape[0]
        if kind == "ew2":
            o = x * y - z
        elif kind == "ewc":
            o = x * (c if isL else F32(c)) + y
        elif kind == "cat1":
            h = p % (n - 1) + 1
            o = cat([x[:, :h] * 2, y[:, h:] + 1], 1)
        elif kind == "cat0":
            h = p % (n - 1) + 1
            o = cat([x[:h] - y[:h], z[h:] * (c if isL else F32(c))], 0)
        elif kind == "catv":
            o = cat([x * 2, y - 1], 0)[n // 2: n // 2 + n]
        elif kind == "catcat":
            o = cat([cat([x[:, :2] * 2, y[:, :3] + 1], 1), T(z)[:, 5:] * 3], -1)
        elif kind == "sm":
            o = (x * c).softmax(-1) if isL else softmax_np(x * F32(c))
        elif kind == "smm":
            o = (x * c).masked_fill(y > 0.3, -2.0).softmax(-1) if isL else \
                softmax_np(np.where(y > F32(0.3), F32(-2), x * F32(c)))
        elif kind == "smx":
            o = (x * y).masked_fill(x > 0, -1.0).softmax(-1) if isL else softmax_np(np.where(x > 0, F32(-1), x * y))
        elif kind == "mm":
            o = (x @ T(y)) * (0.125 if isL else F32(0.125))
        elif kind == "view":
            o = T(x) if p % 2 else x.reshape(n, n)
        elif kind == "maxd":
            o = (x * 2).max(1, keepdim=True)[0] + y if isL else (x * 2).max(1, keepdims=True) + y
        elif kind == "iadd":
            if isL:
                x.add_(y)
            else:
                np.add(x, y, out=x)
            continue
        elif kind == "imul":
            if isL:
                x.mul_(c)
            else:
                np.multiply(x, F32(c), out=x)
            continue
        elif kind == "setcol":
            x[:, p % n] = c
            continue
        elif kind == "setrows":
            x[2:5] = x[2:5] * y[:3]
            continue
        vals.append(o)
    return vals


KINDS = ("ew2", "ewc", "cat1", "cat0", "catv", "catcat", "sm", "smm", "smx", "mm", "view", "maxd", "iadd", "imul",
         "setcol", "setrows")


def check_random_graphs_over_cached_steps():
    n_fused = n_into = 0
    for seed in range(40):
        r = random.Random(seed)
        ops, nv = [], 3
        for _ in range(12):
            kind = r.choice(KINDS)
            ops.append((kind, r.randrange(nv), r.randrange(nv), r.randrange(nv), r.choice([0.5, 2.0, -1.5]),
                        r.randrange(8)))
            if kind not in ("iadd", "imul", "setcol", "setrows"):
                nv += 1
        picks = [(r.randrange(nv), r.choice(["", "t", "flat", "row"])) for _ in range(r.randrange(1, 5))]
        g = np.random.default_rng(seed)
        base = [g.standard_normal((8, 8)).astype(F32) for _ in range(3)]
        kept = []
        for s in range(3):
            ins = [b * F32(1 + 0.3 * s) + F32(0.1 * s) for b in base]
            if s == 1:
                ins = [v[:6, :6].copy() for v in ins]       # another shape: another program, then back
            ts = [L.tensor(v) for v in ins]
            L.mark_step()
            lv, npv = _apply(ops, ts, True), _apply(ops, [v.copy() for v in ins], False)
            outs = []
            for q, how in picks:
                t, w = lv[q], npv[q]
                if how == "t":
                    t, w = t.t(), w.T
                elif how == "flat":
                    t, w = t.reshape(-1), w.reshape(-1)
                elif how == "row":
                    t, w = t[1], w[1]
                outs.append((t, w.copy()))
            L.mark_step()
            text = src()
            n_fused += "_masked_softmax(" in text
            n_into += parts_written(text) > 0
            kept.append(outs)
        for s, outs in enumerate(kept):
            for t, w in outs:
                got = t.numpy()
                assert got.shape == w.shape and np.allclose(got, w, rtol=1e-4, atol=1e-4, equal_nan=True), \
                    (seed, s, ops, picks)
    assert n_fused > 20 and n_into > 20, (n_fused, n_into)
'''

NAMES = re.findall(r"^def (check_\w+)\(", CHECKS, re.M)


@pytest.fixture(scope="module", params=["native", "python"])
def results(request, lazy_checks):
    return lazy_checks(CHECKS, request.param)


@pytest.mark.parametrize("name", NAMES)
def test_redteam_lazy_fusion(results, name):
    assert results[name] == "ok", results[name]
