"""A cached step of a causal attention block (issue 19's bench): LayerNorm, qkv linear, 4 heads with rotary
embeddings, causal mask (masked_fill), softmax, output linear and residual, at batch 8 x sequence 128 x
width 256, float32: accel.lazy (the selected twin: ACCEL_BACKEND=python for the python twin's row) tracing
the block and running its cached graph at mark_step, torch LTC (TorchScript backend, CPU) doing the same when
torch is importable, and the same block run eagerly in numpy (the floor)."""
import math

import numpy as np
import pytest

import accel
import accel.lazy as L

try:
    import torch
    import torch._lazy
    import torch._lazy.ts_backend
    torch._lazy.ts_backend.init()
except Exception:                 # torch is optional: its row is skipped
    torch = None

TWIN = accel.backend
B, S, E, H = 8, 128, 256, 4
DH = E // H


def _weights():
    rng = np.random.default_rng(0)
    f = np.float32
    return {"x": rng.standard_normal((B, S, E)).astype(f),
            "w_qkv": (rng.standard_normal((3 * E, E)) / math.sqrt(E)).astype(f),
            "b_qkv": (rng.standard_normal(3 * E) * 0.1).astype(f),
            "w_o": (rng.standard_normal((E, E)) / math.sqrt(E)).astype(f),
            "b_o": (rng.standard_normal(E) * 0.1).astype(f),
            "g": (1 + rng.standard_normal(E) * 0.1).astype(f), "b": (rng.standard_normal(E) * 0.1).astype(f)}


def block(T, F, p, device):
    """The attention block written against torch's names (T: torch or accel.lazy)."""
    x = p["x"]
    h = F.layer_norm(x, (E,), p["g"], p["b"])
    qkv = F.linear(h, p["w_qkv"], p["b_qkv"])
    q, k, v = qkv[..., :E], qkv[..., E:2 * E], qkv[..., 2 * E:]
    q, k, v = [t.reshape(B, S, H, DH).transpose(1, 2) for t in (q, k, v)]
    pos = T.arange(S, device=device).float().unsqueeze(1)
    inv = 1.0 / (10000 ** (T.arange(0, DH, 2, device=device).float() / DH))
    ang = pos * inv
    cos, sin = ang.cos(), ang.sin()

    def rot(t):
        t1, t2 = t[..., :DH // 2], t[..., DH // 2:]
        return T.cat([t1 * cos - t2 * sin, t1 * sin + t2 * cos], -1)

    q, k = rot(q), rot(k)
    mask = T.ones(S, S, device=device).triu(1) > 0
    att = (q @ k.transpose(-1, -2)) * DH ** -0.5
    att = att.masked_fill(mask, float("-inf")).softmax(-1)
    y = (att @ v).transpose(1, 2).reshape(B, S, E)
    return x + F.linear(y, p["w_o"], p["b_o"])


def block_numpy(p):
    """The same block eagerly in numpy (float32 throughout)."""
    f = np.float32
    x = p["x"]
    m = x.mean(-1, keepdims=True)
    var = ((x - m) ** 2).mean(-1, keepdims=True)
    h = (x - m) / np.sqrt(var + f(1e-5)) * p["g"] + p["b"]
    qkv = h @ p["w_qkv"].T + p["b_qkv"]
    q, k, v = qkv[..., :E], qkv[..., E:2 * E], qkv[..., 2 * E:]
    q, k, v = [t.reshape(B, S, H, DH).transpose(0, 2, 1, 3) for t in (q, k, v)]
    pos = np.arange(S, dtype=f)[:, None]
    ang = pos * (f(1) / (f(10000) ** (np.arange(0, DH, 2, dtype=f) / f(DH))))
    cos, sin = np.cos(ang), np.sin(ang)

    def rot(t):
        t1, t2 = t[..., :DH // 2], t[..., DH // 2:]
        return np.concatenate([t1 * cos - t2 * sin, t1 * sin + t2 * cos], -1)

    q, k = rot(q), rot(k)
    att = (q @ k.transpose(0, 1, 3, 2)) * f(DH ** -0.5)
    att = np.where(np.triu(np.ones((S, S), bool), 1), f(-np.inf), att)
    att = np.exp(att - att.max(-1, keepdims=True))
    att /= att.sum(-1, keepdims=True)
    y = (att @ v).transpose(0, 2, 1, 3).reshape(B, S, E)
    return x + y @ p["w_o"].T + p["b_o"]


def _accel_params():
    p = {k: L.tensor(v) for k, v in _weights().items()}
    L.mark_step()
    return p


def _accel_step(p):
    y = block(L, L.nn.functional, p, "lazy")
    L.mark_step()
    return y


@pytest.mark.benchmark(group="lazy attention block step, 8x128x256")
def test_floor_attention_eager_numpy(bench):
    bench(block_numpy, _weights(), iterations=1, rounds=30)


@pytest.mark.benchmark(group="lazy attention block step, 8x128x256")
def test_attention_step_accel(bench, benchmark):
    p = _accel_params()
    want = block_numpy(_weights())
    assert np.allclose(_accel_step(p).numpy(), want, rtol=1e-4, atol=1e-4)    # compiles the graph once
    benchmark.extra_info["twin"] = TWIN
    bench(_accel_step, p, iterations=1, rounds=30)


@pytest.mark.benchmark(group="lazy attention block step, 8x128x256")
def test_attention_step_torch_ltc(bench, benchmark):
    if torch is None:
        pytest.skip("torch is not importable: no torch LTC row")
    p = {k: torch.from_numpy(v).to("lazy") for k, v in _weights().items()}
    torch._lazy.mark_step()

    def step():
        y = block(torch, torch.nn.functional, p, "lazy")
        torch._lazy.mark_step()
        torch._lazy.wait_device_ops()
        return y
    step()                        # compiles the graph once
    benchmark.extra_info["peer"] = "torch LTC"
    bench(step, iterations=1, rounds=30)
