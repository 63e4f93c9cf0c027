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

# In-place ops, views updated in place, aliases, several mark_steps (the code may call mark_step(); eager
# runs make it a no-op), comparisons and bool(t) (issue 17 B1), and the dtype fixes of B2-B6.  Where eager
# torch refuses a program that LTC runs (in-place on an expanded view, an in-place cast to an integer dtype)
# the values are LTC's own ("values_from": "ltc").
PROGRAMS += [
    ("ip_add_s", "f32[2,3]", "x0.add_(1)\nout = [x0]"),
    ("ip_add_t", "f32[2,3] f32[3]", "x0.add_(x1, alpha=2)\nout = [x0]"),
    ("ip_sub_f", "f32[2,3]", "x0.sub_(0.5)\nout = [x0]"),
    ("ip_mul_div", "f32[2,3] pf32[2,3]", "x0.mul_(x1)\nx0.div_(4)\nx0.div_(x1)\nout = [x0]"),
    ("ip_pow", "pf32[2,3]", "x0.pow_(2)\nout = [x0]"),
    ("ip_ops", "f32[2,3] f32[2,3]", "x0 += 1\nx0 -= x1\nx0 *= 2\nx0 /= 4\nx0 **= 2\nout = [x0]"),
    ("ip_cast_f64", "f32[2,3] f64[2,3]", "x0.add_(x1)\nout = [x0]"),
    ("ip_cast_i32", "i32[2,3] i64[2,3]", "x0 += x1\nout = [x0]"),
    ("ip_cast_i64_mul_f", "i64[2,3] f32[2,3]", "x0 *= x1\nx0.mul_(1.5)\nout = [x0]"),
    ("ip_bool_mul", "b[2,3] f32[2,3]", "x0.mul_(True)\nx0.mul_(x1)\nout = [x0]"),
    ("ip_u8_wrap", "u8[2,3]", "x0.add_(300)\nx0 *= 3\nout = [x0]"),
    ("ip_zero_fill", "f32[2,3] i64[2,3] b[3]", "x0.zero_()\nx1.fill_(2.7)\nx2.fill_(0.5)\nout = [x0, x1, x2]"),
    ("ip_fill_f", "f32[2,3] f32[]", "x0.fill_(7.25)\nx1.fill_(3)\nout = [x0, x1, x0 + x1]"),
    ("ip_clamp", "f32[2,3] i64[2,3]", "x0.clamp_(-0.5, 0.5)\nx1.clamp_(min=0)\nout = [x0, x1]"),
    ("ip_unary", "f32[2,3] pf32[2,3] i64[2,3]",
     "x0.relu_().neg_().exp_()\nx1.sqrt_().log_()\nx1.sigmoid_()\nx2.abs_()\nx0.tanh_().cos_()\n"
     "x1.reciprocal_().rsqrt_()\nx1.sin_()\nout = [x0, x1, x2]"),
    ("ip_copy", "f32[2,3] f32[3] i64[2,3]", "y = x0 * 2\nx0.copy_(x1)\nz = x0 + y\nx0.copy_(x2)\nout = [x0, z, y]"),
    ("ip_copy_ir", "f32[2,3] f32[2,3]", "e = x1 * 2\nx0.copy_(e)\nout = [x0, e]"),
    ("ip_alias", "f32[2,3]", "b = x0\nx0 += 1\nout = [b]"),
    ("ip_chain_uses", "f32[2,3]", "y = x0 * 2\nx0.add_(1)\nz = x0 * y\nx0.mul_(z)\nout = [x0, y, z]"),
    ("ipv_view_base", "f32[2,3]", "v = x0.view(6)\nv.add_(1)\nout = [x0, v]"),
    ("ipv_view_base_used", "f32[2,3]", "v = x0.view(6)\nv.add_(1)\nw = x0 * 1\nout = [w, x0, v]"),
    ("ipv_base_then_view", "f32[2,3]", "v = x0.view(6)\nx0.add_(1)\nout = [x0, v]"),
    ("ipv_base_then_view_used", "f32[2,3]", "v = x0.view(6)\nx0.add_(1)\nw = v + 0\nout = [w, v, x0]"),
    ("ipv_t", "f32[2,3]", "v = x0.t()\nv.mul_(2)\nout = [v, x0]"),
    ("ipv_t_zero", "f32[2,3]", "v = x0.t()\nv.zero_()\nout = [v, x0 + 1]"),
    ("ipv_t_fill", "f32[2,3]", "v = x0.t()\nv.fill_(2)\nout = [v, x0]"),
    ("ipv_permute", "f32[2,3,4]", "v = x0.permute(2, 0, 1)\nv.mul_(2)\nout = [v, x0 * 1]"),
    ("ipv_transpose", "f32[2,3,4]", "v = x0.transpose(0, -1)\nv.sub_(1)\nout = [v, x0 + 0]"),
    ("ipv_unsqueeze", "f32[2,3]", "v = x0.unsqueeze(-1)\nv.mul_(2)\nout = [v, x0 * 1]"),
    ("ipv_squeeze", "f32[2,1,3,1]", "v = x0.squeeze()\nv.mul_(2)\nout = [v, x0 * 1]"),
    ("ipv_squeeze_dim", "f32[2,1,3]", "v = x0.squeeze(-2)\nv.add_(3)\nout = [v, x0 * 1]"),
    ("ipv_squeeze_noop", "f32[2,3]", "v = x0.squeeze(0)\nv.add_(3)\nout = [v, x0 * 1]"),
    ("ipv_expand", "f32[3]", "v = x0.expand(2, 3)\nv.mul_(2)\nout = [v, x0 * 1]"),
    ("ipv_expand_1", "f32[1,3]", "v = x0.expand(4, 3)\nv.add_(1)\nout = [v, x0 * 1]"),
    ("ipv_reshape", "f32[2,3]", "v = x0.reshape(3, -1)\nv.mul_(2)\nout = [v, x0 * 1]"),
    ("ipv_view_of_view", "f32[2,3]", "v = x0.view(6)\nw = v.view(3, 2)\nw.mul_(2)\nout = [w, v, x0]"),
    ("ipv_view_of_view_used", "f32[2,3]",
     "v = x0.view(6)\nw = v.view(3, 2)\nw.mul_(2)\nz = v + 0\nq = x0 + 0\n"
     "out = [z, q, w]"),
    ("ipv_two_views", "f32[2,3]", "v = x0.t()\nw = x0.view(6)\nv.add_(1)\nw.mul_(2)\nout = [x0 + 0, v, w]"),
    ("ipv_copy", "f32[2,3] f32[2,3]", "v = x0.t()\nv.copy_(x1.t())\nout = [v, x0 + 0]"),
    ("ipv_clamp_cast", "f32[2,3] f64[3,2]", "v = x0.t()\nv.clamp_(max=0.5)\nv.add_(x1)\nout = [v, x0 * 1]"),
    ("ipv_iop", "f32[2,3]", "v = x0.unsqueeze(0)\nv += 1\nv *= v\nout = [x0 + 0, v]"),
    ("step_inplace", "f32[2,3]", "x0.add_(1)\nmark_step()\nx0.mul_(2)\nmark_step()\nx0 -= 1\nout = [x0]"),
    ("step_view_inplace", "f32[2,3]",
     "v = x0.view(6)\nv.add_(1)\nmark_step()\nv.mul_(2)\nmark_step()\nw = x0 + 0\nout = [w, v, x0]"),
    ("step_stale_base", "f32[2,3]", "v = x0.t()\nv.add_(1)\nmark_step()\nout = [x0, v]"),
    ("sgd_loop", "f32[4,3] f32[3,2] f32[4,2]",
     "w = x1\nfor i in range(3):\n    g = x0.t() @ ((x0 @ w) - x2)\n    w -= 0.1 * g\n    mark_step()\n"
     "out = [w, x1]"),
    ("sgd_fn", "f32[4,3] f32[3,2] f32[4,2]",
     "def sgd(p, g, lr=0.05):\n    p -= lr * g\nw = x1 * 1\nfor i in range(2):\n"
     "    sgd(w, x0.t() @ ((x0 @ w) - x2))\nout = [w]"),
    ("cmp_ops", "f32[2,3] f32[2,3]", "out = [x0 == x1, x0 != x1, x0 < x1, x0 <= x1, x0 > x1, x0 >= x1]"),
    ("cmp_methods", "f32[2,3] f32[3]", "out = [x0.eq(x1), x0.ne(x1), x0.lt(x1), x0.le(x1), x0.gt(x1), x0.ge(x1)]"),
    ("cmp_fns", "f32[2,3] f32[2,3]", "out = [T.eq(x0, x1), T.ne(x0, 0), T.lt(x0, 0.5), T.le(x0, x1), T.gt(x0, 1), "
                                     "T.ge(x0, x1)]"),
    ("cmp_scalar", "f32[2,3]", "out = [x0 == 1, x0 != 0.5, x0 < 0, x0 <= 1.25, x0 > -1, x0 >= 2]"),
    ("cmp_reflected", "f32[2,3]", "out = [1 == x0, 0.5 != x0, 0 < x0, 1.25 <= x0, -1 > x0, 2 >= x0]"),
    ("cmp_promote", "i64[2,3] f32[2,3]", "out = [x0 <= x1, x0 == x1, x0 < 2.5, x0 > 1]"),
    ("cmp_0dim", "f32[2,3] f64[]", "out = [x0 == x1, x0 > x1]"),
    ("cmp_bool", "b[3] b[3]", "out = [x0 == x1, x0 != True, x0 < 0.5]"),
    ("cmp_use", "f32[2,3]", "m = x0 > 0\nout = [m * x0, (x0 < 0).sum(), (x0 == x0).to(T.float32).mean()]"),
    ("cmp_bool_value", "f32[2,3]", "s = x0.sum()\nk = 2 if bool(s > 0) else 3\nout = [x0 * k]"),
    ("f16_mean", "f16[70000]", "h = x0 * 0 + 1\nout = [h.mean(), h.mean(0), h.sum()]"),
    ("f16_sum", "f16[5000]", "h = x0 * 0 + 1\nout = [h.sum(), h.sum(0, keepdim=True)]"),
    ("int_pow_neg", "i64[5] i64[5]", "e = x1.clamp(-3, 2)\nout = [x0 ** e, x0.pow(e), 2 ** e]"),
    ("bool_pow", "b[4]", "out = [x0 ** 2, x0 ** 1.5]"),
    ("softmax_empty", "f32[2,0] f32[0,3]", "out = [x0.softmax(1), x1.log_softmax(1), x1.softmax(0)]"),
]

