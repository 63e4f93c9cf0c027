"""Differential fuzzing of accel.lazy against torch 2.13's LTC: generate, record, replay, minimise.

Generates seeded random programs over the lazy tensor op set (arithmetic with broadcasting, dtype promotion
and Python scalars, unary math, reductions, views, softmax, clamp, casts, cat, the matmul family, in-place ops
on tensors and views, comparisons, ``bool()`` / ``item()`` / ``numpy()``, tensors from Python data, several
``mark_step``\\ s) on every dtype accel.lazy supports (bool, uint8, int8, int16, int32, int64, float16, float32,
float64; 0-dim and empty shapes).  Each program is validated against torch's eager CPU mode while it is
generated (an op torch refuses is either dropped or, in some programs, kept as the program's last line), then
run once through torch's LTC (TorchScript backend), which records per ``M()`` (mark_step) the IR text of every
tensor variable (without ``NodeType=`` tags) and its graph hash, the values ``R(...)`` took mid-program, the
exception (type and text) of a line torch refused, and the final values of all tensor variables.

    python tools/gen_lazy_fuzz.py [--count N] [out.json.gz]     # needs torch (2.13.0 CPU wheel)
    python tools/gen_lazy_fuzz.py --minimise NAME [--backend python|native] [--venv-python PY] [corpus]

The replay (``execute`` with ``AccelAPI`` and ``compare``) needs only numpy and accel: tests/test_lazy_fuzz.py
loads this file by path and replays the corpus on both twins.  ``--minimise`` drops lines and shrinks input
shapes of a failing program while accel still fails the same way (torch re-recording each candidate;
accel runs in a worker process of the given interpreter), and prints the minimal program.
"""
import gzip
import json
import pathlib
import re
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "lazy_fuzz.json.gz"
# the suites: "core" (the op set of issue 17, programs p0, p1, ...), "ops" (issue 19's op families on top of
# them, programs q0, q1, ...) and "ops2" (the ops added after the ops corpus was made -- scatter reductions,
# int32 indices, cross_entropy with class probabilities or weights with label smoothing -- mixed with all the
# others, programs r0, r1, ...), each its own corpus
CORPORA = {"core": CORPUS, "ops": ROOT / "tests" / "data" / "lazy_fuzz_ops.json.gz",
           "ops2": ROOT / "tests" / "data" / "lazy_fuzz_ops2.json.gz"}

# ---------------------------------------------------------------- inputs
DTYPES = {"b": "bool", "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
          "f16": "float16", "f32": "float32", "f64": "float64"}
_SPEC = re.compile(r"^(p?)(b|u8|i8|i16|i32|i64|f16|f32|f64)\[([0-9,]*)\]$")


def parse_spec(item):
    m = _SPEC.match(item)
    if m is None:
        raise ValueError(f"bad input spec {item!r}")
    positive, dt, sizes = m.groups()
    return positive, dt, tuple(int(s) for s in sizes.split(",")) if sizes else ()


def make_inputs(spec, seed):
    """The input arrays of ``spec`` ("f32[2,3] pf16[] i64[0,3]", "p": positive): values exact in every dtype
    (floats are multiples of 1/4 in [-2, 2], positive ones in [0.25, 2]; ints in [-5, 5], uint8 in [0, 10])."""
    rng = np.random.default_rng(seed)
    out = []
    for item in spec.split():
        positive, dt, shape = parse_spec(item)
        if dt == "b":
            a = rng.integers(0, 2, shape).astype(bool)
        elif dt == "u8":
            a = rng.integers(0, 11, shape).astype(np.uint8)
        elif dt.startswith("i"):
            a = rng.integers(1 if positive else -5, 6, shape).astype(DTYPES[dt])
        else:
            q = rng.integers(1, 9, shape) if positive else rng.integers(-8, 9, shape)
            a = (q / 4.0).astype(DTYPES[dt])
        out.append(np.asarray(a))
    return out


# ---------------------------------------------------------------- running a program (torch or accel)
_VAR = re.compile(r"^([xv])(\d+)$")


def encode(v):
    """A value compactly: arrays as [dtype, shape, flat list]; Python scalars as {"py": type, "v": value}."""
    if isinstance(v, np.ndarray):
        return [str(v.dtype), list(v.shape), v.reshape(-1).tolist()]
    return {"py": type(v).__name__, "v": v}


def decode(e):
    return np.array(e[2], dtype=e[0]).reshape(e[1])


class AccelAPI:
    """The hooks ``execute`` runs a program with, on accel.lazy."""

    def __init__(self, L):
        self.L = L
        self.T = L
        self.upload = L.tensor
        self.C = L.tensor
        self.text = L.get_tensors_text
        self.mark = L.mark_step
        self.Tensor = L.LazyTensor

    def ghash(self, ts):
        return self.L.get_graph_hash(ts).hex()

    def value(self, t):
        return t.numpy()


class TorchAPI:
    """The same hooks on torch's LTC (TorchScript backend, CPU)."""

    def __init__(self):
        import torch
        import torch._lazy
        import torch._lazy.ts_backend
        torch._lazy.ts_backend.init()
        self.torch = torch
        self.T = torch
        self.Tensor = torch.Tensor
        self.mark = torch._lazy.mark_step
        self._strip = re.compile(r", NodeType=[A-Za-z0-9_]+")

    def upload(self, a):
        return self.torch.from_numpy(a.copy()).to("lazy")

    def C(self, data, **kw):
        return self.torch.tensor(data, **kw).to("lazy")

    def text(self, ts):
        return self._strip.sub("", self.torch._C._lazy._get_tensors_text(ts))

    def ghash(self, ts):
        return self.torch._C._lazy._get_graph_hash(ts).hex()

    def value(self, t):
        return t.cpu().numpy()


def _tensor_vars(env):
    names = [n for n in env if _VAR.match(n)]
    names.sort(key=lambda n: (n[0] != "x", int(n[1:])))
    return names


def execute(api, lines, arrays):
    """Run a program's ``lines`` with ``api``; returns what the corpus records (see the module docstring)."""
    env = {"T": api.T, "C": api.C, "D": "lazy", "F": api.T.nn.functional}
    steps, recs = [], []
    Tensor = api.Tensor

    def M():
        names = _tensor_vars(env)
        ts = [env[n] for n in names]
        steps.append([api.text(ts), api.ghash(ts)])
        api.mark()

    def R(v):
        recs.append(encode(api.value(v)) if isinstance(v, Tensor) else encode(v))

    env["M"], env["R"] = M, R
    for i, a in enumerate(arrays):
        env[f"x{i}"] = api.upload(a)
    exc = None
    try:
        for k, line in enumerate(lines):
            try:
                exec(line, env)
            except Exception as e:        # noqa: BLE001 (the program's refused line: recorded and compared)
                exc = [k, type(e).__name__, str(e).split("\n")[0][:300]]
                break
        M()
        names = _tensor_vars(env)
        values = [encode(api.value(env[n])) for n in names]
    finally:
        env.clear()                       # the program's tensors die now (M and R close over env)
    return {"steps": steps, "recs": recs, "exc": exc, "names": names, "values": values}


# Tolerances of float values.  The inputs are exact (multiples of 1/4); exact ops (add, mul, views, casts,
# reductions of such values) agree bit for bit, and the tolerance covers only torch's and numpy's
# transcendental kernels (exp, log, tanh, ... differ in the last ulp or two, vectorised vs scalar) and their
# propagation through a chain of at most ~20 ops: ~100 ulps of the dtype, relative to the tensor's largest
# magnitude (an error made on a large intermediate shows up absolutely on a small result, e.g. after a
# subtraction).  float16 has 11 significant bits (ulp 2^-10 ~ 1e-3), float32 24 (6e-8), float64 53 (1.1e-16).
RTOL = {"float16": 4e-2, "float32": 2e-5, "float64": 1e-12}


def _close(got, want, rtol):
    if want.dtype.kind in "biu":
        return np.array_equal(got, want)
    rtol = max(rtol, RTOL[str(want.dtype)])
    fin = np.isfinite(want)
    scale = max(1.0, float(np.abs(want[fin]).max())) if fin.any() else 1.0
    with np.errstate(all="ignore"):
        return bool(np.all(np.where(
            fin, np.abs(got.astype(np.float64) - want.astype(np.float64)) <= rtol * scale,
            (got == want) | (np.isnan(got) & np.isnan(want)))))


def program_rtol(rec):
    """The tolerance of a program's float values: that of the least precise float dtype among its inputs and
    values (an error made in float16 survives a later cast to float64)."""
    dts = {parse_spec(i)[1] for i in rec["inputs"].split()}
    dts = {DTYPES[d] for d in dts} | {v[0] for v in rec["values"] + rec["recs"] if isinstance(v, list)}
    return max([RTOL[d] for d in dts if d in RTOL] + [RTOL["float32"]])


