"""Random ops (issue 19), as torch 2.13 LTC records and runs them: ``rand`` / ``randn`` / ``randint`` (and
``*_like``) are an empty tensor (device data) fed to ``aten::uniform`` / ``aten::normal_functional`` /
``aten::random`` (``generator=null``); the in-place ``uniform_`` / ``normal_`` / ``random_`` / ``bernoulli_(p)``
are the same nodes on the tensor's value, committed to it; ``bernoulli`` is ``aten::bernoulli`` (with ``p=``
for a number); dropout in training is ``aten::native_dropout`` (2 outputs: the result and the Bool mask;
p == 1 is ``input * zeros({})``, an empty input itself).  The numbers are drawn when the graph runs
(mark_step), in post order, from one process-wide generator, as LTC's TorchScript backend draws them from
torch's default CPU generator.

accel's generator is torch's CPU one: mt19937 seeded as ``torch.manual_seed`` seeds it (default seed
67280421310721), with torch's transforms: uniform floats from 24 (float, half, bfloat16) / 53 (double) random
bits, ``from + u * (to - from)`` in the dtype's float arithmetic as torch's eager kernel (LTC's TorchScript run
rounds once, in double: within 1 ulp), randint as ``bits % range + low`` (64 random bits from a range of 2**28
on), normal by torch's Box-Muller (``normal_fill`` in blocks of 16 for 16 or more elements, the tail's 16 drawn
anew; the cached double Box-Muller below that), Bernoulli as ``u < p`` (a float draw against a probability
tensor, a double draw against a number p).  Seeded values are bit-equal to torch's (``randn`` to float rounding:
torch's vectorised log / sin / cos), as checked against torch 2.13.  Dropout's mask follows torch's portable
Bernoulli kernel, which torch 2.13's CPU wheel ran on the machine the goldens come from; a torch build that
takes MKL's Bernoulli path (an MCG31 stream) gives other masks, equal in distribution only.
"""
import math
import struct
import threading
import warnings

import numpy as _np

from accel.lazy import _dtypes as D
from accel.lazy import metrics as _metrics
from accel.lazy import tensors as T
from accel.lazy._optable import Kernel, classes, declare, helpers
from accel.lazy.executor import compute_nodes, tensor_value
from accel.lazy.inplace import commit as _commit, sync as _sync
from accel.lazy.ops.factories import _code, _empty, _sizes, zeros as _zeros
from accel.lazy.ops.views import expanded_sizes
from accel.lazy.tensors import (
    LazyTensor, _as_number, _check_tensor, _device, _dtype_name, _fn_counter, _index, _op, _seed,
    set_attrs)

DEFAULT_SEED = 67280421310721       # c10::default_rng_seed_val
_c_synced = T._cell("SyncedTensorsWithIR")


_STATE_SIZE = 5056                  # sizeof(CPUGeneratorImplState)
_M64 = 0xFFFFFFFFFFFFFFFF