# Indexing and views (issue 19): __getitem__ with ints, slices (steps, negative and out-of-range bounds), None
# and ...; narrow, select, flatten / unflatten, view_as, expand_as, movedim, clone, contiguous, flip, repeat,
# stack, and roll (no lazy kernel: eager).  Slices record their bounds as prim::Constant nodes.
PROGRAMS += [
    ("idx_int", "f32[2,3,4]", "out = [x0[0], x0[-1], x0[1][2]]"),
    ("idx_int_chain", "f32[2,3,4]", "out = [x0[0, 1, 2], x0[1, -1]]"),
    ("idx_slice", "f32[2,3,4]", "out = [x0[:, 1:3]]"),
    ("idx_slice_lone", "f32[2,3,4]", "out = [x0[:], x0[-1:], x0[1:]]"),
    ("idx_slice_step", "f32[2,3,4]", "out = [x0[..., ::2], x0[:, 1:2, ::3]]"),
    ("idx_slice_neg", "f32[2,3,4]", "out = [x0[1:, :, -3:-1], x0[:, -2:]]"),
    ("idx_slice_full", "f32[2,3,4]", "out = [x0[:, :], x0[:, 0:10], x0[...]]"),
    ("idx_slice_empty", "f32[2,3,4]", "out = [x0[:, 5:], x0[:, 2:1]]"),
    ("idx_none", "f32[2,3,4]", "out = [x0[None], x0[..., None], x0[:, None, 1:, None]]"),
    ("idx_mixed", "f32[2,3,4]", "out = [x0[None, -1], x0[1, ..., ::3], x0.transpose(0, 1)[1:, 0]]"),
    ("idx_use", "f32[4,8] f32[8]", "q = x0[:, :4]\nk = x0[:, 4:]\nout = [(q * k).sum(-1) + x1[::2].sum()]"),
    ("idx_i64", "i64[3,4]", "out = [x0[1:, ::2] * 2, x0[-1]]"),
    ("narrow", "f32[2,3,4]", "out = [x0.narrow(1, 1, 2), x0.narrow(1, -2, 2), x0.narrow(2, 0, 4)]"),
    ("narrow_fn", "f32[2,3,4]", "out = [T.narrow(x0, -1, 1, 2)]"),
    ("select", "f32[2,3,4]", "out = [x0.select(2, -1), x0.select(0, 1), T.select(x0, 1, -3)]"),
    ("flatten", "f32[2,3,4]", "out = [x0.flatten(), x0.flatten(1), x0.flatten(-2), x0.flatten(0, 0) * 1]"),
    ("flatten_fn", "f32[2,3,4]", "out = [T.flatten(x0, 1), T.flatten(x0[0])]"),
    ("unflatten", "f32[2,3,4]", "out = [x0.unflatten(2, (2, 2)), T.unflatten(x0, -1, (2, -1))]"),
    ("view_as_expand_as", "f32[2,3,4] f32[3,4]", "out = [x0.view_as(x0), x1.expand_as(x0), x0.reshape(6, 4).view_as(x0)]"),
    ("movedim", "f32[2,3,4]", "out = [x0.movedim(0, -1), T.movedim(x0, (0, 1), (2, 0))]"),
    ("clone_contig", "f32[2,3,4]", "y = x0 * 2\nout = [y.clone(), x0.clone() + y, (y + 1).contiguous()]"),
    ("flip", "f32[2,3,4]", "out = [x0.flip(0), x0.flip(0, -1), T.flip(x0, (1,))]"),
    ("repeat", "f32[2,3]", "out = [x0.repeat(1, 2), x0.repeat(2, 1, 3)]"),
    ("stack", "f32[2,3] f32[2,3]", "out = [T.stack([x0, x1]), T.stack((x0, x1 * 2), 1), T.stack([x0, x0], -1)]"),
    ("roll", "f32[2,3,4]", "out = [x0.roll(1, 2), x0.roll(-3), T.roll(x0, (1, -1), (0, 2))]"),
    ("views_chain", "f32[4,6]",
     "h = x0.unflatten(1, (2, 3)).movedim(1, 0)\nout = [(h[0] @ h[1].transpose(-1, -2)).flatten() + h[:, 1:].sum()]"),
]

# Factories (issue 19): appended last, so that the programs above keep their inputs (seeded by index).
PROGRAMS += [
    ("zeros_ones", "f32[2,3]", "out = [T.zeros(2, 3, device=D), T.ones((2, 3), device=D) + x0, "
                               "T.zeros((), device=D), T.ones((), device=D)]"),
    ("zeros_dtype", "f32[2]", "out = [T.zeros(2, 3, device=D, dtype=T.int64), T.ones(3, device=D, dtype=T.float64) + 1]"),
    ("full", "f32[2]", "out = [T.full((2, 3), 1.5, device=D), T.full((2,), 7, device=D), T.full((2,), True, device=D)]"),
    ("like", "f32[2,3] i64[3]", "out = [T.zeros_like(x0), T.ones_like(x1), T.full_like(x0, 7), T.zeros_like(x1) + x1]"),
    ("arange", "f32[2]", "out = [T.arange(5, device=D), T.arange(2, 7, 2, device=D), T.arange(1, 4, 0.5, device=D), "
                         "T.arange(5., device=D)]"),
    ("arange_neg", "f32[2]", "out = [T.arange(5, 0, -2, device=D), T.arange(0, 1, 0.25, device=D, dtype=T.float64)]"),
    ("eye_linspace", "f32[2]", "out = [T.eye(3, device=D), T.eye(2, 3, device=D) * 2, T.linspace(0, 1, 5, device=D)]"),
    ("triu_tril", "f32[3,4]", "out = [x0.triu(), x0.tril(-1), T.triu(x0, 1), T.tril(x0, 2)]"),
    ("causal_mask", "f32[4,4]",
     "m = T.ones(4, 4, device=D).tril()\nout = [x0 * m + (m - 1) * 1e9, T.arange(4, device=D) * 2]"),
]

# Masks, selection, activations and dtype casts (issue 19); where / logical_* / isnan / erf run eagerly, as in LTC.
PROGRAMS += [
    ("masked_fill", "f32[2,3,4]", "out = [x0.masked_fill(x0 > 1, float('-inf')), T.masked_fill(x0, x0 < 0, 1)]"),
    ("masked_fill_bcast", "f32[2,4,4]",
     "m = T.ones(4, 4, device=D).triu(1) > 0\nout = [x0.masked_fill(m, -1e9).softmax(-1)]"),
    ("where", "f32[2,3] f32[2,3]", "out = [T.where(x0 > 0, x0, x1), T.where(x1 > 0.5, x0, 0.0), T.where(x0 > 0, 1, x1)]"),
    ("logical", "f32[2,3] f32[2,3]",
     "out = [T.logical_and(x0 > 0, x1 > 0), T.logical_or(x0 > 0, x1 > 0), T.logical_not(x0 > 0), "
     "(x0 > 0).logical_xor(x1 > 0)]"),
    ("isnan_isinf", "f32[2,3] f32[2,3]", "y = x0 / x1\nout = [y.isnan(), T.isinf(y), y.isinf()]"),
    ("gather", "f32[3,4]", "i = T.arange(3, device=D).unsqueeze(1)\nout = [x0.gather(1, i), T.gather(x0, -1, i * 0 + 2)]"),
    ("index_select", "f32[3,4]", "i = T.arange(0, 4, 2, device=D)\nout = [x0.index_select(1, i), T.index_select(x0, 0, i)]"),
    ("embedding", "f32[5,3]",
     "F = T.nn.functional\nids = T.arange(4, device=D).unsqueeze(0)\nout = [F.embedding(ids, x0), F.embedding(ids[0], x0, padding_idx=1)]"),
    ("gelu_silu", "f32[2,3]", "F = T.nn.functional\nout = [F.gelu(x0), F.gelu(x0, approximate='tanh'), F.silu(x0), F.relu(x0)]"),
    ("erf", "f32[2,3] f64[3]", "out = [x0.erf(), T.erf(x1)]"),
    ("casts", "f32[2,3] i64[3]",
     "out = [x0.half(), x0.float() + 1, x0.long(), x0.double().int(), x0.bool(), x0.type_as(x1), x0.to(x1), x1.float()]"),
    ("half_math", "f32[2,3]", "h = x0.half()\nout = [(h * 2 + 1).float(), h.sum()]"),
]

