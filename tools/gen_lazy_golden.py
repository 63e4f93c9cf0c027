"""Generate tests/data/lazy_golden.json: programs run through torch's LTC (TorchScript backend, CPU).

For each program it records the inputs, torch._C._lazy._get_tensors_text (and, for every fifth,
_get_tensors_dot) of the outputs (without the
``, NodeType=`` tags, which name C++ classes), torch._C._lazy._get_graph_hash, and the values torch
computes eagerly on the CPU.  Needs torch (2.13.0 CPU wheel); the tests that read the file do not.

    python tools/gen_lazy_golden.py [out.json]
"""
import json
import pathlib
import re
import sys

import numpy as np

# (name, inputs, code).  Inputs: "<kind><dtype>[<sizes>]", kind "" (values in [-2, 2] in steps of 1/4),
# "p" (positive: [0.25, 2.25]); dtypes f32 f64 i32 i64 b.  The code sees the inputs as x0, x1, ... and the
# module as T (torch or accel.lazy) and assigns the list of outputs to ``out``.
PROGRAMS = [
    # elementwise binary, tensor/tensor, broadcasting and dtype promotion
    ("add_tt", "f32[2,3] f32[2,3]", "out = [x0 + x1]"),
    ("add_bcast", "f32[2,3] f32[3]", "out = [x0 + x1]"),
    ("add_bcast2", "f32[4,1] f32[1,5]", "out = [x0 + x1]"),
    ("sub_tt", "f32[2,3] f32[2,3]", "out = [x0 - x1]"),
    ("mul_tt", "f32[2,3] f32[2,3]", "out = [x0 * x1]"),
    ("div_tt", "f32[2,3] pf32[3]", "out = [x0 / x1]"),
    ("pow_tt", "pf32[2,3] f32[2,3]", "out = [x0 ** x1]"),
    ("maximum", "f32[2,3] f32[3]", "out = [T.maximum(x0, x1)]"),
    ("minimum", "f32[2,3] f32[2,3]", "out = [T.minimum(x0, x1)]"),
    ("maximum_m", "f32[2,3] f32[2,3]", "out = [x0.maximum(x1), x1.minimum(x0)]"),
    ("add_alpha_tt", "f32[2,3] f32[2,3]", "out = [x0.add(x1, alpha=3)]"),
    ("sub_alpha_tt", "f32[2,3] f32[3]", "out = [x0.sub(x1, alpha=0.5)]"),
    ("add_fn", "f32[2,3] f32[2,3]", "out = [T.add(x0, x1, alpha=2), T.sub(x0, x1), T.mul(x0, x1), T.div(x0, 2)]"),
    ("add_f32_f64", "f32[2,3] f64[2,3]", "out = [x0 + x1]"),
    ("add_i64_f32", "i64[2,3] f32[2,3]", "out = [x0 + x1]"),
    ("add_i32_i64", "i32[2,3] i64[2,3]", "out = [x0 + x1]"),
    ("mul_b_f32", "b[2,3] f32[2,3]", "out = [x0 * x1]"),
    ("div_i64", "i64[2,3] i64[2,3]", "out = [x0 / (x1 * x1 + 1)]"),
    ("mul_0dim", "f32[2,3] f32[]", "out = [x0 * x1]"),
    ("add_0dim_i", "i64[2,3] f32[]", "out = [x0 + x1]"),
    ("add_0dim_f64", "f32[2,3] f64[]", "out = [x0 + x1]"),
    # scalars on both sides
    ("add_s", "f32[2,3]", "out = [x0 + 2]"),
    ("radd_s", "f32[2,3]", "out = [2 + x0]"),
    ("sub_sf", "f32[2,3]", "out = [x0 - 1.5]"),
    ("rsub_s", "f32[2,3]", "out = [1 - x0]"),
    ("rsub_sf", "f32[2,3]", "out = [1.5 - x0]"),
    ("mul_s", "f32[2,3]", "out = [x0 * 3]"),
    ("rmul_s", "f32[2,3]", "out = [3 * x0]"),
    ("mul_sf", "f32[2,3]", "out = [x0 * 0.25]"),
    ("div_s", "f32[2,3]", "out = [x0 / 4]"),
    ("rdiv_s", "pf32[2,3]", "out = [4 / x0]"),
    ("rdiv_sf", "pf32[2,3]", "out = [1.5 / x0]"),
    ("pow_s", "f32[2,3]", "out = [x0 ** 2]"),
    ("pow_sf", "pf32[2,3]", "out = [x0 ** 0.5]"),
    ("rpow_s", "f32[2,3]", "out = [2 ** x0]"),
    ("add_alpha_s", "f32[2,3]", "out = [x0.add(2, alpha=3)]"),
    ("add_alpha_same", "f32[2,3]", "out = [x0.add(2, alpha=2)]"),
    ("sub_alpha_s", "f32[2,3]", "out = [x0.sub(1, alpha=2)]"),
    ("scalar_i64", "i64[2,3]", "out = [x0 + 1, x0 * 2, x0 - 3]"),
    ("scalar_i64_f", "i64[2,3]", "out = [x0 * 1.5]"),
    ("scalar_i32", "i32[2,3]", "out = [x0 * 2.5, x0 + 7]"),
    ("scalar_bool", "b[2,3]", "out = [x0 + 1]"),
    ("div_i64_s", "i64[2,3]", "out = [x0 / 2]"),
    ("same_scalar_twice", "f32[2,3]", "out = [(x0 * 2) + 2]"),
    ("scalar_chain", "f32[2,3]", "out = [((x0 * 1.0001 + 0.5).relu() * 1.0001 + 0.5).relu()]"),
    # unary
    ("neg", "f32[2,3]", "out = [-x0]"),
    ("neg_m", "f32[2,3]", "out = [x0.neg(), T.neg(x0)]"),
    ("abs", "f32[2,3]", "out = [x0.abs(), abs(x0)]"),
    ("exp", "f32[2,3]", "out = [x0.exp()]"),
    ("exp_fn", "f32[2,3]", "out = [T.exp(x0)]"),
    ("log", "pf32[2,3]", "out = [x0.log()]"),
    ("sqrt", "pf32[2,3]", "out = [x0.sqrt()]"),
    ("rsqrt", "pf32[2,3]", "out = [x0.rsqrt()]"),
    ("sin", "f32[2,3]", "out = [x0.sin()]"),
    ("cos", "f32[2,3]", "out = [x0.cos()]"),
    ("tanh", "f32[2,3]", "out = [x0.tanh()]"),
    ("sigmoid", "f32[2,3]", "out = [x0.sigmoid()]"),
    ("relu", "f32[2,3]", "out = [x0.relu()]"),
    ("reciprocal", "pf32[2,3]", "out = [x0.reciprocal()]"),
    ("neg_i64", "i64[2,3]", "out = [-x0]"),
    ("exp_i64", "i64[2,3]", "out = [x0.exp()]"),
    ("relu_i64", "i64[2,3]", "out = [x0.relu()]"),
    ("sigmoid_i32", "i32[2,3]", "out = [x0.sigmoid()]"),
    ("unary_f64", "f64[3,2]", "out = [x0.exp().tanh().abs().cos()]"),
    ("unary_fns", "pf32[2,3]", "out = [T.log(x0), T.sqrt(x0), T.rsqrt(x0), T.sin(x0), T.cos(x0), T.tanh(x0), "
                               "T.sigmoid(x0), T.relu(x0), T.abs(x0)]"),
    # reductions
    ("sum_all", "f32[2,3]", "out = [x0.sum()]"),
    ("sum_dim", "f32[2,3]", "out = [x0.sum(1)]"),
    ("sum_neg_keep", "f32[2,3]", "out = [x0.sum(-1, keepdim=True)]"),
    ("sum_dims", "f32[2,3,4]", "out = [x0.sum((0, 2))]"),
    ("sum_none_keep", "f32[2,3]", "out = [x0.sum(dim=None, keepdim=True)]"),
    ("sum_i32", "i32[2,3]", "out = [x0.sum(), x0.sum(0)]"),
    ("sum_bool", "b[2,3]", "out = [x0.sum()]"),
    ("sum_fn", "f32[2,3]", "out = [T.sum(x0), T.sum(x0, 0)]"),
    ("mean_all", "f32[2,3]", "out = [x0.mean()]"),
    ("mean_dim", "f32[2,3]", "out = [x0.mean(0)]"),
    ("mean_keep", "f32[2,3,4]", "out = [x0.mean((0, 1), keepdim=True)]"),
    ("mean_fn", "f64[2,3]", "out = [T.mean(x0, -1)]"),
    ("amax", "f32[2,3]", "out = [x0.amax(1)]"),
    ("amax_keep", "f32[2,3]", "out = [T.amax(x0, (0, 1), keepdim=True)]"),
    # shapes
    ("reshape", "f32[2,3]", "out = [x0.reshape(3, 2)]"),
    ("reshape_m1", "f32[2,3]", "out = [x0.reshape(-1)]"),
    ("reshape_tuple", "f32[2,3]", "out = [x0.reshape((-1, 2))]"),
    ("reshape_same", "f32[2,3]", "out = [x0.reshape(2, 3)]"),
    ("view", "f32[2,3]", "out = [x0.view(6)]"),
    ("view_fn", "f32[2,3,4]", "out = [T.reshape(x0, (4, 6))]"),
    ("t", "f32[2,3]", "out = [x0.t()]"),
    ("t_1d", "f32[3]", "out = [x0.t()]"),
    ("t_fn", "f32[2,3]", "out = [T.t(x0)]"),
    ("transpose", "f32[2,3]", "out = [x0.transpose(0, 1)]"),
    ("transpose_neg", "f32[2,3,4]", "out = [x0.transpose(-1, -2)]"),
    ("transpose_fn", "f32[2,3,4]", "out = [T.transpose(x0, 0, 2)]"),
    ("permute", "f32[2,3,4]", "out = [x0.permute(2, 0, 1)]"),
    ("permute_neg", "f32[2,3,4]", "out = [x0.permute(-1, 0, 1)]"),
    ("permute_fn", "f32[2,3,4]", "out = [T.permute(x0, (1, 2, 0))]"),
    ("unsqueeze", "f32[2,3]", "out = [x0.unsqueeze(1)]"),
    ("unsqueeze_neg", "f32[2,3]", "out = [x0.unsqueeze(-1), T.unsqueeze(x0, 0)]"),
    ("squeeze_all", "f32[2,1,3]", "out = [x0.squeeze()]"),
    ("squeeze_dim", "f32[2,1,3]", "out = [x0.squeeze(1)]"),
    ("squeeze_noop", "f32[2,3]", "out = [x0.squeeze(1)]"),
    ("squeeze_fn", "f32[1,3]", "out = [T.squeeze(x0, 0)]"),
    ("expand", "f32[3]", "out = [x0.expand(2, 3)]"),
    ("expand_m1", "f32[1,3]", "out = [x0.expand(4, -1)]"),
    ("expand_3d", "f32[3]", "out = [x0.expand(4, 2, 3)]"),
    ("view_then_op", "f32[2,3]", "out = [x0.t().reshape(6) * 2]"),
    # others
    ("softmax", "f32[2,3]", "out = [x0.softmax(1)]"),
    ("softmax_neg", "f32[2,3,4]", "out = [x0.softmax(-1)]"),
    ("softmax_fn", "f64[2,3]", "out = [T.softmax(x0, 0)]"),
    ("log_softmax", "f32[2,3]", "out = [x0.log_softmax(-1)]"),
    ("log_softmax_fn", "f32[2,3]", "out = [T.log_softmax(x0, 0)]"),
    ("clamp", "f32[2,3]", "out = [x0.clamp(-0.5, 0.5)]"),
    ("clamp_min", "f32[2,3]", "out = [x0.clamp(min=0.5)]"),
    ("clamp_max", "f32[2,3]", "out = [x0.clamp(max=1)]"),
    ("clamp_i64", "i64[2,3]", "out = [x0.clamp(0, 3)]"),
    ("clamp_i64_f", "i64[2,3]", "out = [x0.clamp(0.5)]"),
    ("clamp_fn", "f32[2,3]", "out = [T.clamp(x0, min=-1, max=1.5)]"),
    ("to_f64", "f32[2,3]", "out = [x0.to(T.float64)]"),
    ("to_i64", "f32[2,3]", "out = [x0.to(T.int64)]"),
    ("to_same", "f32[2,3]", "out = [x0.to(T.float32) + 1]"),
    ("to_f32_from_i", "i32[2,3]", "out = [x0.to(T.float32) * 0.5]"),
    ("to_bool", "f32[2,3]", "out = [x0.to(T.bool)]"),
    ("cat0", "f32[2,3] f32[1,3]", "out = [T.cat([x0, x1], 0)]"),
    ("cat_neg", "f32[2,3] f32[2,2]", "out = [T.cat([x0, x1], -1)]"),
    ("cat_same", "f32[2,3]", "out = [T.cat([x0, x0])]"),
    ("cat_one", "f32[2,3]", "out = [T.cat([x0], 1)]"),
    ("cat_mixed", "f32[2,3] f64[2,3]", "out = [T.cat((x0, x1), 0)]"),
    # matmul family
    ("mm", "f32[2,3] f32[3,4]", "out = [x0.mm(x1)]"),
    ("mm_fn", "f32[2,3] f32[3,4]", "out = [T.mm(x0, x1)]"),
    ("matmul_2d", "f32[2,3] f32[3,4]", "out = [x0 @ x1]"),
    ("matmul_t", "f32[2,3]", "out = [x0 @ x0.t()]"),
    ("matmul_mv", "f32[2,3] f32[3]", "out = [x0 @ x1]"),
    ("matmul_vm", "f32[3] f32[3,2]", "out = [x0 @ x1]"),
    ("matmul_dot", "f32[3] f32[3]", "out = [x0 @ x1]"),
    ("matmul_3d_2d", "f32[4,2,3] f32[3,5]", "out = [x0 @ x1]"),
    ("matmul_3d_3d", "f32[4,2,3] f32[4,3,5]", "out = [T.matmul(x0, x1)]"),
    ("matmul_4d_2d", "f32[2,2,2,3] f32[3,2]", "out = [x0.matmul(x1)]"),
    ("bmm", "f32[4,2,3] f32[4,3,5]", "out = [x0.bmm(x1)]"),
    ("bmm_fn", "f64[2,2,3] f64[2,3,2]", "out = [T.bmm(x0, x1)]"),
    ("mm_f64", "f64[2,3] f64[3,2]", "out = [x0 @ x1]"),
    # multi-root, shared subgraphs, inputs as roots
    ("multi_root", "f32[2,3] f32[2,3]", "c = x0 + x1\nd = x0 * x1\nout = [c, d]"),
    ("multi_root_rev", "f32[2,3] f32[2,3]", "c = x0 + x1\nd = x0 * x1\nout = [d, c]"),
    ("multi_root_dup", "f32[2,3] f32[2,3]", "c = x0 + x1\nd = x0 * x1\nout = [c, d, c]"),
    ("input_root", "f32[2,3] f32[2,3]", "c = x0 + x1\nout = [c, x0]"),
    ("shared", "f32[2,3]", "y = x0.exp()\nz = y * y + y\nout = [z, y]"),
    ("shared_diamond", "f32[2,3]", "y = x0 * 2\nout = [y.relu() + y.sigmoid()]"),
    ("fallback_mid", "f32[2,3]", "y = x0 * 2\nz = y.sin()\nout = [y + z]"),
    ("mlp", "f32[4,3] f32[3,5] f32[5] f32[5,2]",
     "h = (x0 @ x1 + x2).relu()\nout = [(h @ x3).log_softmax(1)]"),
    ("mlp_loss", "f32[4,3] f32[3,2] f32[4,2]",
     "p = (x0 @ x1).softmax(-1)\nl = ((p - x2) ** 2).mean()\nout = [l, p]"),
    ("train_step", "f32[4,4] f32[4,4]",
     "g = x0.t() @ (x0 @ x1 - x0)\nw = x1 - g * 0.01\nout = [w, (x0 @ w).sum()]"),
    ("norm", "f32[3,4]",
     "m = x0.mean(-1, keepdim=True)\nv = ((x0 - m) ** 2).mean(-1, keepdim=True)\n"
     "out = [(x0 - m) * (v + 1e-5).rsqrt()]"),
    ("attention", "f32[2,3,4] f32[2,3,4]",
     "s = (x0 @ x1.transpose(-1, -2)) * 0.5\nout = [s.softmax(-1) @ x1]"),
    ("long_chain", "f32[2,2]", "y = x0\nfor i in range(20):\n    y = (y * 1.0001 + 0.5).relu()\nout = [y]"),
    ("dtype_mix", "i64[2,3] f32[2,3]", "y = (x0 * 2).to(T.float32)\nout = [y + x1, (x0 + 1).sum()]"),
    ("bool_chain", "b[2,3] f32[2,3]", "out = [(x0 * x1).sum(0), x0.sum(1)]"),
    ("expand_mul", "f32[3] f32[2,3]", "out = [x0.expand(2, 3) * x1]"),
    ("unsq_bcast", "f32[3] f32[2]", "out = [x0.unsqueeze(0) + x1.unsqueeze(1)]"),
    ("clamp_chain", "f32[2,3]", "out = [x0.clamp(-1, 1).abs().sqrt()]"),
    ("zero_dim_ops", "f32[]", "y = x0 * 2 + 1\nout = [y, y.exp()]"),
    ("sum_then_scalar", "f32[2,3]", "s = x0.sum()\nout = [x0 / s, s]"),
    ("two_graphs", "f32[2,3] f32[2,3]", "out = [x0.exp(), x1.exp()]"),
]

