"""A reference for PTX instructions, written from the PTX ISA manual (instruction descriptions, "Floating
Point Instructions", "Rounding Modifiers", "Half Precision"), independent of the engine's C code: exact
rational arithmetic (fractions.Fraction) rounded once to the destination format in the instruction's
rounding mode; integers in Python's unbounded ints masked to the type.

Each vector set (VARIANTS) names an instruction variant, the PTX body that runs it on operands %a %b %c
into %d, the operand and result types, the operands (as bit patterns) and a function giving the expected
result: bits, NAN (any NaN of the result type: the ISA leaves most NaN payloads unspecified) or
Approx(value, rel, abs) for the .approx instructions with their documented error bounds.

The same vectors are what tools/gen_ptx_golden.py records on a real GPU (tests/data/ptx_golden/*.json);
tests/test_ptx_conformance.py checks the engine against this reference and against the goldens when
they exist.
"""
import math
import struct
from fractions import Fraction

NAN = "nan"


class Approx:
    def __init__(self, value, rel=0.0, abs_=0.0):
        self.value, self.rel, self.abs = value, rel, abs_

    def __repr__(self):
        return f"Approx({self.value!r}, rel={self.rel}, abs={self.abs})"


# ------------------------------------------------------------------------------------------- formats

FMT = {  # precision (with the hidden bit), min normal exponent, max exponent, exponent bits, width
    "f16": (11, -14, 15, 5, 16), "bf16": (8, -126, 127, 8, 16),
    "f32": (24, -126, 127, 8, 32), "f64": (53, -1022, 1023, 11, 64),
}
RN, RZ, RM, RP = "rn", "rz", "rm", "rp"


def decode(bits, fmt):
    """('nan',) | ('inf', sign) | ('num', sign, Fraction magnitude)."""
    p, emin, emax, eb, w = FMT[fmt]
    s = (bits >> (w - 1)) & 1
    e = (bits >> (p - 1)) & ((1 << eb) - 1)
    f = bits & ((1 << (p - 1)) - 1)
    if e == (1 << eb) - 1:
        return ("nan",) if f else ("inf", s)
    if e == 0:
        return ("num", s, Fraction(f) * Fraction(2) ** (emin - p + 1))
    return ("num", s, Fraction((1 << (p - 1)) | f) * Fraction(2) ** (e - (1 << (eb - 1)) + 1 - p + 1))


def encode(v, fmt):
    p, emin, emax, eb, w = FMT[fmt]
    if v[0] == "nan":
        return NAN
    if v[0] == "inf":
        return (v[1] << (w - 1)) | (((1 << eb) - 1) << (p - 1))
    s, mag = v[1], v[2]
    if mag == 0:
        return s << (w - 1)
    e = floor_log2(mag)
    if e < emin:   # subnormal
        return (s << (w - 1)) | int(mag / Fraction(2) ** (emin - p + 1))
    f = int(mag / Fraction(2) ** (e - p + 1)) - (1 << (p - 1))
    return (s << (w - 1)) | ((e + (1 << (eb - 1)) - 1) << (p - 1)) | f


def floor_log2(x):
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    if Fraction(2) ** (e + 1) <= x:
        e += 1
    return e