# Reductions (issue 19): std's three overloads, norm, all / any, min / max, cumsum traced; var, argmax /
# argmin, prod and any / all over a dim run eagerly, as in LTC.
PROGRAMS += [
    ("std", "f32[2,3,4]", "out = [x0.std(1), x0.std(), x0.std(-1, keepdim=True), x0.std(unbiased=False)]"),
    ("std_correction", "f32[2,3,4]", "out = [x0.std(1, correction=0), x0.std((0, 2), unbiased=False), T.std(x0, 2)]"),
    ("var", "f32[2,3,4]", "out = [x0.var(), x0.var(1), T.var(x0, -1, correction=0), x0.var(1, keepdim=True)]"),
    ("norm_p", "f32[2,3,4]", "out = [x0.norm(), x0.norm(dim=1), x0.norm(p=1), T.norm(x0, 2, -1, True)]"),
    ("all_any", "f32[2,3]", "out = [(x0 > 0).all(), x0.any(), x0.any(1), T.all(x0 > -1, 0, keepdim=True)]"),
    ("min_max", "f32[2,3] i64[4]", "out = [x0.min(), x0.max(), T.max(x0 * 2), x1.min()]"),
    ("argmax", "f32[2,3,4]", "out = [x0.argmax(), x0.argmin(-1), T.argmax(x0, 1, keepdim=True)]"),
    ("prod", "f32[2,3] i32[3]", "out = [x0.prod(), x0.prod(1), x1.prod()]"),
    ("cumsum", "f32[2,3] i32[4]", "out = [x0.cumsum(1), x0.cumsum(-1, dtype=T.float64), T.cumsum(x0, 0), x1.cumsum(0)]"),
    ("rms_norm_manual", "f32[2,3,8] f32[8]",
     "r = (x0 * x0).mean(-1, keepdim=True).add(1e-6).rsqrt()\nout = [x0 * r * x1, x0.norm(dim=-1) / 8 ** 0.5]"),
]

# Whole model pieces written with the ops above (issue 19).
PROGRAMS += [
    ("model_attention_causal", "f32[2,4,8] f32[8,24] f32[8,8]",
     "B, S, E, H = 2, 4, 8, 2\nqkv = x0 @ x1\nq, k, v = qkv[..., :8], qkv[..., 8:16], qkv[..., 16:]\n"
     "q = q.reshape(B, S, H, 4).transpose(1, 2)\nk = k.reshape(B, S, H, 4).transpose(1, 2)\n"
     "v = v.reshape(B, S, H, 4).transpose(1, 2)\n"
     "mask = T.ones(S, S, device=D).triu(1) > 0\n"
     "att = (q @ k.transpose(-1, -2) * 0.5).masked_fill(mask, float('-inf')).softmax(-1)\n"
     "y = (att @ v).transpose(1, 2).reshape(B, S, E)\nout = [y @ x2]"),
    ("model_mlp_gelu", "f32[4,8] f32[8,16] f32[16] f32[16,8]",
     "F = T.nn.functional\nh = F.gelu(x0 @ x1 + x2)\nout = [h @ x3 + x0]"),
    ("model_layernorm_manual", "f32[2,3,8] f32[8] f32[8]",
     "m = x0.mean(-1, keepdim=True)\nv = ((x0 - m) ** 2).mean(-1, keepdim=True)\n"
     "out = [(x0 - m) * (v + 1e-5).rsqrt() * x1 + x2]"),
    ("model_embed_xent", "f32[10,4] f32[4,10]",
     "F = T.nn.functional\nids = T.arange(6, device=D) + 2\nh = F.embedding(ids, x0)\n"
     "logp = (h @ x1).log_softmax(-1)\ntgt = T.arange(6, device=D).unsqueeze(1)\n"
     "out = [-(logp.gather(1, tgt)).mean()]"),
    ("model_rotary", "f32[2,4,8]",
     "pos = T.arange(4, device=D).float().unsqueeze(1)\n"
     "inv = 1.0 / (10000 ** (T.arange(0, 8, 2, device=D).float() / 8))\nang = pos * inv\n"
     "cos, sin = ang.cos(), ang.sin()\nx1, x2 = x0[..., :4], x0[..., 4:]\n"
     "out = [T.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)]"),
]

# More torch.nn.functional forms (issue 19): linear (mm / addmm), leaky_relu, softplus, elu traced; hardtanh and
# mse_loss eager, as in LTC; softmax / log_softmax with dtype=; dropout outside training.
PROGRAMS += [
    ("nn_linear", "f32[3,4] f32[5,4] f32[5] f32[2,3,4]",
     "F = T.nn.functional\nout = [F.linear(x0, x1, x2), F.linear(x0, x1), F.linear(x3, x1)]"),
    ("nn_activations", "f32[2,3]",
     "F = T.nn.functional\nout = [F.leaky_relu(x0, 0.1), F.leaky_relu(x0), F.softplus(x0), F.softplus(x0, 2, 1), "
     "F.elu(x0), F.elu(x0, 0.5), F.hardtanh(x0), F.hardtanh(x0, -0.5, 0.5)]"),
    ("nn_mse", "f32[2,3] f32[2,3]",
     "F = T.nn.functional\nout = [F.mse_loss(x0, x1), F.mse_loss(x0, x1, reduction='sum'), "
     "F.mse_loss(x0, x1, reduction='none')]"),
    ("softmax_dtype", "f32[2,3]", "F = T.nn.functional\nout = [x0.softmax(-1, dtype=T.float64), "
     "F.log_softmax(x0, 1, dtype=T.float64), F.dropout(x0, 0.5, training=False) * 1]"),
    ("model_mlp_linear", "f32[4,8] f32[16,8] f32[16] f32[8,16] f32[8]",
     "F = T.nn.functional\nh = F.silu(F.linear(x0, x1, x2))\nout = [F.mse_loss(F.linear(h, x3, x4), x0)]"),
    ("setitem", "f32[2,3,4]", "x0[0] = 1\nx0[:, 1:3] = 5\nout = [x0 * 1]"),
    ("setitem_tensor", "f32[2,3,4] f32[4]", "x0[1] = x0[0] * 2\nx0[..., -1] = 0.5\nx0[1, :, None] = 7\n"
                                             "x0[0, 0] = x1\nout = [x0 + 0]"),
    ("setitem_ellipsis", "f32[2,3]", "x0[...] = 2\nout = [x0 * 1]"),
    ("ipv_select_slice", "f32[2,3,4]", "v = x0[0]\nv.add_(1)\nw = x0[:, ::2]\nw.mul_(2)\nout = [x0 * 1, v, w]"),
    ("setitem_mask_rows", "f32[4,4]",
     "x0[:, 2:] = 0\nm = x0.masked_fill(T.ones(4, 4, device=D).tril() == 0, -1e9)\nout = [m.softmax(-1), x0]"),
]