def _same_value(g, w, rtol):
    if isinstance(w, dict):
        if not isinstance(g, dict) or g["py"] != w["py"]:
            return False
        if w["py"] == "float":
            a, b = g["v"], w["v"]
            return a == b or (a != a and b != b) or abs(a - b) <= rtol * max(1.0, abs(b))
        return g["v"] == w["v"]
    if not isinstance(g, list):
        return False
    if g[0] != w[0] or g[1] != w[1]:
        return False
    return _close(decode(g), decode(w), rtol)


def _fmt(e):
    if isinstance(e, dict):
        return f"{e['py']} {e['v']!r}"
    return f"{e[0]}{e[1]} {e[2]}"


def compare(want, got):
    """The mismatches of accel's run ``got`` against torch's record ``want``: a list of (category, text),
    category one of exception, text, hash, record, value."""
    out = []
    we, ge = want["exc"], got["exc"]
    if we != ge and (we is None or ge is None or we[:2] != ge[:2]):
        out.append(("exception", f"torch: {we}; accel: {ge}"))
    for k, (w, g) in enumerate(zip(want["steps"], got["steps"])):
        if w[0] != g[0]:
            out.append(("text", f"step {k} text:\n{g[0]}expected:\n{w[0]}"))
        elif w[1] != g[1]:
            out.append(("hash", f"step {k} hash {g[1]} != {w[1]}"))
    if len(want["steps"]) != len(got["steps"]) and not out:
        out.append(("text", f"{len(got['steps'])} steps, torch took {len(want['steps'])}"))
    rtol = program_rtol(want)
    for k, (w, g) in enumerate(zip(want["recs"], got["recs"])):
        if not _same_value(g, w, rtol):
            out.append(("record", f"R #{k}: {_fmt(g)}, torch gives {_fmt(w)}"))
    if want["names"] != got["names"]:
        out.append(("value", f"variables {got['names']}, torch has {want['names']}"))
    else:
        for n, w, g in zip(want["names"], want["values"], got["values"]):
            if not _same_value(g, w, rtol):
                out.append(("value", f"{n} = {_fmt(g)}, torch gives {_fmt(w)}"))
    return out


def replay(L, programs, names=None):
    """Replay ``programs`` (corpus entries) on accel.lazy ``L``; returns {name: [[category, text], ...]}
    for the programs that differ from torch (a replay that raises outside the program's lines counts too)."""
    api = AccelAPI(L)
    fails = {}
    for p in programs:
        if names is not None and p["name"] not in names:
            continue
        try:
            L.mark_step()
            got = execute(api, p["code"], make_inputs(p["inputs"], p["seed"]))
            bad = compare(p, got)
        except Exception as e:            # noqa: BLE001
            bad = [("crash", f"{type(e).__name__}: {e}")]
        if bad:
            fails[p["name"]] = bad
    return fails


def load_corpus(path=CORPUS):
    with gzip.open(path, "rt") as f:
        return json.load(f)


# ---------------------------------------------------------------- generation (needs torch)
UNARY = ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "reciprocal")
BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "maximum": None, "minimum": None}
INPLACE = {"add_": "+=", "sub_": "-=", "mul_": "*=", "div_": "/="}
COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
SCALARS = (0, 1, 2, -1, 3, -2, 0.5, -1.5, 2.0, 0.25, -0.75, 1.0, True, False)
TORCH_DT = {"bool": "bool", "uint8": "uint8", "int8": "int8", "int16": "int16", "int32": "int32",
            "int64": "int64", "float16": "float16", "float32": "float32", "float64": "float64"}
_DT_WEIGHTS = [("f32", 5), ("f64", 2), ("f16", 2), ("i64", 2), ("i32", 2), ("u8", 1), ("i8", 1), ("i16", 1),
               ("b", 2)]


def _lit(v):
    s = repr(v)
    return f"({s})" if s.startswith("-") else s


class Gen:
    """One program under construction: lines, the eager mirror of its variables, its tags."""

    def __init__(self, torch, rng, index):
        self.torch = torch
        self.rng = rng
        self.index = index
        self.lines = []
        self.tags = set()
        self.env = {"T": torch, "C": torch.tensor, "M": lambda: None, "R": lambda v: None, "D": "cpu",
                    "F": torch.nn.functional}
        self.nv = 0

    # -- random helpers --
    def ri(self, lo, hi):
        return int(self.rng.integers(lo, hi + 1))

    def chance(self, p):
        return bool(self.rng.random() < p)

    def choice(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]

    def tensors(self):
        return [n for n in _tensor_vars(self.env) if isinstance(self.env[n], self.torch.Tensor)]

    def pick(self, pred=None):
        names = self.tensors()
        if pred is not None:
            names = [n for n in names if pred(self.env[n])]
        if not names:
            return None
        w = np.arange(1, len(names) + 1, dtype=float) ** 1.5     # recent variables more often
        return names[int(self.rng.choice(len(names), p=w / w.sum()))]

    def scalar(self):
        return self.choice(SCALARS)

    def dim(self, t, extra=0):
        n = max(t.dim(), 1)
        if self.chance(0.03):
            return n + self.ri(0, 1)           # out of range: torch's IndexError
        return self.ri(-n - extra, n - 1 + extra)

    def dtype(self):
        return self.choice(list(TORCH_DT))


def _float_stable(t, lo=None, hi=None, integral=False):
    """Whether values of float tensor ``t`` lead to the same result in any correct implementation when
    compared / truncated: exact multiples of 1/1024 (results of exact ops), or 1e-3 away from an integer
    (truncation) and finite / within [lo, hi] when given."""
    a = t.detach().double().numpy()
    if a.size == 0:
        return True
    if not np.isfinite(a).all():
        return lo is None and not integral
    if lo is not None and (a.min() < lo or a.max() > hi):
        return False
    exact = (a * 1024 == np.round(a * 1024)) & (np.abs(a) < 2 ** 20)
    if integral:
        return bool(np.all(exact | (np.abs(a - np.round(a)) > 1e-3)))
    return bool(np.all(exact))


def _pair_stable(a, b):
    """Comparing a and b elementwise gives the same bools whatever the last-ulp errors of float values."""
    if not (a.is_floating_point() or b.is_floating_point()):
        return True
    try:
        x, y = a.detach().double(), b.detach().double()
        x, y = np.broadcast_arrays(x.numpy(), y.numpy())
    except Exception:                # noqa: BLE001 (a shape mismatch: torch raises, which is recorded)
        return True
    with np.errstate(all="ignore"):
        d = np.abs(x - y)
        tol = 1e-2 * np.maximum(1.0, np.abs(y))
        exact = (x * 1024 == np.round(x * 1024)) & (y * 1024 == np.round(y * 1024))
        return bool(np.all((d > tol) | (exact & (d == 0)) | (exact & (d >= 1 / 1024)) | (np.isnan(x) | np.isnan(y))
                           & ~(np.isnan(x) ^ np.isnan(y)) | (np.isinf(x) & np.isinf(y))))


def _num(v):
    import torch
    return torch.tensor(v).double() if not hasattr(v, "dim") else v


# Each op generator returns (line, tags) or None (not applicable to the picked operands).
def g_unary(g):
    a = g.pick()
    u = g.choice(UNARY)
    t = g.env[a]
    form = g.ri(0, 2)
    if u == "neg" and form == 2:
        expr = f"-{a}"
    elif u == "abs" and form == 2:
        expr = f"abs({a})"
    elif form == 1:
        expr = f"T.{u}({a})"
    else:
        expr = f"{a}.{u}()"
    tags = {u}
    if t.dtype == g.torch.bool and u == "relu":
        tags.add("relu_bool")
    return expr, tags


def g_binary(g):
    a = g.pick()
    b = g.pick()
    op = g.choice(list(BINARY))
    ta, tb = g.env[a], g.env[b]
    tags = {op}
    sym = BINARY[op]
    r = g.ri(0, 3)
    if op in ("add", "sub") and r == 3:
        alpha = g.choice((2, -1, 0.5, 3))
        expr = g.choice((f"{a}.{op}({b}, alpha={_lit(alpha)})", f"T.{op}({a}, {b}, alpha={_lit(alpha)})"))
        tags.add("alpha")
    elif sym is None or r == 2:
        expr = g.choice((f"T.{op}({a}, {b})", f"{a}.{op}({b})"))
    else:
        expr = f"{a} {sym} {b}"
    if op == "pow" and not ta.is_floating_point() and not tb.is_floating_point():
        tags.add("pow_int")
    return expr, tags