class Generator:
    """torch.Generator on the CPU (the lazy device's random ops draw from CPU generators, as LTC's TorchScript
    backend does): torch's CPUGeneratorImpl, an mt19937 (numpy's RandomState seeds and steps it as torch's
    at::mt19937 does) with the cached second double normal sample.  ``get_state()`` is torch's byte layout
    (CPUGeneratorImplState, 5056 bytes), which LTC hashes into the graph hash of a random op given
    ``generator=``."""

    def __init__(self, device="cpu"):
        dev = str(device) if device is not None else "cpu"
        if dev.split(":")[0] != "cpu":
            raise RuntimeError(f"accel.lazy.Generator: only CPU generators exist here (the lazy device draws "
                               f"from CPU generators, as LTC does), got device={device!r}")
        self.device = "cpu"
        self.lock = threading.RLock()
        T.hold_at_fork(self)             # a fork waits for a draw in progress; the child gets the lock free
        self.manual_seed(DEFAULT_SEED)

    def __repr__(self):
        return f"<accel.lazy.Generator object at {id(self):#x}>"

    def __reduce__(self):
        """copy / deepcopy / pickle: an independent generator in the same state (as torch's)."""
        return _restore_generator, (self.get_state().tobytes(),)

    def manual_seed(self, seed):
        """Reseed (torch's: the low 32 bits seed the mt19937, initial_seed() keeps all 64); returns self."""
        s = _index(seed, "manual_seed(): seed")
        if not -(1 << 63) <= s <= _M64:        # torch unpacks a uint64, or else an int64 (wrapped)
            raise ValueError(f"manual_seed(): seed={s} is out of range: expected an integer in [-2**63, 2**64) "
                             f"(torch: Overflow when unpacking long long)")
        s &= _M64
        with self.lock:
            self._seed = s
            self.mt = _np.random.RandomState(s & 0xFFFFFFFF)
            self._twist_next = 0     # freshly seeded: torch's mt19937 reports next_ = 0 until its first draw
            self.next_normal = None
            self._float_normal = bytes(5)
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        """Reseed from the operating system's entropy (torch: std::random_device); returns the seed."""
        import os
        s = int.from_bytes(os.urandom(8), "little") >> 1      # torch's seeds fit int64 here too
        self.manual_seed(s)
        return s

    def random(self, n):
        """n raw 32-bit draws (CPUGeneratorImpl::random)."""
        if n:                        # no draw (an empty tensor) leaves a freshly seeded state as torch reports it
            self._twist_next = None
        return self.mt.randint(0, 1 << 32, size=n, dtype=_np.uint32).astype(_np.uint64)

    def random64(self, n):
        """n 64-bit draws: two 32-bit ones each, the first as the high half (random64)."""
        r = self.random(2 * n)
        return (r[0::2] << _np.uint64(32)) | r[1::2]

    def get_state(self):
        """torch's CPUGeneratorImplState bytes (a uint8 numpy array of 5056): the initial seed, mt19937's
        left / seeded / next and its 624 words (as uint64), the cached double normal sample."""
        with self.lock:
            _, key, pos = self.mt.get_state()[:3]
            left, nxt = (1, self._twist_next) if self._twist_next is not None else (625 - pos, pos)
            buf = bytearray(_STATE_SIZE)
            struct.pack_into("<QiiQ", buf, 0, self._seed, left, 1, nxt)
            buf[24:24 + 624 * 8] = key.astype("<u8").tobytes()
            if self.next_normal is not None:
                struct.pack_into("<d", buf, 5024, self.next_normal)
                struct.pack_into("<i", buf, 5040, 1)
            buf[5048:5053] = self._float_normal
        return _np.frombuffer(bytes(buf), _np.uint8).copy()

    def set_state(self, new_state):
        """Restore a state get_state() gave (torch's checks and messages); returns self."""
        if type(new_state) is LazyTensor:
            if new_state._shape.dtype != D.UINT8:
                raise TypeError("RNG state must be a torch.ByteTensor")
            new_state = new_state.numpy()
        a = _np.asarray(new_state) if not isinstance(new_state, (bytes, bytearray)) else \
            _np.frombuffer(new_state, _np.uint8)
        if a.dtype != _np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if a.size != _STATE_SIZE:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_SIZE} but found the input RNG "
                               f"state size to be {a.size}")
        b = a.tobytes()
        seed, left, seeded, nxt = struct.unpack_from("<QiiQ", b, 0)
        nxt &= 0xFFFFFFFF                                    # torch keeps next_ as a uint32
        if not (seeded and 0 < left <= 624 and nxt <= 624):
            raise RuntimeError("Invalid mt19937 state")
        if left > 1 and left + nxt != 625:
            # torch's mt19937 twists when ``left`` runs out, numpy's when its position reaches 624: a state
            # where the two disagree (never one torch itself produced) cannot be stepped here as torch would
            raise RuntimeError(f"accel.lazy.Generator.set_state: a state with left={left} and next={nxt} (left + "
                               f"next != 625) is not one torch's mt19937 produces; not supported")
        key = _np.frombuffer(b, "<u8", 624, 24).astype(_np.uint32)
        valid = struct.unpack_from("<i", b, 5040)[0]
        with self.lock:
            self._seed = seed
            self.mt.set_state(("MT19937", key, 624 if left == 1 else nxt))
            self._twist_next = nxt if left == 1 else None
            self.next_normal = struct.unpack_from("<d", b, 5024)[0] if valid else None
            self._float_normal = b[5048:5053]
        return self


def _restore_generator(state):
    return Generator().set_state(state)


default_generator = _gen = Generator()


def manual_seed(seed):
    """torch.manual_seed: reseed the default generator (random ops without generator= draw from it when their
    graph runs); returns it."""
    return _gen.manual_seed(seed)


def initial_seed():
    """torch.initial_seed: the default generator's seed."""
    return _gen.initial_seed()


def seed():
    """torch.seed: reseed the default generator from the operating system's entropy; returns the seed."""
    return _gen.seed()


def get_rng_state():
    """torch.get_rng_state: the default generator's state (torch's byte layout, a uint8 numpy array)."""
    return _gen.get_state()


def set_rng_state(new_state):
    """torch.set_rng_state."""
    _gen.set_state(new_state)


def _generator(generator):
    """The generator a random op draws from: the default one for None, else an accel.lazy.Generator."""
    if generator is None:
        return None
    if type(generator) is not Generator:
        raise TypeError(f"generator must be an accel.lazy.Generator (or None), got {type(generator).__name__}: "
                        f"{generator!r}")
    return generator