# Selection (issue 19): topk / sort / argsort / max(dim) as LTC's two-output nodes (``num_outputs=2``, operands
# ``%n.1``), min(dim) and stable sorts eager; advanced indexing (integer / boolean index tensors: aten::index.Tensor
# and aten::_index_put_impl_ run eagerly, as in LTC), masked_select / nonzero (data-dependent shapes: eager),
# scatter / index_add (eager), scatter_add (traced), one_hot.  ``u`` below makes tie-free values (topk's order of
# equal elements is unspecified in torch).
_U = "u = x0 + T.arange({n}, device=D).reshape({shape}).float() * 0.001\n"
PROGRAMS_SELECTION = [
    ("sel_topk", "f32[2,3,4]", _U.format(n=24, shape="2, 3, 4") +
     "v, i = u.topk(2)\nr = T.topk(u, 1, dim=1, largest=False)\nout = [v, i, r.values, r.indices, u.topk(2, 0).values]"),
    ("sel_topk_idx", "f32[3,5]", _U.format(n=15, shape="3, 5") + "out = [u.topk(2).indices, u.topk(k=4, sorted=True)[0] * 2]"),
    ("sel_sort", "f32[2,3,4]", _U.format(n=24, shape="2, 3, 4") +
     "s = u.sort()\nout = [s.values, s.indices, u.sort(1, descending=True)[1], T.sort(u, 0)[0]]"),
    ("sel_argsort", "f32[3,5]", _U.format(n=15, shape="3, 5") +
     "out = [u.argsort(), T.argsort(u, 0, descending=True), u.argsort(-1, True) + 1]"),
    ("sel_sort_int", "i64[4,6]", "out = [x0.sort(stable=True)[0], x0.argsort(stable=True), x0.max(1)[0], x0.max(0).indices * 0]"),
    ("sel_max_dim", "f32[2,3,4]", _U.format(n=24, shape="2, 3, 4") +
     "m = u.max(1)\nout = [m.values, m.indices, u.max(-1, keepdim=True)[0], T.max(u, 0)[1], "
     "u.max(1).values * 2 + u.max(1)[1]]"),
    ("sel_min_dim", "f32[2,3,4]", _U.format(n=24, shape="2, 3, 4") +
     "m = u.min(1)\nout = [m.values, m.indices, T.min(u, -1, keepdim=True)[0] + 1]"),
    ("sel_max_dim_0d", "f32[]", "m = x0.max(0)\nout = [m[0], m[1], x0.sort()[1]]"),
    # advanced indexing: eager aten::index.Tensor after the basic part's views
    ("sel_idx_mask", "f32[2,3,4]", "out = [x0[x0 > 0], x0[x0[:, :, 0] > 0], (x0 * 2)[(x0 < 1).sum(-1) > 1]]"),
    ("sel_idx_int", "f32[2,3,4]", "i = T.arange(2, device=D).flip(0)\nj = T.arange(3, device=D).flip(0).clamp(max=1)\n"
     "out = [x0[i], x0[:, j], x0[i, j[:2]], x0[..., j], x0[1:, j] + 1]"),
    ("sel_idx_mixed", "f32[2,3,4]", "i = T.arange(2, device=D)\nm = T.arange(4, device=D) > 1\n"
     "out = [x0[0, i], x0[None, i], x0[i, :, i], x0[:, ::2, m], x0[[1, 0]], x0[:, [True, False, True]]]"),
    ("sel_idx_0dim", "f32[2,3,4]", "i = T.arange(3, device=D)[1]\nout = [x0[i], x0[:, i, 1:]]"),
    ("sel_idx_bool", "f32[2,3]", "out = [x0[True], x0[False], x0[None, 1, True]]"),
    ("sel_setitem_mask", "f32[2,3,4]", "x0[x0 > 1] = 0\nout = [x0 * 1]"),
    ("sel_setitem_int", "f32[2,3,4] f32[2,2,4]", "i = T.arange(2, device=D) * 2\nx0[:, i] = x1\nx0[1, i] = -1.5\n"
     "out = [x0 + 0]"),
    ("sel_setitem_view", "f32[2,3,4]", "v = x0[0]\nv[v < 0] = 7\nout = [x0 * 1, v]"),
    ("sel_setitem_tensor_val", "f32[4,3] f32[1,3]", "m = x0.sum(1) > 0\nx0[m] = x1\nx0[T.arange(2, device=D)] = x1 * 2\n"
     "out = [x0 + 0]"),
    ("sel_index_put", "f32[3,4] f32[2,4]", "i = T.arange(2, device=D) + 1\ny = x0.index_put((i,), x1)\n"
     "x0.index_put_((i * 0,), x1, accumulate=True)\nout = [y, x0 * 1]"),
    # data-dependent shapes and scatter / gather by index
    ("sel_masked_select", "f32[2,3,4] f32[4]", "out = [x0.masked_select(x0 > 0), T.masked_select(x0, x1 > 0)]"),
    ("sel_nonzero", "f32[3,4]", "out = [(x0 > 0).nonzero(), T.nonzero(x0)]"),
    ("sel_scatter", "f32[3,4] f32[3,2]", "i = T.arange(4, device=D).flip(0)[:2].expand(3, 2)\nr = T.arange(3, device=D).unsqueeze(1).expand(3, 2)\n"
     "out = [x0.scatter(1, i, x1), x0.scatter(1, i, 2.5), T.scatter(x0, 0, r.flip(0), x1)]"),
    ("sel_scatter_add", "f32[3,4] f32[3,2] f32[5]", "i = T.arange(6, device=D).reshape(3, 2).clamp(max=3)\n"
     "out = [x0.scatter_add(1, i, x1), T.scatter_add(x2, 0, T.arange(5, device=D).clamp(max=1), x2)]"),
    ("sel_index_add", "f32[3,4] f32[3,2]", "i = T.arange(2, device=D) * 3\n"
     "out = [x0.index_add(1, i, x1), x0.index_add(1, i, x1, alpha=2), T.index_add(x0, 1, i, x1)]"),
    ("sel_one_hot", "f32[3]", "F = T.nn.functional\nids = T.arange(4, device=D).flip(0).clamp(max=2)\n"
     "out = [F.one_hot(ids, 5), F.one_hot(ids), F.one_hot(ids.reshape(2, 2), 3).float() * 2]"),
    ("sel_inplace_scatter", "f32[3,4] f32[3,2]", "i = T.arange(4, device=D).flip(0)[:2].expand(3, 2)\n"
     "x0.scatter_(1, i, x1)\nx0.scatter_add_(1, i, x1)\nx0.index_add_(0, T.arange(3, device=D), x0 * 1)\nout = [x0]"),
    # whole programs: causal attention with a boolean mask and top-k sampling of the logits; top-k routing
    ("sel_model_attn_topk", "f32[2,4,8] f32[8,24] f32[8,10]",
     "B, S, E = 2, 4, 8\nq, k, v = (x0 @ x1).split(8, -1) if False else ((x0 @ x1)[..., :8], (x0 @ x1)[..., 8:16], "
     "(x0 @ x1)[..., 16:])\nmask = T.ones(S, S, device=D).triu(1).bool()\n"
     "att = (q @ k.transpose(-1, -2) * E ** -0.5).masked_fill(mask, float('-inf')).softmax(-1)\n"
     "logits = (att @ v)[:, -1] @ x2\nvals, idx = logits.topk(3)\nprobs = vals.softmax(-1)\n"
     "best = idx.gather(-1, probs.argmax(-1, keepdim=True))\nout = [probs, idx, best, logits.max(-1)[1]]"),
    ("sel_model_moe_route", "f32[6,8] f32[8,4]",
     "g = (x0 @ x1).softmax(-1)\nw, e = g.topk(2, -1)\nw = w / w.sum(-1, keepdim=True)\n"
     "dense = T.zeros(6, 4, device=D).scatter_add(1, e, w)\nsel = e[:, 0] == 1\n"
     "out = [w, e, dense, g.sort(-1, descending=True)[0][:, :2], x0[sel].sum(0)]"),
]

PROGRAMS += PROGRAMS_SELECTION