def max_finite(fmt):
    p, emin, emax, _, _ = FMT[fmt]
    return (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax


def round_to(s, mag, fmt, mode):
    """The signed value s, mag rounded to fmt in mode: ('num', s, m) or ('inf', s)."""
    p, emin, emax, _, _ = FMT[fmt]
    if mag == 0:
        return ("num", s, Fraction(0))
    e = max(floor_log2(mag), emin)
    quantum = Fraction(2) ** (e - p + 1)
    q = mag / quantum
    n = q.numerator // q.denominator
    frac = q - n
    up = {RZ: False, RN: frac > Fraction(1, 2) or (frac == Fraction(1, 2) and n % 2 == 1),
          RM: bool(s) and frac > 0, RP: (not s) and frac > 0}[mode]
    r = (n + (1 if up else 0)) * quantum
    if r > max_finite(fmt):
        to_inf = {RN: True, RZ: False, RM: bool(s), RP: not s}[mode]
        return ("inf", s) if to_inf else ("num", s, max_finite(fmt))
    return ("num", s, r)


def signed(v):
    """A decoded number as a signed Fraction."""
    return -v[2] if v[1] else v[2]


def from_signed(x, zero_sign=0):
    return ("num", 1 if x < 0 else (zero_sign if x == 0 else 0), abs(x))


def ftz_in(v, fmt):
    if v[0] == "num" and v[2] != 0 and v[2] < Fraction(2) ** FMT[fmt][1]:
        return ("num", v[1], Fraction(0))
    return v


def ftz_out(v, fmt):
    return ftz_in(v, fmt)


def sat(v):
    if v[0] == "nan":
        return ("num", 0, Fraction(0))
    if v[0] == "inf":
        return ("num", 0, Fraction(0 if v[1] else 1))
    if v[1] or v[2] == 0:
        return ("num", 0, Fraction(0))
    return ("num", 0, min(v[2], Fraction(1)))


# --------------------------------------------------------------------------- floating-point operations

def f_add(a, b, mode, fmt):
    if a[0] == "nan" or b[0] == "nan":
        return ("nan",)
    if a[0] == "inf" and b[0] == "inf":
        return a if a[1] == b[1] else ("nan",)
    if a[0] == "inf":
        return a
    if b[0] == "inf":
        return b
    x = signed(a) + signed(b)
    if x == 0:
        zs = a[1] if (a[2] == 0 and b[2] == 0 and a[1] == b[1]) else (1 if mode == RM else 0)
        return ("num", zs, Fraction(0))
    return round_to(1 if x < 0 else 0, abs(x), fmt, mode)


def f_neg(a):
    if a[0] == "nan":
        return a
    return (a[0], 1 - a[1]) + tuple(a[2:])


def f_mul(a, b, mode, fmt):
    if a[0] == "nan" or b[0] == "nan":
        return ("nan",)
    s = a[1] ^ b[1]
    if a[0] == "inf" or b[0] == "inf":
        if (a[0] == "num" and a[2] == 0) or (b[0] == "num" and b[2] == 0):
            return ("nan",)
        return ("inf", s)
    return round_to(s, a[2] * b[2], fmt, mode)


def f_fma(a, b, c, mode, fmt):
    if "nan" in (a[0], b[0], c[0]):
        return ("nan",)
    s = a[1] ^ b[1]
    if a[0] == "inf" or b[0] == "inf":
        if (a[0] == "num" and a[2] == 0) or (b[0] == "num" and b[2] == 0):
            return ("nan",)
        if c[0] == "inf" and c[1] != s:
            return ("nan",)
        return ("inf", s)
    if c[0] == "inf":
        return c
    prod = a[2] * b[2]
    x = (-prod if s else prod) + signed(c)
    if x == 0:
        if prod == 0 and c[2] == 0 and s == c[1]:
            return ("num", s, Fraction(0))
        return ("num", 1 if mode == RM else 0, Fraction(0))
    return round_to(1 if x < 0 else 0, abs(x), fmt, mode)


def f_div(a, b, mode, fmt):
    if a[0] == "nan" or b[0] == "nan":
        return ("nan",)
    s = a[1] ^ b[1]
    if a[0] == "inf":
        return ("nan",) if b[0] == "inf" else ("inf", s)
    if b[0] == "inf":
        return ("num", s, Fraction(0))
    if b[2] == 0:
        return ("nan",) if a[2] == 0 else ("inf", s)
    return round_to(s, a[2] / b[2], fmt, mode)


def f_sqrt(a, mode, fmt):
    if a[0] == "nan":
        return a
    if a[0] == "inf":
        return ("nan",) if a[1] else a
    if a[2] == 0:
        return a
    if a[1]:
        return ("nan",)
    p, emin, emax, _, _ = FMT[fmt]
    m = a[2]
    e = max(floor_log2(m) // 2, emin)
    while True:   # e = floor(log2(sqrt(m))) clamped
        if Fraction(2) ** (2 * (e + 1)) <= m:
            e += 1
        elif Fraction(2) ** (2 * e) > m and e > emin:
            e -= 1
        else:
            break
    quantum = Fraction(2) ** (e - p + 1)
    t = m / (quantum * quantum)
    n = math.isqrt(t.numerator // t.denominator)
    exact = Fraction(n * n) == t
    above_half = t > Fraction(2 * n + 1, 2) ** 2
    up = {RZ: False, RM: False, RN: above_half, RP: not exact}[mode]
    return ("num", 0, (n + (1 if up else 0)) * quantum)


def f_minmax(a, b, is_max):
    if a[0] == "nan" and b[0] == "nan":
        return ("nan",)
    if a[0] == "nan":
        return b
    if b[0] == "nan":
        return a

    def key(v):
        if v[0] == "inf":
            return (Fraction(-1 if v[1] else 1) * 10 ** 400, 0)
        return (signed(v), -v[1] if True else 0)   # -0 < +0
    ka, kb = key(a), key(b)
    if is_max:
        return a if ka >= kb else b
    return a if ka <= kb else b


# ------------------------------------------------------------------------------------------ integers

def mask(bits):
    return (1 << bits) - 1


def sx(v, bits):
    v &= mask(bits)
    return v - (1 << bits) if v >> (bits - 1) else v


# ------------------------------------------------------------------------------------------- vectors

F32_EDGE = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff, 0x00800000, 0x80800000, 0x3f800000,
            0xbf800000, 0x3fc00000, 0x3f800001, 0x33800000, 0x33800001, 0x34000000, 0x4b800000, 0x7f7fffff,
            0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0x7fa00001, 0x40490fdb, 0xc0000000, 0x3eaaaaab]
F64_EDGE = [0x0, 0x8000000000000000, 0x1, 0x000fffffffffffff, 0x0010000000000000, 0x3ff0000000000000,
            0xbff0000000000000, 0x3ff8000000000000, 0x3ff0000000000001, 0x3ca0000000000000, 0x3ca0000000000001,
            0x7fefffffffffffff, 0xffefffffffffffff, 0x7ff0000000000000, 0xfff0000000000000, 0x7ff8000000000000,
            0x400921fb54442d18, 0x3fd5555555555555]
F16_EDGE = [0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x3e00, 0x3c01, 0x1400, 0x1401, 0x7bff,
            0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x4248, 0x3555]
BF16_EDGE = [0x0000, 0x8000, 0x0001, 0x0080, 0x3f80, 0xbf80, 0x3fc0, 0x3f81, 0x3b80, 0x7f7f, 0xff7f, 0x7f80,
             0xff80, 0x7fc0, 0x4049, 0x3eab]
S32_EDGE = [0, 1, 2, 3, 7, 31, 32, 33, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffe, 0x12345678, 0x80000001,
            0x0000ffff, 0xdeadbeef]
S64_EDGE = [0, 1, 63, 64, 65, 0x7fffffffffffffff, 0x8000000000000000, 0xffffffffffffffff, 0x123456789abcdef0,
            0x00000000ffffffff, 0x0000000100000000]
S16_EDGE = [0, 1, 15, 16, 0x7fff, 0x8000, 0xffff, 0x1234]
SHIFTS = [0, 1, 7, 15, 16, 31, 32, 33, 63, 64, 65, 255, 256, 0xffffffff]
F32_FMA_C = [0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x33800000, 0x7f800000, 0x7fc00000, 0x00000001,
             0x7f7fffff, 0xb3800000]


def pairs(xs, ys=None):
    ys = xs if ys is None else ys
    return [(x, y) for x in xs for y in ys]


def triples(xs, ys, zs):
    return [(x, y, z) for x in xs for y in ys for z in zs]


class V:
    """One instruction variant's vectors."""

    def __init__(self, name, body, ta, td, inputs, ref, tb=None, tc=None):
        self.name, self.body, self.td, self.inputs, self.ref = name, body, td, inputs, ref
        self.ta = ta
        self.tb = tb or ta
        self.tc = tc or ta

    def expected(self):
        if getattr(self, "warp", False):   # the reference sees a whole warp's operands at once
            out = []
            for w in range(0, len(self.inputs), 32):
                out += self.ref(self.inputs[w:w + 32])
            return out
        return [self.ref(*ops) for ops in self.inputs]


def _fp(fmt, op, mode, ftz=False, satur=False):
    def ref(*ops):
        vs = [decode(x, fmt) for x in ops]
        if ftz:
            vs = [ftz_in(v, fmt) for v in vs]
        r = op(*vs, mode, fmt)
        if satur:
            r = sat(r)
        if ftz and r[0] == "num":
            r = ftz_out(r, fmt)
        return encode(r, fmt)
    return ref


def float_variants():
    out = []
    for fmt, edge in (("f32", F32_EDGE), ("f64", F64_EDGE)):
        for mode in (RN, RZ, RM, RP):
            out.append(V(f"add.{mode}.{fmt}", f"add.{mode}.{fmt} %d, %a, %b;", fmt, fmt, pairs(edge), _fp(fmt, f_add, mode)))
            out.append(V(f"sub.{mode}.{fmt}", f"sub.{mode}.{fmt} %d, %a, %b;", fmt, fmt, pairs(edge),
                         _fp(fmt, lambda a, b, m, f: f_add(a, f_neg(b), m, f), mode)))
            out.append(V(f"mul.{mode}.{fmt}", f"mul.{mode}.{fmt} %d, %a, %b;", fmt, fmt, pairs(edge), _fp(fmt, f_mul, mode)))
            out.append(V(f"div.{mode}.{fmt}", f"div.{mode}.{fmt} %d, %a, %b;", fmt, fmt, pairs(edge), _fp(fmt, f_div, mode)))
            out.append(V(f"sqrt.{mode}.{fmt}", f"sqrt.{mode}.{fmt} %d, %a;", fmt, fmt, [(x,) for x in edge], _fp(fmt, f_sqrt, mode)))
            cs = F32_FMA_C if fmt == "f32" else F64_EDGE[::3]
            out.append(V(f"fma.{mode}.{fmt}", f"fma.{mode}.{fmt} %d, %a, %b, %c;", fmt, fmt, triples(edge[::2], edge, cs),
                         _fp(fmt, f_fma, mode)))
    out.append(V("add.rn.ftz.f32", "add.rn.ftz.f32 %d, %a, %b;", "f32", "f32", pairs(F32_EDGE), _fp("f32", f_add, RN, ftz=True)))
    out.append(V("mul.rz.ftz.f32", "mul.rz.ftz.f32 %d, %a, %b;", "f32", "f32", pairs(F32_EDGE), _fp("f32", f_mul, RZ, ftz=True)))
    out.append(V("fma.rn.ftz.sat.f32", "fma.rn.ftz.sat.f32 %d, %a, %b, %c;", "f32", "f32", triples(F32_EDGE[::2], F32_EDGE, F32_FMA_C),
                 _fp("f32", f_fma, RN, ftz=True, satur=True)))
    out.append(V("add.sat.f32", "add.sat.f32 %d, %a, %b;", "f32", "f32", pairs(F32_EDGE), _fp("f32", f_add, RN, satur=True)))
    for fmt, edge in (("f32", F32_EDGE), ("f64", F64_EDGE)):
        out.append(V(f"rcp.rn.{fmt}", f"rcp.rn.{fmt} %d, %a;", fmt, fmt, [(x,) for x in edge],
                     _fp(fmt, lambda a, m, f: f_div(("num", 0, Fraction(1)), a, m, f), RN)))
        out.append(V(f"min.{fmt}", f"min.{fmt} %d, %a, %b;", fmt, fmt, pairs(edge),
                     lambda a, b, fmt=fmt: encode(f_minmax(decode(a, fmt), decode(b, fmt), False), fmt)))
        out.append(V(f"max.{fmt}", f"max.{fmt} %d, %a, %b;", fmt, fmt, pairs(edge),
                     lambda a, b, fmt=fmt: encode(f_minmax(decode(a, fmt), decode(b, fmt), True), fmt)))
        w = FMT[fmt][4]
        out.append(V(f"abs.{fmt}", f"abs.{fmt} %d, %a;", fmt, fmt, [(x,) for x in edge],
                     lambda a, fmt=fmt, w=w: NAN if decode(a, fmt)[0] == "nan" else a & mask(w - 1)))
        out.append(V(f"neg.{fmt}", f"neg.{fmt} %d, %a;", fmt, fmt, [(x,) for x in edge],
                     lambda a, fmt=fmt, w=w: NAN if decode(a, fmt)[0] == "nan" else a ^ (1 << (w - 1))))
        out.append(V(f"copysign.{fmt}", f"copysign.{fmt} %d, %a, %b;", fmt, fmt, pairs(edge),
                     lambda a, b, fmt=fmt, w=w: NAN if decode(b, fmt)[0] == "nan" else (b & mask(w - 1)) | (a & (1 << (w - 1)))))
        for cls, fn in (("finite", lambda v: v[0] == "num"), ("infinite", lambda v: v[0] == "inf"),
                        ("number", lambda v: v[0] != "nan"), ("notanumber", lambda v: v[0] == "nan"),
                        ("normal", lambda v, fmt=fmt: v[0] == "num" and v[2] >= Fraction(2) ** FMT[fmt][1]),
                        ("subnormal", lambda v, fmt=fmt: v[0] == "num" and 0 < v[2] < Fraction(2) ** FMT[fmt][1])):
            out.append(V(f"testp.{cls}.{fmt}", f"testp.{cls}.{fmt} %p1, %a; selp.u32 %d, 1, 0, %p1;", fmt, "u32",
                         [(x,) for x in edge], lambda a, fn=fn, fmt=fmt: int(fn(decode(a, fmt)))))
    # comparisons
    cmps = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y, "le": lambda x, y: x <= y,
            "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}
    for fmt, edge in (("f32", F32_EDGE), ("f64", F64_EDGE)):
        for name, fn in cmps.items():
            for unordered in (False, True):
                c = name + ("u" if unordered else "")

                def ref(a, b, fn=fn, unordered=unordered, fmt=fmt):
                    x, y = decode(a, fmt), decode(b, fmt)
                    if x[0] == "nan" or y[0] == "nan":
                        return int(unordered)
                    return int(fn(_key(x), _key(y)))
                out.append(V(f"setp.{c}.{fmt}", f"setp.{c}.{fmt} %p1, %a, %b; selp.u32 %d, 1, 0, %p1;", fmt, "u32", pairs(edge), ref))
        for c in ("ne", "lt", "neu", "ge"):
            fn = {"ne": lambda x, y: x != y, "lt": lambda x, y: x < y, "neu": lambda x, y: x != y, "ge": lambda x, y: x >= y}[c]

            def sref(a, b, fn=fn, c=c, fmt=fmt, one=0xffffffff):
                x, y = decode(a, fmt), decode(b, fmt)
                if x[0] == "nan" or y[0] == "nan":
                    return one if c.endswith("u") else 0
                return one if fn(_key(x), _key(y)) else 0
            out.append(V(f"set.{c}.u32.{fmt}", f"set.{c}.u32.{fmt} %d, %a, %b;", fmt, "u32", pairs(edge), sref))
            out.append(V(f"set.{c}.f32.{fmt}", f"set.{c}.f32.{fmt} %d, %a, %b;", fmt, "f32", pairs(edge),
                         lambda a, b, sref=sref: 0x3f800000 if sref(a, b) else 0))
        out.append(V(f"setp.nan.{fmt}", f"setp.nan.{fmt} %p1, %a, %b; selp.u32 %d, 1, 0, %p1;", fmt, "u32", pairs(edge),
                     lambda a, b, fmt=fmt: int(decode(a, fmt)[0] == "nan" or decode(b, fmt)[0] == "nan")))
    # set with a half destination (1.0 / 0.0 in that format) and half operands: numba's fp16 comparisons
    for fmt, edge, one in (("f16", F16_EDGE, 0x3c00), ("bf16", BF16_EDGE, 0x3f80)):
        for c in ("eq", "ne", "lt", "ge", "neu", "gtu"):
            fn = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
                  "ge": lambda x, y: x >= y, "neu": lambda x, y: x != y, "gtu": lambda x, y: x > y}[c]

            def href(a, b, fn=fn, c=c, fmt=fmt, one=one):
                x, y = decode(a, fmt), decode(b, fmt)
                if x[0] == "nan" or y[0] == "nan":
                    return one if c.endswith("u") else 0
                return one if fn(_key(x), _key(y)) else 0
            out.append(V(f"set.{c}.{fmt}.{fmt}", f"set.{c}.{fmt}.{fmt} %d, %a, %b;", fmt, fmt, pairs(edge), href))
            out.append(V(f"set.{c}.u32.{fmt}", f"set.{c}.u32.{fmt} %d, %a, %b;", fmt, "u32", pairs(edge),
                         lambda a, b, href=href: 0xffffffff if href(a, b) else 0))
    return out


def _key(v):
    if v[0] == "inf":
        return Fraction(-1 if v[1] else 1) * 10 ** 400
    return signed(v)


def approx_variants():
    out = []
    xs = [0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x40490fdb, 0xc0490fdb, 0x3f000000, 0x41200000,
          0xc1200000, 0x42c80000, 0x3dcccccd, 0x40000000, 0x00800000, 0x7f800000, 0xff800000, 0x7fc00000]

    def f(bits):
        return struct.unpack("<f", struct.pack("<I", bits))[0]

    def mk(fn, rel, abs_, nonneg=False, pos_only=False):
        def ref(a):
            x = f(a)
            if math.isnan(x):
                return NAN
            try:
                y = fn(x)
            except (ValueError, OverflowError, ZeroDivisionError):
                return NAN if not (pos_only and x == 0) else Approx(float("-inf"))
            if isinstance(y, float) and math.isnan(y):
                return NAN
            return Approx(y, rel, abs_)
        return ref
    # documented bounds (PTX ISA, each instruction's "Description")
    out.append(V("ex2.approx.f32", "ex2.approx.f32 %d, %a;", "f32", "f32", [(x,) for x in xs],
                 mk(lambda x: math.inf if x == math.inf else 0.0 if x == -math.inf else 2.0 ** x, 2 ** -22, 0)))
    out.append(V("lg2.approx.f32", "lg2.approx.f32 %d, %a;", "f32", "f32",
                 [(x,) for x in xs if f(x) > 0 or math.isnan(f(x))],
                 mk(lambda x: math.inf if x == math.inf else math.log2(x), 0, 2 ** -22.6)))
    trig = [x for x in xs if abs(f(x)) <= math.pi + 1e-6 or math.isnan(f(x))]
    out.append(V("sin.approx.f32", "sin.approx.f32 %d, %a;", "f32", "f32", [(x,) for x in trig], mk(math.sin, 0, 2 ** -20.5)))
    out.append(V("cos.approx.f32", "cos.approx.f32 %d, %a;", "f32", "f32", [(x,) for x in trig], mk(math.cos, 0, 2 ** -20.5)))
    out.append(V("rsqrt.approx.f32", "rsqrt.approx.f32 %d, %a;", "f32", "f32",
                 [(x,) for x in xs if f(x) > 0 and math.isfinite(f(x))], mk(lambda x: 1 / math.sqrt(x), 2 ** -22.9, 0)))
    out.append(V("sqrt.approx.f32", "sqrt.approx.f32 %d, %a;", "f32", "f32",
                 [(x,) for x in xs if f(x) >= 0 and math.isfinite(f(x))], mk(math.sqrt, 2 ** -23, 0)))
    out.append(V("rcp.approx.f32", "rcp.approx.f32 %d, %a;", "f32", "f32",
                 [(x,) for x in xs if f(x) != 0 and math.isfinite(f(x))], mk(lambda x: 1 / x, 2 ** -23, 0)))
    out.append(V("tanh.approx.f32", "tanh.approx.f32 %d, %a;", "f32", "f32", [(x,) for x in xs if math.isfinite(f(x))],
                 mk(math.tanh, 2 ** -10.987, 0)))
    return out


def int_variants():
    out = []
    specs = {"s32": (32, True, S32_EDGE), "u32": (32, False, S32_EDGE), "s64": (64, True, S64_EDGE),
             "u64": (64, False, S64_EDGE), "s16": (16, True, S16_EDGE), "u16": (16, False, S16_EDGE)}
    for t, (w, sg, edge) in specs.items():
        val = (lambda x, w=w, sg=sg: sx(x, w) if sg else x & mask(w))
        out.append(V(f"add.{t}", f"add.{t} %d, %a, %b;", t, t, pairs(edge), lambda a, b, w=w: (a + b) & mask(w)))
        out.append(V(f"sub.{t}", f"sub.{t} %d, %a, %b;", t, t, pairs(edge), lambda a, b, w=w: (a - b) & mask(w)))
        out.append(V(f"mul.lo.{t}", f"mul.lo.{t} %d, %a, %b;", t, t, pairs(edge), lambda a, b, w=w: (a * b) & mask(w)))
        out.append(V(f"mul.hi.{t}", f"mul.hi.{t} %d, %a, %b;", t, t, pairs(edge),
                     lambda a, b, w=w, val=val: ((val(a) * val(b)) >> w) & mask(w)))
        out.append(V(f"min.{t}", f"min.{t} %d, %a, %b;", t, t, pairs(edge), lambda a, b, w=w, val=val: min(val(a), val(b)) & mask(w)))
        out.append(V(f"max.{t}", f"max.{t} %d, %a, %b;", t, t, pairs(edge), lambda a, b, w=w, val=val: max(val(a), val(b)) & mask(w)))
        nz = [(a, b) for a, b in pairs(edge) if b & mask(w)]

        def tdiv(a, b, val=val, w=w):
            x, y = val(a), val(b)
            q = abs(x) // abs(y)
            return (q if (x < 0) == (y < 0) else -q) & mask(w)

        def trem(a, b, val=val, w=w):
            x, y = val(a), val(b)
            r = abs(x) % abs(y)
            return (r if x >= 0 else -r) & mask(w)
        out.append(V(f"div.{t}", f"div.{t} %d, %a, %b;", t, t, nz, tdiv))
        out.append(V(f"rem.{t}", f"rem.{t} %d, %a, %b;", t, t, nz, trem))
        if sg:
            out.append(V(f"abs.{t}", f"abs.{t} %d, %a;", t, t, [(x,) for x in edge], lambda a, w=w, val=val: abs(val(a)) & mask(w)))
            out.append(V(f"neg.{t}", f"neg.{t} %d, %a;", t, t, [(x,) for x in edge], lambda a, w=w: (-a) & mask(w)))
            out.append(V(f"shr.{t}", f"shr.{t} %d, %a, %b;", t, t, pairs(edge, SHIFTS),
                         lambda a, b, w=w, val=val: (val(a) >> min(b, w - 1)) & mask(w), tb="u32"))
        else:
            out.append(V(f"shr.{t}", f"shr.{t} %d, %a, %b;", t, t, pairs(edge, SHIFTS),
                         lambda a, b, w=w: ((a & mask(w)) >> b if b < w else 0), tb="u32"))
            out.append(V(f"shl.b{w}", f"shl.b{w} %d, %a, %b;", t, t, pairs(edge, SHIFTS),
                         lambda a, b, w=w: ((a << b) & mask(w) if b < w else 0), tb="u32"))
        cmps = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
                "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}
        if not sg:
            cmps.update({"lo": cmps["lt"], "ls": cmps["le"], "hi": cmps["gt"], "hs": cmps["ge"]})
        for c, fn in cmps.items():
            out.append(V(f"setp.{c}.{t}", f"setp.{c}.{t} %p1, %a, %b; selp.u32 %d, 1, 0, %p1;", t, "u32", pairs(edge),
                         lambda a, b, fn=fn, val=val: int(fn(val(a), val(b)))))
    for t, w in (("u32", 32), ("u64", 64)):
        out.append(V(f"mad.lo.{t}", f"mad.lo.{t} %d, %a, %b, %c;", t, t, triples(S32_EDGE[:6], S32_EDGE, S32_EDGE[::4]),
                     lambda a, b, c, w=w: (a * b + c) & mask(w)))
    out.append(V("mul.wide.s32", "mul.wide.s32 %d, %a, %b;", "s32", "s64", pairs(S32_EDGE),
                 lambda a, b: (sx(a, 32) * sx(b, 32)) & mask(64)))
    out.append(V("mul.wide.u32", "mul.wide.u32 %d, %a, %b;", "u32", "u64", pairs(S32_EDGE), lambda a, b: a * b))
    out.append(V("mad.wide.s32", "mad.wide.s32 %d, %a, %b, %c;", "s32", "s64", triples(S32_EDGE, S32_EDGE, S64_EDGE[::3]),
                 lambda a, b, c: (sx(a, 32) * sx(b, 32) + c) & mask(64), tc="s64"))
    out.append(V("add.sat.s32", "add.sat.s32 %d, %a, %b;", "s32", "s32", pairs(S32_EDGE),
                 lambda a, b: max(-2 ** 31, min(2 ** 31 - 1, sx(a, 32) + sx(b, 32))) & mask(32)))
    out.append(V("sub.sat.s32", "sub.sat.s32 %d, %a, %b;", "s32", "s32", pairs(S32_EDGE),
                 lambda a, b: max(-2 ** 31, min(2 ** 31 - 1, sx(a, 32) - sx(b, 32))) & mask(32)))
    # bits
    out.append(V("popc.b32", "popc.b32 %d, %a;", "b32", "u32", [(x,) for x in S32_EDGE], lambda a: bin(a).count("1")))
    out.append(V("popc.b64", "popc.b64 %d, %a;", "b64", "u32", [(x,) for x in S64_EDGE], lambda a: bin(a).count("1")))
    out.append(V("clz.b32", "clz.b32 %d, %a;", "b32", "u32", [(x,) for x in S32_EDGE], lambda a: 32 - a.bit_length()))
    out.append(V("clz.b64", "clz.b64 %d, %a;", "b64", "u32", [(x,) for x in S64_EDGE], lambda a: 64 - a.bit_length()))
    out.append(V("brev.b32", "brev.b32 %d, %a;", "b32", "b32", [(x,) for x in S32_EDGE], lambda a: int(f"{a:032b}"[::-1], 2)))
    out.append(V("brev.b64", "brev.b64 %d, %a;", "b64", "b64", [(x,) for x in S64_EDGE], lambda a: int(f"{a:064b}"[::-1], 2)))
    for t, w, sg in (("u32", 32, False), ("s32", 32, True), ("u64", 64, False), ("s64", 64, True)):
        edge = S32_EDGE if w == 32 else S64_EDGE

        def bfind(a, w=w, sg=sg, shamt=False):
            a &= mask(w)
            if sg and a >> (w - 1):
                a = ~a & mask(w)
            if a == 0:
                return 0xffffffff
            d = a.bit_length() - 1
            return (w - 1 - d) if shamt else d
        out.append(V(f"bfind.{t}", f"bfind.{t} %d, %a;", t, "u32", [(x,) for x in edge], bfind))
        out.append(V(f"bfind.shiftamt.{t}", f"bfind.shiftamt.{t} %d, %a;", t, "u32", [(x,) for x in edge],
                     lambda a, bfind=bfind: bfind(a, shamt=True)))

        def bfe(a, b, c, w=w, sg=sg):
            pos, ln = b & 0xff, c & 0xff
            msb = w - 1
            sbit = 0 if (not sg or ln == 0) else (a >> min(pos + ln - 1, msb)) & 1
            d = 0
            for i in range(w):
                bit = (a >> (pos + i)) & 1 if (i < ln and pos + i <= msb) else sbit
                d |= bit << i
            return d
        out.append(V(f"bfe.{t}", f"bfe.{t} %d, %a, %b, %c;", t, t, triples(edge[::2], [0, 1, 8, 31, 32, 40, 255], [0, 1, 8, 31, 32, 33]),
                     bfe, tb="u32", tc="u32"))
    for t, w in (("b32", 32), ("b64", 64)):
        edge = S32_EDGE if w == 32 else S64_EDGE

        def bfi(a, b, c, e, w=w):
            pos, ln = c & 0xff, e & 0xff
            f = b & mask(w)
            for i in range(ln):
                if pos + i > w - 1:
                    break
                f = (f & ~(1 << (pos + i))) | (((a >> i) & 1) << (pos + i))
            return f
        ins = [(a, b, c, e) for a in edge[::3] for b in edge[::4] for c in (0, 4, 31, 60, 255) for e in (0, 1, 8, 32, 40)]
        v = V(f"bfi.{t}", f"bfi.{t} %d, %a, %b, %c, %e;", t, t, ins, bfi, tc="u32")
        v.te = "u32"
        out.append(v)

    def prmt(a, b, c, mode=None):
        by = [(a >> (8 * i)) & 0xff for i in range(4)] + [(b >> (8 * i)) & 0xff for i in range(4)]
        d = 0
        for i in range(4):
            sel = (c >> (4 * i)) & 0xf
            x = by[sel & 7]
            if sel & 8:
                x = 0xff if x & 0x80 else 0
            d |= x << (8 * i)
        return d
    out.append(V("prmt.b32", "prmt.b32 %d, %a, %b, %c;", "b32", "b32",
                 triples([0x12345678, 0x80ff7f01], [0x9abcdef0, 0x00800080], [0x3210, 0x7654, 0x0123, 0x8888, 0xfedc, 0x4c5d, 0xffff7531]), prmt))
    for c in ("add.cc.u32 %x, %a, %b; addc.u32 %d, 0, 0;", ):
        out.append(V("add.cc+addc.u32", c, "u32", "u32", pairs(S32_EDGE), lambda a, b: (a + b) >> 32))
    out.append(V("addc.cc chain", "add.cc.u32 %x, %a, %b; addc.cc.u32 %x, %a, %b; addc.u32 %d, 0, 0;", "u32", "u32",
                 pairs(S32_EDGE), lambda a, b: (a + b + ((a + b) >> 32)) >> 32))
    out.append(V("sub.cc+subc.u32", "sub.cc.u32 %x, %a, %b; subc.u32 %d, 0, 0;", "u32", "u32", pairs(S32_EDGE),
                 lambda a, b: (0 - (1 if a < b else 0)) & mask(32)))
    out.append(V("mad.lo.cc+madc.hi.u32", "mad.lo.cc.u32 %x, %a, %b, %c; madc.hi.u32 %d, %a, %b, 0;", "u32", "u32",
                 triples(S32_EDGE[::2], S32_EDGE, [0, 1, 0xffffffff]),
                 lambda a, b, c: (((a * b) >> 32) + (((a * b) & mask(32)) + c >> 32)) & mask(32)))
    out.append(V("sad.u32", "sad.u32 %d, %a, %b, %c;", "u32", "u32", triples(S32_EDGE, S32_EDGE, [0, 5, 0xffffffff]),
                 lambda a, b, c: (abs(a - b) + c) & mask(32)))
    out.append(V("sad.s32", "sad.s32 %d, %a, %b, %c;", "s32", "s32", triples(S32_EDGE, S32_EDGE, [0, 5, 0xffffffff]),
                 lambda a, b, c: (abs(sx(a, 32) - sx(b, 32)) + c) & mask(32)))
    return out


def cvt_variants():
    out = []
    modes_i = ("rni", "rzi", "rmi", "rpi")
    fl = {"f32": F32_EDGE + [0x3f000000, 0x3fc00000, 0x40200000, 0xbf000000, 0xbfc00000, 0x4f000000, 0xcf000000, 0x5f800000],
          "f64": F64_EDGE + [0x3fe0000000000000, 0x4004000000000000, 0xc004000000000000, 0x41e0000000000000]}
    for fs in ("f32", "f64"):
        for ti, (w, sg) in {"s32": (32, True), "u32": (32, False), "s64": (64, True), "u64": (64, False),
                            "s16": (16, True), "u8": (8, False)}.items():
            for m in modes_i:
                def ref(a, fs=fs, w=w, sg=sg, m=m):
                    v = decode(a, fs)
                    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if sg else (0, (1 << w) - 1)
                    if v[0] == "nan":
                        return 0
                    if v[0] == "inf":
                        return (lo if v[1] else hi) & mask(w)
                    x = signed(v)
                    fl_ = x.numerator // x.denominator
                    frac = x - fl_
                    r = {"rzi": int(x), "rmi": fl_, "rpi": fl_ + (1 if frac else 0),
                         "rni": fl_ + (1 if frac > Fraction(1, 2) or (frac == Fraction(1, 2) and fl_ % 2) else 0)}[m]
                    return max(lo, min(hi, r)) & mask(w)
                out.append(V(f"cvt.{m}.{ti}.{fs}", f"cvt.{m}.{ti}.{fs} %d, %a;", fs, ti, [(x,) for x in fl[fs]], ref))
    ints = [0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0x01000001, 0x00ffffff, 0x7fffffc0, 0x7fffffbf, 16777217]
    ints64 = S64_EDGE + [0x0020000000000001, 0x7ffffffffffffdff]
    for ti, (w, sg, vals) in {"s32": (32, True, ints), "u32": (32, False, ints), "s64": (64, True, ints64),
                              "u64": (64, False, ints64)}.items():
        for fd in ("f32", "f64"):
            for m in (RN, RZ, RM, RP):
                def ref(a, w=w, sg=sg, fd=fd, m=m):
                    x = sx(a, w) if sg else a & mask(w)
                    return encode(round_to(1 if x < 0 else 0, Fraction(abs(x)), fd, m), fd)
                out.append(V(f"cvt.{m}.{fd}.{ti}", f"cvt.{m}.{fd}.{ti} %d, %a;", ti, fd, [(x,) for x in vals], ref))
    for m in (RN, RZ, RM, RP):
        out.append(V(f"cvt.{m}.f32.f64", f"cvt.{m}.f32.f64 %d, %a;", "f64", "f32", [(x,) for x in F64_EDGE + [0x3ff0000010000000, 0x3ff0000030000000, 0x36a0000000000000]],
                     lambda a, m=m: encode(_rnd_dec(decode(a, "f64"), "f32", m), "f32")))
        out.append(V(f"cvt.{m}.f16.f32", f"cvt.{m}.f16.f32 %d, %a;", "f32", "f16", [(x,) for x in F32_EDGE + [0x3f801000, 0x3f803000, 0x477ff000, 0x33000000, 0x33000001]],
                     lambda a, m=m: encode(_rnd_dec(decode(a, "f32"), "f16", m), "f16")))
        out.append(V(f"cvt.{m}.bf16.f32", f"cvt.{m}.bf16.f32 %d, %a;", "f32", "bf16", [(x,) for x in F32_EDGE + [0x3f808000, 0x3f818000, 0x3f808001]],
                     lambda a, m=m: encode(_rnd_dec(decode(a, "f32"), "bf16", m), "bf16")))
    out.append(V("cvt.f32.f16", "cvt.f32.f16 %d, %a;", "f16", "f32", [(x,) for x in F16_EDGE], lambda a: encode(decode(a, "f16"), "f32")))
    out.append(V("cvt.f32.bf16", "cvt.f32.bf16 %d, %a;", "bf16", "f32", [(x,) for x in BF16_EDGE], lambda a: encode(decode(a, "bf16"), "f32")))
    out.append(V("cvt.f64.f32", "cvt.f64.f32 %d, %a;", "f32", "f64", [(x,) for x in F32_EDGE], lambda a: encode(decode(a, "f32"), "f64")))
    for m in modes_i:
        def ref(a, m=m):
            v = decode(a, "f32")
            if v[0] != "num":
                return encode(v, "f32")
            x = signed(v)
            fl_ = x.numerator // x.denominator
            frac = x - fl_
            r = {"rzi": int(x), "rmi": fl_, "rpi": fl_ + (1 if frac else 0),
                 "rni": fl_ + (1 if frac > Fraction(1, 2) or (frac == Fraction(1, 2) and fl_ % 2) else 0)}[m]
            return encode(("num", v[1], Fraction(abs(r))), "f32")
        out.append(V(f"cvt.{m}.f32.f32", f"cvt.{m}.f32.f32 %d, %a;", "f32", "f32", [(x,) for x in fl["f32"]], ref))
    for ts, td, w, sg in (("s32", "s8", 8, True), ("s32", "u8", 8, False), ("s32", "s16", 16, True), ("u32", "u16", 16, False),
                          ("s64", "s32", 32, True), ("u64", "u32", 32, False)):
        sw = 32 if ts[1:] == "32" else 64
        ss = ts[0] == "s"
        edge = S32_EDGE if sw == 32 else S64_EDGE
        out.append(V(f"cvt.sat.{td}.{ts}", f"cvt.sat.{td}.{ts} %d, %a;", ts, td if w >= 32 else ("s32" if sg else "u32"),
                     [(x,) for x in edge],
                     lambda a, w=w, sg=sg, sw=sw, ss=ss: _satint(sx(a, sw) if ss else a & mask(sw), w, sg, 32 if w < 32 else w)))
    return out


def _satint(x, w, sg, outw):
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if sg else (0, (1 << w) - 1)
    r = max(lo, min(hi, x))
    return r & mask(outw)


def _rnd_dec(v, fmt, mode):
    if v[0] != "num":
        return v
    return round_to(v[1], v[2], fmt, mode)


def half_variants():
    out = []
    for fmt, edge in (("f16", F16_EDGE), ("bf16", BF16_EDGE)):
        out.append(V(f"add.rn.{fmt}", f"add.rn.{fmt} %d, %a, %b;", fmt, fmt, pairs(edge), _fp(fmt, f_add, RN)))
        out.append(V(f"mul.rn.{fmt}", f"mul.rn.{fmt} %d, %a, %b;", fmt, fmt, pairs(edge), _fp(fmt, f_mul, RN)))
        out.append(V(f"fma.rn.{fmt}", f"fma.rn.{fmt} %d, %a, %b, %c;", fmt, fmt, triples(edge[::2], edge, edge[::3]), _fp(fmt, f_fma, RN)))
        out.append(V(f"sub.rn.{fmt}", f"sub.rn.{fmt} %d, %a, %b;", fmt, fmt, pairs(edge),
                     _fp(fmt, lambda a, b, m, f: f_add(a, f_neg(b), m, f), RN)))
    def relu(r):
        if r == NAN or r is None:
            return r
        return 0 if (r >> 15) & 1 else r
    out.append(V("fma.rn.relu.f16", "fma.rn.relu.f16 %d, %a, %b, %c;", "f16", "f16", triples(F16_EDGE[::2], F16_EDGE, F16_EDGE[::3]),
                 lambda a, b, c: relu(_fp("f16", f_fma, RN)(a, b, c))))
    pair_in = [(a | (b << 16), c | (d << 16)) for a, b in zip(F16_EDGE, F16_EDGE[::-1]) for c, d in zip(F16_EDGE[::2], F16_EDGE[1::2])]

    def x2(a, b):
        r = []
        for k in range(2):
            e = encode(f_add(decode((a >> 16 * k) & 0xffff, "f16"), decode((b >> 16 * k) & 0xffff, "f16"), RN, "f16"), "f16")
            if e == NAN:
                return NAN
            r.append(e)
        return r[0] | (r[1] << 16)
    out.append(V("add.rn.f16x2", "add.rn.f16x2 %d, %a, %b;", "f16x2", "f16x2",
                 [p for p in pair_in if x2(*p) != NAN], x2))
    return out


def atomic_variants():
    """atom on a thread's own slot: the value left in memory (the old value is checked by `old` variants)."""
    out = []
    for space in ("global", "shared", "generic"):
        for op, t, fn, edge in (
            ("add", "u32", lambda a, b: (a + b) & mask(32), S32_EDGE[::2]),
            ("add", "u64", lambda a, b: (a + b) & mask(64), S64_EDGE[::2]),
            ("add", "f32", lambda a, b: encode(f_add(decode(a, "f32"), decode(b, "f32"), RN, "f32"), "f32"), F32_EDGE[::3]),
            ("add", "f64", lambda a, b: encode(f_add(decode(a, "f64"), decode(b, "f64"), RN, "f64"), "f64"), F64_EDGE[::3]),
            ("min", "s32", lambda a, b: min(sx(a, 32), sx(b, 32)) & mask(32), S32_EDGE[::2]),
            ("max", "u64", lambda a, b: max(a, b), S64_EDGE[::2]),
            ("max", "s64", lambda a, b: max(sx(a, 64), sx(b, 64)) & mask(64), S64_EDGE[::2]),
            ("and", "b32", lambda a, b: a & b, S32_EDGE[::2]), ("or", "b64", lambda a, b: a | b, S64_EDGE[::2]),
            ("xor", "b32", lambda a, b: a ^ b, S32_EDGE[::2]), ("exch", "b64", lambda a, b: b, S64_EDGE[::2]),
            ("inc", "u32", lambda a, b: 0 if a >= b else a + 1, S32_EDGE[::2]),
            ("dec", "u32", lambda a, b: b if (a == 0 or a > b) else a - 1, S32_EDGE[::2]),
        ):
            if space == "shared" and t in ("f64",) and False:
                continue
            sp = "" if space == "generic" else f".{space}"
            body = f"st{sp}.{t} [%s], %a; atom{sp}.{op}.{t} %x, [%s], %b; ld{sp}.{t} %d, [%s];"
            out.append(V(f"atom.{space}.{op}.{t}", body, t, t, pairs(edge), fn))
        sp = "" if space == "generic" else f".{space}"
        out.append(V(f"atom.{space}.cas.b32", f"st{sp}.b32 [%s], %a; atom{sp}.cas.b32 %x, [%s], %b, %c; ld{sp}.b32 %d, [%s];",
                     "b32", "b32", triples([0, 5, 0xffffffff], [0, 5, 7], [9, 0x80000000]), lambda a, b, c: c if a == b else a))
        out.append(V(f"atom.{space}.old.add.u32", f"st{sp}.u32 [%s], %a; atom{sp}.add.u32 %d, [%s], %b;", "u32", "u32",
                     pairs(S32_EDGE[::3]), lambda a, b: a))
    out.append(V("atom.global.add.noftz.f16x2", "st.global.b32 [%s], %a; atom.global.add.noftz.f16x2 %x, [%s], %b; ld.global.b32 %d, [%s];",
                 "b32", "b32", [(0x3c003c00, 0x40003c00), (0x00010001, 0x80008001), (0x7bff3c00, 0x7bff1400)],
                 lambda a, b: _h2add(a, b)))
    out.append(V("red.global.add.f32", "st.global.f32 [%s], %a; red.global.add.f32 [%s], %b; ld.global.f32 %d, [%s];", "f32", "f32",
                 pairs(F32_EDGE[::4]), lambda a, b: encode(f_add(decode(a, "f32"), decode(b, "f32"), RN, "f32"), "f32")))
    return out


def _h2add(a, b):
    r = 0
    for k in range(2):
        e = encode(f_add(decode((a >> 16 * k) & 0xffff, "f16"), decode((b >> 16 * k) & 0xffff, "f16"), RN, "f16"), "f16")
        r |= e << (16 * k)
    return r


def _wv(name, body, ta, td, warps, ref, tb=None, tc=None):
    v = V(name, body, ta, td, [ops for w in warps for ops in w], ref, tb=tb, tc=tc)
    v.warp = True
    return v


def warp_variants():
    """Warp-synchronous instructions over full warps (every lane's result depends on the others')."""
    import random
    rng = random.Random(32)
    out = []
    vals = [[rng.choice(S32_EDGE + list(range(8))) for _ in range(32)] for _ in range(3)]

    def shfl_ref(mode):
        def ref(warp):
            a = [x[0] for x in warp]
            res = []
            for lane, ops in enumerate(warp):
                b, c = ops[1] & 31, ops[2]
                segmask, cval = (c >> 8) & 31, c & 31
                maxl = (lane & segmask) | (cval & ~segmask & 31)
                minl = lane & segmask
                if mode == "up":
                    j, ok = lane - b, lane - b >= maxl
                elif mode == "down":
                    j, ok = lane + b, lane + b <= maxl
                elif mode == "bfly":
                    j, ok = lane ^ b, (lane ^ b) <= maxl
                else:
                    j = minl | (b & ~segmask & 31)
                    ok = j <= maxl
                res.append(a[j if ok else lane] | ((1 if ok else 0) << 32))
            return res
        return ref
    for mode, bs, cs in (("up", (0, 1, 5, 16), (0, 0x1000 | 0, 0x1800)), ("down", (1, 2, 16, 31), (31, 0x101f, 0x0c1f, 15)),
                         ("bfly", (1, 3, 16, 31), (31, 0x101f, 0x081f)), ("idx", (0, 3, 17, 31), (31, 0x101f, 0x181f, 7))):
        for b in bs:
            for c in cs:
                warps = [[(vals[k][i], b, c) for i in range(32)] for k in range(len(vals))]
                out.append(_wv(f"shfl.sync.{mode}.b32 b={b} c={c:#x}",
                               f"shfl.sync.{mode}.b32 %x|%p1, %a, %b, %c, -1; selp.u32 %t0, 1, 0, %p1; cvt.u64.u32 %y1, %x; "
                               f"cvt.u64.u32 %y2, %t0; shl.b64 %y2, %y2, 32; or.b64 %d, %y1, %y2;",
                               "b32", "b64", warps, shfl_ref(mode), tb="u32", tc="u32"))
    preds = [[rng.random() < p for _ in range(32)] for p in (0.0, 0.5, 1.0, 0.9)]
    for mode in ("all", "any", "uni"):
        fn = {"all": all, "any": any, "uni": lambda xs: all(xs) or not any(xs)}[mode]
        out.append(_wv(f"vote.sync.{mode}.pred", f"setp.ne.u32 %p1, %a, 0; vote.sync.{mode}.pred %p2, %p1, -1; selp.u32 %d, 1, 0, %p2;",
                       "u32", "u32", [[(int(x),) for x in w] for w in preds], lambda warp, fn=fn: [int(fn([o[0] for o in warp]))] * 32))
    out.append(_wv("vote.sync.ballot.b32", "setp.ne.u32 %p1, %a, 0; vote.sync.ballot.b32 %d, %p1, -1;", "u32", "u32",
                   [[(int(x),) for x in w] for w in preds], lambda warp: [sum(o[0] << i for i, o in enumerate(warp))] * 32))
    for op, t in (("add", "u32"), ("min", "s32"), ("max", "s32"), ("min", "u32"), ("max", "u32"), ("and", "b32"), ("or", "b32"), ("xor", "b32")):
        def rref(warp, op=op, t=t):
            xs = [o[0] for o in warp]
            if t == "s32":
                xs = [sx(x, 32) for x in xs]
            r = {"add": lambda: sum(xs), "min": lambda: min(xs), "max": lambda: max(xs)}.get(op)
            if r is None:
                import functools
                r = lambda: functools.reduce({"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}[op], xs)  # noqa: E731
            return [r() & mask(32)] * 32
        out.append(_wv(f"redux.sync.{op}.{t}", f"redux.sync.{op}.{t} %d, %a, -1;", t, t, [[(x,) for x in w] for w in vals], rref))
    keys = [[x % 4 for x in w] for w in vals]
    out.append(_wv("match.any.sync.b32", "match.any.sync.b32 %d, %a, -1;", "b32", "b32", [[(x,) for x in w] for w in keys],
                   lambda warp: [sum(1 << j for j, q in enumerate(warp) if q[0] == o[0]) for o in warp]))
    same = [[7] * 32, keys[0]]
    out.append(_wv("match.all.sync.b32", "match.all.sync.b32 %x|%p1, %a, -1; selp.u32 %t0, 1, 0, %p1; add.u32 %d, %x, %t0;", "b32", "b32",
                   [[(x,) for x in w] for w in same],
                   lambda warp: [(0xffffffff + 1) & mask(32) if len({o[0] for o in warp}) == 1 else 0] * 32))
    return out


def all_variants():
    return (float_variants() + approx_variants() + int_variants() + cvt_variants() + half_variants() + atomic_variants()
            + warp_variants())


def type_bits(t):
    return {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16, "b32": 32, "u32": 32,
            "s32": 32, "f32": 32, "f16x2": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64}[t]


def matches(expect, got, td):
    """Whether the engine's (or a GPU's) result bits `got` satisfy the reference's `expect`."""
    w = type_bits(td)
    got &= mask(w)
    if expect == NAN:
        fmt = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64"}.get(td)
        return fmt is not None and decode(got, fmt)[0] == "nan"
    if isinstance(expect, Approx):
        fmt = {16: "f16", 32: "f32", 64: "f64"}[w]
        v = decode(got, fmt)
        if v[0] == "nan":
            return False
        if v[0] == "inf":
            return math.isinf(expect.value) and (v[1] == 1) == (expect.value < 0)
        x = float(signed(v))
        if math.isinf(expect.value):
            return False
        return abs(x - expect.value) <= max(expect.abs, expect.rel * abs(expect.value)) + 1e-300
    return got == expect & mask(w)


# ------------------------------------------------------------------------- the one-instruction kernel

_REG = {"f16": "b16", "bf16": "b16", "f16x2": "b32", "u8": "u16", "s8": "s16", "b8": "b16"}
_LD = {"f16": "b16", "bf16": "b16", "f16x2": "b32", "u8": "u16", "s8": "s16", "b8": "b16"}
BLOCK = 128


def kernel_text(v):
    """A kernel `k(.u64 in, .u64 out, .u32 n, .u64 scratch)`: thread i reads operands in[i][0..3] (8-byte
    slots), runs v.body with %a %b %c %e as operands and %d as result, stores out[i]."""
    import re
    ta, tb, tc, td = v.ta, v.tb, v.tc, v.td
    te = getattr(v, "te", "u32")
    reg = lambda t: _REG.get(t, t)   # noqa: E731
    ld = lambda t: _LD.get(t, t)     # noqa: E731
    space = "shared" if "[%s]" in v.body and ".shared" in v.body else "global"
    body = re.sub(r"%([abcdesx])\b", lambda m: "%v" + m.group(1), v.body)
    body = body.replace("%t0", "%wt").replace("%y1", "%wy1").replace("%y2", "%wy2")
    lines = [
        ".version 8.0", ".target sm_90", ".address_size 64", "",
        ".visible .entry k(.param .u64 pin, .param .u64 pout, .param .u32 n, .param .u64 pscr)", "{",
        "  .reg .pred %p<4>;", "  .reg .b32 %t<4>;", "  .reg .b64 %q<8>;",
        f"  .reg .{reg(ta)} %va;", f"  .reg .{reg(tb)} %vb;", f"  .reg .{reg(tc)} %vc;", f"  .reg .{reg(te)} %ve;",
        f"  .reg .{reg(td)} %vd;", f"  .reg .{reg(td) if not getattr(v, 'warp', False) else 'b32'} %vx;", "  .reg .b64 %vs;",
        "  .reg .b32 %wt;", "  .reg .b64 %wy1, %wy2;",
        f"  .shared .align 8 .b8 sh[{BLOCK * 8}];",
        "  mov.u32 %t1, %ctaid.x;", "  mov.u32 %t2, %ntid.x;", "  mov.u32 %t3, %tid.x;",
        "  mad.lo.u32 %t1, %t1, %t2, %t3;", "  ld.param.u32 %t2, [n];", "  setp.ge.u32 %p3, %t1, %t2;", "  @%p3 bra END;",
        "  ld.param.u64 %q1, [pin];", "  mul.wide.u32 %q2, %t1, 32;", "  add.s64 %q1, %q1, %q2;",
        f"  ld.global.{ld(ta)} %va, [%q1];", f"  ld.global.{ld(tb)} %vb, [%q1+8];",
        f"  ld.global.{ld(tc)} %vc, [%q1+16];", f"  ld.global.{ld(te)} %ve, [%q1+24];",
    ]
    if space == "shared":
        lines += ["  mov.u64 %q3, sh;", "  mul.wide.u32 %q4, %t3, 8;", "  add.s64 %vs, %q3, %q4;"]
    else:
        lines += ["  ld.param.u64 %q3, [pscr];", "  cvta.to.global.u64 %q3, %q3;", "  mul.wide.u32 %q4, %t1, 8;",
                  "  add.s64 %vs, %q3, %q4;"]
    lines += ["  " + s.strip() + ";" for s in body.split(";") if s.strip()]
    lines += ["  ld.param.u64 %q5, [pout];", "  mul.wide.u32 %q6, %t1, 8;", "  add.s64 %q5, %q5, %q6;",
              f"  st.global.{ld(td)} [%q5], %vd;", "END:", "  ret;", "}", ""]
    return "\n".join(lines)


def inputs_array(v):
    """The operands as an (n, 4) uint64 array (missing operands 0)."""
    import numpy as np
    arr = np.zeros((len(v.inputs), 4), np.uint64)
    for i, ops in enumerate(v.inputs):
        for k, x in enumerate(ops):
            arr[i, k] = x
    return arr


# ------------------------------------------------------------------- tensor cores and matrix movement
#
# Warp-wide variants with several words per lane (MV): each lane reads `nin` 8-byte words (its fragment
# registers' bits, low 32 bits for a .b32 register) and writes `nout`; the reference sees the whole warp.
# Fragment layouts, from the ISA's "Matrix Fragments for mma.m16n8k*" (groupID = laneid >> 2,
# threadID_in_group = laneid % 4; element i of a lane's fragment, packed from the low bits of its
# registers up):
#   f16/bf16 m16n8k16  A: row g + 8*(i>>1 & 1), col 2t + (i&1) + 8*(i>>2)   B: row 2t + (i&1) + 8*(i>>1), col g
#   f16/bf16 m16n8k8   A: row g + 8*(i>>1), col 2t + (i&1)                   B: row 2t + i, col g
#   tf32 m16n8k4       A: row g + 8i, col t                                  B: row t, col g
#   tf32 m16n8k8       A: row g + 8*(i&1), col t + 4*(i>>1)                  B: row t + 4i, col g
#   s8/u8 m16n8k16     A: row g + 8*(i>>2), col 4t + (i&3)                   B: row 4t + i, col g
#   s8/u8 m16n8k32     A: row g + 8*(i>>2 & 1), col 4t + (i&3) + 16*(i>>3)   B: row 4t + (i&3) + 16*(i>>2), col g
#   f64 m8n8k4         A: row g, col t   B: row t, col g   C/D: row g, col 2t + i
#   C/D (m16n8)        row g + 8*(i>>1), col 2t + (i&1)
# Arithmetic (the ISA leaves accumulation order, intermediate precision and subnormal handling to the
# implementation; this is the engine's documented choice): products exact, summed with C exactly, rounded
# once to nearest even into D's type; tf32 operands read with the low 13 mantissa bits ignored; f64 a chain
# of fused multiply-adds in k order; integers exact, wrapping modulo 2^32 or clamped with .satfinite.  The
# float vectors keep every partial sum exact in binary64, so exact-then-round equals any binary64 order.

MMA_SHAPES = {"m16n8k16": (16, 8, 16), "m16n8k8": (16, 8, 8), "m16n8k4": (16, 8, 4), "m8n8k4": (8, 8, 4),
              "m16n8k32": (16, 8, 32)}


def frag_rc(shape, at, op, lane, i):
    """(row, col) of element i of lane's fragment of operand op ('a', 'b', 'c')."""
    g, t = lane >> 2, lane & 3
    if shape == "m8n8k4":
        return {"a": (g, t), "b": (t, g), "c": (g, 2 * t + i)}[op]
    if op == "c":
        return g + 8 * (i >> 1), 2 * t + (i & 1)
    x8, tf = at in ("s8", "u8"), at == "tf32"
    if op == "a":
        if shape == "m16n8k16":
            return (g + 8 * (i >> 2), 4 * t + (i & 3)) if x8 else (g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2))
        if shape == "m16n8k8":
            return (g + 8 * (i & 1), t + 4 * (i >> 1)) if tf else (g + 8 * (i >> 1), 2 * t + (i & 1))
        if shape == "m16n8k4":
            return g + 8 * i, t
        return g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3)
    if shape == "m16n8k16":
        return (4 * t + i, g) if x8 else (2 * t + (i & 1) + 8 * (i >> 1), g)
    if shape == "m16n8k8":
        return (t + 4 * i, g) if tf else (2 * t + i, g)
    if shape == "m16n8k4":
        return t, g
    return 4 * t + (i & 3) + 16 * (i >> 2), g


def _ebits(t):
    return {"f16": 16, "bf16": 16, "s8": 8, "u8": 8, "f64": 64}.get(t, 32)


def _nregs(shape, t, op, rows, cols):
    per = 32 // _ebits(t) if _ebits(t) < 32 else 1
    return rows * cols // 32 // per


class MV(V):
    """A warp-wide variant with nin input words and nout output words per lane."""

    def __init__(self, name, body, td, warps, ref, nin, nout, decl=""):
        super().__init__(name, body, "b64", td, [ops for w in warps for ops in w], ref)
        self.warp, self.nin, self.nout, self.decl = True, nin, nout, decl


def _mma_variant(shape, td, ta, tc, warps, sat=False, tb=None):
    tb = tb or ta
    m, n, k = MMA_SHAPES[shape]
    na, nb = _nregs(shape, ta, "a", m, k), _nregs(shape, tb, "b", k, n)
    nc, nd = _nregs(shape, tc, "c", m, n), _nregs(shape, td, "c", m, n)
    r = "x" if ta == "f64" else "a"
    def regs(base, cnt, rr):
        return "{" + ", ".join(f"%{rr}{base + i}" for i in range(cnt)) + "}"
    rd = "y" if td == "f64" else "d"
    rc = "x" if tc == "f64" else "a"
    name = f"mma.sync.aligned.{shape}.row.col{'.satfinite' if sat else ''}.{td}.{ta}.{tb}.{tc}"
    body = f"{name} {regs(0, nd, rd)}, {regs(0, na, r)}, {regs(na, nb, r)}, {regs(na + nb, nc, rc)};"

    def ref(warp):
        def elem(word, t, i):
            b = _ebits(t)
            per = 32 // b if b < 32 else 1
            return (word >> (b * (i % per))) & mask(b), i // per
        A, B, C = {}, {}, {}
        for lane, ops in enumerate(warp):
            for op, t, cnt, base, rows, cols, dst in (("a", ta, na, 0, m, k, A), ("b", tb, nb, na, k, n, B),
                                                      ("c", tc, nc, na + nb, m, n, C)):
                per = 32 // _ebits(t) if _ebits(t) < 32 else 1
                for i in range(cnt * per):
                    bits, reg = elem(ops[base + i // per], t, i)
                    dst[frag_rc(shape, ta if op != "c" else ta, op, lane, i)] = bits
        out = [[0] * nd for _ in range(32)]
        per_d = 2 if td == "f16" else 1
        for lane in range(32):
            for i in range(nd * per_d):
                rr, cc = frag_rc(shape, ta, "c", lane, i)
                if ta in ("s8", "u8"):
                    acc = sx(C[rr, cc], 32) + sum((sx(A[rr, q], 8) if ta == "s8" else A[rr, q]) *
                                                  (sx(B[q, cc], 8) if tb == "s8" else B[q, cc]) for q in range(k))
                    if sat:
                        acc = max(-(1 << 31), min((1 << 31) - 1, acc))
                    bits = acc & mask(32)
                elif td == "f64":
                    acc = decode(C[rr, cc], "f64")
                    for q in range(k):
                        acc = f_fma(decode(A[rr, q], "f64"), decode(B[q, cc], "f64"), acc, RN, "f64")
                    bits = encode(acc, "f64")
                else:
                    fa = "f32" if ta == "tf32" else ta
                    rd_a = (lambda x: x & 0xffffe000) if ta == "tf32" else (lambda x: x)
                    terms = [decode(C[rr, cc], "f32" if tc == "f32" else tc)]
                    nan = terms[0][0] == "nan"
                    for q in range(k):
                        a, b = decode(rd_a(A[rr, q]), fa), decode(rd_a(B[q, cc]), fa)
                        if "nan" in (a[0], b[0]) or ("inf" in (a[0], b[0]) and ((a[0] == "num" and a[2] == 0) or (b[0] == "num" and b[2] == 0))):
                            nan = True
                            continue
                        s = a[1] ^ b[1]
                        terms.append(("inf", s) if "inf" in (a[0], b[0]) else ("num", s, a[2] * b[2]))
                    infs = {x[1] for x in terms if x[0] == "inf"}
                    fmt = "f16" if td == "f16" else "f32"
                    if nan or len(infs) == 2:
                        bits = NAN
                    elif infs:
                        bits = encode(("inf", infs.pop()), fmt)
                    else:
                        x = sum((-x[2] if x[1] else x[2]) for x in terms)
                        if x == 0:
                            v = ("num", 1 if all(x[1] for x in terms) else 0, Fraction(0))
                        else:
                            v = round_to(1 if x < 0 else 0, abs(x), fmt, RN)
                        bits = encode(v, fmt)
                if per_d == 2:
                    if out[lane][i // 2] == NAN or bits == NAN:
                        out[lane][i // 2] = NAN
                    else:
                        out[lane][i // 2] |= bits << (16 * (i % 2))
                else:
                    out[lane][i] = bits
        return [x for lane in out for x in lane]
    nin = na + nb + nc
    return MV(name, body, "f64" if td == "f64" else ("b32" if td in ("s32", "f16") else "f32"),
              warps, ref, nin, nd)


def _rand_warps(rng, nwarps, nwords, gen):
    return [[tuple(gen() for _ in range(nwords)) for _ in range(32)] for _ in range(nwarps)]


def _pack(vals, bits):
    w = 0
    for i, v in enumerate(vals):
        w |= (v & mask(bits)) << (bits * i)
    return w


def mma_variants():
    import random
    rng = random.Random(3216)
    out = []
    # f16 values whose products and sums stay exact in binary64: exponents in [-6, 6], 11-bit significands
    def f16_small():
        return (rng.randrange(2) << 15) | (rng.randrange(9, 22) << 10) | rng.randrange(1024)
    def bf16_small():
        return (rng.randrange(2) << 15) | (rng.randrange(121, 134) << 7) | rng.randrange(128)
    def f32_small():
        return (rng.randrange(2) << 31) | (rng.randrange(110, 144) << 23) | (rng.randrange(1 << 10) << 13)
    def word(gen, bits, cnt):
        return _pack([gen() for _ in range(cnt)], bits)
    for shape in ("m16n8k16", "m16n8k8"):
        m, n, k = MMA_SHAPES[shape]
        for ta, gen in (("f16", f16_small), ("bf16", bf16_small)):
            combos = (("f32", "f32"),) if ta == "bf16" else (("f32", "f32"), ("f16", "f16"), ("f32", "f16"), ("f16", "f32"))
            for td, tc in combos:
                na, nb = _nregs(shape, ta, "a", m, k), _nregs(shape, ta, "b", k, n)
                nc = _nregs(shape, tc, "c", m, n)
                cgen = (lambda: word(f16_small, 16, 2)) if tc == "f16" else f32_small
                warps = [[tuple([word(gen, 16, 2) for _ in range(na + nb)] + [cgen() for _ in range(nc)]) for _ in range(32)]
                         for _ in range(2)]
                if td == "f32" and tc == "f32" and ta == "f16":
                    warps += _mma_edge_warps(shape, na, nb, nc)
                out.append(_mma_variant(shape, td, ta, tc, warps))
    for shape in ("m16n8k4", "m16n8k8"):
        m, n, k = MMA_SHAPES[shape]
        na, nb = _nregs(shape, "tf32", "a", m, k), _nregs(shape, "tf32", "b", k, n)
        # tf32 operands with junk in the 13 low bits (ignored), C plain f32
        def tf():
            return (rng.randrange(2) << 31) | (rng.randrange(121, 134) << 23) | rng.randrange(1 << 23)
        warps = [[tuple([tf() for _ in range(na + nb)] + [f32_small() for _ in range(4)]) for _ in range(32)] for _ in range(2)]
        out.append(_mma_variant(shape, "f32", "tf32", "f32", warps))
    f64s = F64_EDGE + [0x3ff8000000000000, 0xc000000000000000, 0x3fb999999999999a, 0x4340000000000001]
    warps = [[(rng.choice(f64s), rng.choice(f64s), rng.choice(f64s), rng.choice(f64s)) for _ in range(32)] for _ in range(2)]
    warps.append([(0x3ff0000000000001, 0x3ff0000000000001, 0xbff0000000000000, 0x3ff0000000000000)] * 32)
    out.append(_mma_variant("m8n8k4", "f64", "f64", "f64", warps))
    for shape in ("m16n8k16", "m16n8k32"):
        m, n, k = MMA_SHAPES[shape]
        for sat in (False, True):
            for ta, tb in (("s8", "s8"), ("u8", "u8"), ("s8", "u8"), ("u8", "s8")):
                na, nb = _nregs(shape, ta, "a", m, k), _nregs(shape, tb, "b", k, n)
                edge = [0, 1, 0x7f, 0x80, 0xff, 0x81, 0x12]
                warps = [[tuple([_pack([rng.choice(edge) if w == 0 else rng.randrange(256) for _ in range(4)], 8)
                                 for _ in range(na + nb)] + [rng.choice(S32_EDGE) for _ in range(4)]) for _ in range(32)]
                         for w in range(2)]
                warps.append([tuple([0x7f7f7f7f if ta == "s8" else 0xffffffff] * (na + nb) + [0x7ffffff0] * 4)] * 32)
                warps.append([tuple([0x80808080] * na + [0x7f7f7f7f] * nb + [0x80000010] * 4)] * 32)
                out.append(_mma_variant(shape, "s32", ta, "s32", warps, sat=sat, tb=tb))
    return out


def _mma_edge_warps(shape, na, nb, nc):
    """f16 x f16 + f32 edge cases: subnormal f16 inputs, NaN, inf * 0, inf - inf, ties of the f32 rounding."""
    one, z = 0x3c00, 0
    p12 = 0x0c00          # 2^-12: its square is 2^-24
    sub = 0x0001          # the smallest f16 subnormal, 2^-24
    big = 0x6400          # 2^10
    warps = []
    def w(a_elem, b_elem, c_word):
        return [tuple([_pack([a_elem(l, i) for i in range(2)], 16) for _ in range(na)] +
                      [_pack([b_elem(l, i) for i in range(2)], 16) for _ in range(nb)] + [c_word(l)] * nc) for l in range(32)]
    warps.append(w(lambda l, i: sub, lambda l, i: big, lambda l: 0))                       # subnormal products sum
    warps.append(w(lambda l, i: p12 if l == 0 and i == 0 else z, lambda l, i: p12, lambda l: 0x3f800000))   # 1 + 2^-24: a tie
    warps.append(w(lambda l, i: p12 if l < 3 and i == 0 else z, lambda l, i: p12, lambda l: 0x3f800000))    # up to 1 + 3*2^-24
    warps.append(w(lambda l, i: 0x7e00 if l == 5 and i == 1 else one, lambda l, i: one, lambda l: 0))       # a NaN operand
    warps.append(w(lambda l, i: 0x7c00 if l == 0 else one, lambda l, i: z, lambda l: 0))                   # inf * 0
    warps.append(w(lambda l, i: 0xfc00 if l == 0 else z, lambda l, i: one, lambda l: 0x3f800000))          # -inf + finite
    warps.append(w(lambda l, i: 0x7c00 if l == 0 and i == 0 else (0xfc00 if l == 1 and i == 0 else z), lambda l, i: one,
                   lambda l: 0))                                                                            # inf - inf
    warps.append(w(lambda l, i: 0x8000, lambda l, i: one, lambda l: 0x80000000))           # all -0: -0
    warps.append(w(lambda l, i: 0x7bff, lambda l, i: 0x7bff, lambda l: 0x7f7fffff))        # overflow to inf
    return warps


def ldst_matrix_variants():
    import random
    rng = random.Random(3217)
    out = []
    perms = [list(range(32)), rng.sample(range(32), 32)]
    for x, nm in (("x1", 1), ("x2", 2), ("x4", 4)):
        for trans in ("", ".trans"):
            # lane l writes 16 bytes (words 0, 1) into row slot l of the warp's shared region, then supplies the
            # address of slot perm[l] (word 2); ldmatrix reads the rows the first 8*nm lanes point at
            warps = [[(rng.getrandbits(64), rng.getrandbits(64), p[l]) for l in range(32)] for p in perms]
            name = f"ldmatrix.sync.aligned.m8n8.{x}{trans}.shared.b16"
            body = (f"st.shared.v2.u64 [%sl], {{%x0, %x1}}; bar.warp.sync -1; shl.b32 %t0, %a2, 4; add.u32 %t0, %sw, %t0; "
                    f"{name} {{{', '.join(f'%d{j}' for j in range(nm))}}}, [%t0];")

            def ref(warp, nm=nm, trans=trans):
                rows = [[((warp[s][0] | (warp[s][1] << 64)) >> (16 * c)) & 0xffff for c in range(8)] for s in range(32)]
                res = []
                for lane in range(32):
                    fr, fc = lane >> 2, 2 * (lane & 3)
                    for j in range(nm):
                        M = [rows[warp[8 * j + r][2]] for r in range(8)]
                        lo, hi = (M[fc][fr], M[fc + 1][fr]) if trans else (M[fr][fc], M[fr][fc + 1])
                        res.append(lo | (hi << 16))
                return res
            out.append(MV(name, body, "b32", warps, ref, 3, nm))
            # stmatrix: lane l's fragment words 0..nm-1; the rows go to the slots lanes 0..8*nm-1 name (word 4)
            warps = [[tuple([rng.getrandbits(32) for _ in range(4)] + [p[l]]) for l in range(32)] for p in perms]
            name = f"stmatrix.sync.aligned.m8n8.{x}{trans}.shared.b16"
            body = (f"st.shared.v2.u64 [%sl], {{%x5, %x5}}; bar.warp.sync -1; shl.b32 %t0, %a4, 4; add.u32 %t0, %sw, %t0; "
                    f"{name} [%t0], {{{', '.join(f'%a{j}' for j in range(nm))}}}; bar.warp.sync -1; "
                    f"ld.shared.v2.u64 {{%y0, %y1}}, [%sl];")

            def sref(warp, nm=nm, trans=trans):
                slots = [None] * 32
                for j in range(nm):
                    frag = [[(warp[(r * 4 + c // 2)][j] >> (16 * (c & 1))) & 0xffff for c in range(8)] for r in range(8)]
                    for r in range(8):
                        vals = [frag[c][r] if trans else frag[r][c] for c in range(8)]
                        slots[warp[8 * j + r][4]] = _pack(vals, 16)
                res = []
                for s in range(32):
                    v = slots[s] if slots[s] is not None else 0
                    res += [v & mask(64), v >> 64]
                return res
            out.append(MV(name, body, "b64", warps, sref, 5, 2))
    warps = [[(rng.getrandbits(32),) for _ in range(32)] for _ in range(2)]

    def mref(warp):
        frag = [[(warp[r * 4 + c // 2][0] >> (16 * (c & 1))) & 0xffff for c in range(8)] for r in range(8)]
        return [frag[2 * (l & 3)][l >> 2] | (frag[2 * (l & 3) + 1][l >> 2] << 16) for l in range(32)]
    out.append(MV("movmatrix.sync.aligned.m8n8.trans.b16", "movmatrix.sync.aligned.m8n8.trans.b16 %d0, %a0;", "b32", warps, mref, 1, 1))
    return out


def cp_async_variants():
    """cp.async: a lane copies cp-size bytes of its own input words into its shared slot (src-size bytes,
    the rest zero-filled), waits, and reads the slot back; a src-size of 0 reads nothing (word 3 then holds
    an address outside every allocation)."""
    import random
    rng = random.Random(3218)
    out = []
    for level, sizes in (("ca", (4, 8, 16)), ("cg", (16,))):
        for cp in sizes:
            warps = [[(rng.getrandbits(64), rng.getrandbits(64), rng.randrange(cp + 1) if w else cp, 0) for _ in range(32)]
                     for w in range(2)]
            body = (f"st.shared.v2.u64 [%sl], {{%x3, %x3}}; setp.eq.u32 %p1, %a2, 0; selp.b64 %q7, 16, 0, %p1; "
                    f"add.s64 %q7, %gin, %q7; @%p1 mov.u64 %q7, 8; "
                    f"cp.async.{level}.shared.global [%sl], [%q7], {cp}, %a2; cp.async.commit_group; cp.async.wait_group 0; "
                    f"ld.shared.v2.u64 {{%y0, %y1}}, [%sl];")

            def ref(warp, cp=cp):
                res = []
                for ops in warp:
                    src = ops[0] | (ops[1] << 64)
                    ss = ops[2]
                    v = src & mask(8 * ss) if ss else 0
                    res += [v & mask(64), v >> 64]
                return res
            out.append(MV(f"cp.async.{level}.shared.global {cp} src-size", body, "b64", warps, ref, 4, 2))
    return out


def wmma_variants():
    """wmma m16n16k16 round trips: the warp's 32 x 8 input words are A (16x16 f16, row-major or column-major),
    B (16x16 f16, either layout) and C (16x16 f32, row-major) one after the other; wmma.load, wmma.mma and
    wmma.store.d write D (f32, row-major) over the warp's 32 x 4 output words.  The fragments' layout is the
    implementation's (the ISA leaves it open), so only what comes back through memory is checked."""
    import random
    rng = random.Random(3219)
    out = []

    def f16_small():
        return (rng.randrange(2) << 15) | (rng.randrange(9, 22) << 10) | rng.randrange(1024)

    def f32_small():
        return (rng.randrange(2) << 31) | (rng.randrange(110, 144) << 23) | (rng.randrange(1 << 10) << 13)
    for la, lb in (("row", "col"), ("col", "row"), ("row", "row")):
        warps = []
        for _ in range(2):
            region = _pack([f16_small() for _ in range(256)], 16) | (_pack([f16_small() for _ in range(256)], 16) << 4096) \
                | (_pack([f32_small() for _ in range(256)], 32) << 8192)
            warps.append([tuple((region >> (64 * (l * 8 + i))) & mask(64) for i in range(8)) for l in range(32)])
        regs = lambda base: "{" + ", ".join(f"%w{base + i}" for i in range(8)) + "}"   # noqa: E731
        body = ("and.b32 %t0, %t3, 31; mul.wide.u32 %q7, %t0, 64; sub.s64 %q7, %gin, %q7; add.s64 %q3, %q7, 512; "
                "add.s64 %q4, %q7, 1024; "
                f"wmma.load.a.sync.aligned.{la}.m16n16k16.global.f16 {regs(0)}, [%q7], 16; "
                f"wmma.load.b.sync.aligned.{lb}.m16n16k16.global.f16 {regs(8)}, [%q3], 16; "
                f"wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {regs(16)}, [%q4], 16; "
                f"wmma.mma.sync.aligned.{la}.{lb}.m16n16k16.f32.f32 {regs(24)}, {regs(0)}, {regs(8)}, {regs(16)}; "
                "mul.wide.u32 %q3, %t0, 32; sub.s64 %q3, %gout, %q3; "
                f"wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%q3], {regs(24)}, 16;")

        def ref(warp, la=la, lb=lb):
            region = sum(x << (64 * i) for i, x in enumerate(w for ops in warp for w in ops))
            ha = [(region >> (16 * i)) & 0xffff for i in range(256)]
            hb = [(region >> (4096 + 16 * i)) & 0xffff for i in range(256)]
            fc = [(region >> (8192 + 32 * i)) & mask(32) for i in range(256)]
            A = lambda r, c: decode(ha[r * 16 + c] if la == "row" else ha[c * 16 + r], "f16")   # noqa: E731
            B = lambda k, n: decode(hb[k * 16 + n] if lb == "row" else hb[n * 16 + k], "f16")   # noqa: E731
            d = []
            for r in range(16):
                for c in range(16):
                    x = signed(decode(fc[r * 16 + c], "f32")) + sum(signed(A(r, q)) * signed(B(q, c)) for q in range(16))
                    d.append(encode(round_to(1 if x < 0 else 0, abs(x), "f32", RN), "f32"))
            return [d[2 * i] | (d[2 * i + 1] << 32) for i in range(128)]
        v = MV(f"wmma.m16n16k16.{la}.{lb}.f32.f32 load/mma/store", body, "b64", warps, ref, 8, 4, decl=".reg .b32 %w<32>")
        v.stores = False
        out.append(v)
    return out


def matrix_variants():
    return mma_variants() + ldst_matrix_variants() + cp_async_variants() + wmma_variants()


def matrix_kernel_text(v):
    """The kernel of an MV variant: `k(.u64 in, .u64 out, .u32 n, .u64 scratch)`; thread i reads words
    in[i*nin ...] into %x0.. (.b64) and %a0.. (their low 32 bits), runs the body with %sw (the warp's
    512-byte shared region), %sl (this lane's 16-byte slot in it) and %gin (its input words' global
    address; %gout its output words' global address; v.decl's declarations), and stores %d0.. (.b32,
    zero-extended) or %y0.. (.b64) into out[i*nout ...] (unless v.stores is False: the body stored them)."""
    nin, nout = v.nin, v.nout
    out64 = v.td in ("b64", "f64")
    lines = [
        ".version 8.0", ".target sm_90", ".address_size 64", "",
        ".visible .entry k(.param .u64 pin, .param .u64 pout, .param .u32 n, .param .u64 pscr)", "{",
        "  .reg .pred %p<4>;", "  .reg .b32 %t<4>;", "  .reg .b64 %q<8>;", "  .reg .b64 %gin;", "  .reg .b32 %sw, %sl;",
        f"  .reg .b64 %x<{nin + 1}>;", f"  .reg .b32 %a<{nin + 1}>;", f"  .reg .b32 %d<{nout}>;", f"  .reg .b64 %y<{nout}>;",
        f"  .shared .align 16 .b8 sh[{BLOCK * 16}];", "  .reg .b64 %gout;", *[f"  {d.strip()};" for d in v.decl.split(";") if d.strip()],
        "  mov.u32 %t1, %ctaid.x;", "  mov.u32 %t2, %ntid.x;", "  mov.u32 %t3, %tid.x;",
        "  mad.lo.u32 %t1, %t1, %t2, %t3;", "  ld.param.u32 %t2, [n];", "  setp.ge.u32 %p3, %t1, %t2;", "  @%p3 bra END;",
        "  ld.param.u64 %q1, [pin];", "  cvta.to.global.u64 %q1, %q1;", f"  mul.wide.u32 %q2, %t1, {8 * nin};",
        "  add.s64 %gin, %q1, %q2;",
        "  mov.u32 %sw, sh;", "  and.b32 %t0, %t3, -32;", "  shl.b32 %t0, %t0, 4;", "  add.u32 %sw, %sw, %t0;",
        "  and.b32 %t0, %t3, 31;", "  shl.b32 %t0, %t0, 4;", "  add.u32 %sl, %sw, %t0;",
        f"  mov.b64 %x{nin}, 0;", f"  mov.b32 %a{nin}, 0;",
        "  ld.param.u64 %q5, [pout];", "  cvta.to.global.u64 %q5, %q5;", f"  mul.wide.u32 %q6, %t1, {8 * nout};",
        "  add.s64 %gout, %q5, %q6;",
    ]
    for i in range(nin):
        lines += [f"  ld.global.u64 %x{i}, [%gin+{8 * i}];", f"  cvt.u32.u64 %a{i}, %x{i};"]
    lines += ["  " + s.strip() + ";" for s in v.body.split(";") if s.strip()]
    lines += ["  ld.param.u64 %q5, [pout];", "  cvta.to.global.u64 %q5, %q5;", f"  mul.wide.u32 %q6, %t1, {8 * nout};",
              "  add.s64 %q5, %q5, %q6;"]
    for j in range(nout if getattr(v, "stores", True) else 0):
        if not out64:
            lines.append(f"  cvt.u64.u32 %y{j}, %d{j};")
        lines.append(f"  st.global.u64 [%q5+{8 * j}], %y{j};")
    lines += ["END:", "  ret;", "}", ""]
    return "\n".join(lines)


def matrix_inputs_array(v):
    import numpy as np
    arr = np.zeros((len(v.inputs), v.nin), np.uint64)
    for i, ops in enumerate(v.inputs):
        for k, x in enumerate(ops):
            arr[i, k] = x
    return arr


def kernel_for(v):
    """The kernel text of any variant (one-instruction or warp-wide matrix)."""
    return matrix_kernel_text(v) if isinstance(v, MV) else kernel_text(v)


def inputs_for(v):
    return matrix_inputs_array(v) if isinstance(v, MV) else inputs_array(v)


def out_words(v):
    """8-byte output words per thread."""
    return v.nout if isinstance(v, MV) else 1