# ---------------------------------------------------------------- the draws (run by the kernels)
def _uniform01(n, code, g):
    """n uniforms in [0, 1) as torch draws them (as float64 values): 53 random bits for double, 24 for the
    other float types (half and bfloat16 too: torch rounds the float draw, as checked against torch 2.13)."""
    if code == D.FLOAT64:
        bits = g.random64(n) & _np.uint64((1 << 53) - 1)
        return bits.astype(_np.float64) * 2.0 ** -53
    bits = g.random(n) & _np.uint64((1 << 24) - 1)
    return bits.astype(_np.float64) * 2.0 ** -24


def _np_uniform(sizes, lo, hi, code, g=_gen):
    n = int(_np.prod(sizes, dtype=_np.int64))
    dt = D.CODE_TO_NP[code]
    with g.lock:
        u = _uniform01(n, code, g)
    if code == D.FLOAT64:
        r = u * (hi - lo) + lo
    else:            # float arithmetic (torch's dist_acctype<float> / <half> is float)
        f = _np.float32
        r = u.astype(f) * (f(hi) - f(lo)) + f(lo)
    r = r.astype(dt).reshape(sizes)
    return D.round_bf16(r) if code == D.BFLOAT16 else r


def _np_random(sizes, lo, hi, code, g=_gen):
    if code in D.FLOATS:                 # (the IR records the bounds given; torch's kernel draws in these)
        lo, hi = _float_bounds(lo, hi, code)
    n = int(_np.prod(sizes, dtype=_np.int64))
    rng = hi - lo
    with g.lock:
        # torch's uniform_int_from_to_distribution (outside fbcode): 64-bit draws from a range of 2**28 on, for
        # every dtype ("allow approx 5% skew"), 32-bit ones below
        v = g.random64(n) if rng >= 1 << 28 else g.random(n)
    r = (v % _np.uint64(rng)).astype(_np.int64) + lo
    return r.astype(D.CODE_TO_NP[code]).reshape(sizes)


def _np_random_full(sizes, lo, hi, code, g=_gen):
    """random_()'s draws (torch's uniform_int_distribution): a 64-bit draw for double and int64, 32-bit for the
    other dtypes, modulo the dtype's largest + 1 (bool: the low bit), for a floating dtype 2^digits + 1 (the
    integers its significand holds)."""
    n = int(_np.prod(sizes, dtype=_np.int64))
    with g.lock:
        v = g.random64(n) if code in (D.FLOAT64, D.INT64) else g.random(n)
    if code in D.FLOATS:
        m = (1 << _DIGITS[code]) + 1
    elif code == D.BOOL:
        m = 2
    else:
        m = int(_np.iinfo(D.CODE_TO_NP[code]).max) + 1
    r = (v % _np.uint64(m)).astype(_np.int64)
    return r.astype(D.CODE_TO_NP[code]).reshape(sizes)


def _normal_fill(n, code, mean, std, g):
    """torch's normal_fill: n uniforms, Box-Muller on blocks of 16 (8 pairs), the tail block recomputed
    from 16 new uniforms."""
    f = _np.float64 if code == D.FLOAT64 else _np.float32
    full = n - n % 16
    if code in (D.FLOAT16, D.BFLOAT16):
        # torch's half / bfloat16 kernel draws the whole blocks only, then the tail's 16 (checked against 2.13)
        data = _np.empty(n, f)
        data[:full] = _uniform01(full, code, g)
    else:
        data = _uniform01(n, code, g).astype(f)

    def fill16(block):
        u1 = f(1) - block[:8]
        u2 = block[8:]
        radius = _np.sqrt(f(-2) * _np.log(u1))
        theta = f(2.0 * math.pi) * u2
        out = _np.empty(16, f)
        out[:8] = radius * _np.cos(theta) * f(std) + f(mean)
        out[8:] = radius * _np.sin(theta) * f(std) + f(mean)
        return out

    if full:
        b = data[:full].reshape(-1, 16)
        u1 = f(1) - b[:, :8]
        radius = _np.sqrt(f(-2) * _np.log(u1))
        theta = f(2.0 * math.pi) * b[:, 8:]
        out = _np.empty_like(b)
        out[:, :8] = radius * _np.cos(theta) * f(std) + f(mean)
        out[:, 8:] = radius * _np.sin(theta) * f(std) + f(mean)
        data[:full] = out.reshape(-1)
    if n % 16:
        data[n - 16:] = fill16(_uniform01(16, code, g).astype(f))
    return data