# Norms, losses, RNG, bfloat16 and whole model programs (issue 19, h-lazynn).  layer_norm / batch_norm /
# nll_loss are LTC nodes with several outputs; rms_norm, group_norm, logsumexp and label smoothing are
# decomposed by torch before LTC sees them.
PROGRAMS_NN = [
    ("nn_layer_norm", "f32[2,3,8] f32[8] f32[8]",
     "F = T.nn.functional\nout = [F.layer_norm(x0, (8,), x1, x2), F.layer_norm(x0, [8]), "
     "F.layer_norm(x0, (3, 8), eps=1e-3) * 2, T.layer_norm(x0, (8,), x1)]"),
    ("nn_rms_norm", "f32[2,3,8] f32[8]",
     "F = T.nn.functional\nout = [F.rms_norm(x0, (8,), x1), F.rms_norm(x0, (8,), eps=1e-6), F.rms_norm(x0, (3, 8))]"),
    ("nn_rms_norm_half", "f32[2,8]", "F = T.nn.functional\nout = [F.rms_norm(x0.half(), (8,)).float()]"),
    ("nn_batch_norm_eval", "f32[2,4,3] f32[4] pf32[4] f32[4] f32[4]",
     "F = T.nn.functional\nout = [F.batch_norm(x0, x1, x2, x3, x4), F.batch_norm(x0[:, :, 0], x1, x2), "
     "F.batch_norm(x0, x1, x2, x3, None, False, 0.2, 1e-3)]"),
    ("nn_group_norm", "f32[2,4,3] f32[4] f32[4]",
     "F = T.nn.functional\nout = [F.group_norm(x0, 2, x1, x2), F.group_norm(x0 * 2, 4), F.group_norm(x0, 1, eps=1e-3)]"),
    ("logsumexp", "f32[2,3,4]",
     "out = [x0.logsumexp(-1), T.logsumexp(x0, (0, 2)), x0.logsumexp(1, keepdim=True), (x0 * 2).logsumexp(0) + 1]"),
    ("nn_nll_loss", "f32[4,5] f32[5]",
     "F = T.nn.functional\nt = T.arange(4, device=D) + 1\nlp = x0.log_softmax(-1)\n"
     "out = [F.nll_loss(lp, t), F.nll_loss(lp, t, reduction='sum'), F.nll_loss(lp, t, reduction='none'), "
     "F.nll_loss(lp, t, weight=x1.abs() + 0.25, ignore_index=1), F.nll_loss(lp[0], t[2])]"),
    ("nn_cross_entropy", "f32[4,5] f32[5]",
     "F = T.nn.functional\nt = 4 - T.arange(4, device=D)\n"
     "out = [F.cross_entropy(x0, t), F.cross_entropy(x0, t, reduction='sum') * 2, "
     "F.cross_entropy(x0, t, reduction='none'), F.cross_entropy(x0, t, ignore_index=3), "
     "F.cross_entropy(x0, t, weight=x1.abs() + 0.5)]"),
    ("nn_cross_entropy_ls", "f32[4,5]",
     "F = T.nn.functional\nt = T.arange(4, device=D)\n"
     "out = [F.cross_entropy(x0, t, label_smoothing=0.1), F.cross_entropy(x0, t, reduction='none', label_smoothing=0.2), "
     "F.cross_entropy(x0, t, reduction='sum', label_smoothing=0.05, ignore_index=2)]"),
    # RNG: drawn when the graph runs (post order) from torch's generator, reseeded by manual_seed
    ("rng_rand", "f32[2]", "T.manual_seed(0)\nout = [T.rand(2, 3, device=D), T.rand(4, device=D, dtype=T.float64) * 2, "
                           "T.rand((3,), device=D) + x0[0], T.rand(5, device=D, dtype=T.float16), "
                           "T.rand(5, device=D, dtype=T.bfloat16).float()]"),
    ("rng_randn", "f32[2]", "T.manual_seed(1)\nout = [T.randn(4, 8, device=D), T.randn(5, device=D), "
                            "T.randn(3, 7, device=D, dtype=T.float64), T.randn(2, device=D, dtype=T.float64)]"),
    ("rng_randint", "f32[2]", "T.manual_seed(3)\nout = [T.randint(0, 10, (5,), device=D), T.randint(7, (2, 3), device=D), "
                              "T.randint(-5, 5, (4,), device=D) * 2]"),
    ("rng_like", "f32[3,4] i64[5]", "T.manual_seed(4)\nout = [T.rand_like(x0), T.randn_like(x0), T.randint_like(x1, 7), "
                                    "T.randint_like(x0, 2, 9)]"),
    ("rng_dropout", "f32[8,32]", "F = T.nn.functional\nT.manual_seed(5)\nout = [F.dropout(x0, 0.25), "
                                 "F.dropout(x0, 0.5, training=False) * 1, F.dropout(x0 * 2, 0.9) + 1]"),
    # bfloat16: values compared as float32 (numpy has no bfloat16)
    ("bf16_ops", "f32[2,3] f16[2,3]",
     "b = x0.bfloat16()\nout = [(b * 3 + 1).float(), b + x1, (b * 0.1).exp().float(), b.sum().float(), "
     "b.mean(0).float(), x0.to(T.bfloat16).softmax(-1).float(), (b / 3 - b.sqrt()).float()]"),
    ("bf16_promote", "f32[2,3] f64[3] i64[3]",
     "b = x0.to(T.bfloat16)\nout = [b * x1, (b + x2).float(), (b * 2.5).double(), (b > 0.3).int(), "
     "(b * b).half(), b.type_as(x1), x1.bfloat16().float()]"),
    ("bf16_reduce", "pf32[4,8]",
     "b = (x0 * 1.37).bfloat16()\nout = [b.sum(1).float(), b.mean().float(), b.log().sum(0, keepdim=True).float(), "
     "(b @ b.t()).float(), b.amax(1).float(), b.tanh().sigmoid().float()]"),
    ("bf16_wide", "f32[64,64]",
     "b = (x0 * 0.731 + 0.05).bfloat16()\nout = [(b.exp() / (b * b + 1)).float(), b.sin().sum(1).float(), "
     "b.sum().float(), (b - b.mean(0)).abs().mean(1).float(), (b @ b).float(), b.softmax(0).float(), "
     "b.rsqrt().float(), b.log_softmax(-1).float()]"),
    # whole model programs
    ("model_nn_mlp", "f32[2,4,8] f32[16,8] f32[16] f32[8,16] f32[8] f32[8] f32[8]",
     "F = T.nn.functional\nh = F.layer_norm(x0, (8,), x5, x6)\nh = F.gelu(F.linear(h, x1, x2))\n"
     "out = [x0 + F.linear(h, x3, x4)]"),
    ("model_nn_attention", "f32[2,6,8] f32[24,8] f32[24] f32[8,8] f32[8] f32[8] f32[8]",
     "F = T.nn.functional\nB, S, E, H = 2, 6, 8, 2\nDh = E // H\n"
     "h = F.layer_norm(x0, (E,), x5, x6)\nqkv = F.linear(h, x1, x2)\n"
     "q, k, v = qkv[..., :E], qkv[..., E:2 * E], qkv[..., 2 * E:]\n"
     "q, k, v = [t.reshape(B, S, H, Dh).transpose(1, 2) for t in (q, k, v)]\n"
     "pos = T.arange(S, device=D).float().unsqueeze(1)\n"
     "inv = 1.0 / (10000 ** (T.arange(0, Dh, 2, device=D).float() / Dh))\n"
     "ang = pos * inv\ncos, sin = ang.cos(), ang.sin()\n"
     "def rot(t):\n    t1, t2 = t[..., :Dh // 2], t[..., Dh // 2:]\n"
     "    return T.cat([t1 * cos - t2 * sin, t1 * sin + t2 * cos], -1)\n"
     "q, k = rot(q), rot(k)\nmask = T.ones(S, S, device=D).triu(1) > 0\n"
     "att = (q @ k.transpose(-1, -2)) * Dh ** -0.5\natt = att.masked_fill(mask, float('-inf')).softmax(-1)\n"
     "y = (att @ v).transpose(1, 2).reshape(B, S, E)\nout = [x0 + F.linear(y, x3, x4)]"),
    ("model_nn_rmsnorm_swiglu", "f32[2,4,8] f32[8] f32[16,8] f32[16,8] f32[8,16]",
     "F = T.nn.functional\nh = F.rms_norm(x0, (8,), x1, eps=1e-6)\n"
     "g = F.silu(F.linear(h, x2)) * F.linear(h, x3)\nout = [x0 + F.linear(g, x4)]"),
    ("model_nn_embed_xent", "f32[10,8] i64[2,6]",
     "F = T.nn.functional\nids = x1.abs()\nh = F.layer_norm(F.embedding(ids, x0), (8,))\n"
     "logits = h @ x0.t()\ntgt = (ids + 1).reshape(-1)\n"
     "out = [F.cross_entropy(logits.reshape(-1, 10), tgt), "
     "F.cross_entropy(logits.reshape(-1, 10), tgt, label_smoothing=0.1, reduction='sum')]"),
    ("model_nn_sgd_3steps", "f32[8,4] f32[8,2] f32[4,2]",
     "w = x2\nbuf = T.zeros(4, 2, device=D)\nfor step in range(3):\n"
     "    err = x0 @ w - x1\n    loss = (err * err).mean()\n    g = x0.t() @ err * (2.0 / 16)\n"
     "    buf.mul_(0.9).add_(g)\n    w.sub_(buf * 0.1)\n    if step < 2:\n        mark_step()\n"
     "out = [w, buf, loss]"),
    ("model_nn_adam_3steps", "f32[8,4] f32[8,2] f32[4,2]",
     "w = x2\nm = T.zeros_like(w)\nv = T.zeros_like(w)\nb1, b2, lr, eps = 0.9, 0.999, 0.01, 1e-8\n"
     "for step in range(1, 4):\n    err = x0 @ w - x1\n    g = x0.t() @ err * (2.0 / 16)\n"
     "    m.mul_(b1).add_(g, alpha=1 - b1)\n    v.mul_(b2).add_(g * g, alpha=1 - b2)\n"
     "    mh = m / (1 - b1 ** step)\n    vh = v / (1 - b2 ** step)\n    w.sub_(lr * mh / (vh.sqrt() + eps))\n"
     "    if step < 3:\n        mark_step()\nout = [w, m, v]"),
    # (appended last: a program's inputs are seeded by its index)
    ("rng_inplace", "f32[3,40]",
     "T.manual_seed(6)\ny = x0 * 1\ny.uniform_(-1, 2)\nz = x0[0] * 0\nz.normal_(1, 3)\nw = T.zeros(10, device=D)\n"
     "w.random_(3, 9)\nb = T.ones(64, device=D)\nb.bernoulli_(0.7)\n"
     "out = [y, z, w, b, T.bernoulli(T.rand(30, device=D)), T.ones(20, device=D).bernoulli(0.2)]"),
    ("rng_reduced", "f32[2,3]",
     "F = T.nn.functional\nT.manual_seed(8)\nout = [T.randn(40, device=D, dtype=T.bfloat16).float(), "
     "T.randn(17, device=D, dtype=T.float16), T.randn(7, device=D, dtype=T.float16), F.dropout(x0, 1.0), "
     "F.dropout(x0[:0], 0.3) + 1]"),
    ("nn_norms_reduced", "f32[2,3,8] f32[8] f32[8]",
     "F = T.nn.functional\nh, b = x0.half(), x0.bfloat16()\n"
     "out = [F.rms_norm(h, (8,), x1.half()), F.rms_norm(b, (8,), eps=1e-6).float(), F.rms_norm(x0, (8,), eps=1e-6), "
     "F.layer_norm(h, (8,), x1.half(), x2.half()), F.layer_norm(b, (8,)).float(), "
     "F.cross_entropy(b[0], T.arange(3, device=D)).float()]"),
    ("nn_group_norm_bf16", "f32[2,3,8] f32[3]",
     "F = T.nn.functional\nout = [F.group_norm(x0.bfloat16(), 3, x1.bfloat16()).float()]"),
    ("reduced_rsqrt_tail", "pf32[3,25]",
     "out = [(x0 * 3.7).half().rsqrt(), (x0 * 3.7).bfloat16().rsqrt().float(), x0[:, :7].half().rsqrt(), "
     "(x0 + 0.1).bfloat16().rsqrt().sum().float()]"),
    ("reduced_scalars", "f32[4,32] pf32[4,32]",
     "h, g = (x0 / 7.3).half(), (x1 / 9.1).half()\nb, c = (x0 / 7.3).bfloat16(), (x1 / 9.1).bfloat16()\n"
     "out = [h / 3.3, h * 0.1, h - 0.37, h.add(0.3, alpha=1.7), h.add(g, alpha=1.7), h.sub(g, alpha=0.3), "
     "(b / 3.3).float(), (b - 0.37).float(), b.add(0.3, alpha=1.7).float(), b.add(c, alpha=1.7).float(), "
     "(b * c + 1e-3).float(), (2.5 - b).float()]"),
    ("reduced_ops", "pf32[6,50] f32[6,50]",
     "F = T.nn.functional\nouts = []\nfor dt in (T.float16, T.bfloat16):\n"
     "    x, y = (x0 * 1.37).to(dt), (x1 * 0.73).to(dt)\n"
     "    r = [x ** 1.7, x.pow(y), y.sigmoid(), F.gelu(y), F.silu(y), x.log(), y.exp(), x.sum(1), x.mean(0), "
     "y.cumsum(1), x[:, :20].prod(1), y.softmax(1), y.log_softmax(0), x @ y.t(), y.std(1), F.leaky_relu(y, 0.1), "
     "F.softplus(y), F.elu(y), y > 0.3, y == 0.25, y.masked_fill(y < 0.1, 0.3), x.rsqrt(), y.tanh()]\n"
     "    outs += [t.float() if t.dtype == T.bfloat16 else t for t in r]\nout = outs"),
    ("nn_loss_nd", "f32[2,5,4] f32[2,5,3,2] f32[5]",
     "F = T.nn.functional\nt1 = (T.arange(8, device=D).reshape(2, 4) * 0.6).long()\n"
     "t2 = (T.arange(12, device=D).reshape(2, 3, 2) * 0.4).long()\n"
     "out = [F.cross_entropy(x0, t1), F.nll_loss(x0.log_softmax(1), t1, reduction='none'), "
     "F.cross_entropy(x1, t2, reduction='sum'), F.cross_entropy(x1, t2, weight=x2.abs() + 0.5, ignore_index=2), "
     "F.nll_loss(x1, t2, reduction='none'), F.cross_entropy(x0, t1, label_smoothing=0.1)]"),
    ("rng_view_inplace", "f32[3,40]",
     "T.manual_seed(12)\ny = x0 * 1\nv = y[1]\nv.uniform_(-1, 2)\nw = y[1:]\nw.normal_(0.5, 2)\nout = [y + 0, v * 2]"),
    ("optim_pointwise", "f32[2,3] f32[2,3] pf32[2,3] f32[3]",
     "out = [T.addcmul(x0, x1, x2, value=0.1), x0.addcdiv(x1, x2, value=-0.5), x0.addcmul(x1, x3), "
     "x0.lerp(x1, 0.3), T.lerp(x0, x1, 0.8), x0.lerp(x1, x2 / 4)]"),
    ("model_nn_adam_torch_style", "f32[8,4] f32[8,2] f32[4,2]",
     "import math\nw = x2\nm = T.zeros_like(w)\nv = T.zeros_like(w)\nb1, b2, lr, eps = 0.9, 0.999, 0.01, 1e-8\n"
     "for step in range(1, 4):\n    g = x0.t() @ (x0 @ w - x1) * (2.0 / 16)\n    m.lerp_(g, 1 - b1)\n"
     "    v.mul_(b2).addcmul_(g, g, value=1 - b2)\n    bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step\n"
     "    denom = (v.sqrt() / math.sqrt(bc2)).add_(eps)\n    w.addcdiv_(m, denom, value=-lr / bc1)\n"
     "    if step < 3:\n        mark_step()\nout = [w, m, v]"),
    # cross_entropy with class-probability targets (a target of the input's shape) and with weights and label
    # smoothing together (appended last: a program's inputs are seeded by its index)
    ("nn_cross_entropy_prob", "f32[4,5] pf32[4,5] f32[5] f32[2,5,3] pf32[2,5,3]",
     "F = T.nn.functional\np = x1 / x1.sum(1, keepdim=True)\nw = x2.abs() + 0.5\n"
     "p3 = x4 / x4.sum(1, keepdim=True)\n"
     "out = [F.cross_entropy(x0, p), F.cross_entropy(x0, p, reduction='sum'), F.cross_entropy(x0, p, reduction='none'), "
     "F.cross_entropy(x0, p, weight=w), F.cross_entropy(x0, p, weight=w, reduction='none', label_smoothing=0.1), "
     "F.cross_entropy(x3, p3, label_smoothing=0.2), F.cross_entropy(x3, p3, weight=w, reduction='none'), "
     "F.cross_entropy(x0[1], p[1]), F.cross_entropy(x0, p.double()), F.cross_entropy(x0, p, label_smoothing=-0.1), "
     "F.cross_entropy(x0[:0], p[:0]), F.cross_entropy(x0[:0], p[:0], reduction='sum')]"),
    ("nn_cross_entropy_ls_weight", "f32[4,5] f32[5] f32[2,5,3]",
     "F = T.nn.functional\nt = 4 - T.arange(4, device=D)\nw = x1.abs() + 0.5\n"
     "t3 = (T.arange(6, device=D).reshape(2, 3) * 0.7).long()\n"
     "out = [F.cross_entropy(x0, t, weight=w, label_smoothing=0.1), "
     "F.cross_entropy(x0, t, weight=w, label_smoothing=0.2, reduction='sum'), "
     "F.cross_entropy(x0, t, weight=w, label_smoothing=0.3, reduction='none', ignore_index=2), "
     "F.cross_entropy(x0, t, weight=w, label_smoothing=0.1, ignore_index=4), "
     "F.cross_entropy(x2, t3, weight=w, label_smoothing=0.1), "
     "F.cross_entropy(x2, t3, weight=w, label_smoothing=0.15, reduction='none'), "
     "F.cross_entropy(x0, t, label_smoothing=-0.5), F.cross_entropy(x0, t, label_smoothing=True)]"),
    ("scatter_reduce", "f32[3,4] f32[2,4] i64[3,4] i64[2,4]",
     "idx = T.tensor([[0, 1, 0, 2], [2, 0, 0, 1]], device=D)\n"
     "out = [x0.scatter(0, idx, x1, reduce='add'), x0.scatter(0, idx, x1, reduce='multiply'), "
     "x0.scatter(1, idx[:, :3], 1.5, reduce='add'), x2.scatter(0, idx, 3, reduce='multiply'), "
     "x0.scatter_reduce(0, idx, x1, 'sum'), x0.scatter_reduce(0, idx, x1, 'prod', include_self=False), "
     "x0.scatter_reduce(0, idx, x1, 'mean'), x0.scatter_reduce(0, idx, x1, 'mean', include_self=False), "
     "x0.scatter_reduce(0, idx, x1, 'amax', include_self=False), T.scatter_reduce(x0, 0, idx, x1, 'amin'), "
     "x2.scatter_reduce(0, idx, x3, 'mean'), x2.scatter_reduce(0, idx, x3, 'mean', include_self=False), "
     "x2.scatter_reduce(1, idx, x3, 'amax', include_self=False), x2.scatter_reduce(0, idx, x3, 'amin', include_self=False), "
     "x0.clone().scatter_reduce_(0, idx, x1, 'sum', include_self=False), x0.clone().scatter_(0, idx, x1, reduce='add')]"),
    ("index_int32", "f32[3,4] f32[2,4]",
     "idx = T.tensor([[0, 1, 0, 2], [2, 0, 0, 1]], device=D).int()\n"
     "out = [x0.scatter(0, idx, x1), x0.scatter(1, idx[:, :3], 2.5), x0.scatter_add(0, idx, x1), x0.gather(0, idx), "
     "x0.gather(1, idx[:, :2]) * 2, x0.scatter_reduce(0, idx, x1, 'amax'), x0.scatter(0, idx, x1, reduce='multiply')]"),
    # the in-place draws LTC runs eagerly (drawn at the call; no lazy draw before them here, so eager torch draws
    # in the same order), and torch.bernoulli of a float64 probability tensor (53-bit draws)
    ("rng_exponential", "f32[3,40]",
     "T.manual_seed(13)\ny = x0 * 1\ny.exponential_()\nz = T.zeros(7, device=D, dtype=T.float64)\nz.exponential_(2.5)\n"
     "h = T.zeros(20, device=D, dtype=T.float16)\nh.exponential_(0.5)\nb = T.zeros(9, device=D, dtype=T.bfloat16)\n"
     "b.exponential_()\nv = y[1]\nv.exponential_(3)\nw = T.ones(4, device=D).exponential_(float('inf'))\n"
     "out = [y, z, h, b.float(), v * 2, w]"),
    ("rng_bernoulli_tensor", "f32[4,8] f64[8]",
     "T.manual_seed(14)\ny = T.zeros(4, 8, device=D)\ny.bernoulli_(x0.sigmoid())\n"
     "w = T.zeros(2, 8, device=D, dtype=T.int64)\nw.bernoulli_(x1.sigmoid())\n"
     "hb = T.zeros(8, device=D, dtype=T.bool)\nhb.bernoulli_(x0[0].sigmoid().half())\n"
     "u = x0 * 1\nr = u[1:3]\nr.bernoulli_(T.full((8,), 0.5, device=D))\n"
     "out = [y, w, hb, u, r + 0, T.bernoulli(x1.sigmoid()), T.bernoulli(x1[:4].sigmoid().float())]"),
    # generator=: the node hashes the generator's state (TensorHash(get_state())) and draws from it when the graph
    # runs; each generator's draws in post order (= program order here), so eager torch draws the same numbers
    ("rng_generator", "f32[3,8]",
     "g = T.Generator().manual_seed(21)\nh = T.Generator().manual_seed(22)\nk = T.Generator().manual_seed(23)\n"
     "a = T.rand(2, 3, device=D, generator=g)\nb = T.randn(20, device=D, generator=h)\n"
     "c = T.randint(0, 9, (5,), device=D, generator=g)\ny = x0 * 1\ny.uniform_(-2, 2, generator=h)\n"
     "z = T.bernoulli(x0.sigmoid(), generator=g)\nw = x0[0].bernoulli(0.3, generator=h)\n"
     "q = T.zeros(2, 8, device=D)\n"
     "q.bernoulli_(x0[1].sigmoid(), generator=k)\nn = T.zeros(3, device=D, dtype=T.float64)\n"
     "n.normal_(1, 2, generator=k)\nm = T.zeros(4, device=D, dtype=T.int64)\nm.random_(3, 7, generator=k)\n"
     "T.manual_seed(3)\nd = T.rand(4, device=D)\nout = [a, b, c, y, z, w, q, n, m, d]"),
    # batch_norm in training: the batch's statistics, the running ones updated when the graph runs (LTC's kernel
    # writes them in place; they hold IR here, which torch 2.13 LTC updates too), none given: UNKNOWN_SCALAR[0]
    ("bn_train", "f32[4,3,5] f32[3] f32[3] f64[6,2]",
     "F = T.nn.functional\nrm = T.zeros(3, device=D)\nrv = T.ones(3, device=D)\n"
     "y = F.batch_norm(x0, rm, rv, x1, x2, training=True, momentum=0.2, eps=1e-3)\n"
     "z = F.batch_norm(x0 * 2, None, None, training=True)\nmark_step()\n"
     "y2 = F.batch_norm(x0[:, :, :4].reshape(4, 3, 2, 2) + 1, rm, rv, training=True)\n"
     "rd = T.zeros(2, device=D, dtype=T.float64)\nvd = T.ones(2, device=D, dtype=T.float64)\n"
     "yd = F.batch_norm(x3, rd, vd, training=True, momentum=0.5)\nmark_step()\n"
     "out = [y, z, y2, rm + 0, rv * 1, yd, rd + 0, vd + 0]"),
    # empty inputs: batch_norm is torch's shortcut (the input's IR, * weight[0], + bias[0]), the losses trace,
    # group_norm is one as_strided_copy of its input
    ("norms_empty", "f32[3] f32[3]",
     "F = T.nn.functional\nx = T.zeros(0, 3, 2, device=D)\nrm = T.zeros(3, device=D)\nrv = T.ones(3, device=D)\n"
     "t = T.zeros(0, device=D, dtype=T.int64)\n"
     "out = [F.batch_norm(x, rm, rv, x0, x1), F.batch_norm(x, rm, rv, training=True), "
     "F.batch_norm(x[:, :, 0], None, None, training=True), F.nll_loss(x[:, :, 0], t), "
     "F.nll_loss(x[:, :, 0], t, reduction='sum'), F.nll_loss(x[:, :, 0], t, reduction='none'), "
     "F.cross_entropy(x[:, :, 0], t), F.cross_entropy(x, T.zeros(0, 2, device=D, dtype=T.int64)), rm + 0, rv * 1, "
     "F.group_norm(T.zeros(0, 4, 2, device=D), 2), F.group_norm(x.reshape(0, 6) * 2, 3, T.ones(6, device=D)), "
     "F.group_norm(T.zeros(2, 4, 0, device=D), 2, T.ones(4, device=D), T.zeros(4, device=D))]"),
]
PROGRAMS += PROGRAMS_NN
# Programs whose values are LTC's rather than eager torch's: eager torch runs a fused kernel (native_group_norm)
# where LTC runs torch's decomposition, which rounds every step in bfloat16.
VALUES_FROM_LTC = {"nn_group_norm_bf16"}

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
COUNTER_SCENARIOS += [
    ("inplace_views", """
a = tensor(np.ones((2, 3), np.float32)); b = tensor(np.full((3,), 2.0, np.float32))
v = a.t(); v.mul_(2)
w = a.view(6); w.add_(1)
record([a, v, w])
a.add_(b)
record([a, v])
mark_step()
a.fill_(3); a.zero_(); c = a == 0
e = a * 2; a.copy_(e)
record([a, c, v])
"""),
    ("sgd_steps", """
x = tensor(np.ones((4, 3), np.float32)); p = tensor(np.ones((3, 2), np.float32))
for i in range(3):
    p -= 0.1 * (x @ p).sum()
    mark_step()
to_numpy(p)
"""),
]
# Selection (issue 19): what LTC syncs, compiles and copies for the eager index / index_put / masked_select /
# nonzero / scatter / split fallbacks and the two-output nodes.  split / chunk / unbind results are not read: torch
# 2.13 LTC crashes (segfault) reading them as IR, and counts nothing for their .cpu().
COUNTER_SCENARIOS_SELECTION = [
    ("sel_index_fallbacks", """
x = tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4)); i = tensor(np.array([1, 0]))
a = x[x > 10]; b = x[:, i]; c = (x * 2)[1:, i]; d = x[None, i]; e = x[0, i]; f = x[[1, 0]]
record([a, b, c, d, e, f])
g = x.masked_select(x > 3); h = (x > 10).nonzero(); k = x[True]
record([g, h, k])
mark_step()
to_numpy(b)
"""),
    ("sel_setitem_fallbacks", """
x = tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4)); i = tensor(np.array([1, 0]))
v = tensor(np.ones((2, 2, 4), np.float32))
x[x > 10] = 0
x[i] = 5.0
x[:, i] = v
record([x])
y = x * 2
y[y > 3] = y[y > 3] * 2
y.index_put_((i,), tensor(np.array(3.0, np.float32)), accumulate=True)
z = y.index_put((i,), tensor(np.array(1.5, np.float32)))
w = x[0]
w[i] = 1.0
record([x, w, y, z])
mark_step()
"""),
    ("sel_scatter_onehot", """
x = tensor(np.arange(12, dtype=np.float32).reshape(3, 4)); i = tensor(np.array([[0, 1], [1, 2], [3, 0]]))
s = tensor(np.ones((3, 2), np.float32))
a = x.scatter(1, i, s); b = x.scatter(1, i, 5.0); c = x.scatter_add(1, i, s)
d = x.index_add(0, tensor(np.array([0, 2])), tensor(np.ones((2, 4), np.float32)), alpha=2)
ids = tensor(np.array([1, 0, 3]))
e = T.nn.functional.one_hot(ids, 5); f = T.nn.functional.one_hot(ids)
record([a, b, c, d, e, f])
mark_step()
"""),
    ("sel_multi_output", """
x = tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
v, i = x.topk(2); s = x.sort(1, descending=True); m = x.max(1); n = x.min(1)
st = x.sort(stable=True); a = x.argsort(); a2 = x.argsort(stable=True)
y = v * 2 + i + m.values.sum() + s[1].sum()
record([y, m.indices, a])
graph_hash([v, i, y])
sync_multi([v])
mark_step()
to_numpy(i); to_numpy(n.values)
"""),
    ("sel_split_fallbacks", """
x = tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
p = x.split(2, -1); q = (x * 2).chunk(2, 1); r = x.unbind(1); t = x.split([1, 2], 1)
mark_step()
"""),
    ("sel_force_fallback_topk", """
x = tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
mark_step()
force("aten::topk")
v, i = x.topk(2)
s = x.sort(1)
m = x.max(1)
force("")
record([v * 2, i, s.values, m.indices])
mark_step()
"""),
]
COUNTER_SCENARIOS += COUNTER_SCENARIOS_SELECTION