# Random chains (deterministic): statements that keep t a Float[3,4], over x0 f32[3,4], x1 f32[4], x2 i64[3,4].
_STEPS = ["t = t + x1", "t = t * 0.5", "t = 1.5 - t", "t = t.relu()", "t = t.exp().clamp(max=3)", "t = t.tanh()",
          "t = T.maximum(t, x1)", "t = t / (t.abs() + 1)", "t = t + x2", "t = (t * x2).sum(-1, keepdim=True) + t",
          "t = t.softmax(-1)", "t = t.t().t()", "t = t.sigmoid() * 2", "t = t.sub(x1, alpha=2)",
          "t = t.transpose(0, 1).reshape(3, 4)", "t = t.unsqueeze(0).squeeze(0) ** 2", "t = t.log_softmax(0)",
          "t = t - t.mean(1, keepdim=True)", "t = t @ x0.t() @ x0 * 0.1", "t = t.clamp(-1, 1).cos()",
          "t = (t.to(T.float64) * 3).to(T.float32)", "t = T.minimum(t, x2 * 0.5)", "t = t.expand(2, 3, 4).sum(0)",
          "t = T.cat([t, x0], 1).reshape(3, 2, 4).sum(1)", "u = t * 2\nt = u + u.neg().exp()"]


def random_programs(count, seed=7):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        steps = [_STEPS[i] for i in rng.integers(0, len(_STEPS), int(rng.integers(3, 9)))]
        tail = ["out = [t]", "out = [t, t.sum()]", "out = [t.sum(0), t]", "out = [t, x0]"][int(rng.integers(0, 4))]
        out.append((f"random_{k}", "f32[3,4] f32[4] i64[3,4]", "t = x0\n" + "\n".join(steps) + "\n" + tail))
    return out