def g_scalar(g):
    a = g.pick()
    s = g.scalar()
    op = g.choice(list(BINARY)[:5])
    sym = BINARY[op]
    t = g.env[a]
    tags = {op, "scalar"}
    r = g.ri(0, 4)
    if r == 0:
        expr = f"{_lit(s)} {sym} {a}"
        tags.add("r" + op)
    elif r == 1:
        expr = f"{a}.{op}({_lit(s)})" if op != "pow" or g.chance(0.5) else f"T.pow({a}, {_lit(s)})"
    elif r == 2 and op in ("add", "sub"):
        expr = f"{a}.{op}({_lit(s)}, alpha={_lit(g.choice((2, -1, 0.5)))})"
        tags.add("alpha")
    else:
        expr = f"{a} {sym} {_lit(s)}"
    if op == "pow" and not t.is_floating_point() and not isinstance(s, float):
        tags.add("pow_int")
    if op == "pow" and r == 0 and not t.is_floating_point():
        tags.add("pow_int")
    return expr, tags


def g_reduce(g):
    a = g.pick()
    t = g.env[a]
    op = g.choice(("sum", "sum", "mean", "mean", "amax"))
    tags = {op}
    if t.dtype == g.torch.float16 and op in ("sum", "mean"):
        tags.add("reduce_f16")
    nd = t.dim()
    if op == "amax":
        if nd == 0 or g.chance(0.3):
            return f"{a}.amax()", tags
        return f"{a}.amax({g.dim(t)}{', keepdim=True' if g.chance(0.4) else ''})", tags
    r = g.ri(0, 4)
    keep = ", keepdim=True" if g.chance(0.4) else ""
    if r == 0 or nd == 0:
        return (f"{a}.{op}()" if g.chance(0.7) else f"T.{op}({a})"), tags
    if r == 1 and nd >= 2:
        d0 = g.ri(0, nd - 1)
        d1 = g.choice([d for d in range(nd) if d != d0])
        if g.chance(0.5):
            d1 -= nd
        return f"{a}.{op}(({d0}, {d1}){keep})", tags
    if r == 2:
        return f"{a}.{op}(dim=None{keep})", tags
    if r == 3:
        return f"T.{op}({a}, {g.dim(t)}{keep})", tags
    return f"{a}.{op}({g.dim(t)}{keep})", tags


def _factor(g, n, nd):
    """A random shape of ``nd`` dims with ``n`` elements (a -1 sometimes)."""
    dims = [1] * nd
    rest = n
    for i in range(nd - 1):
        divs = [d for d in range(1, rest + 1) if rest % d == 0] if rest else [0, 1, 2]
        dims[i] = g.choice(divs)
        rest = rest // dims[i] if dims[i] else rest
    if nd:
        dims[-1] = rest if all(dims[:-1]) else g.ri(0, 3)
    if nd and n and g.chance(0.3):
        dims[g.ri(0, nd - 1)] = -1
    return dims


def g_view(g):
    a = g.pick()
    t = g.env[a]
    nd = t.dim()
    r = g.ri(0, 7)
    tags = set()
    if r == 0:
        shape = _factor(g, t.numel(), g.ri(0, 3) if t.numel() == 1 else g.ri(1, 3))
        fn = g.choice(("reshape", "view", "T.reshape"))
        tags.add("reshape")
        if fn == "T.reshape":
            return f"T.reshape({a}, {tuple(shape)!r})", tags
        if g.chance(0.5):
            return f"{a}.{fn}({tuple(shape)!r})", tags
        return f"{a}.{fn}({', '.join(map(str, shape))})", tags
    if r == 1:
        tags.add("t")
        return (f"{a}.t()" if g.chance(0.7) else f"T.t({a})"), tags
    if r == 2:
        tags.add("transpose")
        return g.choice((f"{a}.transpose({g.dim(t)}, {g.dim(t)})", f"T.transpose({a}, {g.dim(t)}, {g.dim(t)})")), tags
    if r == 3:
        tags.add("permute")
        perm = [int(i) for i in g.rng.permutation(nd)]
        perm = [p - nd if g.chance(0.3) else p for p in perm]
        if g.chance(0.5):
            return f"T.permute({a}, {tuple(perm)!r})", tags
        return f"{a}.permute({', '.join(map(str, perm))})", tags
    if r == 4:
        tags.add("unsqueeze")
        return f"{a}.unsqueeze({g.ri(-nd - 1, nd)})", tags
    if r == 5:
        tags.add("squeeze")
        if nd and g.chance(0.6):
            return g.choice((f"{a}.squeeze({g.dim(t)})", f"T.squeeze({a}, {g.dim(t)})")), tags
        return f"{a}.squeeze()", tags
    if r == 6:
        tags.add("expand")
        sizes = list(t.shape)
        sizes = [g.choice((2, 3)) if s == 1 and g.chance(0.6) else (-1 if g.chance(0.2) else s) for s in sizes]
        lead = [g.ri(1, 3) for _ in range(g.ri(0, 1))]
        return f"{a}.expand({', '.join(map(str, lead + sizes)) or '()'})", tags
    # indexing-free view chains
    tags.update(("t", "reshape"))
    if nd <= 2:
        return f"{a}.t().reshape(-1)", tags
    return f"{a}.transpose(0, -1).reshape(-1)", tags


def g_softmax(g):
    a = g.pick(lambda t: t.is_floating_point()) or g.pick()
    t = g.env[a]
    op = g.choice(("softmax", "log_softmax"))
    tags = {op}
    if 0 in t.shape:
        tags.add("softmax_empty")
    d = g.dim(t)
    return g.choice((f"{a}.{op}({d})", f"T.{op}({a}, {d})")), tags


def g_clamp(g):
    a = g.pick()
    lo, hi = g.scalar(), g.scalar()
    if isinstance(lo, bool):
        lo = 0
    if isinstance(hi, bool):
        hi = 1
    if g.env[a].dtype == g.torch.uint8:
        lo, hi = abs(lo), abs(hi)      # LTC's TorchScript graph clamps uint8 by a negative bound unwrapped
    r = g.ri(0, 3)
    if r == 0:
        args = f"{_lit(lo)}, {_lit(hi)}"
    elif r == 1:
        args = f"min={_lit(lo)}"
    elif r == 2:
        args = f"max={_lit(hi)}"
    else:
        return f"T.clamp({a}, min={_lit(lo)}, max={_lit(hi)})", {"clamp"}
    return f"{a}.clamp({args})", {"clamp"}


def g_to(g):
    a = g.pick()
    t = g.env[a]
    dt = g.dtype()
    tdt = getattr(g.torch, dt)
    if t.is_floating_point() and not tdt.is_floating_point:
        info = np.iinfo(dt) if dt != "bool" else None
        ok = _float_stable(t, None if info is None else info.min, None if info is None else info.max,
                           integral=info is not None)
        if not ok:
            return None
    return f"{a}.to(T.{dt})", {"to"}


def g_cat(g):
    a = g.pick(lambda t: t.dim() > 0)
    if a is None:
        return None
    t = g.env[a]
    d = g.ri(-t.dim(), t.dim() - 1)
    ax = d % t.dim()
    others = [n for n in g.tensors() if g.env[n].dim() == t.dim()
              and all(g.env[n].shape[k] == t.shape[k] for k in range(t.dim()) if k != ax)]
    parts = [a] + [g.choice(others) for _ in range(g.ri(0, 2))] if others else [a, a]
    if g.chance(0.05):
        parts.append(g.pick())          # maybe mismatched: torch's error
    lst = f"[{', '.join(parts)}]" if g.chance(0.7) else f"({', '.join(parts)},)"
    return (f"T.cat({lst}, {d})" if g.chance(0.8) else f"T.cat({lst})"), {"cat"}


