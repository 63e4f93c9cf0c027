"""First-seen graphs with sizes that change at every step (issue 36): the numpy backend's templates (a graph's
code kept per structure, specialised to new sizes without generating or compiling code) give the values, the
counters and metrics, the IR text and hashes and the program text that the backend without templates gives,
in a fresh process per path and twin; and the template cache through the lifetime matrix's cases: threads
racing its first use, garbage-collected cycles, fork, a failure while a program is generated or specialised."""
import json

import numpy as np
import pytest

import accel.lazy as L
from accel.lazy import backend as B

# One process runs every program of PROGRAMS over its sizes, step by step, on the backend that MODE names
# ("templates": the default NumpyBackend; "generate": NumpyBackend(max_templates=0), the code generated for
# every new graph hash as before templates), and prints per step the IR text, the graph hash, the values and
# the program's text, then every counter and metric count.
DIFF = r'''
import hashlib, json, sys
import numpy as np
import accel.lazy as L
from accel.lazy import backend as B, metrics

be = B.NumpyBackend(max_templates=0) if MODE == "generate" else B.NumpyBackend()
L.set_backend(be)

def arr(n, m=32, dt=np.float32, seed=0):
    r = np.random.default_rng(seed + 7 * n + m)
    if np.dtype(dt).kind == "f":
        return ((r.random((n, m)) - 0.5) * 4).astype(dt)
    if np.dtype(dt).kind == "b":
        return r.random((n, m)) < 0.5
    return r.integers(-50, 50, (n, m)).astype(dt)

def chain(n):
    x = L.tensor(arr(n))
    for _ in range(20):
        x = (x * 1.0001 + 0.5).relu()
    return [x]

def mixed(n):
    x, w, c = L.tensor(arr(n)), L.tensor(arr(1, 32)[0]), L.tensor(arr(n, 1))
    y = (x * w + c).tanh()
    z = (y.exp() - x.abs().sqrt()) / (c.sigmoid() + 1)
    r = (z.clamp(-1.0, 2.0) ** 2).rsqrt() + y.neg().maximum(x).minimum(c)
    return [y, z, r, x - 1]

def ints(n):
    i = L.tensor(arr(n, 8, np.int32))
    j = L.tensor(arr(n, 8, np.int64, 1))
    return [i * 300 + 7, j - i, (i * 3 - 1) > 2, i == j, i.clamp(min=-5)]

def halves(n):
    h = L.tensor(arr(n, 4, np.float16))
    f = L.tensor(arr(n, 4, np.float64))
    return [h * 1.5 + h, (h / 3).exp(), f.log() * f, h.reciprocal()]

def shared(n):
    x = L.tensor(arr(n, 3))
    a = x + x
    return [a, a * x, x]

def sizes2(n):             # an operand of sizes (n, n): equal sizes in two dims
    x = L.tensor(arr(n, n))
    y = L.tensor(arr(n, 1))
    return [x * y + x, (x - y).relu()]

def dtypes(n):             # one structure, the dtypes alternating: int32 * 1.5 is float32 by torch's rule
    x = L.tensor(arr(n, 4, np.int32 if n % 2 else np.float32))
    return [x * 1.5 + 2, (x - 1) * x]

def alias(n):              # x + y with y the same tensor as x, or another of its shape, alternating
    x = L.tensor(arr(n, 4))
    y = x if n % 2 else L.tensor(arr(n, 4, seed=5))
    return [x * 2 + y, y - 1]

def scalars(n):            # x * 2 + 3, or x * 2 + 2: the two numbers one parameter (one handle) or two
    x = L.tensor(arr(n, 4))
    return [x * 2.0 + (3.0 if n % 2 else 2.0)]

def wiring(n):             # the same nodes, one operand read from another place: b - a, or b - b
    a = L.tensor(arr(n, 4)) + 1
    b = a * 2
    return [b - (a if n % 2 else b)]

def pairs(n):              # (n, 4) and (m, 4): m == n shares a scratch buffer between them, m != n cannot
    x = L.tensor(arr(n, 4))
    y = L.tensor(arr(n if n % 2 else n + 1, 4, seed=3))
    return [(x * 2).exp(), (y * 3).exp()]

def model(n):              # matmul, linear (t_copy, addmm), softmax, reductions, casts, activations
    import accel.lazy.nn.functional as F
    x = L.tensor(arr(n, 16))
    w, b = L.tensor(arr(8, 16, seed=1)), L.tensor(arr(1, 8, seed=2)[0])
    h = F.linear(x, w, b)
    p = (h * 0.25).softmax(-1)
    q = F.gelu(x @ w.t()).log_softmax(1)
    return [p, q, p.sum(0), h.mean(1, keepdim=True), F.silu(h).sum(), h.to(L.float64).max(),
            L.addcmul(h, p, q, value=0.5), F.leaky_relu(h, 0.1) + F.elu(h) + F.softplus(h)]

def masked(n):             # softmax over masked_fill(x * number, mask, number): one fused kernel
    x = L.tensor(arr(n, 6))
    m = L.tensor(arr(n, 6) > 0.5)
    return [(x * 0.5).masked_fill(m, -1e9).softmax(-1)]

def viewed(n):             # a reshape and a sum: kinds templates do not hold
    x = L.tensor(arr(n, 4))
    return [(x * 2).reshape(4, n).sum(0) + 1]

PROGRAMS = [("chain", chain, [5, 7, 9, 5, 1, 0, 12, 7, 3]),
            ("mixed", mixed, [4, 6, 1, 6, 9, 2]),
            ("ints", ints, [3, 5, 3, 8, 1]),
            ("halves", halves, [2, 3, 4, 2, 1]),
            ("shared", shared, [2, 5, 5, 9]),
            ("sizes2", sizes2, [2, 3, 1, 4, 3]),
            ("dtypes", dtypes, [2, 3, 5, 6, 7, 8]),
            ("alias", alias, [2, 3, 5, 6, 7, 8]),
            ("scalars", scalars, [2, 3, 5, 6, 7, 8]),
            ("wiring", wiring, [2, 3, 5, 6, 7, 8]),
            ("pairs", pairs, [3, 4, 5, 6, 7, 8]),
            ("model", model, [3, 5, 2, 7, 5, 4]),
            ("masked", masked, [3, 5, 2, 7, 5, 4]),
            ("viewed", viewed, [2, 3, 4])]

records = []
for name, build, ns in PROGRAMS:
    for n in ns:
        outs = build(n)
        text = L.get_tensors_text(outs)
        h = L.get_graph_hash(outs).hex()
        L.mark_step()
        vals = [(str(v.dtype), list(v.shape), hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest())
                for v in (o.numpy() for o in outs)]
        records.append([name, n, text, h, vals, L.get_latest_computation_graph()])
counters = {c: metrics.counter_value(c) for c in metrics.counter_names()}
mets = {m: metrics.metric_data(m)[0] for m in metrics.metric_names()}
print(json.dumps({"records": records, "counters": counters, "metrics": mets, "stats": be.stats,
                  "templates": len(be.templates)}))
'''