# Counters of the norms / losses / RNG (issue 19, h-lazynn): eager parts, syncs, and optimizer steps.
COUNTER_SCENARIOS_NN = [
    ("nn_decomposed_fallbacks", """
F = T.nn.functional
x = tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4))
y = x.logsumexp(-1)
z = F.group_norm(x * 2, 3)
t = tensor(np.array([0, 1], np.int64))
l = F.cross_entropy(x[:, :, 0], t, label_smoothing=0.1)
n = F.layer_norm(x, (4,)) + F.nll_loss(x[:, :, 1].log_softmax(-1), t)
record([y, z, l, n])
mark_step()
to_numpy(y); to_numpy(n)
y2 = x.logsumexp((0, 2)); mark_step()
"""),
    ("rng_steps", """
F = T.nn.functional
T.manual_seed(0)
x = tensor(np.ones((4, 8), np.float32))
for i in range(3):
    r = T.rand(4, 8, device="lazy") + T.randn(4, 8, device="lazy")
    d = F.dropout(x * r, 0.5)
    record([d])
    mark_step()
to_numpy(d)
"""),
    ("sgd_adam_steps", """
x = tensor(np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4)); y = tensor(np.ones((8, 2), np.float32))
w = tensor(np.full((4, 2), 0.5, np.float32)); buf = T.zeros(4, 2, device="lazy")
for step in range(3):
    g = x.t() @ (x @ w - y) * 0.125
    buf.mul_(0.9).add_(g)
    w.sub_(buf * 0.1)
    record([w, buf])
    mark_step()
p = tensor(np.full((4, 2), 0.5, np.float32)); m = T.zeros_like(p); v = T.zeros_like(p)
for step in range(1, 4):
    g = x.t() @ (x @ p - y) * 0.125
    m.mul_(0.9).add_(g, alpha=0.1)
    v.mul_(0.999).add_(g * g, alpha=0.001)
    p.sub_(0.01 * (m / (1 - 0.9 ** step)) / ((v / (1 - 0.999 ** step)).sqrt() + 1e-8))
    record([p, m, v])
    mark_step()
to_numpy(p)
"""),
    ("nn_reuse_ir", """
F = T.nn.functional
reuse(True)
T.manual_seed(1)
x = tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)); t = tensor(np.array([0, 3, 1], np.int64))
w = tensor(np.ones(4, np.float32)); rm = tensor(np.zeros(3, np.float32)); rv = tensor(np.ones(3, np.float32))
mark_step()
for i in range(3):
    r = T.rand(2, 3, 4, device="lazy") * x + T.randn(4, device="lazy")
    d = F.dropout(r, 0.5)
    l = F.layer_norm(d, (4,), w) + F.rms_norm(x, (4,), w)
    b = F.batch_norm(l, rm, rv)
    e = F.cross_entropy(b[0], t) + F.nll_loss(b[1].log_softmax(-1), t, reduction='sum')
    record([b, e])
    mark_step()
reuse(False)
"""),
    ("adam_torch_style_steps", """
x = tensor(np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4)); y = tensor(np.ones((8, 2), np.float32))
p = tensor(np.full((4, 2), 0.5, np.float32)); m = T.zeros_like(p); v = T.zeros_like(p)
for step in range(1, 4):
    g = x.t() @ (x @ p - y) * 0.125
    m.lerp_(g, 0.1)
    v.mul_(0.999).addcmul_(g, g, value=0.001)
    denom = (v.sqrt() / (1 - 0.999 ** step) ** 0.5).add_(1e-8)
    p.addcdiv_(m, denom, value=-0.01 / (1 - 0.9 ** step))
    record([p, m, v])
    mark_step()
to_numpy(p)
"""),
]
COUNTER_SCENARIOS_NN += [
    ("rng_eager_inplace", """
T.manual_seed(2)
x = tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6))
y = x * 2
y.exponential_(1.5)
v = y[1:3]
v.bernoulli_(x[0].sigmoid())
record([y, v])
mark_step()
z = T.rand(4, 6, device="lazy") + y
z.exponential_()
record([z])
mark_step()
to_numpy(z)
"""),
    # IR reuse across steps of ops whose operands are fresh data and numbers: LTC makes the numbers' device data
    # first and reads the operands right to left; compares / masked_fill / std / norm have their .Scalar /
    # .Tensor / overload classes; a TensorList and slice bounds (constants) are reused; clamp(max=) alone never
    ("reuse_ir_op_order", """
F = T.nn.functional
reuse(True)
for i in range(3):
    x = tensor(np.full((3, 3), 1.5 + i, np.float32)); w = tensor(np.full((3, 3), 0.5, np.float32))
    b = tensor(np.full((3,), 0.25, np.float32)); m = tensor(np.eye(3, dtype=bool))
    ix = tensor(np.array([[0, 2, 1]] * 3, np.int64)); i1 = tensor(np.array([0, 2], np.int64))
    ys = [x + w, x.sub(w, alpha=2), 2 - x, x / w, x.clamp(0, 1), x.clamp(min=0.5), x.clamp(max=0.5),
          x.addcmul(w, x, value=0.5), x.masked_fill(m, 0.5), x.gather(1, ix), x.index_select(0, i1), x > 0, x > w,
          x == w, T.cat([x, w]), T.stack([x, w]), x.std(1), x.std(), x.norm(), x[:2] * 1, i1.repeat(2)[:3] + 0,
          F.layer_norm(x, (3,), b, b), T.where(m, x, 0.5), F.cross_entropy(x, ix[0])]
    record(ys[::5])
    mark_step()
reuse(False)
"""),
    # the order operands' device data is made in, seen by the IR trie: odd steps trace the ops, even steps leave a
    # trie path starting at other tensors' device data, which an op making its operands in another order than
    # LTC's (numbers first, then the tensors right to left) would fork from
    ("reuse_ir_operand_order", """
F = T.nn.functional
reuse(True)
for i in range(4):
    x = tensor(np.full((3, 3), 1.5 + i, np.float32)); ix = tensor(np.array([[0, 2, 1]] * 3, np.int64))
    m = tensor(np.eye(3, dtype=bool)); i1 = tensor(np.array([0, 2], np.int64)); w = tensor(np.ones((2, 3), np.float32))
    if i % 2 == 0:
        ys = [ix.sum(), m.any(), i1.sum(), w.sum()]
    else:
        ys = [x.gather(1, ix), x.masked_fill(m, 0.5), x.index_select(0, i1), w.addcmul(w, x[:2]), x.clamp(-1.0, 2.0),
              F.embedding(i1, x), x * 2, 3 - x, x > 1, x[:2] / w, w @ x, x.clamp(max=2.0), T.where(m, x, 0.5)]
    record(ys[::3])
    mark_step()
reuse(False)
"""),
    # a graph given generator= hashes the generator's state: equal states share the cached program (torch 2.13's
    # then draws from the generator it was compiled with; accel's from the one given, see the README)
    ("rng_generator_cache", """
for seed in (2, 9, 9, 9):
    g = T.Generator().manual_seed(seed)
    t = T.rand(4, device="lazy", generator=g) * 2
    record([t])
    mark_step()
g = T.Generator().manual_seed(9)
u = tensor(np.zeros(3, np.float32))
u.normal_(generator=g)
u.uniform_(generator=g)
record([u])
mark_step()
"""),
]
COUNTER_SCENARIOS += COUNTER_SCENARIOS_NN
COUNTERS_SKIPPED = ("CreateLtcTensor", "DestroyLtcTensor")

_DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "u8": "uint8", "i32": "int32", "i64": "int64",
           "b": "bool"}
_SPEC = re.compile(r"^(p?)(f16|f32|f64|u8|i32|i64|b)\[([0-9,]*)\]$")


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
        elif dt == "u8":
            a = rng.integers(0, 256, shape).astype(np.uint8)
        else:
            q = rng.integers(1, 9, shape) if positive else rng.integers(-8, 9, shape)
            a = (q / 4.0).astype(_DTYPES[dt])
        out.append(np.asarray(a))
    return out


def run_program(T, code, inputs, mark_step=None, device="lazy"):
    """Run a program's code; ``mark_step`` is what the code's mark_step() calls (eager runs: nothing); the code
    passes ``device=D`` to factories ("lazy", or "cpu" for the eager run)."""
    env = {"T": T, "mark_step": mark_step or (lambda: None), "D": device}
    for i, x in enumerate(inputs):
        env[f"x{i}"] = x
    exec(code, env)
    return env["out"]


def run_scenario(T, code, tensor, mark_step, graph_hash, sync_multi, to_numpy, tensors_text, reuse, force=None):
    """Run a counter scenario; returns the IR texts it took with ``record(tensors)``.  ``force(op)``: the
    force_fallback setting (torch._C._lazy._set_force_fallback; "" clears it)."""
    texts = []
    env = {"T": T, "np": np, "tensor": tensor, "mark_step": mark_step, "graph_hash": graph_hash,
           "sync_multi": sync_multi, "to_numpy": to_numpy, "record": lambda ts: texts.append(tensors_text(ts)),
           "reuse": reuse, "force": force}
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
        lazy = run_program(torch, code, [torch.from_numpy(a.copy()).to("lazy") for a in arrays],
                           torch._lazy.mark_step)
        text = strip.sub("", torch._C._lazy._get_tensors_text(lazy))
        ghash = torch._C._lazy._get_graph_hash(lazy).hex()
        dot = None
        if index % DOT_EVERY == 0:
            try:
                dot = torch._C._lazy._get_tensors_dot(lazy)
            except IndexError:        # torch's ToDot reads shape(0) of tensor_list nodes, which have none
                pass
        torch._lazy.mark_step()
        values_from = None
        try:
            if name in VALUES_FROM_LTC:
                raise RuntimeError(name)
            eager = [t.numpy() for t in run_program(torch, code, [torch.from_numpy(a.copy()) for a in arrays],
                                                    device="cpu")]
        except RuntimeError:          # eager torch refuses what LTC runs (or differs by design): LTC's values
            eager = [t.cpu().numpy() for t in lazy]
            values_from = "ltc"
        entry = {"name": name, "inputs": spec, "code": code, "text": text, "hash": ghash,
                 "values": [_encode(t) for t in eager]}
        if values_from:
            entry["values_from"] = values_from
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
                             torch._C._lazy._set_reuse_ir, torch._C._lazy._set_force_fallback)
        counters.append({"name": name, "code": code, "texts": texts,
                         "counters": {n: M.counter_value(n) for n in M.counter_names() if n not in COUNTERS_SKIPPED}})
    # a program whose name, inputs, code, IR text and hash equal the committed file's keeps its committed entry:
    # eager values may differ in the last place between CPUs (vectorised log / exp), and a regeneration that
    # adds programs must not rewrite the others
    try:
        committed = {p["name"]: p for p in json.loads(pathlib.Path(path).read_text())["programs"]}
    except (OSError, ValueError, KeyError):
        committed = {}
    for i, p in enumerate(programs):
        old = committed.get(p["name"])
        if old is not None and all(old.get(k) == p.get(k) for k in ("inputs", "code", "text", "hash", "dot")):
            programs[i] = old
    doc = {"torch_version": torch.__version__, "generator": "tools/gen_lazy_golden.py", "programs": programs,
           "counter_scenarios": counters}
    pathlib.Path(path).write_text(json.dumps(doc, indent=0, separators=(",", ":")) + "\n")
    print(f"wrote {len(programs)} programs to {path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "data"
                                                     / "lazy_golden.json"))