def _normal_serial(n, mean, std, g):
    """torch's at::normal_distribution<double>, one value at a time, with the generator's cached sample."""
    out = _np.empty(n, _np.float64)
    for i in range(n):
        c = g.next_normal
        if c is not None:
            g.next_normal = None
            out[i] = c * std + mean
            continue
        u1, u2 = _uniform01(2, D.FLOAT64, g)
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        g.next_normal = r * math.sin(theta)
        out[i] = r * math.cos(theta) * std + mean
    return out


def _np_normal(sizes, mean, std, code, g=_gen):
    n = int(_np.prod(sizes, dtype=_np.int64))
    with g.lock:
        r = _normal_fill(n, code, mean, std, g) if n >= 16 else _normal_serial(n, mean, std, g)
    return r.astype(D.CODE_TO_NP[code]).reshape(sizes)


def _np_bernoulli_p(sizes, p, g=_gen):
    n = int(_np.prod(sizes, dtype=_np.int64))
    with g.lock:
        u = _uniform01(n, D.FLOAT64, g)
    return (u < p).reshape(sizes)


def _np_dropout(x, p):
    """(the result, the Bool mask) of native_dropout."""
    x = _np.asarray(x)
    mask = _np_bernoulli_p(x.shape, 1.0 - p)
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    dt = x.dtype
    out = (x * mask.astype(dt)) * dt.type(scale)
    return out.astype(dt), mask


def _np_bernoulli(x, p, code, g=_gen):
    """bernoulli(x) (x: the probabilities; a float draw < p each, as torch's tensor kernel) or
    bernoulli(x, p) (a double draw < p each, as its scalar kernel)."""
    x = _np.asarray(x)
    if p is None:
        with g.lock:
            if x.dtype == _np.float64:       # bernoulli_distribution<double>: a 53-bit draw against a double p
                r = _uniform01(x.size, D.FLOAT64, g).reshape(x.shape) < x
            else:                            # <float>: a 24-bit draw against p as a float
                r = _uniform01(x.size, D.FLOAT32, g).astype(_np.float32).reshape(x.shape) < x.astype(_np.float32)
    else:
        r = _np_bernoulli_p(x.shape, p, g)
    return r.astype(D.CODE_TO_NP[code])


helpers(_rng_uniform=_np_uniform, _rng_random=_np_random, _rng_random_full=_np_random_full, _rng_normal=_np_normal, _rng_dropout=_np_dropout,
        _rng_bernoulli=_np_bernoulli)


def _gen_arg(k):
    """``, G[i]`` for a node given generator= (its generator, handed to the program at each run), else ''."""
    g = k.run_arg()
    return f", {g}" if g else ""


def _k_draw(name):
    def emit(k):
        a = k.attrs[1]
        k.line(f"{k.out} = {name}({tuple(k.shape.sizes)!r}, {a[0]!r}, {a[1]!r}, {k.code}{_gen_arg(k)})")
    return emit


def _k_bernoulli(k):
    k.line(f"{k.out} = _rng_bernoulli({k.x}, {k.attrs[1]!r}, {k.code}{_gen_arg(k)})")


def _k_dropout(k):
    k.line(f"{k.out} = _rng_dropout({k.x}, {k.attrs[1]!r})")


# ---------------------------------------------------------------- tracing
def _g(v):
    return f"{float(v):g}"


def _gen_hash(gen):
    """What LTC hashes for an optional generator: kNullOpt, or TensorHash(get_state()) (its state bytes)."""
    return None if gen is None else gen.get_state().tobytes()


def _gen_tag(gen):
    return "generator=null" if gen is None else "generator=torch.Generator()"


def _draw(opname, empty, seed, args, tags, counter, gen=None):
    """The random node; given a generator, the node draws from it when its graph runs (a run-time argument of
    the program, so that a cached program draws from the generator of the graph it runs)."""
    s = empty._shape
    _fn_counter(counter)[0] += 1
    n = T.Node(_op(opname), (empty._ir(),), (s,), 1, seed)
    set_attrs(n, opname, args, tags)
    if gen is not None:      # the IR trie reuses the node only for this very generator, as LTC compares them
        T.set_run_arg(n, gen, identity=True)
    return T._wrap(n, s)


def _float_code(dtype, what):
    code = _code(dtype)
    if code not in D.FLOATS:
        raise NotImplementedError(f"\"{what}\" not implemented for '{_dtype_name(code)}'")
    return code


def _uniform(empty, lo=0.0, hi=1.0, gen=None):
    lo, hi = float(lo), float(hi)
    if not lo <= hi:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_g(lo)} > to={_g(hi)}")
    return _draw("aten::uniform", empty, _seed(lo, hi, _gen_hash(gen)), (lo, hi),
                 f"from={_g(lo)}, to={_g(hi)}, {_gen_tag(gen)}", "uniform", gen)


