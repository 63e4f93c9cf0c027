"""Differential tests: the same random graphs and values through both twins give identical results."""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from accel.lazy import dump

OPS = ["aten::add", "aten::mul", "test::op_with_a_rather_long_name_0123", "t::x", "lazy_tensors::not_supported"]
sizes = st.lists(st.one_of(st.integers(-2, 9), st.integers(-2**63, 2**63 - 1)), max_size=5)
shape = st.tuples(st.integers(0, 127), sizes)
seed = st.one_of(st.none(), st.integers(0, 2**128 - 1), st.sampled_from([0, 1, 101, 2**64]))


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 30))
    nodes = []
    for i in range(n):
        dyn = draw(st.booleans())
        if i == 0 or draw(st.integers(0, 4)) == 0:
            nodes.append(("data", draw(shape), draw(st.integers(0, 4)), dyn))
            continue
        ops = draw(st.lists(st.one_of(st.none(), st.tuples(st.integers(0, i - 1), st.integers(0, 3))), max_size=5))
        ops = [None if o is None else (o[0], o[1] % _outputs(nodes[o[0]])) for o in ops]
        nodes.append(("node", draw(st.sampled_from(OPS)), ops, draw(st.lists(shape, max_size=3)),
                      draw(st.integers(1, 4)), draw(seed), dyn, draw(st.lists(shape, max_size=1))))
    roots = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 3)), max_size=6))
    roots = [(i, k % _outputs(nodes[i])) for i, k in roots]
    ids = draw(st.lists(st.integers(0, 3), min_size=len(roots), max_size=len(roots)))
    return nodes, roots, ids


def _outputs(spec):
    return 1 if spec[0] == "data" else spec[4]


def build(ir, nodes):
    out = []
    for spec in nodes:
        prev = ir.set_dynamic_shapes(spec[-1] if spec[0] == "data" else spec[6])
        try:
            if spec[0] == "data":
                out.append(ir.device_data(ir.Shape(*spec[1]), spec[2], "CPU0"))
                continue
            _, op, ops, shapes, nout, sd, _, computed = spec
            args = (op, [None if o is None else ir.Output(out[o[0]], o[1]) for o in ops],
                    [ir.Shape(*s) for s in shapes], nout)
            node = ir.Node(*args) if sd is None else ir.Node(*args, sd)
            for s in computed:
                node.add_computed_shape(ir.Shape(*s))
            out.append(node)
        finally:
            ir.set_dynamic_shapes(prev)
    return out


def observe(ir, g):
    nodes_spec, roots_spec, ids = g
    nodes = build(ir, nodes_spec)
    roots = [ir.Output(nodes[i], k) for i, k in roots_spec]
    index = {id(n): i for i, n in enumerate(nodes)}
    em = ir.EmissionMap()
    half = ir.post_order(roots[: len(roots) // 2], em)
    rest = ir.post_order(roots, em)
    return {
        "hash": [n.hash for n in nodes], "shape_hash": [n.shape_hash for n in nodes],
        "str": [str(n) for n in nodes], "out": [(r.hash, r.shape_hash) for r in roots],
        "post": [index[id(n)] for n in ir.post_order(roots)],
        "incremental": [index[id(n)] for n in half + rest], "size": ir.graph_size(roots),
        "params": ir.parameter_sequence(roots), "gh": ir.graph_hash(roots, ids), "gh0": ir.graph_hash(roots),
        "text": dump.to_text(roots), "dot": dump.to_dot(roots),
    }


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_random_graphs_identical(both_twins, g):
    nat, py = (t.mod("_ir") for t in both_twins)
    a, b = observe(nat, g), observe(py, g)
    assert a == b
    assert sorted(a["post"]) == sorted(a["incremental"]) and len(a["post"]) == a["size"]


scalars = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**64 - 1), st.floats(allow_nan=False),
              st.text(max_size=20), st.binary(max_size=40)),
    lambda inner: st.lists(inner, max_size=4), max_leaves=10)


@settings(max_examples=300, deadline=None)
@given(st.lists(scalars, max_size=5), st.binary(max_size=300), st.integers(0, 2**128 - 1), st.integers(0, 2**128 - 1))
def test_random_primitives_identical(both_twins, values, data, a, b):
    nat, py = (t.mod("_hash") for t in both_twins)
    for m in (nat, py):
        assert m.mhash(*values) == m.mhash_hashes([m.hash_value(v) for v in values])
    assert nat.mhash(*values) == py.mhash(*values)
    assert nat.container_hash(values) == py.container_hash(values)
    assert nat.data_hash(data) == py.data_hash(data) and nat.std_data_hash(data) == py.std_data_hash(data)
    assert nat.hash_combine(a, b) == py.hash_combine(a, b)
    assert nat.hash_reduce(a) == py.hash_reduce(a) and nat.hash_to_string(b) == py.hash_to_string(b)
    assert nat.std_hash_combine(a >> 64, b >> 64) == py.std_hash_combine(a >> 64, b >> 64)


BAD_CALLS = [
    ("_hash", "hash_combine", (1.5, 2)), ("_hash", "hash_combine", (-1, 2)), ("_hash", "hash_combine", (True, 2)),
    ("_hash", "std_hash_combine", (2**64, 0)), ("_hash", "data_hash", ("abc",)), ("_hash", "data_hash", (3,)),
    ("_hash", "string_hash", (b"abc",)), ("_hash", "hash_value", (object,)), ("_hash", "hash_value", (2**64,)),
    ("_hash", "hash_scalar", (300, "int8")), ("_hash", "hash_scalar", (1, "int128")),
    ("_hash", "hash_scalar", ("1", "double")), ("_hash", "container_hash", (3,)),
    ("_hash", "mhash_hashes", ([1, -1],)), ("_hash", "hash_to_string", (2**128,)),
    ("_ir", "scalar_type_name", (200,)), ("_ir", "graph_hash", (3,)), ("_ir", "graph_hash", ([3],)),
    ("_ir", "parameter_sequence", (["x"],)), ("_ir", "OpKind", ("a:b",)),
]


@pytest.mark.parametrize("mod,fn,args", BAD_CALLS)
def test_same_errors(both_twins, mod, fn, args):
    errs = []
    for t in both_twins:
        with pytest.raises(Exception) as ei:
            getattr(t.mod(mod), fn)(*args)
        errs.append((type(ei.value), str(ei.value)))
    assert errs[0] == errs[1]


def test_numpy_buffers_identical(both_twins):
    import numpy as np
    nat, py = (t.mod("_hash") for t in both_twins)
    arrays = [np.arange(12, dtype=np.float32).reshape(3, 4), np.zeros((0, 3)), np.array(3.5), np.array([True, False]),
              np.arange(6, dtype=np.int64)[::2].copy(), np.float32(1.5), np.int32(-1)]
    for arr in arrays:
        assert nat.data_hash(arr) == py.data_hash(arr) == py.data_hash(np.ascontiguousarray(arr).tobytes())
    assert nat.hash_value(np.int32(-1)) == nat.hash_scalar(-1, "int32")
    assert nat.hash_value(np.float32(1.5)) == py.hash_scalar(1.5, "float")
    for m in (nat, py):
        with pytest.raises(ValueError, match="needs a C-contiguous buffer"):
            m.data_hash(np.arange(6)[::2])
