"""accel.lazy caches, trie, metrics and dumps (plain Python above the selected twin)."""
import re

import numpy as np
import pytest

import accel.lazy as lazy
from accel.lazy import metrics


@pytest.fixture(autouse=True)
def _reset_metrics():
    metrics.reset()
    yield
    metrics.reset()


def test_computation_cache_lru_quirks():
    c = lazy.ComputationCache(2)
    assert c.add("a", 1) == 1 and c.add("b", 2) == 2
    assert c.add("a", 99) == 1 and c.get("a") == 1            # adding an existing key keeps the old value
    c.add("c", 3)                                              # evicts the least recent: b
    assert c.get("b") is None and c.get("a") == 1 and c.numel() == 2 and len(c) == 2
    assert c.get_latest() == 1 and c.erase("a") and not c.erase("a")
    c.clear()
    with pytest.raises(RuntimeError, match="empty"):
        c.get_latest()
    off = lazy.ComputationCache(0)
    assert off.add("a", 1) == 1 and off.get("a") is None and off.numel() == 0 and not off.erase("a")
    with pytest.raises(ValueError):
        lazy.ComputationCache(-1)


def test_computation_cache_keyed_by_graph_hash():
    s = lazy.Shape(6, [2])
    x = lazy.device_data(s, 0)
    y1 = lazy.Node("aten::neg", [lazy.Output(x)], [s])
    y2 = lazy.Node("aten::neg", [lazy.Output(lazy.device_data(s, 7))], [s])
    c = lazy.ComputationCache()
    c.add(lazy.graph_hash([y1]), "compiled")
    assert c.get(lazy.graph_hash([y2])) == "compiled"


def test_data_cache_dedups_by_content():
    dc = lazy.DataCache(maxsize=4)
    a = np.ones((2, 3), np.float32)
    made = []

    def make(arr):
        made.append(arr)
        return object()

    h1 = dc.get_or_create(a, make)
    a[0, 0] = 5                                                # the cache keeps its own copy
    assert dc.get_or_create(np.ones((2, 3), np.float32), make) is h1
    assert dc.get_or_create(np.ones((3, 2), np.float32), make) is not h1        # shape differs
    assert dc.get_or_create(np.ones((2, 3), np.float64), make) is not h1        # dtype differs
    assert len(made) == 3 and metrics.counter_value("DeviceDataCacheMiss") == 3
    assert dc.get(np.ones((2, 3), np.float32)) is h1 and dc.get(np.zeros(1)) is None
    assert dc.add(np.ones((2, 3), np.float32), "new") is h1 and len(dc) == 3


def test_trie_cache_reuse():
    s = lazy.Shape(6, [2])
    tc = lazy.TrieCache()
    before = tc.root.unique_id

    def step(handle):
        x = tc.reuse_or_make_device_data(s, handle, "CPU0")
        y = tc.reuse_or_make("aten::neg", [lazy.Output(x)], [s])
        tc.reset_current()
        return x, y

    x1, y1 = step("h1")
    x2, y2 = step("h2")
    assert x2 is x1 and y2 is y1 and x1.handle == "h2"          # reused, data swapped in (SetData)
    assert metrics.counter_value("IrNodeReused_aten::neg") == 1
    assert metrics.counter_value("IrNodeReused_lazy_tensors::device_data") == 1
    z = tc.reuse_or_make("aten::abs", [lazy.Output(tc.reuse_or_make_device_data(s, 1))], [s])
    assert z.op.qualified_name == "aten::abs" and metrics.counter_value("TrieForked") == 1
    r = before
    assert tc.to_dot() == (
        "digraph G {\n"
        f"{r} -> {r + 1}\n{r + 1}[label=\"lazy_tensors::device_data, 2 hits\"]\n"
        f"{r + 1} -> {r + 3}\n{r + 3}[label=\"aten::abs, 0 hits\"]\n"
        f"{r + 1} -> {r + 2}\n{r + 2}[label=\"aten::neg, 1 hits\"]\n"
        "}\n")
    tc.clear()
    assert tc.current is tc.root and tc.root.successors == []
    assert lazy.TrieCache.get() is lazy.TrieCache.get()


def test_metric_formatters():
    f = metrics.metric_fn_time
    assert f(0) == "000.000us" and f(1234567) == "001ms234.567us"
    assert f(61e9) == "01m01s000ms000.000us" and f(9e13) == "01d01h00m00s000ms000.000us"
    assert metrics.metric_fn_value(3.14159) == "3.14"
    assert metrics.metric_fn_bytes(1536) == "1.50KB" and metrics.metric_fn_bytes(5e9) == "4.66GB"
    assert metrics.metric_fn_bytes(10) == "10.00B"