PROGRAMS += random_programs(48)

DOT_EVERY = 5                 # _get_tensors_dot is recorded for every 5th program (it is long)
# Counter scenarios: the code sees T, tensor(array), mark_step(), graph_hash(ts), sync_multi(ts),
# to_numpy(t), record(ts) (takes the IR text of ts), reuse(flag) (set_reuse_ir) and np; the LTC counters
# after it are recorded (except the tensor create/destroy counts, which depend on torch-internal temporaries).
COUNTER_SCENARIOS = [
    ("steps_and_fallback", """
a = tensor(np.ones((2, 3), np.float32)); b = tensor(np.ones((3,), np.float32))
y = (a + b).sum(1, keepdim=True).transpose(0, 1) * 2.5
graph_hash([y])
z = (y.exp() @ a).relu().softmax(1)
w = T.cat([z, z], 0).reshape(-1).to(T.float64)
sync_multi([z])
mark_step()
q = (w * 2 + 1).sin()
to_numpy(q)
mark_step(); mark_step()
y2 = (a + b).sum(1, keepdim=True).transpose(0, 1) * 2.5; mark_step()
y3 = (a + b).sum(1, keepdim=True).transpose(0, 1) * 2.5; mark_step()
"""),
    ("cached_loop", """
x = tensor(np.full((4, 4), 0.5, np.float32)); w = tensor(np.eye(4, dtype=np.float32))
for i in range(4):
    x = (x @ w * 0.9 + 0.1).tanh()
    mark_step()
to_numpy(x)
"""),
    ("numpy_keeps_ir", """
a = tensor(np.ones((2, 3), np.float32))
y = a * 2
to_numpy(y); to_numpy(y)
z = y + 1
record([z]); record([y])
mark_step()
to_numpy(z)
"""),
    ("fallback_then_step", """
a = tensor(np.full((2, 3), 0.5, np.float32))
y = a * 2
z = y.sin()
w = y + z
record([w])
mark_step()
v = (w * 2).amax(1)
record([v, w])
mark_step()
to_numpy(v)
"""),
    ("reuse_ir", """
reuse(True)
x = tensor(np.ones((3, 3), np.float32)); w = tensor(np.ones((3, 3), np.float32))
mark_step()
for i in range(3):
    y = ((x @ w) * 2 + 1).relu().sum(0)
    if i == 2:
        y = T.cat([y.exp(), y.pow(2), y.unsqueeze(0).squeeze()], 0).reshape(3, 3).t()
    record([y])
    mark_step()
reuse(False)
"""),
]
COUNTERS_SKIPPED = ("CreateLtcTensor", "DestroyLtcTensor")

