"""Generate tests/data/lazy_trust4.json: what torch 2.13 does for the lazy-tensor cases of issue 31 (items 8-12:
negative / out-of-range indices of gather, index_select and embedding; randint / random_ bounds that do not fit
the dtype; nonzero(as_tuple=True) of 0-dim tensors; one_hot / nll_loss / cross_entropy messages).

Each case runs twice, in interpreters of their own: eagerly on the CPU and on LTC's TorchScript backend (device
"lazy"; a failed TorchScript run leaves its exception to the device's next run, which the runner spends on a
throw-away run after each case).  The file keeps both and the expectation the tests hold accel.lazy to: LTC's outcome, where an error
raised inside the TorchScript interpreter ("The following operation failed in the TorchScript interpreter ...
RuntimeError: <message>") is unwrapped to <message> with eager torch's exception type when eager torch raised
that message (accel raises the kernel's own error, as the eager kernel does), RuntimeError otherwise.  Needs torch
2.13.0 (CPU); the tests that read the file do not.

    python tools/gen_lazy_trust4.py [out.json]
"""
import json
import pathlib
import re
import subprocess
import sys
import warnings

import numpy as np

# (group, name, code).  The code sees T (torch, or accel.lazy in the tests), F (its nn.functional), np, dev (the
# device: "cpu" or "lazy") and t(array) (the array as a tensor on dev), runs after T.manual_seed(0), and assigns
# the result (a tensor, or a tuple / list of tensors) to ``out``.
_X = "np.arange(12, dtype=np.float32).reshape(3, 4)"
_X3 = "np.arange(24, dtype=np.float32).reshape(2, 3, 4)"
CASES = []
for _i in ("[-1]", "[3]", "[-4]", "[2]", "[0, -1]", "[5, 0]", "[-3, 9]"):
    CASES += [
        ("index", f"gather0 {_i}", f"out = t({_X}).gather(0, t(np.array([{_i}])))"),
        ("index", f"gather1 {_i}", f"out = t({_X}).gather(1, t(np.array([{_i}])))"),
        ("index", f"gather-1 {_i}", f"out = T.gather(t({_X}), -1, t(np.array([{_i}], np.int32)))"),
        ("index", f"index_select0 {_i}", f"out = t({_X}).index_select(0, t(np.array({_i})))"),
        ("index", f"index_select1 {_i}", f"out = t({_X}).index_select(1, t(np.array({_i})))"),
        ("index", f"index_select-1 {_i}", f"out = T.index_select(t({_X}), -1, t(np.array({_i}, np.int32)))"),
        ("index", f"index_select_1d {_i}", f"out = t(np.arange(4.0)).index_select(0, t(np.array({_i})))"),
        ("index", f"embedding {_i}", f"out = F.embedding(t(np.array({_i})), t({_X}))"),
        ("index", f"embedding32 {_i}", f"out = F.embedding(t(np.array({_i}, np.int32)), t({_X}))"),
    ]