def g_matmul(g):
    a = g.pick(lambda t: t.dim() >= 1)
    if a is None:
        return None
    t = g.env[a]
    nd = t.dim()
    tags = set()
    if nd == 1:
        tags.add("matmul")
        expr = g.choice((f"{a} @ {a}", f"{a} @ {a}.unsqueeze(1)", f"{a}.unsqueeze(0) @ {a}.unsqueeze(1)"))
        if expr == f"{a} @ {a}":
            tags.add("dot")
        return expr, tags
    if nd >= 3 and int(np.prod(t.shape[:-2])) == 1:
        tags.add("matmul_batch1")
    if nd == 2:
        r = g.ri(0, 3)
        if r == 0:
            tags.add("mm")
            return g.choice((f"{a}.mm({a}.t())", f"T.mm({a}.t(), {a})")), tags
        tags.add("matmul")
        if r == 1:
            return f"{a} @ {a}.t()", tags
        if r == 2:
            return g.choice((f"{a} @ {a}.sum(0)", f"T.matmul({a}, {a}.sum(0))")), tags
        return f"{a}.t() @ {a}.matmul({a}.t())", tags
    if nd == 3:
        r = g.ri(0, 2)
        if r == 0:
            tags.add("bmm")
            return g.choice((f"{a}.bmm({a}.transpose(1, 2))", f"T.bmm({a}.transpose(1, 2), {a})")), tags
        tags.add("matmul")
        if r == 1:
            return f"{a} @ {a}.transpose(-1, -2)", tags
        return f"{a} @ {a}.sum(0).t()", tags
    tags.add("matmul")
    return f"{a} @ {a}.transpose(-1, -2)", tags


def g_inplace(g):
    a = g.pick()
    t = g.env[a]
    op = g.choice(list(INPLACE))
    tags = {op}
    other = g.pick() if g.chance(0.5) else None
    operand = other if other is not None else _lit(g.scalar())
    r = g.ri(0, 3)
    if r == 0:
        line = f"{a} {INPLACE[op]} {operand}"
        tags.add("inplace_operator")
    elif r == 1 and op in ("add_", "sub_"):
        line = f"{a}.{op}({operand}, alpha={_lit(g.choice((2, -1, 0.5)))})"
        tags.add("alpha")
    elif r == 2:
        g.nv += 1
        line = f"v{g.nv - 1} = {a}.{op}({operand})"       # returns self
    else:
        line = f"{a}.{op}({operand})"
    return line, tags, True


def g_inplace_other(g):
    a = g.pick()
    t = g.env[a]
    r = g.ri(0, 3)
    if r == 0:
        b = g.pick()
        return f"{a}.copy_({b})", {"copy_"}, True
    if r == 1:
        return f"{a}.zero_()", {"zero_"}, True
    if r == 2:
        return f"{a}.fill_({_lit(g.scalar())})", {"fill_"}, True
    lo, hi = g.choice((0, -1, 0.5, -1.5)), g.choice((1, 2, 1.5))
    args = g.choice((f"{_lit(lo)}, {_lit(hi)}", f"min={_lit(lo)}", f"max={_lit(hi)}"))
    return f"{a}.clamp_({args})", {"clamp_"}, True


def g_compare(g):
    a = g.pick()
    op = g.choice(list(COMPARE))
    tags = {op}
    if g.chance(0.5):
        b = g.pick()
        if not _pair_stable(g.env[a], g.env[b]):
            return None
        r = g.ri(0, 2)
        expr = (f"{a} {COMPARE[op]} {b}", f"{a}.{op}({b})", f"T.{op}({a}, {b})")[r]
    else:
        s = g.scalar()
        if not _pair_stable(g.env[a], _num(s)):
            return None
        r = g.ri(0, 2)
        expr = (f"{a} {COMPARE[op]} {_lit(s)}", f"{_lit(s)} {COMPARE[op]} {a}", f"{a}.{op}({_lit(s)})")[r]
        tags.add("scalar")
    return expr, tags


def g_record(g):
    a = g.pick()
    t = g.env[a]
    if t.numel() == 1 and g.chance(0.6):
        if g.chance(0.5):
            if t.is_floating_point() and not _float_stable(t):
                return None
            return f"R(bool({a}))", {"bool"}, True
        return f"R({a}.item())", {"item"}, True
    return f"R({a})", {"numpy"}, True


def g_create(g):
    r = g.ri(0, 4)
    if r == 0:
        return f"C({_lit(g.scalar())})", {"tensor"}
    n = g.ri(0, 3)
    kind = g.choice(("int", "float", "bool", "mixed"))
    vals = []
    for _ in range(n):
        if kind == "int":
            vals.append(g.ri(-3, 3))
        elif kind == "float":
            vals.append(g.ri(-8, 8) / 4)
        elif kind == "bool":
            vals.append(g.chance(0.5))
        else:
            vals.append(g.choice((1, 2.5, -1, 0.5)))
    tags = {"tensor"}
    if not vals or any(isinstance(v, float) for v in vals):
        tags.add("tensor_float_list")        # float data (an empty list too) is float32 in torch
    if r == 4 and n:
        return f"C([{vals!r}, {vals!r}])", tags
    return f"C({vals!r})", tags


GENERATORS = [(g_unary, 12), (g_binary, 14), (g_scalar, 12), (g_reduce, 7), (g_view, 12), (g_softmax, 3),
              (g_clamp, 3), (g_to, 4), (g_cat, 3), (g_matmul, 3), (g_inplace, 8), (g_inplace_other, 4),
              (g_compare, 6), (g_record, 3), (g_create, 2)]

# ---------------------------------------------------------------- issue 19's ops (the "ops" suite)
def _index_list(g, shape, hi):
    """A nested list of ints in [0, hi) (sometimes one out of range: torch's error) of ``shape``."""
    if not shape:
        return g.ri(0, max(hi - 1, 0)) if hi and not g.chance(0.03) else hi
    return [_index_list(g, shape[1:], hi) for _ in range(shape[0])]


def _basic_index(g, t):
    """A basic index expression for ``t``: ints, slices (steps), None, ...; sometimes out of range."""
    parts = []
    nd = t.dim()
    k = g.ri(0, min(nd, 3)) if nd else 0
    for d in range(k):
        size = t.shape[d]
        r = g.ri(0, 5)
        if r == 0 and size:
            parts.append(str(g.ri(-size, size - 1) if not g.chance(0.03) else size))
        elif r == 1:
            parts.append(f"{g.ri(-size - 1, size)}:")
        elif r == 2:
            parts.append(f":{g.ri(-size - 1, size + 1)}")
        elif r == 3:
            parts.append(f"::{g.choice((1, 2, 3))}" if not g.chance(0.04) else "::-1")
        elif r == 4:
            parts.append(f"{g.ri(0, max(size - 1, 0))}:{g.ri(-size, size + 1)}:{g.choice((1, 2))}")
        else:
            parts.append(":")
    if g.chance(0.2):
        parts.insert(g.ri(0, len(parts)), "None")
    if g.chance(0.15) and "..." not in parts:
        parts.insert(g.ri(0, len(parts)), "...")
    if not parts:
        parts = [g.choice(("...", "None", ":"))]
    return ", ".join(parts)


def g_index(g):
    a = g.pick()
    t = g.env[a]
    nd = t.dim()
    r = g.ri(0, 3)
    if r == 0 or nd == 0:
        return f"{a}[{_basic_index(g, t)}]", {"getitem"}
    d = g.dim(t)
    size = t.shape[d % nd] if -nd <= d < nd else 0
    if r == 1:
        start = g.ri(-size, size) if size else 0
        length = g.ri(0, max(size - (start % size if size else 0), 0))
        return g.choice((f"{a}.narrow({d}, {start}, {length})", f"T.narrow({a}, {d}, {start}, {length})")), {"narrow"}
    if r == 2 and size:
        return g.choice((f"{a}.select({d}, {g.ri(-size, size - 1)})", f"T.select({a}, {d}, {g.ri(-size, size - 1)})")), \
            {"select"}
    return f"{a}[{_basic_index(g, t)}]", {"getitem"}


def g_setitem(g):
    a = g.pick(lambda t: t.dim() > 0)
    if a is None:
        return None
    t = g.env[a]
    idx = _basic_index(g, t)
    if g.chance(0.5):
        return f"{a}[{idx}] = {_lit(g.scalar())}", {"setitem"}, True
    b = g.pick()
    return f"{a}[{idx}] = {b}", {"setitem"}, True