_DTYPES = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64", "b": "bool"}
_SPEC = re.compile(r"^(p?)(f32|f64|i32|i64|b)\[([0-9,]*)\]$")


def make_inputs(spec, index):
    """The program's input arrays: deterministic values that are exact in every dtype."""
    rng = np.random.default_rng(1000 + index)
    out = []
    for item in spec.split():
        m = _SPEC.match(item)
        if m is None:
            raise ValueError(f"bad input spec {item!r}")
        positive, dt, sizes = m.groups()
        shape = tuple(int(s) for s in sizes.split(",")) if sizes else ()
        if dt == "b":
            a = rng.integers(0, 2, shape).astype(bool)
        elif dt.startswith("i"):
            a = rng.integers(-5, 6, shape).astype(_DTYPES[dt])
        else:
            q = rng.integers(1, 9, shape) if positive else rng.integers(-8, 9, shape)
            a = (q / 4.0).astype(_DTYPES[dt])
        out.append(np.asarray(a))
    return out


def run_program(T, code, inputs):
    env = {"T": T}
    for i, x in enumerate(inputs):
        env[f"x{i}"] = x
    exec(code, env)
    return env["out"]


def run_scenario(T, code, tensor, mark_step, graph_hash, sync_multi, to_numpy, tensors_text, reuse):
    """Run a counter scenario; returns the IR texts it took with ``record(tensors)``."""
    texts = []
    env = {"T": T, "np": np, "tensor": tensor, "mark_step": mark_step, "graph_hash": graph_hash,
           "sync_multi": sync_multi, "to_numpy": to_numpy, "record": lambda ts: texts.append(tensors_text(ts)),
           "reuse": reuse}
    exec(code, env)
    return texts