CASES += [
    ("index", "gather_2d_first_bad", f"out = t({_X}).gather(0, t(np.array([[0, 1, 2, 0], [1, -1, 7, 0]])))"),
    ("index", "gather_2d_first_bad_dim1", f"out = t({_X}).gather(1, t(np.array([[0, 1], [9, -5], [1, 1]])))"),
    ("index", "gather_3d_dim0", f"out = t({_X3}).gather(0, t(np.array([[[0, 1], [1, 2]], [[0, -1], [0, 0]]])))"),
    ("index", "gather_3d_dim1", f"out = t({_X3}).gather(1, t(np.array([[[0, 1], [1, -3]], [[2, 3], [0, 0]]])))"),
    ("index", "gather_3d_order_a", f"out = t({_X3}).gather(0, t(np.array([[[0, 1], [1, 5], [0, 0]], [[-1, 0], [0, 0], [1, 1]]])))"),
    ("index", "gather_3d_order_b", f"out = t({_X3}).gather(0, t(np.array([[[0, 1, 0, 0], [1, 5, 0, 0], [0, 0, 0, 0]], "
     "[[-1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]]])))"),
    ("index", "gather_3d_order_c", f"out = t({_X3}).gather(1, t(np.array([[[0, 1, 0, 0], [1, 5, 0, 0]], [[-1, 0, 0, 0], [0, 0, 0, 0]]])))"),
    ("index", "gather_3d_order_d", f"out = t({_X3}).gather(1, t(np.array([[[0, 7, 0, 0], [1, 1, 0, 0]], [[-1, 0, 0, 0], [0, 0, 0, 0]]])))"),
    ("index", "gather_3d_order_e", f"out = t({_X3}).gather(0, t(np.array([[[0, 1, 0, 0]], [[-1, 0, 0, 9]]])))"),
    ("index", "gather_3d_order_f", f"out = t({_X3}).gather(0, t(np.array([[[0], [7], [0]], [[-1], [0], [0]]])))"),
    ("index", "gather_4d_order", "out = t(np.zeros((2, 2, 2, 2), np.float32)).gather(1, t(np.array([[[[0, 0], [0, 0]], "
     "[[0, 3], [0, 0]]], [[[-1, 0], [0, 0]], [[0, 0], [0, 0]]]])))"),
    ("index", "gather_2d_order_dim0", f"out = t({_X}).gather(0, t(np.array([[0, 0, 8, 0], [0, -1, 0, 0]])))"),
    ("index", "gather_2d_order_dim0_narrow", f"out = t({_X}).gather(0, t(np.array([[0, 8], [-1, 0]])))"),
    ("index", "gather_0d_self", "out = t(np.array(5.0, np.float32)).gather(0, t(np.array([0, 0])))"),
    ("index", "gather_0d_self_bad", "out = t(np.array(5.0, np.float32)).gather(0, t(np.array([0, -1])))"),
    ("index", "gather_0d_self_bad1", "out = t(np.array(5.0, np.float32)).gather(0, t(np.array([1])))"),
    ("index", "gather_empty_index", f"out = t({_X}).gather(0, t(np.zeros((0, 4), np.int64)))"),
    ("index", "gather_int", "out = t(np.arange(6).reshape(2, 3)).gather(1, t(np.array([[2, -1], [0, 1]])))"),
    ("index", "gather_bool", "out = t(np.array([[True, False]])).gather(1, t(np.array([[1, 2]])))"),
    ("index", "index_select_3d_dim1", f"out = t({_X3}).index_select(1, t(np.array([0, -1])))"),
    ("index", "index_select_3d_dim2", f"out = t({_X3}).index_select(2, t(np.array([3, 4])))"),
    ("index", "index_select_3d_dim-2", f"out = t({_X3}).index_select(-2, t(np.array([2, 3])))"),
    ("index", "index_select_3d_dim0", f"out = t({_X3}).index_select(0, t(np.array([1, 2])))"),
    ("index", "index_select_1d_0d_index", "out = t(np.arange(4.0)).index_select(0, t(np.array(2)))"),
    ("index", "index_select_1d_0d_index_bad", "out = t(np.arange(4.0)).index_select(0, t(np.array(-1)))"),
    ("index", "index_select_2d_0d_index", f"out = t({_X}).index_select(1, t(np.array(2)))"),
    ("index", "index_select_0d_index", f"out = t({_X}).index_select(0, t(np.array(-1)))"),
    ("index", "index_select_empty_self_dim", "out = t(np.zeros((3, 0), np.float32)).index_select(0, t(np.array([5])))"),
    ("index", "index_select_empty_self_dim_ok", "out = t(np.zeros((3, 0), np.float32)).index_select(0, t(np.array([2])))"),
    ("index", "index_select_empty_self_axis", "out = t(np.zeros((0, 3), np.float32)).index_select(0, t(np.array([0])))"),
    ("index", "index_select_empty_1d", "out = t(np.zeros(0, np.float32)).index_select(0, t(np.array([0])))"),
    ("index", "index_select_empty_index", f"out = t({_X}).index_select(1, t(np.zeros(0, np.int64)))"),
    ("index", "index_select_int", "out = t(np.arange(6).reshape(2, 3)).index_select(0, t(np.array([1, -2])))"),
    ("index", "embedding_2d", f"out = F.embedding(t(np.array([[0, 1], [2, -1]])), t({_X}))"),
    ("index", "embedding_2d_ok", f"out = F.embedding(t(np.array([[0, 1], [2, 2]])), t({_X}))"),
    ("index", "embedding_padding", f"out = F.embedding(t(np.array([0, -1])), t({_X}), padding_idx=-1)"),
    ("index", "embedding_empty_weight", "out = F.embedding(t(np.array([0, 4])), t(np.zeros((3, 0), np.float32)))"),
    ("index", "embedding_empty_index", f"out = F.embedding(t(np.zeros((2, 0), np.int64)), t({_X}))"),
    ("index", "getitem_neg", f"out = t({_X})[t(np.array([-1, 0]))]"),
    # red team (issue 31): torch's legacy type names in embedding's index check, padding_idx checked first
    ("index", "embedding int16", f"out = F.embedding(t(np.array([0], np.int16)), t({_X}))"),
    ("index", "embedding uint8", f"out = F.embedding(t(np.array([0], np.uint8)), t({_X}))"),
    ("index", "embedding float index", f"out = F.embedding(t(np.array([0.0])), t({_X}))"),
    ("index", "embedding bool index", f"out = F.embedding(t(np.array([True])), t({_X}))"),
    ("index", "embedding int16 bad padding", f"out = F.embedding(t(np.array([0], np.int16)), t({_X}), padding_idx=-4)"),
    ("index", "embedding 0d weight padding", "out = F.embedding(t(np.array([0])), t(np.array(1.0, np.float32)), padding_idx=-1)"),
    ("index", "embedding bfloat16 index", f"out = F.embedding(t(np.array([0])).to(T.bfloat16), t({_X}))"),
]
_RANDINT = [(-5, 3, "uint8"), (0, 300, "int8"), (0, 5, "bool"), (0, 2, "bool"), (0, 1, "bool"), (1, 2, "bool"),
            (-1, 1, "bool"), (0, 256, "uint8"), (0, 257, "uint8"), (-1, 1, "uint8"), (-128, 128, "int8"),
            (-129, 0, "int8"), (0, 129, "int8"), (0, 2 ** 15, "int16"), (0, 2 ** 15 + 1, "int16"),
            (-2 ** 15 - 1, 0, "int16"), (0, 2 ** 31, "int32"), (0, 2 ** 31 + 1, "int32"), (-2 ** 31 - 1, 0, "int32"),
            (-2 ** 31, -2 ** 31 + 3, "int32"), (0, 2 ** 63 - 1, "int64"), (-2 ** 63, -2 ** 63 + 5, "int64"),
            (0, 3, "float16"), (0, 2049, "float16"), (-2049, 0, "float16"), (0, 65505, "float16"),
            (0, 65506, "float16"), (-65505, 0, "float16"), (-65504, 0, "float16"), (0, 70000, "float16"),
            (0, 2 ** 24, "float32"), (0, 2 ** 24 + 1, "float32"), (0, 2 ** 24 + 2, "float32"),
            (0, 2 ** 53 + 1, "float64"), (0, 2052, "float16"), (-4103, 0, "float16"), (0, 2 ** 24 + 4, "float32"),
            (-2 ** 24 - 5, 0, "float32"), (0, 2 ** 54 + 4, "float64"), (0, 260, "bfloat16"), (-2 ** 70 // 2 ** 8, 0, "float32"), (0, 257, "bfloat16"), (0, 2 ** 40, "bfloat16"), (3, 3, "uint8"),
            (5, 3, "uint8"), (300, 301, "uint8")]
for _lo, _hi, _dt in _RANDINT:
    CASES.append(("randint", f"randint {_lo} {_hi} {_dt}",
                  f"out = T.randint({_lo}, {_hi}, (3,), dtype=T.{_dt}, device=dev)"))
CASES += [
    ("randint", "randint high only", "out = T.randint(300, (3,), dtype=T.int8, device=dev)"),
    ("randint", "randint high only uint8", "out = T.randint(256, (2,), dtype=T.uint8, device=dev)"),
    ("randint", "randint_like", "out = T.randint_like(t(np.zeros(3, np.uint8)), -5, 3)"),
    ("randint", "randint_like high", "out = T.randint_like(t(np.zeros(3, np.int8)), 300)"),
    ("randint", "random_ from to", "x = t(np.zeros(3, np.uint8)); x.random_(-5, 3); out = x"),
    ("randint", "random_ to", "x = t(np.zeros(3, np.uint8)); x.random_(300); out = x"),
    ("randint", "random_ bool", "x = t(np.zeros(3, bool)); x.random_(0, 5); out = x"),
    ("randint", "random_ bool ok", "x = t(np.zeros(3, bool)); x.random_(0, 2); out = x"),
    ("randint", "random_ half", "x = t(np.zeros(3, np.float16)); x.random_(0, 70000); out = x"),
    ("randint", "random_ unchanged", "x = t(np.ones(3, np.int8)); x.random_(0, 300); out = x"),
    # red team (issue 31): bounds beyond int64 (torch's argument parser), random_() without bounds
    ("randint", "randint high 2^63", "out = T.randint(-1, 2 ** 63, (3,), device=dev)"),
    ("randint", "randint high only 2^63", "out = T.randint(2 ** 63, (3,), device=dev)"),
    ("randint", "randint low below int64", "out = T.randint(-2 ** 63 - 1, 0, (3,), device=dev)"),
    ("randint", "randint_like high 2^64", "out = T.randint_like(t(np.zeros(3, np.int64)), 2 ** 64)"),
    ("randint", "random_ to 2^63", "x = t(np.zeros(3, np.int64)); x.random_(2 ** 63 - 1, 2 ** 63); out = x"),
    ("randint", "random_ from below int64", "x = t(np.zeros(3, np.int64)); x.random_(-2 ** 63 - 1, 5); out = x"),
    ("randint", "random_ one bound 2^64", "x = t(np.zeros(3, np.int64)); x.random_(2 ** 64); out = x"),
]
for _dt in ("uint8", "int8", "int16", "int32", "int64", "bool", "float16", "bfloat16", "float32", "float64"):
    CASES.append(("randint", f"random_ full {_dt}", f"x = T.zeros(5, dtype=T.{_dt}, device=dev); x.random_(); out = x"))
CASES.append(("randint", "random_ full 2d view", "x = T.zeros(2, 3, dtype=T.int32, device=dev); x[1].random_(); out = x"))
for _v in ("np.array(5.0, np.float32)", "np.array(0.0, np.float32)", "np.array(-3)", "np.array(0)", "np.array(True)",
           "np.array(False)", "np.array(np.nan, np.float32)", "np.array([0.0, 2.0], np.float32)",
           "np.array([[0, 1], [2, 0]])", "np.zeros(0, np.float32)", "np.zeros((2, 0), np.float32)"):
    CASES += [
        ("nonzero", f"nonzero tuple {_v}", f"out = T.nonzero(t({_v}), as_tuple=True)"),
        ("nonzero", f"nonzero {_v}", f"out = T.nonzero(t({_v}))"),
        ("nonzero", f"nonzero method tuple {_v}", f"out = t({_v}).nonzero(as_tuple=True)"),
        ("nonzero", f"where one argument {_v}", f"out = T.where(t({_v}))"),
    ]
_Z = "t(np.zeros(({}), np.float32))"
CASES += [
    ("losses", "one_hot big", "out = F.one_hot(t(np.array([0, 5])), 3)"),
    ("losses", "one_hot negative", "out = F.one_hot(t(np.array([0, -1])), 3)"),
    ("losses", "one_hot negative inferred", "out = F.one_hot(t(np.array([0, -1])))"),
    ("losses", "one_hot zero classes", "out = F.one_hot(t(np.array([0, 2])), 0)"),
    ("losses", "one_hot zero classes empty", "out = F.one_hot(t(np.zeros(0, np.int64)), 0)"),
    ("losses", "one_hot -2 classes", "out = F.one_hot(t(np.array([0, 1])), -2)"),
    ("losses", "one_hot 2d big", "out = F.one_hot(t(np.array([[0, 4], [1, 2]])), 4)"),
    ("losses", "one_hot 0d", "out = F.one_hot(t(np.array(2)), 2)"),
    ("losses", "one_hot 0d negative", "out = F.one_hot(t(np.array(-2)), 2)"),
    ("losses", "one_hot ok", "out = F.one_hot(t(np.array([0, 2])), 4)"),
    ("losses", "one_hot int32", "out = F.one_hot(t(np.array([0, 1], np.int32)))"),
    ("losses", "one_hot negative inferred -2", "out = F.one_hot(t(np.array([0, -2])))"),
    ("losses", "one_hot negative inferred -5 2d", "out = F.one_hot(t(np.array([[-5], [-3]])))"),
    ("losses", "nll 0d input", "out = F.nll_loss(t(np.array(1.0, np.float32)), t(np.array(0)))"),
    ("losses", "ce 0d input", "out = F.cross_entropy(t(np.array(1.0, np.float32)), t(np.array(0)))"),
    ("losses", "nll 0d input bad reduction", "out = F.nll_loss(t(np.array(1.0, np.float32)), t(np.array(0)), reduction='x')"),
    ("losses", "ce target oob", f"out = F.cross_entropy({_Z.format('2, 3')}, t(np.array([0, 3])))"),
    ("losses", "ce target negative", f"out = F.cross_entropy({_Z.format('2, 3')}, t(np.array([0, -1])))"),
    ("losses", "ce ls target oob", f"out = F.cross_entropy({_Z.format('2, 3')}, t(np.array([0, 7])), label_smoothing=0.2)"),
    ("losses", "ce ls weight target oob",
     f"out = F.cross_entropy({_Z.format('2, 3')}, t(np.array([0, 3])), weight={_Z.format('3')}, label_smoothing=0.2)"),
    ("losses", "ce ls weight target negative",
     f"out = F.cross_entropy({_Z.format('2, 3')}, t(np.array([-2, 0])), weight={_Z.format('3')}, label_smoothing=0.2)"),
    ("losses", "ce ls weight target oob sum",
     f"out = F.cross_entropy({_Z.format('2, 3')}, t(np.array([0, 3])), weight={_Z.format('3')}, label_smoothing=0.2, "
     "reduction='sum')"),
    ("losses", "ce weight target oob", f"out = F.cross_entropy({_Z.format('2, 3')}, t(np.array([0, 3])), weight={_Z.format('3')})"),
    ("losses", "ce 3d target oob", f"out = F.cross_entropy({_Z.format('2, 3, 4')}, t(np.array([[0, 1, 2, 5], [0, 0, 0, 0]])))"),
    ("losses", "ce weight classes", f"out = F.cross_entropy({_Z.format('2, 3')}, t(np.array([0, 1])), weight={_Z.format('4')})"),
    ("losses", "ce weight classes 2d", f"out = F.cross_entropy({_Z.format('2, 3')}, t(np.array([0, 1])), weight={_Z.format('1, 3')})"),
    ("losses", "ce weight classes ls",
     f"out = F.cross_entropy({_Z.format('2, 3')}, t(np.array([0, 1])), weight={_Z.format('4')}, label_smoothing=0.2)"),
    ("losses", "ce weight classes 3d", f"out = F.cross_entropy({_Z.format('2, 3, 4')}, t(np.zeros((2, 4), np.int64)), weight={_Z.format('4')})"),
    ("losses", "ce weight classes 4d", f"out = F.cross_entropy({_Z.format('2, 3, 2, 2')}, t(np.zeros((2, 2, 2), np.int64)), weight={_Z.format('2')})"),
    ("losses", "ce prob classes", f"out = F.cross_entropy({_Z.format('2, 3')}, {_Z.format('2, 2')})"),
    ("losses", "ce prob classes wider", f"out = F.cross_entropy({_Z.format('2, 3')}, {_Z.format('2, 4')}, label_smoothing=0.1)"),
    ("losses", "ce prob weight classes", f"out = F.cross_entropy({_Z.format('2, 3')}, {_Z.format('2, 3')}, weight={_Z.format('4')})"),
    ("losses", "ce target size 3d", f"out = F.cross_entropy({_Z.format('2, 3, 4')}, t(np.zeros((2, 3), np.int64)))"),
    ("losses", "ce target size 3d float", f"out = F.cross_entropy({_Z.format('2, 3, 4')}, {_Z.format('2, 3')})"),
    ("losses", "ce batch", f"out = F.cross_entropy({_Z.format('2, 3')}, t(np.array([0, 1, 2])))"),
    ("losses", "ce int target 2d", f"out = F.cross_entropy({_Z.format('2, 3')}, t(np.zeros((2, 2), np.int64)))"),
    ("losses", "nll target oob", f"out = F.nll_loss({_Z.format('2, 3')}, t(np.array([0, 3])))"),
    ("losses", "nll 1d target oob", f"out = F.nll_loss({_Z.format('3')}, t(np.array(4)))"),
    ("losses", "nll 1d target -1", f"out = F.nll_loss({_Z.format('3')}, t(np.array(-1)))"),
    ("losses", "nll weight classes", f"out = F.nll_loss({_Z.format('2, 3')}, t(np.array([0, 1])), weight={_Z.format('2')})"),
    ("losses", "nll float target", f"out = F.nll_loss({_Z.format('2, 3')}, {_Z.format('2')})"),
    ("losses", "nll 1d input 1d target", f"out = F.nll_loss({_Z.format('3')}, t(np.array([0, 1])))"),
    ("losses", "nll 1d input 1d target same", f"out = F.nll_loss({_Z.format('3')}, t(np.array([0, 1, 2])))"),
    ("losses", "nll 1d input 1d target one", f"out = F.nll_loss({_Z.format('3')}, t(np.array([1])))"),
    ("losses", "nll 4d target size", f"out = F.nll_loss({_Z.format('2, 3, 2, 2')}, t(np.zeros((2, 3, 3), np.int64)))"),
    ("losses", "nll 4d target dims", f"out = F.nll_loss({_Z.format('2, 3, 2, 2')}, t(np.zeros((2, 4), np.int64)))"),
    ("losses", "nll 4d float target", f"out = F.nll_loss({_Z.format('2, 3, 2, 2')}, {_Z.format('2, 2, 2')})"),
    ("losses", "nll 3d float target size", f"out = F.nll_loss({_Z.format('2, 3, 4')}, {_Z.format('2, 3')})"),
    ("losses", "nll 5d target size", f"out = F.nll_loss({_Z.format('2, 3, 1, 2, 2')}, t(np.zeros((2, 1, 2, 3), np.int64)))"),
    ("losses", "nll 3d weight and float target", f"out = F.nll_loss({_Z.format('2, 3, 4')}, {_Z.format('2, 4')}, weight={_Z.format('2')})"),
    ("losses", "nll 2d weight and float target", f"out = F.nll_loss({_Z.format('2, 3')}, {_Z.format('2')}, weight={_Z.format('2')})"),
    ("losses", "nll float target 2d", f"out = F.nll_loss({_Z.format('2, 3')}, {_Z.format('2, 3')})"),
]

# Counter scenarios (item 11), run in this order in one interpreter after a mark_step and a metrics reset each: the
# code sees T, np, t(array), step() (mark_step) and assigns the tensors to read to ``out``; recorded: LTC's counters
# (but CreateLtcTensor / DestroyLtcTensor, which also count LTC's temporaries: a README deviation) at the end of
# the code, then the values of ``out``.
_H = "t(np.full(3, 0.5, np.float32))"                    # a tensor holding data
_I = "(t(np.full(3, 0.25, np.float32)) * 2)"             # a tensor holding IR
COUNTER_SCENARIOS = [
    ("exponential_ data", f"x = {_H}; x.exponential_(); out = [x]"),
    ("exponential_ data after a step", f"x = {_H}; step(); x.exponential_(); out = [x]"),
    ("exponential_ ir", f"x = {_I}; x.exponential_(); out = [x]"),
    ("exponential_ twice", f"x = {_H}; x.exponential_(); x.exponential_(); out = [x]"),
    ("exponential_ view", f"x = {_H}; x[1:].exponential_(); out = [x]"),
    ("exponential_ view ir", f"x = {_I}; x[1:].exponential_(); out = [x]"),
    ("exponential_ float64", "x = t(np.full((2, 2), 0.5)); x.exponential_(2.0); out = [x]"),
    ("bernoulli_ data data", f"x = {_H}; p = {_H}; x.bernoulli_(p); out = [x]"),
    ("bernoulli_ data ir", f"x = {_H}; p = {_I}; x.bernoulli_(p); out = [x]"),
    ("bernoulli_ ir data", f"x = {_I}; p = {_H}; x.bernoulli_(p); out = [x]"),
    ("bernoulli_ ir ir", f"x = {_I}; p = {_I}; x.bernoulli_(p); out = [x]"),
    ("bernoulli_ self data", f"x = {_H}; x.bernoulli_(x); out = [x]"),
    ("bernoulli_ self ir", f"x = {_I}; x.bernoulli_(x); out = [x]"),
    ("bernoulli_ view", f"x = {_H}; p = {_H}; x[1:].bernoulli_(p[1:]); out = [x, p]"),
    ("bernoulli_ float p", f"x = {_H}; x.bernoulli_(0.5); out = [x]"),
    ("bernoulli_ then exponential_", f"x = {_H}; x.bernoulli_({_H}); y = x * 3; y.exponential_(); out = [x, y]"),
    ("exponential_ then graph", f"x = {_H}; x.exponential_(); y = (x + 1).sum(); step(); out = [y]"),
    ("random_ full data", "x = t(np.zeros(3, np.uint8)); x.random_(); out = [x]"),
    ("random_ full then graph", "x = t(np.zeros(3, np.int64)); x.random_(); y = x * 3 + 1; step(); out = [x, y]"),
]

_WRAP = "The following operation failed in the TorchScript interpreter.\nTraceback of TorchScript (most recent call last):\n"

RUNNER = r'''
import json, sys, warnings
import numpy as np
import torch
import torch.nn.functional as F
dev = sys.argv[1]
if dev in ("lazy", "scenarios"):
    import torch._lazy, torch._lazy.ts_backend
    torch._lazy.ts_backend.init()

def t(a):
    return torch.from_numpy(np.array(a)).to(dev)

def encode(r):
    if isinstance(r, (tuple, list)):
        return {"tuple": [encode(x) for x in r]}
    v = r.cpu()
    return {"dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape),
            "values": (v.float() if v.dtype == torch.bfloat16 else v).tolist()}

def run(code):
    torch.manual_seed(0)
    ns = {"T": torch, "F": F, "np": np, "dev": dev, "t": t}
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        try:
            exec(code, ns)
            res = {"ok": encode(ns["out"])}
        except Exception as e:
            res = {"error": [type(e).__name__, str(e)]}
    res["warnings"] = [str(w.message) for w in ws if "lazy" not in str(w.message).lower()]
    if dev == "lazy":
        # LTC's device keeps a failed run's exception and raises it once more at the next run: spend it here
        try:
            (torch.zeros(1, device=dev) + 1).cpu()
        except RuntimeError:
            pass
    return res

def scenario(code):
    import torch._lazy.metrics as M
    torch._lazy.mark_step()
    M.reset()
    torch.manual_seed(0)
    ns = {"T": torch, "np": np, "t": t, "step": torch._lazy.mark_step}
    exec(code, ns)
    counters = {n: M.counter_value(n) for n in M.counter_names() if n not in ("CreateLtcTensor", "DestroyLtcTensor")}
    return {"counters": counters, "values": [encode(x) for x in ns["out"]]}

codes = json.loads(sys.stdin.read())
if dev == "scenarios":
    dev = "lazy"
    print(json.dumps([scenario(c) for c in codes]))
else:
    print(json.dumps([run(c) for c in codes]))
'''


def _run(dev, codes):
    r = subprocess.run([sys.executable, "-c", RUNNER, dev], input=json.dumps(codes), capture_output=True,
                       text=True, timeout=600)
    if r.returncode:
        raise SystemExit(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def expectation(eager, lazy):
    """LTC's outcome, an error from inside the TorchScript interpreter unwrapped (see the module docstring)."""
    want = dict(lazy)
    err = lazy.get("error")
    if err and err[1].startswith(_WRAP):
        inner = err[1][len(_WRAP):].rstrip("\n")
        kind, _, msg = inner.partition(": ")
        e = eager.get("error")
        want["error"] = [e[0] if e and e[1] == msg else kind, msg]
    # LTC warns when the graph runs; accel (and eager torch) at the call.  Without the C++ source line.
    want["warnings"] = [re.sub(r" \(Triggered internally at [^)]*\)$", "", w) for w in eager["warnings"]]
    return want


def main(path):
    import torch
    assert torch.__version__.startswith("2.13"), torch.__version__
    codes = [c for _, _, c in CASES]
    eager = _run("cpu", codes)
    lazy = _run("lazy", codes)
    out = {"torch_version": torch.__version__, "cases": []}
    for (group, name, code), e, z in zip(CASES, eager, lazy):
        out["cases"].append({"group": group, "name": name, "code": code, "eager": e, "lazy": z,
                             "expect": expectation(e, z)})
    out["counter_scenarios"] = [{"name": name, "code": code, **r} for (name, code), r in
                                zip(COUNTER_SCENARIOS, _run("scenarios", [c for _, c in COUNTER_SCENARIOS]))]
    pathlib.Path(path).write_text(json.dumps(out, indent=1, allow_nan=True) + "\n")
    print(f"{len(CASES)} cases and {len(COUNTER_SCENARIOS)} counter scenarios written to {path}")


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    main(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "data"
                                                     / "lazy_trust4.json"))