def _normal(empty, mean=0.0, std=1.0, gen=None):
    mean, std = float(mean), float(std)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
    return _draw("aten::normal_functional", empty, _seed(mean, std, _gen_hash(gen)), (mean, std),
                 f"mean={_g(mean)}, std={_g(std)}, {_gen_tag(gen)}", "normal_functional", gen)


# torch's names of the dtypes (caffe2::TypeMeta's) in random_'s bounds messages; float types: the digits of their
# significands
_TYPE_META = {D.UINT8: "unsigned char", D.INT8: "signed char", D.INT16: "short int", D.INT32: "int",
              D.INT64: "long int", D.BOOL: "bool", D.FLOAT16: "c10::Half", D.BFLOAT16: "c10::BFloat16",
              D.FLOAT32: "float", D.FLOAT64: "double"}
_DIGITS = {D.FLOAT16: 11, D.BFLOAT16: 8, D.FLOAT32: 24, D.FLOAT64: 53}


def _to_float_type(v, code):
    """int64 ``v`` cast to float type ``code`` and back (C++'s static_cast through float for half / bfloat16; a
    value the int64 cannot hold, an overflow to inf too, gives x86's INT64_MIN)."""
    with _np.errstate(over="ignore"):
        f = _np.float64(v) if code == D.FLOAT64 else _np.float32(v)
        if code == D.FLOAT16:
            f = _np.float16(f)
        elif code == D.BFLOAT16:
            f = D.round_bf16(_np.asarray(f, _np.float32))
    f = float(f)
    return int(f) if -2.0 ** 63 <= f < 2.0 ** 63 else -(1 << 63)


def _float_bounds(lo, hi, code):
    """torch's update_from / update_to: [lo, hi) of a float type moved inside what the type holds exactly."""
    digits = _DIGITS[code]
    lo1 = _to_float_type(lo + 1, code)
    if lo1 < lo:
        lo = lo1 + (1 << (abs(lo + 1).bit_length() - 1 - digits + 1))
    hi1 = _to_float_type(hi - 1, code)
    if hi1 >= hi:
        hi = hi1 - (1 << (abs(hi - 1).bit_length() - 1 - digits + 1))
    return lo, hi


def _random_bounds(lo, hi, code):
    """torch's random_(from, to) checks (random_from_to_impl): from < to, for a float type the bounds moved
    (_float_bounds) and compared again, then from and to - 1 within the dtype (a warning for a float type beyond
    the integers its significand holds).  Returns the bounds the draw uses."""
    if not lo < hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
    name = _TYPE_META[code]
    if code in D.FLOATS:
        lo, hi = _float_bounds(lo, hi, code)
        if not lo < hi:
            raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got "
                               f"from={lo} >= to={hi}")
        info = _np.finfo(_np.float32 if code == D.BFLOAT16 else D.CODE_TO_NP[code])
        vmin, vmax = (-3.3895313892515355e38, 3.3895313892515355e38) if code == D.BFLOAT16 else \
            (float(info.min), float(info.max))
    else:
        vmin, vmax = (0, 1) if code == D.BOOL else (int(_np.iinfo(D.CODE_TO_NP[code]).min),
                                                    int(_np.iinfo(D.CODE_TO_NP[code]).max))
    for what, v in (("from", lo), ("to - 1", hi - 1)):
        if not vmin <= v <= vmax:
            raise RuntimeError(f"{what} is out of bounds for {name}")
    if code in D.FLOATS:
        digits = _DIGITS[code]
        for what, v in (("from", lo), ("to - 1", hi - 1)):
            if v < -(1 << digits) or v > 1 << digits:
                warnings.warn(f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations {name} "
                              "can support discrete uniform distribution only within this range. This warning will "
                              "become an error in version 1.7 release, please fix the code in advance", UserWarning,
                              stacklevel=4)
    return lo, hi


def _random(empty, lo, hi, gen=None):
    _random_bounds(lo, hi, empty._shape.dtype)
    return _draw("aten::random", empty, _seed(lo, hi, _gen_hash(gen)), (lo, hi),
                 f"from={lo}, to={hi}, {_gen_tag(gen)}", "random", gen)


def rand(*size, dtype=None, device=None, generator=None):
    """torch.rand on the lazy device: aten::uniform(empty, from=0, to=1)."""
    _device(device)
    g = _generator(generator)
    return _uniform(_empty(_sizes(size, "rand"), _float_code(dtype, "check_uniform_bounds")), gen=g)


def randn(*size, dtype=None, device=None, generator=None):
    """torch.randn on the lazy device: aten::normal_functional(empty, mean=0, std=1)."""
    _device(device)
    g = _generator(generator)
    return _normal(_empty(_sizes(size, "randn"), _float_code(dtype, "normal_kernel_cpu")), gen=g)