def _run(subprocess_python, twin, mode):
    p = subprocess_python(f"MODE = {mode!r}\n" + DIFF, env={"ACCEL_BACKEND": twin}, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("twin_name", ["native", "python"])
def test_templates_match_generated_code(subprocess_python, twin_name):
    from accel import _build_config
    if twin_name == "native" and not _build_config.NATIVE:
        pytest.skip("installed with -Dnative=false: no compiled twin")
    new = _run(subprocess_python, twin_name, "templates")
    old = _run(subprocess_python, twin_name, "generate")
    # the templates served: every step of a held structure after its first
    assert old["stats"]["specialised"] == 0 and old["templates"] == 0
    assert new["stats"]["specialised"] >= 10, new["stats"]
    assert new["stats"]["generated"] < old["stats"]["generated"]
    for a, b in zip(new["records"], old["records"]):
        assert a == b, (a[:2], b[:2])
    assert len(new["records"]) == len(old["records"])
    assert new["counters"] == old["counters"]
    assert new["metrics"] == old["metrics"]
    # a new size is a new graph hash: LTC's UncachedCompile; a size seen before, CachedCompile
    assert new["counters"]["UncachedCompile"] > new["counters"]["CachedCompile"] > 0


# The template cache itself, on both twins (a fresh process each): its key, and the lifetime matrix's cases.
CHECKS = r'''
import gc, os, threading, time, weakref
import numpy as np
import accel.lazy as L
from accel import _impl
from accel.lazy import _optable, backend as B, executor as E

ir = _impl.module("_ir")


def arr(n, m=4, dt=np.float32):
    return (np.arange(n * m, dtype=np.float64).reshape(n, m) * 0.37 - 1).astype(dt)


def graph(n, m=4, dt=np.float32):
    """(post order, roots) of relu(x * 2 + 1) - x for an (n, m) x, and its values by numpy."""
    a = arr(n, m, dt)
    x = L.tensor(a)
    L.mark_step()
    y = (x * 2 + 1).relu() - x
    want = np.maximum(a * dt(2) + dt(1), 0) - a
    return ir.post_order([y._node]), [y._node], want


def run(prog, post):
    with np.errstate(all="ignore"):
        return prog.run(E._params(post))[0]


def check_structure_key():
    k3, k5, k9 = (B._structure(*graph(n)[:2]) for n in (3, 5, 9))
    assert k3 is not None and k3 == k5 == k9                  # other sizes, one structure
    assert B._structure(*graph(1)[:2]) != k3                   # 1 and 0 are sizes of their own (broadcasting)
    assert B._structure(*graph(0)[:2]) != k3
    assert B._structure(*graph(4)[:2]) != k3                   # (4, 4): two equal sizes, another pattern
    assert B._structure(*graph(3, dt=np.float64)[:2]) != k3    # another dtype
    x = L.tensor(arr(3))
    assert B._structure(ir.post_order([(x * 2).reshape(12)._node]), [(x * 2).reshape(12)._node]) is None
    # one node sequence, another wiring: the second mul reads a, or b
    s = ir.Shape(6, [3, 4])
    a, b = ir.device_data(s, object()), ir.device_data(s, object())
    m = ir.Node("aten::mul", [a, b], [s])
    keys = []
    for other in (a, b):
        root = ir.Node("aten::mul", [m, other], [s])
        post = ir.post_order([root])
        assert [p.op.qualified_name for p in post][-2:] == ["aten::mul"] * 2 and len(post) == 4
        keys.append(B._structure(post, [root]))
    assert None not in keys and keys[0] != keys[1]
    # the same handle read by two device-data nodes, or two handles
    h = object()
    c, d = ir.device_data(s, h), ir.device_data(s, h)
    root = ir.Node("aten::mul", [c, d], [s])
    root2 = ir.Node("aten::mul", [a, b], [s])
    assert B._structure(ir.post_order([root]), [root]) != B._structure(ir.post_order([root2]), [root2])


def check_specialised_program():
    be = B.NumpyBackend()
    post, roots, want = graph(3)
    p3 = be.compile(post, roots)
    post5, roots5, want5 = graph(5)
    p5 = be.compile(post5, roots5)
    assert be.stats == {"generated": 1, "specialised": 1} and len(be.templates) == 1
    assert p5.text == p3.text and p5.num_params == p3.num_params and p5.graph_size == p3.graph_size
    assert [tuple(s.sizes) for s in p5.param_shapes if s.sizes] == [(5, 4)]
    assert np.array_equal(run(p5, post5), want5) and np.array_equal(run(p3, post), want)
    assert np.array_equal(run(p5, post5), want5)              # its own scratch buffers, step after step
    off = B.NumpyBackend(max_templates=0)
    off.compile(post, roots)
    off.compile(post5, roots5)
    assert off.stats == {"generated": 2, "specialised": 0} and len(off.templates) == 0
    for bad in (-1, 1.5, True, None):
        raises(ValueError, lambda: B.NumpyBackend(max_templates=bad), "maxsize must be an int >= 0", repr(bad))


def check_lru_bound():
    be = B.NumpyBackend(max_templates=2)
    for m in (3, 1, 0, 2):                  # four size patterns of (3, m): four templates
        be.compile(*graph(3, m)[:2])
    assert len(be.templates) == 2 and be.stats["generated"] == 4
    one = len(next(iter(be.templates._items)))
    assert be.templates.items == 2 * one
    be = B.NumpyBackend()
    be.templates.max_items = 2 * one          # room for two keys of this size
    for m in (3, 1, 0, 2):
        be.compile(*graph(3, m)[:2])
    assert len(be.templates) == 2 and be.templates.items <= 2 * one + 2
    be.templates.max_items = 1                # past the budget: the newest entry stays
    be.compile(*graph(3, 5, np.float64)[:2])   # another structure
    assert len(be.templates) == 1
    be.templates.clear()
    assert len(be.templates) == 0 and be.templates.items == 0
    raises(ValueError, lambda: B.TemplateCache(max_items=-1), "max_items must be an int >= 0, got -1")


def check_threads_race_first_use():
    be = B.NumpyBackend()
    graphs = [graph(n) for n in range(2, 34) if n != 4]
    results, errors = {}, []
    start = threading.Barrier(8)

    def work(k):
        try:
            start.wait()
            for j in range(k, len(graphs), 8):
                post, roots, want = graphs[j]
                results[j] = np.array_equal(run(be.compile(post, roots), post), want)
        except BaseException as e:
            errors.append(repr(e))
    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert len(results) == len(graphs) and all(results.values())
    assert len(be.templates) == 1
    assert be.stats["generated"] >= 1 and sum(be.stats.values()) == len(graphs)


def check_threads_race_through_mark_step():
    L.set_backend(B.NumpyBackend())
    errors = []
    start = threading.Barrier(4)

    def work(k):
        try:
            start.wait()
            for n in range(10 + k, 40, 4):
                a = arr(n)
                y = (L.tensor(a) * 2 + 1).relu()
                L.mark_step()
                assert np.array_equal(y.numpy(), np.maximum(a * np.float32(2) + np.float32(1), 0)), n
        except BaseException as e:
            errors.append(repr(e))
    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    L.set_backend("numpy")


def check_gc_cycles():
    gc.collect()
    gc.disable()
    try:
        be = B.NumpyBackend()
        post, roots, want = graph(3)
        p1 = be.compile(post, roots)
        p2 = be.compile(*graph(6)[:2])
        assert be.stats["specialised"] == 1
        t = next(iter(be.templates._items.values()))
        refs = [weakref.ref(o) for o in (be, be.templates, p1.run, p2.run, t.code)]
        del be, p1, p2, t
        # freed by reference counting alone: no cycle holds a backend, its templates or a program
        assert [r() for r in refs] == [None] * len(refs)
        be = B.NumpyBackend()
        be.compile(post, roots)
        loop = [be]
        loop.append(loop)                   # a cycle holding the backend: the collector frees it
        r = weakref.ref(be)
        del be, loop
        assert r() is not None
        gc.collect()
        assert r() is None
    finally:
        gc.enable()


def check_fork():
    be = B.NumpyBackend()
    post, roots, want = graph(3)
    be.compile(post, roots)
    post7, roots7, want7 = graph(7)
    held = threading.Event()
    release = threading.Event()

    def holder():                           # another thread holds the templates' lock across the fork
        with be.templates._lock:
            held.set()
            release.wait()
    t = threading.Thread(target=holder)
    t.start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            p = be.compile(post7, roots7)      # the child's lock is a new one: no hang
            code = 0 if np.array_equal(run(p, post7), want7) and be.stats["specialised"] == 1 else 1
        finally:
            os._exit(code)
    release.set()
    t.join()
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError("the forked child hung on the template cache")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0, status
    p = be.compile(post7, roots7)             # the parent goes on
    assert np.array_equal(run(p, post7), want7)


def check_failure_mid_generation_leaves_no_entry():
    be = B.NumpyBackend()
    post, roots, want = graph(3)
    k = _optable.KERNELS["aten::relu"]
    emit = k.emit

    def boom(e):
        raise MemoryError("injected while generating")
    k.emit = boom
    try:
        raises(MemoryError, lambda: be.compile(post, roots), "injected while generating")
    finally:
        k.emit = emit
    assert len(be.templates) == 0 and be.stats == {"generated": 0, "specialised": 0}
    assert np.array_equal(run(be.compile(post, roots), post), want)
    keys = list(be.templates._items)
    tmpl = be.templates._items[keys[0]]
    post5, roots5, want5 = graph(5)
    empty = np.empty

    def no_memory(*a, **kw):
        raise MemoryError("injected while specialising")
    np.empty = no_memory
    try:
        raises(MemoryError, lambda: be.compile(post5, roots5), "injected while specialising")
    finally:
        np.empty = empty
    assert list(be.templates._items) == keys and be.templates._items[keys[0]] is tmpl
    assert be.stats == {"generated": 1, "specialised": 0}
    assert np.array_equal(run(be.compile(post5, roots5), post5), want5)


def check_failure_through_mark_step():
    L.set_backend(B.NumpyBackend())
    a = arr(3)
    y = (L.tensor(a) * 2 + 1).relu()
    L.mark_step()
    n_cache = len(E.computation_cache())
    before = cv("UncachedCompile")
    x = L.tensor(arr(8))
    L.mark_step()
    y = (x * 2 + 1).relu()
    empty = np.empty
    np.empty = lambda *a, **kw: (_ for _ in ()).throw(MemoryError("injected"))
    try:
        raises(MemoryError, L.mark_step, "injected")
    finally:
        np.empty = empty
    assert len(E.computation_cache()) == n_cache            # nothing for the failed graph
    assert cv("UncachedCompile") == before + 1              # (counted before compiling, as LTC does)
    L.mark_step()                                          # y still holds its IR: computed now
    assert np.array_equal(y.numpy(), np.maximum(arr(8) * np.float32(2) + np.float32(1), 0))
    L.set_backend("numpy")
'''

CHECK_NAMES = [line[4:line.index("(")] for line in CHECKS.splitlines() if line.startswith("def check_")]


@pytest.fixture(scope="module", params=["native", "python"])
def results(request, lazy_checks):
    return lazy_checks(CHECKS, request.param)


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_template_cache(results, name):
    assert results[name] == "ok", results[name]