def g_shape_ops(g):
    a = g.pick()
    t = g.env[a]
    nd = t.dim()
    r = g.ri(0, 10)
    if r == 0:
        if nd == 0 or g.chance(0.3):
            return f"{a}.flatten()", {"flatten"}
        s = g.ri(-nd, nd - 1)
        e = g.ri(s % nd, nd - 1)
        return g.choice((f"{a}.flatten({s}, {e})", f"T.flatten({a}, {s}, {e})")), {"flatten"}
    if r == 1 and nd:
        d = g.dim(t)
        size = t.shape[d % nd] if -nd <= d < nd else 1
        divs = [k for k in range(1, size + 1) if size % k == 0] or [1]
        k = g.choice(divs)
        return f"{a}.unflatten({d}, ({k}, {size // k if k else 0}))", {"unflatten"}
    if r == 2 and nd:
        return g.choice((f"{a}.movedim({g.dim(t)}, {g.dim(t)})", f"T.movedim({a}, {g.dim(t)}, {g.dim(t)})")), {"movedim"}
    if r == 3 and nd:
        dims = sorted({g.ri(0, nd - 1) for _ in range(g.ri(1, nd))})
        return g.choice((f"{a}.flip({tuple(dims)!r})", f"T.flip({a}, {dims!r})")), {"flip"}
    if r == 4:
        reps = [g.ri(1, 2) for _ in range(nd + g.ri(0, 1))] or [2]
        return f"{a}.repeat({', '.join(map(str, reps))})", {"repeat"}
    if r == 5:
        if nd and g.chance(0.7):
            return g.choice((f"{a}.roll({g.ri(-3, 3)}, {g.dim(t)})", f"T.roll({a}, {g.ri(-3, 3)}, {g.dim(t)})")), {"roll"}
        return f"{a}.roll({g.ri(-3, 3)})", {"roll"}
    if r == 6:
        others = [n for n in g.tensors() if tuple(g.env[n].shape) == tuple(t.shape)]
        parts = [a] + [g.choice(others) for _ in range(g.ri(0, 2))]
        return f"T.stack([{', '.join(parts)}], {g.ri(-nd - 1, nd)})", {"stack"}
    if r == 7:
        return g.choice((f"{a}.clone()", f"T.clone({a})", f"{a}.contiguous()", f"{a}.t().contiguous()" if nd <= 2
                         else f"{a}.transpose(0, 1).contiguous()")), {"clone"}
    if r == 8:
        b = g.pick()
        return g.choice((f"{a}.expand_as({b})", f"{a}.view_as({b})", f"{a}.reshape_as({b})")), {"expand_as"}
    if r == 9:
        b = g.pick()
        return g.choice((f"{a}.type_as({b})", f"{a}.to({b})")), {"type_as"}
    return g.choice((f"{a}.half()", f"{a}.float()", f"{a}.double()", f"{a}.bool()")), {"casts"}


def g_int_cast(g):
    a = g.pick()
    t = g.env[a]
    if t.is_floating_point() and not _float_stable(t, -2 ** 31, 2 ** 31 - 1, integral=True):
        return None
    return g.choice((f"{a}.long()", f"{a}.int()")), {"casts"}


def g_select_mask(g):
    a = g.pick()
    t = g.env[a]
    s = g.scalar()
    if not _pair_stable(t, _num(s)):
        return None
    cond = f"({a} {g.choice(list(COMPARE.values()))} {_lit(s)})"
    b = g.pick()
    r = g.ri(0, 6)
    if r == 0:
        return f"T.where({cond}, {a}, {b})", {"where"}
    if r == 1:
        return f"T.where({cond}, {a}, {_lit(g.scalar())})", {"where"}
    if r == 2:
        # a mask larger than the tensor: eager torch broadcasts, LTC keeps the tensor's shape (values and
        # shape disagree in torch itself), accel refuses -- not generated
        tb = g.env[b]
        ok = tb.dim() >= t.dim() and all(y in (1, x) for x, y in zip(tb.shape[::-1], t.shape[::-1]))
        return (f"{b}.masked_fill({cond}, {_lit(g.scalar())})" if ok and g.chance(0.5) else
                f"{a}.masked_fill({cond}, {_lit(g.scalar())})"), {"masked_fill"}
    if r == 3:
        c = g.pick()
        return g.choice((f"T.logical_and({cond}, {c})", f"T.logical_or({c}, {cond})", f"T.logical_not({c})",
                         f"{cond}.logical_xor({c})")), {"logical"}
    if r == 4:
        return g.choice((f"T.isnan({a})", f"{a}.isinf()", f"T.isinf({a} / 0)", f"T.isnan({a} * 0 / 0)")), {"isnan"}
    if r == 5:
        return g.choice((f"T.nan_to_num({a} / 0)", f"{a}.nan_to_num(0.5)", f"({a} / 0).nan_to_num(1.0, 2.0, -2.0)")), \
            {"nan_to_num"}
    return g.choice((f"{a}.any()", f"{a}.all()", f"T.any({cond})", f"{cond}.all({g.dim(t)})" if t.dim() else
                     f"{cond}.any()")), {"any_all"}


def g_gather(g):
    a = g.pick(lambda t: t.dim() > 0)
    if a is None:
        return None
    t = g.env[a]
    nd = t.dim()
    d = g.ri(-nd, nd - 1)
    size = t.shape[d % nd]
    r = g.ri(0, 2)
    if r == 0:
        shape = [g.ri(0, s) if k != d % nd else g.ri(0, 3) for k, s in enumerate(t.shape)]
        idx = f"C({_index_list(g, shape, size)!r})"
        if nd > 1 and any(x == 0 for x in shape):
            return None                      # an empty nested list loses its shape
        return g.choice((f"{a}.gather({d}, {idx})", f"T.gather({a}, {d}, {idx})")), {"gather"}
    n = g.ri(0, 4)
    idx = f"C({_index_list(g, (n,), size)!r}, dtype=T.int64)"
    if r == 1:
        return g.choice((f"{a}.index_select({d}, {idx})", f"T.index_select({a}, {d}, {idx})")), {"index_select"}
    w = g.pick(lambda u: u.dim() == 2 and u.is_floating_point())
    if w is None:
        return None
    rows = g.env[w].shape[0]
    ids = f"C({_index_list(g, (g.ri(1, 3), g.ri(0, 3)), rows)!r})"
    return f"F.embedding({ids}, {w})", {"embedding"}


def g_reduce2(g):
    a = g.pick()
    t = g.env[a]
    nd = t.dim()
    keep = ", keepdim=True" if g.chance(0.3) else ""
    dim = f"{g.dim(t)}" if nd else "0"
    r = g.ri(0, 7)
    if r == 0:
        op = g.choice(("var", "std"))
        form = g.ri(0, 3)
        if form == 0:
            return f"{a}.{op}()", {op}
        if form == 1:
            return f"{a}.{op}({dim}{keep})", {op}
        if form == 2:
            return f"{a}.{op}({dim}, correction={g.choice((0, 1, 2))}{keep})", {op}
        return f"T.{op}({a}, {dim}, unbiased={g.choice((True, False))}{keep})", {op}
    if r == 1:
        return g.choice((f"{a}.norm()", f"{a}.norm(1)", f"{a}.norm(dim={dim}{keep})", f"T.norm({a}, 2, {dim})",
                         f"T.linalg.vector_norm({a})", f"T.linalg.vector_norm({a}, {g.choice((1, 2, 3))}, {dim})")), \
            {"norm"}
    if r == 2:
        return g.choice((f"{a}.prod()", f"{a}.prod({dim}{keep})", f"T.prod({a})")), {"prod"}
    if r == 3:
        return g.choice((f"{a}.cumsum({dim})", f"T.cumsum({a}, {dim})", f"{a}.cumsum({dim}, dtype=T.float64)")), \
            {"cumsum"}
    if r == 4:
        if t.is_floating_point() and not _float_stable(t):
            return None
        op = g.choice(("argmax", "argmin"))
        return g.choice((f"{a}.{op}()", f"{a}.{op}({dim}{keep})", f"T.{op}({a}, {dim})")), {op}
    if r == 5:
        return g.choice((f"{a}.amin({dim}{keep})", f"{a}.max()", f"{a}.min()", f"T.amin({a})")), {"amin"}
    if r == 6:
        return g.choice((f"{a}.mean({dim}, dtype=T.float64)", f"{a}.sum({dim}, dtype=T.float32)",
                         f"{a}.softmax({dim}, dtype=T.float64)", f"T.log_softmax({a}, {dim}, dtype=T.float32)")), \
            {"reduce_dtype"}
    return g.choice((f"{a}.any({dim})", f"{a}.all({dim}{keep})")), {"any_all"}


def g_activation(g):
    a = g.pick(lambda t: t.is_floating_point()) or g.pick()
    r = g.ri(0, 9)
    forms = [
        (f"F.gelu({a})", "gelu"), (f"F.gelu({a}, approximate='tanh')", "gelu"), (f"F.silu({a})", "silu"),
        (f"T.erf({a})", "erf"), (f"F.leaky_relu({a}, {g.choice((0.01, 0.2, 2.0))})", "leaky_relu"),
        (f"F.softplus({a}, {g.choice((1, 2))}, {g.choice((20, 1))})", "softplus"),
        (f"F.elu({a}, {g.choice((1.0, 0.5))})", "elu"), (f"F.hardtanh({a}, -0.5, {g.choice((0.5, 1.0))})", "hardtanh"),
        (f"{a}.sigmoid() * {a}", "silu"), (f"T.tanh({a}).erf()", "erf")]
    expr, tag = forms[r]
    return expr, {tag}