_OVERFLOW = "Overflow when unpacking long long"


def _int64(v, what):
    """An int argument torch's parser reads as a C++ int64_t: ValueError beyond its range, as torch's."""
    v = _index(v, what)
    if not -(1 << 63) <= v < 1 << 63:
        raise ValueError(_OVERFLOW)
    return v


def _randint_args(args, what):
    if len(args) == 2:
        (high, size), low = args, 0
    elif len(args) == 3:
        low, high, size = args
    else:
        raise TypeError(f"{what}() takes (high, size) or (low, high, size), got {len(args)} positional arguments")
    return _int64(low, f"{what}(): low"), _int64(high, f"{what}(): high"), size


def randint(*args, dtype=None, device=None, generator=None):
    """torch.randint(low=0, high, size) on the lazy device: aten::random(empty, from=low, to=high) (int64)."""
    _device(device)
    g = _generator(generator)
    low, high, size = _randint_args(args, "randint")
    sizes = _sizes((size,) if not isinstance(size, (tuple, list)) else tuple(size), "randint")
    return _random(_empty(sizes, _code(dtype, D.INT64)), low, high, g)


def _like(x, dtype, what):
    _check_tensor(x, f"{what}() input")
    _fn_counter("_copy_from")[0] += 1           # LTC copies the empty_like result in (lazy::_copy_from)
    return _empty(x._shape.sizes, _code(dtype, x._shape.dtype))


def rand_like(input, dtype=None, device=None):
    _device(device)
    e = _like(input, dtype, "rand_like")
    _float_code(D.DTYPES[e._shape.dtype], "check_uniform_bounds")
    return _uniform(e)


def randn_like(input, dtype=None, device=None):
    _device(device)
    e = _like(input, dtype, "randn_like")
    _float_code(D.DTYPES[e._shape.dtype], "normal_kernel_cpu")
    return _normal(e)


def randint_like(input, low, high=None, dtype=None, device=None):
    _device(device)
    if high is None:
        low, high = 0, low
    e = _like(input, dtype, "randint_like")
    return _random(e, _int64(low, "randint_like(): low"), _int64(high, "randint_like(): high"))


def bernoulli(input, p=None, generator=None):
    """torch.bernoulli(input) (input: the probabilities) or input.bernoulli(p): aten::bernoulli (with ``p=``
    for a number p), 0 / 1 of the input's dtype."""
    _check_tensor(input, "bernoulli() input")
    g = _generator(generator)
    s = input._shape
    if s.dtype not in D.FLOATS:
        raise NotImplementedError(f"\"bernoulli\" not implemented for '{_dtype_name(s.dtype)}'")
    if p is None:
        return _draw("aten::bernoulli", input, _seed(_gen_hash(g)), None, _gen_tag(g), "bernoulli", g)
    pv = _prob(p, "bernoulli")
    return _draw("aten::bernoulli", input, _seed(pv, _gen_hash(g)), pv, f"p={_g(pv)}, {_gen_tag(g)}", "bernoulli", g)


def _prob(p, what):
    pv = _as_number(p)
    if pv is None or isinstance(p, bool):
        raise TypeError(f"{what}(): p must be a Python number, got {type(p).__name__}: {p!r}")
    pv = float(pv)
    if not 0 <= pv <= 1:
        raise RuntimeError(f"{what}_ expects p to be in [0, 1], but got p={_g(pv)}")
    return pv


def _in_place(t, what, trace):
    """t.<what>_(...): the draw traced on t's value and committed to t (and its aliases), as functionalisation
    records it."""
    _check_tensor(t, f"{what}_() self")
    _sync(t)
    if t._shape.dtype not in D.FLOATS and what != "random":
        raise NotImplementedError(f"\"{what}_\" not implemented for '{_dtype_name(t._shape.dtype)}'")
    return _commit(t, trace(t))


def _uniform_m(self, a=0.0, b=1.0, *, generator=None):
    g = _generator(generator)
    lo, hi = _as_number(a), _as_number(b)
    if lo is None or hi is None:
        raise TypeError(f"uniform_(): from and to must be Python numbers, got {a!r}, {b!r}")
    return _in_place(self, "uniform", lambda t: _uniform(t, lo, hi, g))


def _normal_m(self, mean=0.0, std=1.0, *, generator=None):
    g = _generator(generator)
    m, sd = _as_number(mean), _as_number(std)
    if m is None or sd is None:
        raise TypeError(f"normal_(): mean and std must be Python numbers, got {mean!r}, {std!r}")
    return _in_place(self, "normal", lambda t: _normal(t, m, sd, g))