def test_counters_and_report():
    metrics.Counter("UncachedCompile").add(2)
    metrics.Counter("CachedCompile").add(0)
    metrics.Counter("aten::fallback").add(1)
    neg = metrics.Counter("Negative")
    neg.add(-3)
    assert metrics.counter_names() == ["UncachedCompile", "aten::fallback"]
    assert metrics.counter_value("UncachedCompile") == 2 and metrics.counter_value("Negative") is None
    assert metrics.counter_value("nope") is None
    m = metrics.Metric("TensorsGraphSize")
    for ts, v in ((1000, 10.0), (3000, 30.0), (5000, 20.0)):
        m.add_sample(v, timestamp_ns=ts)
    assert metrics.metric_names() == ["TensorsGraphSize"] and metrics.metric_data("TensorsGraphSize")[:2] == (3, 60.0)
    report = metrics.metrics_report()
    assert report == (
        "Metric: TensorsGraphSize\n  TotalSamples: 3\n  Accumulator: 60.00\n"
        "  ValueRate: 15000000.00 / second\n  Rate: 750000 / second\n"
        "  Percentiles: 1%=10.00; 5%=10.00; 10%=10.00; 20%=10.00; 50%=20.00; 80%=30.00; 90%=30.00; "
        "95%=30.00; 99%=30.00\n"
        "Counter: UncachedCompile\n  Value: 2\nCounter: aten::fallback\n  Value: 1\n")
    assert metrics.create_metric_report(["UncachedCompile"], []) == (
        "Counter: UncachedCompile\n  Value: 2\nCounter: aten::fallback\n  Value: 1\n")
    metrics.reset()
    assert metrics.counter_names() == [] and metrics.metrics_report() == ""
    with pytest.raises(ValueError, match="Invalid percentile: 1.5"):
        metrics.set_percentiles("0.5:1.5")


def test_metric_ring_buffer_and_timed():
    m = metrics.Metric("Small", max_samples=2)
    for i in range(5):
        m.add_sample(i, timestamp_ns=i)
    assert [v for _, v in m.samples()] == [3.0, 4.0] and m.total_samples == 5 and m.accumulator == 10.0
    with metrics.timed("Block"):
        pass
    assert metrics.metric_data("Block")[0] == 1
    assert re.search(r"Metric: Block\n  TotalSamples: 1\n  Accumulator: \d{3}\.\d{3}us\n", metrics.metrics_report())


def test_to_dot_and_text_formats(twin):
    ir = twin.mod("_ir")
    s = ir.Shape(6, [2])
    x = ir.device_data(s, 0, "CPU0")
    m = ir.Node("test::split", [ir.Output(x)], [s, s], 2)
    y = ir.Node("aten::add", [ir.Output(m, 1), ir.Output(m, 0)], [s])
    z = ir.Node("aten::neg", [ir.Output(m, 1)], [])
    assert lazy.to_text([y, ir.Output(z), y]) == (
        "IR {\n  %0 = [Float[2]] lazy_tensors::device_data(), device=CPU0\n"
        "  %1 = [Float[2], Float[2]] test::split(%0), num_outputs=2\n"
        "  %2 = [Float[2]] aten::add(%1.1, %1.0), ROOT=2\n  %3 = [] aten::neg(%1.1), ROOT=1\n}\n")
    assert lazy.to_dot(y) == (
        "digraph G {\n"
        '  node0 [label="lazy_tensors::device_data\\nFloat[2]\\ndevice=CPU0"]\n'
        '  node1 [label="test::split\\nFloat[2]\\nnum_outputs=2"]\n'
        '  node2 [label="aten::add\\nFloat[2]\\nROOT=0"]\n'
        '  node1 -> node2 [label="i=0,o=1"]\n  node1 -> node2 [label="i=1,o=0"]\n'
        "  node0 -> node1\n}\n")
    assert lazy.to_dot(z).count('[label="o=1"]') == 1
    long = ir.device_data(s, 1, "d" * 70)
    assert "\\ndevice=" + "d" * 64 + "...\\nROOT=0\"" in lazy.to_dot(long)
    with pytest.raises(TypeError, match="roots\\[0\\] must be an Output or a Node, got int"):
        lazy.to_text([1])


def test_dtype_mapping():
    assert lazy.dtype_to_code(np.float32) == 6 and lazy.dtype_to_code("int64") == 4
    assert lazy.dtype_to_code(np.dtype(">f4")) == 6 and lazy.code_to_dtype(11) == np.bool_
    assert lazy.shape_of(np.zeros((2, 3), np.float16)) == lazy.Shape(5, [2, 3])
    for c in (0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 27, 28, 29):
        assert lazy.dtype_to_code(lazy.code_to_dtype(c)) == c
    with pytest.raises(TypeError, match="has no c10 ScalarType code"):
        lazy.dtype_to_code(np.dtype("U3"))
    with pytest.raises(ValueError, match="BFloat16"):
        lazy.code_to_dtype(15)