def g_nn(g):
    a = g.pick(lambda t: t.is_floating_point() and t.dim() >= 1)
    if a is None:
        return None
    t = g.env[a]
    r = g.ri(0, 2)
    if r == 0:
        b = g.pick(lambda u: tuple(u.shape) == tuple(t.shape))
        red = g.choice(("", ", reduction='sum'", ", reduction='none'"))
        return f"F.mse_loss({a}, {b}{red})", {"mse_loss"}
    k = t.shape[-1]
    w = g.pick(lambda u: u.dim() == 2 and u.shape[-1] == k and u.dtype == t.dtype)
    if w is None:
        return None
    bias = g.pick(lambda u: u.dim() == 1 and u.shape[0] == g.env[w].shape[0] and u.dtype == t.dtype)
    return (f"F.linear({a}, {w}, {bias})" if bias and g.chance(0.6) else f"F.linear({a}, {w})"), {"linear"}


def g_factory(g):
    r = g.ri(0, 7)
    shape = tuple(g.choice((0, 1, 2, 3)) for _ in range(g.ri(0, 3)))
    dt = f", dtype=T.{g.dtype()}" if g.chance(0.3) else ""
    if r == 0:
        return f"T.{g.choice(('zeros', 'ones'))}({shape!r}, device=D{dt})", {"factory"}
    if r == 1:
        return f"T.full({shape!r}, {_lit(g.scalar())}, device=D{dt})", {"factory"}
    if r == 2:
        a = g.pick()
        return g.choice((f"T.zeros_like({a})", f"T.ones_like({a}{dt})", f"T.full_like({a}, {_lit(g.scalar())})")), \
            {"factory_like"}
    if r == 3:
        return g.choice((f"T.arange({g.ri(0, 6)}, device=D)", f"T.arange({g.ri(-3, 2)}, {g.ri(2, 6)}, {g.ri(1, 3)}, "
                         f"device=D{dt})", f"T.arange(0, 2, 0.5, device=D)", f"T.arange(4, 0, -1, device=D)")), {"arange"}
    if r == 4:
        return g.choice((f"T.eye({g.ri(0, 4)}, device=D{dt})", f"T.eye({g.ri(1, 3)}, {g.ri(1, 4)}, device=D)")), {"eye"}
    if r == 5:
        return f"T.linspace({g.ri(-2, 0)}, {g.ri(1, 3)}, {g.ri(0, 5)}, device=D)", {"linspace"}
    a = g.pick(lambda t: t.dim() >= 2)
    if a is None:
        return None
    op = g.choice(("triu", "tril"))
    return g.choice((f"{a}.{op}()", f"{a}.{op}({g.ri(-2, 2)})", f"T.{op}({a}, {g.ri(-1, 1)})")), {op}


def _distinct(t, dim=None):
    """Whether ``t``'s values are distinct (along ``dim``): sort / topk / max indices are then unambiguous."""
    a = t.detach().double().numpy()
    if a.size == 0:
        return True
    if np.isnan(a).any():
        return False
    if dim is None or a.ndim == 0:
        return len(np.unique(a)) == a.size
    m = np.moveaxis(a, dim, -1).reshape(-1, a.shape[dim])
    return all(len(np.unique(r)) == len(r) for r in m)


def g_adv_index(g):
    a = g.pick(lambda t: t.dim() > 0)
    if a is None:
        return None
    t = g.env[a]
    n0 = t.shape[0]
    r = g.ri(0, 6)
    idx = f"C({_index_list(g, (g.ri(0, 3),), n0)!r}, dtype=T.int64)"
    if r == 0:
        return f"{a}[{idx}]", {"adv_index"}
    if r == 1:
        return f"{a}[{_index_list(g, (g.ri(1, 3),), n0)!r}]", {"adv_index"}
    if r == 2 and t.dim() >= 2:
        return f"{a}[:, C({_index_list(g, (g.ri(0, 3),), t.shape[1])!r}, dtype=T.int64)]", {"adv_index"}
    s = g.scalar()
    if not _pair_stable(t, _num(s)):
        return None
    if r == 3:
        return f"{a}[{a} > {_lit(s)}]", {"mask_index"}
    if r == 4:
        return g.choice((f"T.masked_select({a}, {a} <= {_lit(s)})", f"{a}.masked_select({a} != {_lit(s)})")), \
            {"masked_select"}
    if r == 5:
        return f"T.nonzero({a} > {_lit(s)})", {"nonzero"}
    return f"{a}[{idx}, ...]", {"adv_index"}


def g_adv_setitem(g):
    a = g.pick(lambda t: t.dim() > 0)
    if a is None:
        return None
    t = g.env[a]
    s = g.scalar()
    if g.chance(0.5):
        if not _pair_stable(t, _num(s)):
            return None
        return f"{a}[{a} < {_lit(s)}] = {_lit(g.scalar())}", {"mask_setitem"}, True
    idx = f"C({sorted(set(_index_list(g, (g.ri(1, 3),), t.shape[0])))!r}, dtype=T.int64)"
    return g.choice((f"{a}[{idx}] = {_lit(s)}", f"{a}.index_put_(({idx},), C({_lit(s)}))")), {"index_put"}, True


def g_sorting(g):
    a = g.pick()
    t = g.env[a]
    nd = t.dim()
    d = g.ri(-nd, nd - 1) if nd else 0
    size = t.shape[d % nd] if nd else 1
    r = g.ri(0, 5)
    distinct = _distinct(t, d % nd if nd else None)
    if r == 0:
        k = g.ri(0, size)
        which = g.choice(("values", "indices", "values")) if distinct else "values"
        largest = g.choice(("", ", largest=False"))
        return g.choice((f"{a}.topk({k}, {d}{largest}).{which}", f"T.topk({a}, {k}, dim={d}{largest})[{0 if which == 'values' else 1}]")), {"topk"}
    if r == 1:
        which = g.choice(("values", "indices")) if distinct else "values"
        desc = g.choice(("", ", descending=True"))
        return g.choice((f"{a}.sort({d}{desc}).{which}", f"T.sort({a}, {d}{desc})[{0 if which == 'values' else 1}]")), {"sort"}
    if r == 2:
        if not distinct:
            return None
        return g.choice((f"{a}.argsort({d})", f"T.argsort({a}, {d}, descending=True)")), {"argsort"}
    op = g.choice(("max", "min"))
    which = g.choice(("values", "indices")) if distinct else "values"
    keep = g.choice(("", ", keepdim=True"))
    return g.choice((f"{a}.{op}({d}{keep}).{which}", f"T.{op}({a}, {d}{keep})[{0 if which == 'values' else 1}]")), {op + "_dim"}


def _scatter_src_index(g, t, ax):
    """A source variable for scattering into ``t`` along ``ax`` and an index shape that fits both, or None."""
    nd = t.dim()
    src = g.pick(lambda u: u.dim() == nd and u.dtype == t.dtype)
    if src is None:
        return None
    su = g.env[src]
    shape = [g.ri(0, min(su.shape[k], t.shape[k] if k != ax else su.shape[k])) for k in range(nd)]
    if any(x == 0 for x in shape) and nd > 1:
        return None
    return src, shape


def g_scatter(g):
    a = g.pick(lambda t: t.dim() > 0)
    if a is None:
        return None
    t = g.env[a]
    nd = t.dim()
    d = g.ri(-nd, nd - 1)
    ax = d % nd
    r = g.ri(0, 4)
    if r == 3:
        n = g.ri(0, 3)
        src = g.pick(lambda u: u.dim() == nd and u.shape[ax] == n and all(u.shape[k] == t.shape[k] for k in range(nd) if k != ax) and u.dtype == t.dtype)
        if src is None:
            return None
        idx = f"C({_index_list(g, (n,), t.shape[ax])!r}, dtype=T.int64)"
        return g.choice((f"{a}.index_add({d}, {idx}, {src})", f"T.index_add({a}, {d}, {idx}, {src}, alpha=2)")), {"index_add"}
    if r == 4:
        k = g.ri(1, 4)
        return f"F.one_hot(C({_index_list(g, (g.ri(0, 3),), k)!r}), {g.choice((k, -1))})", {"one_hot"}
    picked = _scatter_src_index(g, t, ax)
    if picked is None:
        return None
    src, shape = picked
    idx = f"C({_index_list(g, tuple(shape), t.shape[ax])!r}, dtype=T.int64)"
    if r == 0:
        return g.choice((f"{a}.scatter_add({d}, {idx}, {src})", f"T.scatter_add({a}, {d}, {idx}, {src})")), {"scatter_add"}
    if r == 1:
        return f"{a}.scatter({d}, {idx}, {_lit(g.scalar())})", {"scatter"}
    return f"{a}.scatter({d}, {idx}, {src})", {"scatter"}