def _random_full(empty, gen=None):
    """random_() without bounds: aten::random(self) (LTC's Random node, no from / to; kernel kind
    aten::random_full)."""
    s = empty._shape
    _fn_counter("random")[0] += 1
    n = T.Node(_op("aten::random"), (empty._ir(),), (s,), 1, _seed(_gen_hash(gen)))
    set_attrs(n, "aten::random_full", (None, None), _gen_tag(gen))
    if gen is not None:
        T.set_run_arg(n, gen, identity=True)
    return T._wrap(n, s)


class _Omitted:
    """random_'s ``to`` when not given: random_(to) (one argument) and random_(from, None) (an open upper bound)
    differ."""

    def __repr__(self):
        return "<omitted>"


_NO_TO = _Omitted()


def _random_m(self, a=None, b=_NO_TO, *, generator=None):
    g = _generator(generator)
    if a is None and b is _NO_TO:
        return _in_place(self, "random", lambda t: _random_full(t, g))
    if a is None:
        raise TypeError("random_(): from must be an int when to is given, got None")
    if b is None:
        # torch's random_(from, None): [from, the dtype's largest value] (LTC's RandomFrom node, drawn by its
        # backend); read as random_(to=from) it drew from [0, from) without a word
        raise NotImplementedError(f"random_(from={a!r}, to=None) (an open upper bound: up to the dtype's largest "
                                  f"value, LTC's RandomFrom node) is not supported by accel.lazy; pass to=")
    lo, hi = (0, _int64(a, "random_(): to")) if b is _NO_TO else (_int64(a, "random_(): from"), _int64(b, "random_(): to"))
    return _in_place(self, "random", lambda t: _random(t, lo, hi, g))


def _bernoulli_m(self, p=0.5, *, generator=None):
    g = _generator(generator)
    if type(p) is LazyTensor:
        return _bernoulli_tensor_m(self, p, g)
    pv = _prob(p, "bernoulli")
    return _in_place(self, "bernoulli",
                     lambda t: _draw("aten::bernoulli", t, _seed(pv, _gen_hash(g)), pv, f"p={_g(pv)}, {_gen_tag(g)}",
                                     "bernoulli", g))


# ---------------------------------------------------------------- in-place draws LTC runs eagerly
# exponential_ and bernoulli_(tensor p) have no lazy kernel in torch 2.13: its CPU fallback copies the operands to
# the CPU (computing their graphs), draws there at the call, and copies the result back into the tensor.
def _eager_in_place(self, counter, inputs, draw):
    """The fallback: ``draw(values)`` on the operands' values (self's first), committed to ``self`` (and its
    aliases) as a copy back (lazy::_copy_from_and_resize), counted as ``counter``.  LTC reads ``self`` (the
    functionalised tensor the op writes) through a sync of its IR even when it holds data (then a device-data
    node): one graph computed and compiled (cached by its hash) at every call; the other operands as ``.cpu()``
    reads them (a sync where they hold IR)."""
    _metrics.Counter(counter).add(1)
    _c_synced[0] += 1
    values = [compute_nodes([self._ir()])[0]] + [tensor_value(t) for t in inputs[1:]]
    T._c_to_copy[0] += len(inputs)
    out = draw(*values)
    _fn_counter("_copy_from_and_resize")[0] += 1
    r = T.tensor(out, D.bfloat16) if self._shape.dtype == D.BFLOAT16 else T.tensor(out)
    T._c_to_copy[0] -= 1                 # written in by the kernel, not copied to the device
    return _commit(self, r)


def _exponential_m(self, lambd=1.0, *, generator=None):
    """Tensor.exponential_(lambd=1): eager (aten::exponential_), torch's exponential_distribution<double>:
    ``-1 / lambd * log1p(-u)`` of a 53-bit uniform u per element, cast to the tensor's dtype (through float for
    half / bfloat16, as torch's cast)."""
    _check_tensor(self, "exponential_() self")
    g = _generator(generator) or _gen
    lam = _as_number(lambd)
    if lam is None or isinstance(lambd, bool):
        raise TypeError(f"exponential_(): lambd must be a Python number, got {type(lambd).__name__}: {lambd!r}")
    lam = float(lam)
    if not lam > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lam)}")
    code = self._shape.dtype
    if code not in D.FLOATS:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {_dtype_name(code)}")
    _sync(self)

    def draw(x):
        with g.lock:
            u = _uniform01(x.size, D.FLOAT64, g)
        scale = -1.0 / lam
        v = _np.fromiter((scale * math.log1p(-e) for e in u.tolist()), _np.float64, u.size)  # libm's log1p
        if code != D.FLOAT64:
            v = v.astype(_np.float32)
        return v.astype(D.CODE_TO_NP[code]).reshape(x.shape)
    return _eager_in_place(self, "aten::exponential_", [self], draw)


