"""Tracing stays out of the cyclic collector's way (issue 22): the lazy tensors' device-data handle (``Data``,
owned by the _lazy_trace twins) is read-only and holds only a numpy array and a scalar, so the native twin
leaves it untracked, and with it the device-data nodes and every node built on them; a traced chain adds
no GC-tracked objects, and is freed when dropped."""
import copy
import gc
import pickle
import weakref

import numpy as np
import pytest

import accel
import accel.lazy as L


@pytest.fixture
def Data(twin):
    return twin.mod("_lazy_trace").Data


def _err(exc, fn, *args):
    with pytest.raises(exc) as info:
        fn(*args)
    return str(info.value)


def test_data_holds_an_array_and_its_scalar(Data):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    d = Data(a)
    assert d.array is a and d.value is None
    z = Data(np.array(2.5))
    assert z.value == 2.5 and type(z.value) is float
    assert Data(np.float32(1.5)).value == 1.5           # a numpy scalar is accepted too
    assert repr(d) == "<Data float32[2, 3]>"
    assert weakref.ref(d)() is d


def test_data_is_read_only_same_messages(both_twins):
    msgs = []
    for twin in both_twins:
        D = twin.mod("_lazy_trace").Data
        d = D(np.zeros(3, np.int64))
        msgs.append((_err(AttributeError, setattr, d, "array", np.ones(3)),
                     _err(AttributeError, setattr, d, "other", 1),
                     _err(AttributeError, delattr, d, "value"),
                     _err(TypeError, d.__init__, np.ones(3))))
        assert (d.array == 0).all()
    assert msgs[0] == msgs[-1]
    assert msgs[0][0] == "lazy Data is read-only: cannot set 'array'"
    assert msgs[0][3] == "lazy Data is read-only: it was already initialized"


@pytest.mark.parametrize("bad", [np.array([object()], dtype=object), [1, 2], None, np.ma.masked_array([1.0])],
                         ids=["object-array", "list", "None", "ndarray-subclass"])
def test_data_refuses_what_could_refer_back(both_twins, bad):
    msgs = {_err(TypeError, twin.mod("_lazy_trace").Data, bad) for twin in both_twins}
    assert len(msgs) == 1
    msg = msgs.pop()
    assert msg.startswith("lazy Data needs a numpy array (or numpy scalar) of a non-object dtype, got ")
    assert type(bad).__name__ in msg


def test_data_copies_and_pickles_as_a_new_handle(Data):
    d = Data(np.arange(4))
    for e in (copy.copy(d), pickle.loads(pickle.dumps(d))):
        assert type(e) is Data and e is not d
        assert (e.array == d.array).all()


def test_native_data_and_the_nodes_on_it_are_untracked(twin):
    if twin.name != "native":
        pytest.skip("the python twin's nodes are Python objects: always tracked")
    ir, D = twin.mod("_ir"), twin.mod("_lazy_trace").Data
    d = D(np.array(1.0))
    assert not gc.is_tracked(d)
    s = ir.Shape(6, [2])
    leaf = ir.device_data(s, d, "CPU0")
    n = ir.Node("aten::add", [leaf, ir.device_data(s, D(np.array(1))), leaf], [s])
    assert not gc.is_tracked(leaf) and not gc.is_tracked(n)


def test_tracing_a_chain_adds_no_tracked_objects():
    if accel.backend != "native":
        pytest.skip("the python twin's nodes are Python objects: always tracked")
    x = L.tensor(np.zeros(4, np.float32))
    x = x + 1.0                 # the scalars' device data is cached from here on
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(3000):
        x = x + 1.0
    gc.collect()
    grown = len(gc.get_objects()) - before
    assert grown < 50, f"tracing 3000 ops left {grown} more GC-tracked objects"
    assert (x.numpy() == 3001.0).all()


def test_tracing_a_chain_adds_no_tracked_objects_even_before_a_collection():
    # a node given its one Shape in a tuple keeps the Shape, not the tuple: the tuples (tracked when made,
    # untracked only by a collection) were 3 GC objects per traced op until the GC ran
    if accel.backend != "native":
        pytest.skip("the python twin's nodes are Python objects: always tracked")
    x = L.tensor(np.zeros(4, np.float32))
    x = x + 1.0
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        for _ in range(3000):
            x = x + 1.0
        grown = len(gc.get_objects()) - before
    finally:
        gc.enable()
    assert grown < 50, f"tracing 3000 ops made {grown} more GC-tracked objects"


def test_a_traced_op_leaves_a_small_footprint():
    # what each traced x + 1.0 leaves live (issue 22: fresh memory is what tracing a long chain pays for):
    # three Nodes and the two scalar device-data nodes' records, nothing else
    if accel.backend != "native":
        pytest.skip("the native twin's footprint")
    import tracemalloc
    x = L.tensor(np.zeros(4, np.float32))
    x = x + 1.0
    gc.collect()
    tracemalloc.start()
    try:
        a = tracemalloc.take_snapshot()
        for _ in range(1000):
            x = x + 1.0
        b = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    d = b.compare_to(a, "filename")
    blocks = sum(s.count_diff for s in d) / 1000
    size = sum(s.size_diff for s in d) / 1000
    assert blocks <= 5.1 and size <= 500, f"a traced op leaves {blocks:.2f} blocks, {size:.0f} bytes live"


def test_a_node_keeps_one_shape_given_in_a_tuple(both_twins):
    for twin in both_twins:
        ir = twin.mod("_ir")
        s = ir.Shape(6, [2])
        for shapes in ((s,), [s]):
            n = ir.Node("aten::neg", [ir.device_data(s, 1)], shapes)
            assert type(n.shapes) is tuple and n.shapes == (s,) and n.shapes[0] is s
            assert n.shapes is n.shapes
            assert str(n) == "[Float[2]] aten::neg"


def test_a_dropped_chain_is_freed_without_the_collector():
    x = L.tensor(np.zeros(4, np.float32))
    for _ in range(2000):
        x = x + 1.0
    root = weakref.ref(x._node)
    gc.disable()
    try:
        del x
        assert root() is None
    finally:
        gc.enable()