def g_norms(g):
    # non-empty inputs only: accel refuses group_norm / batch_norm / nll_loss of empty tensors (README)
    a = g.pick(lambda t: t.is_floating_point() and t.dim() >= 1 and t.numel() > 0)
    if a is None:
        return None
    t = g.env[a]
    n = t.shape[-1]
    r = g.ri(0, 6)
    eps = g.choice(("", ", eps=1e-3"))
    if r == 0:
        w = g.pick(lambda u: tuple(u.shape) == (n,) and u.dtype == t.dtype)
        wb = f", {w}" if w and g.chance(0.5) else ""
        if wb and g.chance(0.5):
            wb += f", {w}"
        return f"F.layer_norm({a}, ({n},){wb}{eps})", {"layer_norm"}
    if r == 1:
        w = g.pick(lambda u: tuple(u.shape) == (n,) and u.dtype == t.dtype)
        return (f"F.rms_norm({a}, ({n},), {w}{eps})" if w and g.chance(0.5) else f"F.rms_norm({a}, ({n},){eps})"), \
            {"rms_norm"}
    if r == 2 and t.dim() >= 2:
        c = t.shape[1]
        groups = [k for k in range(1, c + 1) if c % k == 0] or [1]
        return f"F.group_norm({a}, {g.choice(groups)}{eps})", {"group_norm"}
    if r == 3 and t.dim() >= 2:
        c = t.shape[1]
        rm = [g.ri(-4, 4) / 4 for _ in range(c)]
        rv = [g.ri(1, 8) / 4 for _ in range(c)]
        dt = str(t.dtype).replace("torch.", "T.")
        return f"F.batch_norm({a}, C({rm!r}, dtype={dt}), C({rv!r}, dtype={dt}), training=False{eps})", {"batch_norm"}
    if r == 4:
        return g.choice((f"T.logsumexp({a}, {g.dim(t)})", f"{a}.logsumexp({g.dim(t)}, keepdim=True)")), {"logsumexp"}
    if r == 5:
        b = g.pick(lambda u: u.dtype == t.dtype)
        c = g.pick(lambda u: u.dtype == t.dtype)
        return g.choice((f"T.addcmul({a}, {b}, {c}, value={_lit(g.scalar())})", f"{a}.addcdiv({b}, {c})",
                         f"T.lerp({a}, {b}, {g.choice((0.5, 0.25, 2.0))})")), {"addcmul"}
    if t.dim() != 2:
        return None
    nb, nc = t.shape
    tgt = f"C({_index_list(g, (nb,), nc)!r})"
    red = g.choice(("", ", reduction='sum'", ", reduction='none'"))
    if g.chance(0.5):
        ls = g.choice(("", ", label_smoothing=0.1"))
        return f"F.cross_entropy({a}, {tgt}{red}{ls})", {"cross_entropy"}
    ig = g.choice(("", ", ignore_index=0"))
    return f"F.nll_loss({a}.log_softmax(1), {tgt}{red}{ig})", {"nll_loss"}


OPS_GENERATORS = [(g_index, 8), (g_setitem, 4), (g_shape_ops, 10), (g_int_cast, 2), (g_select_mask, 8), (g_gather, 5),
                  (g_reduce2, 8), (g_activation, 5), (g_nn, 3), (g_factory, 5), (g_adv_index, 5), (g_adv_setitem, 3),
                  (g_sorting, 5), (g_scatter, 4), (g_norms, 6)]


# ---------------------------------------------------------------- the "ops2" suite's ops
def g_scatter_reduce(g):
    a = g.pick(lambda t: t.dim() > 0 and t.dtype != g.torch.bool)
    if a is None:
        return None
    t = g.env[a]
    nd = t.dim()
    d = g.ri(-nd, nd - 1)
    ax = d % nd
    picked = _scatter_src_index(g, t, ax)
    if picked is None:
        return None
    src, shape = picked
    idt = g.choice(("T.int64", "T.int32"))
    idx = f"C({_index_list(g, tuple(shape), t.shape[ax])!r}, dtype={idt})"
    tags = {"index_int32"} if idt == "T.int32" else set()
    r = g.ri(0, 5)
    if r == 0:
        return f"{a}.scatter({d}, {idx}, {src}, reduce={g.choice(('add', 'multiply'))!r})", tags | {"scatter_reduce_legacy"}
    if r == 1:
        return f"{a}.scatter({d}, {idx}, {_lit(g.scalar())}, reduce={g.choice(('add', 'multiply'))!r})", \
            tags | {"scatter_reduce_legacy"}
    if r in (2, 3):
        how = g.choice(("sum", "prod", "mean", "amax", "amin"))
        inc = g.choice(("", ", include_self=False", ", include_self=True"))
        form = g.choice((f"{a}.scatter_reduce({d}, {idx}, {src}, {how!r}{inc})",
                         f"T.scatter_reduce({a}, {d}, {idx}, {src}, {how!r}{inc})",
                         f"{a}.clone().scatter_reduce_({d}, {idx}, {src}, {how!r}{inc})"))
        return form, tags | {"scatter_reduce"}
    if r == 4:
        return g.choice((f"{a}.scatter_add({d}, {idx}, {src})", f"{a}.scatter({d}, {idx}, {src})")), tags | {"scatter"}
    gshape = [g.ri(0, t.shape[k]) if k != ax else g.ri(0, 3) for k in range(nd)]
    return f"{a}.gather({d}, C({_index_list(g, tuple(gshape), t.shape[ax])!r}, dtype={idt}))", tags | {"gather"}


def g_cross_entropy2(g):
    a = g.pick(lambda t: t.is_floating_point() and 1 <= t.dim() <= 3)
    if a is None:
        return None
    t = g.env[a]
    cdim = 0 if t.dim() == 1 else 1
    nc = t.shape[cdim]
    red = g.choice(("", ", reduction='sum'", ", reduction='none'", ", reduction='mean'"))
    ls = g.choice(("", "", ", label_smoothing=0.1", ", label_smoothing=0.3", ", label_smoothing=-0.2",
                   ", label_smoothing=1.0", ", label_smoothing=1.5"))
    w = ""
    if g.chance(0.5):
        w = f", weight=C({[g.ri(1, 8) / 4 for _ in range(nc)]!r}, dtype={str(t.dtype).replace('torch.', 'T.')})"
    if g.chance(0.5):
        p = g.pick(lambda u: tuple(u.shape) == tuple(t.shape) and u.is_floating_point())
        if p is None:
            return None
        tgt = g.choice((p, f"{p}.softmax({cdim})", f"{p}.abs()"))
        return f"F.cross_entropy({a}, {tgt}{w}{red}{ls})", {"cross_entropy_prob"}
    if t.numel() == 0 or nc == 0:
        return None
    tshape = tuple(t.shape[:cdim]) + tuple(t.shape[cdim + 1:]) if t.dim() > 1 else ()
    tgt = f"C({_index_list(g, tshape, nc)!r})"
    ig = g.choice(("", "", ", ignore_index=0", ", ignore_index=1"))
    return f"F.cross_entropy({a}, {tgt}{w}{red}{ls}{ig})", {"cross_entropy_ls_weight" if w and ls else "cross_entropy"}


OPS2_GENERATORS = [(g_scatter_reduce, 40), (g_cross_entropy2, 40)]


_SHAPES = [(), (0,), (1,), (3,), (2, 3), (1, 3), (2, 1), (3, 0), (2, 3, 2), (2, 1, 3), (1, 2, 2, 2)]


def random_spec(rng):
    """2-4 inputs over one base shape: the shape itself, a suffix, or with dims set to 1 (broadcastable)."""
    base = _SHAPES[int(rng.integers(0, len(_SHAPES)))]
    items = []
    dts, w = zip(*_DT_WEIGHTS)
    w = np.array(w, float)
    for _ in range(int(rng.integers(1, 5))):
        r = rng.random()
        if r < 0.45:
            shape = base
        elif r < 0.7:
            shape = base[int(rng.integers(0, len(base) + 1)):]
        elif r < 0.9:
            shape = tuple(1 if rng.random() < 0.5 else s for s in base)
        else:
            shape = _SHAPES[int(rng.integers(0, len(_SHAPES)))]
        dt = dts[int(rng.choice(len(dts), p=w / w.sum()))]
        pos = "p" if dt not in ("b", "u8") and rng.random() < 0.25 else ""
        items.append(f"{pos}{dt}[{','.join(map(str, shape))}]")
    return " ".join(items)