_TENSOR_TYPE = {D.FLOAT32: "FloatTensor", D.FLOAT64: "DoubleTensor", D.FLOAT16: "HalfTensor",
                D.BFLOAT16: "BFloat16Tensor"}


def _check_expands(shape, sizes):
    """torch's expand_inplace check: a tensor of ``shape`` expands to ``sizes`` (its messages)."""
    expanded_sizes(shape.sizes, list(sizes), _TENSOR_TYPE[shape.dtype])


def _bernoulli_tensor_m(self, p, g=None):
    """Tensor.bernoulli_(p) with a tensor p: eager (aten::bernoulli_.Tensor): p broadcast to self's sizes, a
    draw per element as torch.bernoulli(p) draws, 0 / 1 in self's dtype."""
    _check_tensor(self, "bernoulli_() self")
    _sync(self)
    pc = p._shape.dtype
    if pc not in D.FLOATS:
        raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for '{_dtype_name(pc)}'")
    _check_expands(p._shape, self._shape.sizes)
    g = g or _gen

    def draw(x, pv):
        pv = _np.broadcast_to(pv, x.shape)
        bad = ~((pv >= 0) & (pv <= 1))          # NaN too
        if bad.any():                            # torch checks each p as it draws: the ones before were drawn
            k = int(bad.reshape(-1).argmax())
            with g.lock:
                _uniform01(k, D.FLOAT64 if pv.dtype == _np.float64 else D.FLOAT32, g)
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
                               "message be improved?  If so, please report an enhancement request to PyTorch.)")
        return _np_bernoulli(pv, None, self._shape.dtype, g)
    return _eager_in_place(self, "aten::bernoulli_.Tensor", [self, p], draw)


def _bernoulli_out_m(self, p=None, *, generator=None):
    return bernoulli(self, p, generator)


def dropout(input, p=0.5, training=True, inplace=False):
    """torch.nn.functional.dropout: the input itself when not training or p == 0 (as torch); in training,
    aten::native_dropout(input, p, train=1) (the result and its Bool mask; the tensor is the result)."""
    _check_tensor(input, "dropout() input")
    pv = _as_number(p)
    if pv is None or isinstance(p, bool):
        raise TypeError(f"dropout(): p must be a Python number, got {type(p).__name__}: {p!r}")
    pv = float(pv)
    if not 0 <= pv <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {pv}")
    if inplace:
        raise NotImplementedError("dropout(inplace=True) is not supported by accel.lazy yet")
    if not training or pv == 0:
        return input
    s = input._shape
    n = 1
    for k in s.sizes:
        n *= k
    if n == 0:                   # torch's _dropout_impl: an empty input is returned as it is
        return input
    if pv == 1:                  # not the fused kernel: input * zeros({}) (empty then zero_)
        return input * _zeros((), dtype=D.DTYPES[s.dtype])
    if s.dtype not in D.FLOATS:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_dtype_name(s.dtype)}")
    _fn_counter("native_dropout")[0] += 1
    return T._emit_multi("aten::native_dropout", (input._ir(),), ((s.dtype, s.sizes), (D.BOOL, s.sizes)),
                         _seed(pv, True), "aten::native_dropout", pv, f"p={_g(pv)}, train=1")[0]


declare("rand", {}, {"rand": rand, "rand_like": rand_like}, [Kernel("aten::uniform", _k_draw("_rng_uniform"))])
declare("randn", {}, {"randn": randn, "randn_like": randn_like},
        [Kernel("aten::normal_functional", _k_draw("_rng_normal"))])
declare("randint", {}, {"randint": randint, "randint_like": randint_like},
        [Kernel("aten::random", _k_draw("_rng_random")), Kernel("aten::random_full", _k_draw("_rng_random_full"))])
declare("manual_seed", {}, {"manual_seed": manual_seed, "initial_seed": initial_seed, "seed": seed,
                            "get_rng_state": get_rng_state, "set_rng_state": set_rng_state,
                            "Generator": Generator, "default_generator": default_generator})
declare("bernoulli", {"bernoulli": _bernoulli_out_m, "bernoulli_": _bernoulli_m}, {"bernoulli": bernoulli},
        [Kernel("aten::bernoulli", _k_bernoulli)])
declare("random in place", {"uniform_": _uniform_m, "normal_": _normal_m, "random_": _random_m,
                            "exponential_": _exponential_m})
declare("native_dropout", {}, {}, [Kernel("aten::native_dropout", _k_dropout)], nn={"dropout": dropout})
classes(**{"aten::bernoulli": "Bernoulli", "aten::uniform": "Uniform", "aten::normal_functional": "NormalFunctional", "aten::random": "RandomFrom", "aten::random_full": "Random",
           "aten::native_dropout": "NativeDropout"})