def _encode(a):
    a = np.asarray(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": a.reshape(-1).tolist()}


def main(path):
    import torch
    import torch._lazy
    import torch._lazy.ts_backend
    torch._lazy.ts_backend.init()
    strip = re.compile(r", NodeType=[A-Za-z0-9_]+")
    programs = []
    names = set()
    for index, (name, spec, code) in enumerate(PROGRAMS):
        if name in names:
            raise ValueError(f"duplicate program name {name}")
        names.add(name)
        arrays = make_inputs(spec, index)
        lazy = run_program(torch, code, [torch.from_numpy(a.copy()).to("lazy") for a in arrays])
        text = strip.sub("", torch._C._lazy._get_tensors_text(lazy))
        ghash = torch._C._lazy._get_graph_hash(lazy).hex()
        dot = None
        if index % DOT_EVERY == 0:
            try:
                dot = torch._C._lazy._get_tensors_dot(lazy)
            except IndexError:        # torch's ToDot reads shape(0) of tensor_list nodes, which have none
                pass
        torch._lazy.mark_step()
        eager = run_program(torch, code, [torch.from_numpy(a.copy()) for a in arrays])
        entry = {"name": name, "inputs": spec, "code": code, "text": text, "hash": ghash,
                 "values": [_encode(t.numpy()) for t in eager]}
        if dot is not None:
            entry["dot"] = dot
        programs.append(entry)
    import torch._lazy.metrics as M
    counters = []
    for name, code in COUNTER_SCENARIOS:
        torch._lazy.mark_step()
        M.reset()
        texts = run_scenario(torch, code, lambda a: torch.from_numpy(a.copy()).to("lazy"), torch._lazy.mark_step,
                             torch._C._lazy._get_graph_hash, lambda ts: torch._lazy.sync_multi(ts, []),
                             lambda t: t.cpu().numpy(),
                             lambda ts: strip.sub("", torch._C._lazy._get_tensors_text(ts)),
                             torch._C._lazy._set_reuse_ir)
        counters.append({"name": name, "code": code, "texts": texts,
                         "counters": {n: M.counter_value(n) for n in M.counter_names() if n not in COUNTERS_SKIPPED}})
    doc = {"torch_version": torch.__version__, "generator": "tools/gen_lazy_golden.py", "programs": programs,
           "counter_scenarios": counters}
    pathlib.Path(path).write_text(json.dumps(doc, indent=0, separators=(",", ":")) + "\n")
    print(f"wrote {len(programs)} programs to {path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "data"
                                                     / "lazy_golden.json"))