def generate(torch, index, suite="core"):
    """Program ``index`` of ``suite``: (spec, seed, lines, tags, expected_exception_line or None)."""
    ops = suite != "core"
    rng = np.random.default_rng({"core": 20170, "ops": 920170, "ops2": 1920170}[suite] + index)
    spec = random_spec(rng)
    seed = 5000 + index
    g = Gen(torch, rng, index)
    for i, a in enumerate(make_inputs(spec, seed)):
        g.env[f"x{i}"] = torch.from_numpy(a.copy())
    length = int(rng.integers(3, 15))
    allow_error = rng.random() < 0.15
    gens, weights = zip(*(GENERATORS + OPS_GENERATORS + (OPS2_GENERATORS if suite == "ops2" else []) if ops
                          else GENERATORS))
    weights = np.array(weights, float)
    if not ops and rng.random() < 0.4:              # programs of the ops accel.lazy had before issue 17 only
        weights[[k for k, f in enumerate(gens) if f in (g_inplace, g_inplace_other, g_compare)]] = 0
    p = weights / weights.sum()
    exc_line = None
    tries = 0
    while len(g.lines) < length and tries < 200:
        tries += 1
        if g.lines and g.lines[-1] != "M()" and g.chance(0.12):
            g.lines.append("M()")
            continue
        gen = gens[int(rng.choice(len(gens), p=p))]
        nv0 = g.nv
        res = gen(g)
        if res is None:
            g.nv = nv0
            continue
        if len(res) == 3:
            line, tags, stmt = res
        else:
            expr, tags = res
            line = f"v{g.nv} = {expr}"
            g.nv += 1
        try:
            with np.errstate(all="ignore"):
                exec(line, g.env)
        except Exception:            # noqa: BLE001 (torch refuses it)
            g.nv = nv0
            for k in [k for k in g.env if _VAR.match(k) and k[0] == "v" and int(k[1:]) >= nv0]:
                del g.env[k]
            if allow_error and len(g.lines) >= 2:
                g.lines.append(line)
                g.tags |= tags
                exc_line = len(g.lines) - 1
                break
            continue
        g.lines.append(line)
        g.tags |= tags
    if "M()" in g.lines:
        g.tags.add("mark_step")
    names = _tensor_vars(g.env)
    eager = {"names": names, "values": [encode(g.env[n].numpy()) for n in names]}
    return spec, seed, g.lines, g.tags, exc_line, eager


def _dtypes_of(rec):
    return sorted({v[0] for v in rec["values"] if isinstance(v, list)})


def record(api, spec, seed, lines):
    arrays = make_inputs(spec, seed)
    api.mark()
    return execute(api, lines, arrays)


def build(count, suite="core"):
    api = TorchAPI()
    torch = api.torch
    torch.manual_seed(0)
    import collections
    programs = []
    dropped = collections.Counter()
    index = 0
    while len(programs) < count:
        spec, seed, lines, tags, exc_line, eager = generate(torch, index, suite)
        index += 1
        try:
            rec = record(api, spec, seed, lines)
            if suite != "core":
                # LTC's hashes can depend on what ran before (its scalar device-data cache): the program is
                # recorded again at once, warm, and dropped if the two records differ (accel dedupes scalars
                # as a warm cache does)
                again = record(api, spec, seed, lines)
        except Exception:            # noqa: BLE001 (torch's LTC failed outside a line, e.g. at execution)
            dropped["ltc_raised_outside_a_line"] += 1
            continue
        if suite != "core" and again["steps"] != rec["steps"]:
            dropped["ltc_depends_on_history"] += 1
            continue
        got = None if rec["exc"] is None else rec["exc"][0]
        if got != exc_line:          # LTC refuses a different line than eager mode: not a valid program
            dropped["ltc_refused_another_line"] += 1
            continue
        if exc_line is not None and "amax(" in lines[exc_line]:
            # torch runs amax's CPU fallback on computed inputs, then refuses: the inputs got synced by the
            # failed call (accel refuses first and changes nothing)
            dropped["amax_refused_after_sync"] += 1
            continue
        if suite != "core" and exc_line is not None and \
                record(api, spec, seed, lines[:exc_line])["steps"][-1] != rec["steps"][-1]:
            # the same for any refused line that changed the lazy state first (a CPU fallback that syncs
            # its inputs, then finds their dtype unsupported: vector_norm / argmax / dot of bool or ints)
            dropped["refused_after_changing_state"] += 1
            continue
        rtol = program_rtol(dict(rec, inputs=spec))
        if rec["names"] != eager["names"] or not all(
                _same_value(e, v, rtol) for e, v in zip(eager["values"], rec["values"])):
            dropped["ltc_differs_from_eager"] += 1      # torch disagrees with itself: no oracle
            continue
        if rec["exc"] is not None:
            tags.add("exception")
        tags.update("dtype:" + d for d in _dtypes_of(rec))
        programs.append({"name": f"{dict(core='p', ops='q', ops2='r')[suite]}{index - 1}", "inputs": spec, "seed": seed, "code": lines,
                         "tags": sorted(tags), **rec})
    return {"torch_version": torch.__version__, "generator": "tools/gen_lazy_fuzz.py", "suite": suite, "dropped": dropped,
            "programs": programs}


def write_corpus(doc, path):
    data = json.dumps(doc, separators=(",", ":")).encode()
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
        f.write(data)


# ---------------------------------------------------------------- minimising (needs torch and a worker)
WORKER = r'''
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("fuzz", sys.argv[1])
fuzz = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fuzz)
import accel.lazy as L
for line in sys.stdin:
    p = json.loads(line)
    print(json.dumps(fuzz.replay(L, [p]).get(p["name"], [])), flush=True)
'''


class Worker:
    """accel replays in another interpreter (accel's venv), one program per request."""

    def __init__(self, python, backend):
        import os
        import subprocess
        import tempfile
        env = dict(os.environ, ACCEL_BACKEND=backend)
        self.proc = subprocess.Popen([python, "-c", WORKER, str(pathlib.Path(__file__).resolve())], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=tempfile.gettempdir())

    def fails(self, program):
        self.proc.stdin.write(json.dumps(program) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())


def _shrunk_specs(spec):
    items = spec.split()
    for i, item in enumerate(items):
        pos, dt, shape = parse_spec(item)
        for k in range(len(shape)):
            for new in (shape[:k] + shape[k + 1:], shape[:k] + (1,) + shape[k + 1:]):
                if new != shape:
                    yield " ".join(items[:i] + [f"{pos}{dt}[{','.join(map(str, new))}]"] + items[i + 1:])


def minimise(api, worker, program):
    """Drop lines, then shrink input shapes, while accel's first failure category stays the same."""
    cat = worker.fails(program)[0][0]

    def still(spec, lines):
        try:
            rec = record(api, spec, program["seed"], lines)
        except Exception:            # noqa: BLE001
            return None
        p = dict(program, inputs=spec, code=lines, **rec)
        f = worker.fails(p)
        return p if f and f[0][0] == cat else None

    best = program
    changed = True
    while changed:
        changed = False
        k = len(best["code"]) - 1
        while k >= 0:
            p = still(best["inputs"], best["code"][:k] + best["code"][k + 1:])
            if p is not None:
                best, changed = p, True
            k -= 1
        for spec in _shrunk_specs(best["inputs"]):
            p = still(spec, best["code"])
            if p is not None:
                best, changed = p, True
                break
    return best


def main(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?")
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--suite", choices=sorted(CORPORA), default="core")
    ap.add_argument("--minimise", nargs="*")
    ap.add_argument("--backend", default="python")
    ap.add_argument("--venv-python", default="python3")
    args = ap.parse_args(argv)
    args.path = args.path or str(CORPORA[args.suite])
    if args.minimise is not None:
        doc = load_corpus(args.path)
        api = TorchAPI()
        worker = Worker(args.venv_python, args.backend)
        byname = {p["name"]: p for p in doc["programs"]}
        names = args.minimise or sorted(worker_fails_all(worker, doc["programs"]))
        for n in names:
            p = minimise(api, worker, byname[n])
            print(json.dumps({"name": n, "inputs": p["inputs"], "seed": p["seed"], "code": p["code"],
                              "fails": worker.fails(p)}))
        return
    doc = build(args.count, args.suite)
    write_corpus(doc, args.path)
    print(f"wrote {len(doc['programs'])} programs to {args.path} ({doc['dropped']} dropped)")


def worker_fails_all(worker, programs):
    return [p["name"] for p in programs if worker.fails(p)]


if __name__ == "__main__":
    main(sys.argv[1:])
