"""LTC-style counters and metrics (torch/csrc/lazy/core/metrics.cpp) with LTC's report format.

Counters with value <= 0 and metrics with no samples are invisible; names iterate alphabetically.
"""
import contextlib
import math
import os
import threading
import time

_lock = threading.RLock()
os.register_at_fork(after_in_child=_lock._at_fork_reinit)      # (a thread that held it is not in the child)
_counters = {}
_metrics = {}
_percentiles = [0.01, 0.05, 0.1, 0.2, 0.5, 0.8, 0.9, 0.95, 0.99]
DEFAULT_MAX_SAMPLES = 1024   # FLAGS_torch_lazy_metrics_samples


def metric_fn_value(value):
    """MetricFnValue: fixed notation, two decimals (``3.14``)."""
    return f"{value:.2f}"


def metric_fn_bytes(value):
    """MetricFnBytes: divide by 1024 over B, KB, MB, GB, TB, PB; two decimals (``1.50KB``)."""
    suffixes = ("B", "KB", "MB", "GB", "TB", "PB")
    i = 0
    while value >= 1024 and i + 1 < len(suffixes):
        value /= 1024.0
        i += 1
    return f"{value:.2f}{suffixes[i]}"


_TIME_PARTS = (("d", 86400e9, 2, 0), ("h", 3600e9, 2, 0), ("m", 60e9, 2, 0), ("s", 1e9, 2, 0),
               ("ms", 1e6, 3, 0), ("us", 1e3, 7, 3))


def metric_fn_time(value):
    """MetricFnTime of nanoseconds, e.g. ``001ms234.567us`` (parts rounded on print, floored for the rest)."""
    out = []
    printed = False
    for i, (suffix, scaler, width, prec) in enumerate(_TIME_PARTS):
        ctime = value / scaler
        if ctime >= 1.0 or printed or i == len(_TIME_PARTS) - 1:
            out.append(f"{ctime:0{width}.{prec}f}{suffix}")
            value -= math.floor(ctime) * scaler
            printed = True
    return "".join(out)


class Counter:
    """A named int64 counter registered on first use; ``add(v)`` adds, ``value`` reads."""
    __slots__ = ("name", "_cell")

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"Counter name must be a str, got {type(name).__name__}: {name!r}")
        self.name = name
        with _lock:
            self._cell = _counters.setdefault(name, [0])

    def add(self, value=1):
        with _lock:
            self._cell[0] += value

    @property
    def value(self):
        return self._cell[0]


class _MetricData:
    __slots__ = ("repr_fn", "size", "buf", "count", "acc")

    def __init__(self, repr_fn, max_samples):
        self.repr_fn = repr_fn
        self.size = max_samples or DEFAULT_MAX_SAMPLES
        self.reset()

    def reset(self):
        self.buf = [None] * self.size
        self.count = 0
        self.acc = 0.0

    def add(self, ts, value):
        self.buf[self.count % self.size] = (ts, value)
        self.count += 1
        self.acc += value

    def samples(self):
        if self.count <= self.size:
            return list(self.buf[:self.count])
        pos = self.count % self.size
        return self.buf[pos:] + self.buf[:pos]


class Metric:
    """A named sample series (ring buffer of ``max_samples``, 0 = 1024) with an accumulator and a formatter."""
    __slots__ = ("name", "_data")

    def __init__(self, name, repr_fn=metric_fn_value, max_samples=0):
        if not isinstance(name, str):
            raise TypeError(f"Metric name must be a str, got {type(name).__name__}: {name!r}")
        self.name = name
        with _lock:
            data = _metrics.get(name)
            if data is None:
                data = _metrics[name] = _MetricData(repr_fn, max_samples)
            self._data = data

    def add_sample(self, value, timestamp_ns=None):
        ts = time.time_ns() if timestamp_ns is None else timestamp_ns
        with _lock:
            self._data.add(ts, float(value))

    def samples(self):
        """(timestamp_ns, value) pairs, oldest first."""
        with _lock:
            return self._data.samples()

    @property
    def total_samples(self):
        return self._data.count

    @property
    def accumulator(self):
        return self._data.acc


@contextlib.contextmanager
def timed(name):
    """TORCH_LAZY_TIMED: add the block's duration in ns to a metric formatted with metric_fn_time."""
    m = Metric(name, metric_fn_time)
    start = time.perf_counter_ns()
    try:
        yield
    finally:
        m.add_sample(time.perf_counter_ns() - start)


def counter_names():
    """Names of counters with a value > 0, alphabetical."""
    with _lock:
        return sorted(n for n, c in _counters.items() if c[0] > 0)


def counter_value(name):
    """The counter's value, or None when it is absent or not > 0."""
    with _lock:
        c = _counters.get(name)
        return c[0] if c is not None and c[0] > 0 else None


def metric_names():
    """Names of metrics with at least one sample, alphabetical."""
    with _lock:
        return sorted(n for n, m in _metrics.items() if m.count > 0)


def metric_data(name):
    """(total_samples, accumulator, samples) of a metric with samples, else None."""
    with _lock:
        m = _metrics.get(name)
        return (m.count, m.acc, m.samples()) if m is not None and m.count > 0 else None


def set_percentiles(spec):
    """Set the report percentiles from LTC's ``"0.01:0.05:..."`` form; ValueError outside (0, 1)."""
    values = []
    for part in str(spec).split(":"):
        p = float(part)
        if not 0.0 < p < 1.0:
            raise ValueError(f"Invalid percentile: {p:g}")
        values.append(p)
    with _lock:
        _percentiles[:] = sorted(values)


def _emit_metric(name, m, out):
    samples = m.samples()
    out.append(f"Metric: {name}\n  TotalSamples: {m.count}\n  Accumulator: {m.repr_fn(m.acc)}\n")
    dt = samples[-1][0] - samples[0][0]
    if dt > 0:
        total = sum(v for _, v in samples)
        out.append(f"  ValueRate: {m.repr_fn(1e6 * (total / (dt / 1000.0)))} / second\n")
        out.append(f"  Rate: {1e6 * (len(samples) / (dt / 1000.0)):g} / second\n")
    values = sorted(v for _, v in samples)
    parts = [f"{p * 100.0:g}%={m.repr_fn(values[int(p * len(values))])}" for p in _percentiles]
    out.append("  Percentiles: " + "; ".join(parts) + "\n")


def create_metric_report(counter_names=None, metric_names=None):
    """LTC's CreateMetricReport; with name lists, only those plus every ``aten::`` counter."""
    out = []
    with _lock:
        if counter_names is None and metric_names is None:
            mnames = sorted(_metrics)
            cnames = sorted(_counters)
        else:
            mnames = list(metric_names or ())
            cnames = list(counter_names or ()) + sorted(n for n in _counters if n.startswith("aten::"))
        for name in mnames:
            m = _metrics.get(name)
            if m is not None and m.count > 0:
                _emit_metric(name, m, out)
        for name in cnames:
            c = _counters.get(name)
            if c is not None and c[0] > 0:
                out.append(f"Counter: {name}\n  Value: {c[0]}\n")
    return "".join(out)


def metrics_report():
    """The full report: every metric with samples, then every counter > 0 (torch._lazy.metrics.metrics_report)."""
    return create_metric_report()


def reset_counters():
    with _lock:
        for c in _counters.values():
            c[0] = 0


def reset_metrics():
    with _lock:
        for m in _metrics.values():
            m.reset()


def reset():
    """Reset every counter and metric (entries stay registered, as in LTC)."""
    reset_counters()
    reset_metrics()
